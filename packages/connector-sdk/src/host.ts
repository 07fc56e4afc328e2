/**
 * The runtime's side of the connector SDK: NOT part of the public barrel
 * (lib/connectors/index.ts), which connector authors import.
 *
 * Only the runtime (runAttempt in deadline.ts, lib/runtime), the conformance
 * kit, a remote connector host and tests construct execution contexts; a
 * connector receives its context and never builds one.
 */
export { createExecutionContext } from './context.js';
