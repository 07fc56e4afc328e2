/**
 * Every Runtime operation beyond the reads, in one module that the Runtime
 * imports on the first method that needs one (lib/runtime/runtime.ts), with
 * the connector parts. A function that only reads (GET of an action, a
 * transaction, a stream, the operator lists) never loads the admission
 * pipeline, the modes, the attempts or reconciliation. One module, not one
 * per operation: a chunk per import costs more than the bytes it saves
 * (docs/bench/analysis.md, "Cold start and bundles").
 */
export { decideApproval, getApproval, listApprovals } from './approvals.js';
export { runAttempt } from './attempts/worker.js';
export { cancel } from './cancel.js';
export { connectorHealth, listCapabilities } from './meta.js';
export { requestReconcile, resolve } from './operator.js';
export { admit, prepare } from './pipeline/admit.js';
export { reconcileMessage, sweep } from './reconciliation.js';
