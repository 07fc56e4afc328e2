/**
 * `node --import tsx infra/connector-manifest-cli.ts --connectors '[{"id":…,"module":"/abs/path"}]'`:
 * imports each code connector module (TypeScript or JavaScript), builds its
 * connector the way a function does at cold start (no credentials, no
 * network) and prints, as JSON by connector ID, its manifest and the
 * problems of its manifest check (infra/deployment-connectors.ts). The CDK
 * app runs it synchronously at synth, since it cannot import a module itself.
 */
import { parseArgs } from 'node:util';
import { deploymentConnectorFactories } from '../functions/shared/connector-factories.js';
import { checkConnectorManifest, importConnectorModule, type ManifestCheck } from './deployment-connectors.js';

const { values } = parseArgs({ options: { connectors: { type: 'string' } } });
const modules = JSON.parse(values.connectors ?? '[]') as { id: string; module: string }[];
const out: Record<string, ManifestCheck> = {};
for (const { id, module } of modules) {
  try {
    out[id] = checkConnectorManifest(id, deploymentConnectorFactories([await importConnectorModule(id, module)]));
  } catch (err) {
    out[id] = { problems: [`cannot load ${module}: ${(err as Error).message}`] };
  }
}
process.stdout.write(JSON.stringify(out));
