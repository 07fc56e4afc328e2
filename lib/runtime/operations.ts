/**
 * The Runtime operations beyond the reads that have no module of their own
 * in lib/runtime/runtime.ts, in one module that the Runtime imports on the
 * first method that needs one, with the connector parts. A submit imports
 * the admission pipeline (./pipeline/admit.ts), the invoke worker the attempt
 * (./attempts/worker.ts), the capabilities listing and readiness ./meta.ts:
 * the functions that serve only those (the submit route, the invoke worker,
 * GET /v1/capabilities) never load the rest. A function that only reads
 * (GET of an action, a transaction, a stream, the operator lists) loads none
 * of them. A few modules, not one per operation: a chunk per import costs
 * more than the bytes it saves (docs/bench/analysis.md, "Cold start and
 * bundles" and "Issue 22: the routes that load the connectors").
 */
export { decideApproval, expireApproval } from './approvals.js';
export { cancel } from './cancel.js';
export { requestReconcile, resolve } from './operator.js';
export { reconcileMessage, sweep } from './reconciliation.js';
