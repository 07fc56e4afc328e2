/**
 * The side of the SDK that runs a connector, NOT part of the authoring
 * surface, and not an entry of the published package (package.json `exports`
 * has no `./host`: only the package's own conformance kit and this
 * repository's runtime build contexts). A connector receives its context and
 * never builds one.
 *
 * Who imports it, by relative path: the runtime's attempt machinery
 * (lib/runtime/attempts), the remote connector host (lib/runtime/remote) and
 * tests. They build an attempt's context (`createExecutionContext`); what the
 * attempt learned (`contextAttemptEvidence`) and the runtime memory
 * (`bindRuntimeMemory`) they import from context.ts and memory.ts. The kit
 * (conformance/harness.ts) builds its contexts with the same factory, which
 * is why the factory stays in the package: the kit must run a connector
 * exactly as the runtime does, without the runtime.
 */
export { createExecutionContext } from './context.js';
