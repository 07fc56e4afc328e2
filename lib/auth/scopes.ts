/**
 * OAuth scopes with a meaning in more than one layer. One constant each, so
 * the HTTP edge's route table (lib/http/routes.ts `SCOPES`) and the
 * runtime's configuration default (lib/runtime/config.ts `operator_scope`)
 * cannot drift apart.
 */

/** Grants the operator views: the edge requires it on the operator routes, the runtime widens reads with it. */
export const OPERATOR_SCOPE = 'aip:operator';
