/**
 * The capability registry precompiled at bundle time
 * (lib/runtime/schema-precompiled.ts): the manifests and support records of
 * the connectors the deployment enables, and their validators as ajv
 * standalone code.
 *
 * This file is the stand-in: it exports `undefined`, which makes the
 * composition (./compose-connectors.ts) build the registry from the connectors'
 * code with run-time ajv, as `npm start` and the tests do. The bundling step
 * (infra/bundling.ts, run by the CDK bundling and by `npm run bench`)
 * resolves this module to the generated one instead.
 */
import type { PrecompiledRegistry } from '../../lib/runtime/schema-precompiled.js';

export const PRECOMPILED_REGISTRY: PrecompiledRegistry | undefined = undefined;
