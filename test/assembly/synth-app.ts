/**
 * The CDK app of the assembly test, synthesized as `cdk deploy` would: the
 * stacks of infra/aip-app.ts with bundling on (`aws:cdk:bundling-stacks`
 * `**`, the CLI's default for deploy) and cdk.json's context, for two
 * configurations of one App:
 *
 * - `assembly` (test/assembly/config.json): the main stack, the payments
 *   connector in the runtime's functions, the operator console;
 * - `assembly-remote`: the same plus `remoteConnectorHost` (payments on the
 *   remote connector host, its checkpoint receiver).
 *
 * One App, so each function's bundle is built once (CDK stages an asset once
 * per source and bundling options; both environments bundle the same
 * entries with the same connectors). Run by test/assembly/synth.ts in a child
 * process: `node --import tsx test/assembly/synth-app.ts <outdir>`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { defineAipApp } from '../../infra/aip-app.js';
import { parseInfraConfig } from '../../infra/config.js';
import { PROJECT_ROOT } from '../../infra/functions.js';

export const ASSEMBLY_CONFIG_FILE = join(PROJECT_ROOT, 'test', 'assembly', 'config.json');

const outdir = process.argv[2];
if (outdir === undefined) {
  process.stderr.write('usage: test/assembly/synth-app.ts <outdir>\n');
  process.exit(2);
}
const cdkJson = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
const base = JSON.parse(readFileSync(ASSEMBLY_CONFIG_FILE, 'utf8')) as Record<string, unknown>;
const app = new App({ outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': ['**'] } });
defineAipApp(app, { config: parseInfraConfig(base, 'test/assembly/config.json') });
defineAipApp(app, {
  config: parseInfraConfig({ ...base, envName: 'assembly-remote', remoteConnectorHost: { connectors: ['payments'] } }, 'assembly-remote'),
});
app.synth();
