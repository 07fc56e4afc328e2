/**
 * `@aip-runtime/connector-sdk/host`: the side of the SDK that runs a
 * connector, NOT part of the authoring surface (`.`). A connector receives its
 * context and never builds one.
 *
 * Who imports it: the runtime's attempt machinery (lib/runtime/attempts), the
 * conformance kit, a remote connector host and tests. They build an attempt's
 * context (`createExecutionContext`), read what the attempt learned, and bind
 * the runtime memory a handler reads with `runtimeMemory`.
 */
export {
  attemptEnded,
  cancellationReasonOf,
  contextAttemptEvidence,
  createExecutionContext,
  type AttemptEvidence,
} from './context.js';
export { bindRuntimeMemory } from './memory.js';
