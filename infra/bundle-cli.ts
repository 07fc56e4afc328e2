/**
 * `node --import tsx infra/bundle-cli.ts --entry <module> --outdir <dir> [--connectors <json>] [--deployment-connectors <json>] [--runtime-config <json>] [--provisioned-init]`:
 * bundles one Lambda function with infra/bundling.ts. The CDK local bundling
 * (infra/functions.ts) runs it in a child process, since CDK's bundling hook
 * is synchronous and esbuild's plugins are not.
 */
import { parseArgs } from 'node:util';
import { bundleFunction, type BundledConnector, type BundledDeploymentConnector } from './bundling.js';

const { values } = parseArgs({
  options: {
    entry: { type: 'string' },
    outdir: { type: 'string' },
    connectors: { type: 'string' },
    'deployment-connectors': { type: 'string' },
    'runtime-config': { type: 'string' },
    'provisioned-init': { type: 'boolean' },
  },
});
if (values.entry === undefined || values.outdir === undefined) {
  process.stderr.write('usage: infra/bundle-cli.ts --entry <module> --outdir <dir> [--connectors <json>]\n');
  process.exit(2);
}
const connectors = values.connectors !== undefined ? (JSON.parse(values.connectors) as BundledConnector[]) : undefined;
const own = values['deployment-connectors'];
const deploymentConnectors = own !== undefined ? (JSON.parse(own) as BundledDeploymentConnector[]) : undefined;
await bundleFunction({
  entry: values.entry,
  outdir: values.outdir,
  ...(connectors !== undefined ? { connectors } : {}),
  ...(deploymentConnectors !== undefined ? { deploymentConnectors } : {}),
  ...(values['runtime-config'] !== undefined ? { runtimeConfig: values['runtime-config'] } : {}),
  ...(values['provisioned-init'] === true ? { provisionedInit: true } : {}),
});
