#!/usr/bin/env node
/**
 * `aip-synth` (package.json "bin"): the CDK app command of a team's
 * repository that depends on this project (docs/deploying-your-connectors.md).
 *
 *   cdk.json  { "app": "npx aip-synth" }               this project's app (infra/app.ts)
 *   cdk.json  { "app": "npx aip-synth infra/app.ts" }  the team's own app (a path from the working directory)
 *
 * The runtime loads the connector SDK from source: lib/runtime imports
 * packages/connector-sdk/src by relative path, and the reference connectors
 * import `@aip-runtime/connector-sdk`, which this project's tsconfig `paths`
 * map to the same source (the package's `exports` name its compiled dist/,
 * which a checkout does not build). A team's connector imports
 * `aip-runtime/connectors`, whose export is that source too. So the app runs
 * under tsx registered in-process with THIS project's tsconfig (tsx's
 * `register({ tsconfig })`), whatever the working directory's tsconfig says,
 * and every module loads one copy of the SDK: two copies would not recognise
 * each other's ConnectorFailure. No environment variable and no second
 * process. tsx resolves from this package's folder, else from the team's
 * node_modules (the docs list it among the team's devDependencies).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

const [app, ...extra] = process.argv.slice(2);
if (extra.length > 0 || app === '--help' || app === '-h') {
  process.stderr.write('usage: aip-synth [<CDK app module, e.g. infra/app.ts>]\n  without one, the AIP runtime app as it is (aip-runtime/infra/app.ts)\n');
  process.exit(2);
}
if (app !== undefined && !existsSync(resolve(app))) {
  process.stderr.write(`aip-synth: no such CDK app module: ${resolve(app)}\n`);
  process.exit(2);
}

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import(app === undefined ? new URL('../infra/app.ts', import.meta.url).href : pathToFileURL(resolve(app)).href);
