/**
 * The HTTPS API's fixed values, without zod: the edge schemas (schemas.ts)
 * are built from them, and the typed client (lib/client) imports them from
 * here so that it does not load the schemas at run time.
 */

/** Longest `Prefer: wait=N` / `?wait=N` honoured, in seconds (API Gateway's limit is 29 s). */
export const MAX_WAIT_SECONDS = 25;
/** Maximum page size of list routes. */
export const MAX_PAGE_LIMIT = 100;

/** Header naming the tenant when the caller belongs to several. */
export const TENANT_HEADER = 'X-AIP-Tenant';

/** What `GET /v1/transactions?include=` may ask for. */
export const TRANSACTION_INCLUDES = ['result', 'receipts'] as const;

/** The operator listings (`GET /v1/operator/transactions?view=`). */
export const OPERATOR_VIEWS = ['outcome_unknown', 'reconciling', 'stalled_committing', 'pending_approvals', 'requires_human'] as const;

/** An approver's answer (`POST /v1/approvals/{id}/decision`). */
export const APPROVAL_DECISIONS = ['approve', 'deny'] as const;

/** How `POST /v1/actions` admitted the action (the answer's `disposition`). */
export const SUBMIT_DISPOSITIONS = ['completed', 'accepted', 'requires_human', 'replayed', 'rejected'] as const;
