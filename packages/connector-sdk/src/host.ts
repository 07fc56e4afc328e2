/**
 * The side of the SDK that runs a connector, NOT part of the authoring
 * surface, and not an entry of the published package (package.json `exports`
 * has no `./host`: only the package's own conformance kit and this
 * repository's runtime build contexts). A connector receives its context and
 * never builds one.
 *
 * Who imports it, by relative path: the runtime's attempt machinery
 * (lib/runtime/attempts), the remote connector host (lib/runtime/remote) and
 * tests. They build an attempt's context (`createExecutionContext`), read what
 * the attempt learned, and bind the runtime memory a handler reads with
 * `runtimeMemory`. The kit (conformance/harness.ts) builds its contexts with
 * the same factory, which is why the factory stays in the package: the kit
 * must run a connector exactly as the runtime does, without the runtime.
 */
export {
  attemptEnded,
  cancellationReasonOf,
  contextAttemptEvidence,
  createExecutionContext,
  type AttemptEvidence,
} from './context.js';
export { bindRuntimeMemory } from './memory.js';
