/**
 * `node --import tsx infra/connector-manifest-cli.ts --connectors '[{"id":…,"module":"/abs/path"}]'`:
 * imports each code connector module (TypeScript or JavaScript), builds its
 * connector the way a function does at cold start (no credentials, no
 * network) and prints, as JSON by connector ID, its manifest and the
 * problems of its manifest check (infra/deployment-connectors.ts). The CDK
 * app runs it synchronously at synth, since it cannot import a module itself.
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { deploymentConnectorFactories } from '../functions/shared/connector-factories.js';
import type { DeploymentConnectorSource } from '../functions/shared/deployment-connectors.js';
import { checkConnectorManifest, type ManifestCheck } from './deployment-connectors.js';

const { values } = parseArgs({ options: { connectors: { type: 'string' } } });
const modules = JSON.parse(values.connectors ?? '[]') as { id: string; module: string }[];
const out: Record<string, ManifestCheck> = {};
for (const { id, module } of modules) {
  try {
    const namespace = (await import(pathToFileURL(module).href)) as Record<string, unknown>;
    const source: DeploymentConnectorSource = { id, module: namespace, path: module };
    out[id] = checkConnectorManifest(id, deploymentConnectorFactories([source]));
  } catch (err) {
    out[id] = { problems: [`cannot load ${module}: ${(err as Error).message}`] };
  }
}
process.stdout.write(JSON.stringify(out));
