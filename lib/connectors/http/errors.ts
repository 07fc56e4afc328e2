/**
 * Provider errors → typed ConnectorFailures for the declarative HTTP
 * connector: configured error rules, the defaults for unmapped statuses, and
 * transport failures (not sent, lost, timed out, cancelled).
 *
 * Failures are built as drafts first, so a follow-up probe can still settle
 * whether the outcome is uncertain before the final retryability is fixed:
 * an uncertain outcome is retryable only when the capability declares
 * downstream idempotency and the action is not a commit or execute
 * transaction (for those the runtime reconciles the checkpointed operation).
 */
import type { ErrorCategory } from '@aip-runtime/connector-sdk/errors';
import type { JsonObject, ProviderOperationRef } from '@aip-runtime/connector-sdk/protocol';
import { ConnectorFailure, type ConnectorOperation } from '@aip-runtime/connector-sdk';
import type { ErrorRule } from './config.js';
import { evidenceScalar } from './mapping.js';
import { getPointer } from './pointer.js';
import type { ResponseHead, TransportFailure } from './transport.js';
import type { HeaderReader } from './provider-fetch.js';

/** A failure before its retryability is final. */
export interface FailureDraft {
  code: string;
  message?: string;
  category: ErrorCategory;
  /** Retryable when the outcome is certain (nothing happened, or the answer is final). */
  retryable: boolean;
  retry_after_ms?: number;
  provider_request_id?: string;
  provider_operation?: ProviderOperationRef;
  remote_status?: number;
  uncertain_outcome: boolean;
  redacted_details: JsonObject;
  operation: ConnectorOperation;
  source: string;
}

/** Thrown internally to carry a draft up to the method boundary. */
export class DraftFailure extends Error {
  constructor(readonly draft: FailureDraft) {
    super(draft.code);
    this.name = 'DraftFailure';
  }
}

/** The final ConnectorFailure. `uncertainRetryAllowed`: see the module comment. */
export function finalizeDraft(d: FailureDraft, uncertainRetryAllowed: boolean): ConnectorFailure {
  return new ConnectorFailure({
    code: d.code,
    ...(d.message !== undefined ? { message: d.message } : {}),
    category: d.category,
    retryable: d.retryable && (!d.uncertain_outcome || uncertainRetryAllowed),
    ...(d.retry_after_ms !== undefined ? { retry_after_ms: d.retry_after_ms } : {}),
    ...(d.provider_request_id !== undefined ? { provider_request_id: d.provider_request_id } : {}),
    ...(d.provider_operation !== undefined ? { provider_operation: d.provider_operation } : {}),
    ...(d.remote_status !== undefined ? { remote_status: d.remote_status } : {}),
    uncertain_outcome: d.uncertain_outcome,
    redacted_details: d.redacted_details,
    operation: d.operation,
    source: d.source,
  });
}

/** Request facts every failure carries: where it failed and the known provider references. */
export interface FailureSite {
  readonly operation: ConnectorOperation;
  readonly source: string;
  readonly method: string;
  readonly route: string;
  /** The request can have an external effect. */
  readonly mutation: boolean;
  readonly provider_request_id?: string;
  readonly provider_operation?: ProviderOperationRef;
}

function siteRefs(site: FailureSite): Pick<FailureDraft, 'provider_request_id' | 'provider_operation'> {
  return {
    ...(site.provider_request_id !== undefined ? { provider_request_id: site.provider_request_id } : {}),
    ...(site.provider_operation !== undefined ? { provider_operation: site.provider_operation } : {}),
  };
}

function siteDetails(site: FailureSite): JsonObject {
  return { http_method: site.method, route: site.route };
}

/** `Retry-After` in seconds or as an HTTP date, in ms (capped at one day). */
export function retryAfterMs(headers: HeaderReader, now: number = Date.now()): number | undefined {
  const raw = headers.get('retry-after');
  if (raw === null) return undefined;
  const trimmed = raw.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(0, Math.round(ms)), 86_400_000);
}

function statusMatches(rule: ErrorRule, status: number): boolean {
  const s = rule.status;
  if (typeof s === 'number') return s === status;
  if (Array.isArray(s)) return s.includes(status);
  return s === '4xx' ? status >= 400 && status < 500 : status >= 500 && status < 600;
}

/** The first rule matching the status (and, if it narrows, the body field). */
export function matchErrorRule(rules: readonly ErrorRule[], status: number, body: unknown): ErrorRule | undefined {
  return rules.find((r) => {
    if (!statusMatches(r, status)) return false;
    if (r.match === undefined) return true;
    const v = getPointer(body, r.match.pointer);
    return typeof v === 'string' && r.match.equals.includes(v);
  });
}

/** What an unmapped status means. */
export function defaultErrorRule(status: number, mutation: boolean): Omit<ErrorRule, 'status'> {
  if (status === 401 || status === 403) return { code: 'connector.provider_auth_failed', category: 'permanent', retryable: false };
  if (status === 429) return { code: 'connector.provider_rate_limited', category: 'rate_limited', retryable: true };
  if (status === 404) return { code: 'connector.provider_rejected', category: 'not_found', retryable: false };
  if (status === 409) return { code: 'connector.provider_rejected', category: 'conflict', retryable: false };
  if (status === 400 || status === 413 || status === 415 || status === 422)
    return { code: 'connector.provider_rejected', category: 'validation', retryable: false };
  if (status >= 400 && status < 500) return { code: 'connector.provider_rejected', category: 'permanent', retryable: false };
  // A 5xx after the request reached the provider cannot prove that nothing happened.
  if (status >= 500) return { code: 'connector.provider_unavailable', category: 'temporary', retryable: true, uncertain_outcome: mutation };
  return { code: 'connector.provider_response_invalid', category: 'internal', retryable: false, uncertain_outcome: mutation };
}

/** An error status → draft. The operation ID in the error body (if the rule names it) is returned separately, for checkpointing. */
export function httpErrorDraft(
  rules: readonly ErrorRule[],
  head: ResponseHead,
  body: unknown,
  site: FailureSite,
): { draft: FailureDraft; operation_id?: string } {
  const rule = matchErrorRule(rules, head.status, body) ?? { status: head.status, ...defaultErrorRule(head.status, site.mutation) };
  const details: JsonObject = { ...siteDetails(site) };
  for (const [name, pointer] of Object.entries(rule.details ?? {})) {
    const v = evidenceScalar(getPointer(body, pointer));
    if (v !== undefined) details[name] = v;
  }
  const retryAfter = retryAfterMs(head.headers);
  let operation_id: string | undefined;
  if (rule.provider_operation !== undefined) {
    const v = getPointer(body, rule.provider_operation.pointer);
    if ((typeof v === 'string' && v.length > 0) || typeof v === 'number') operation_id = String(v);
  }
  const draft: FailureDraft = {
    code: rule.code,
    ...(rule.message !== undefined ? { message: rule.message } : {}),
    category: rule.category,
    retryable: rule.retryable,
    ...(retryAfter !== undefined && rule.retryable ? { retry_after_ms: retryAfter } : {}),
    ...siteRefs(site),
    ...(head.request_id !== undefined ? { provider_request_id: head.request_id } : {}),
    remote_status: head.status,
    uncertain_outcome: site.mutation && rule.uncertain_outcome === true,
    redacted_details: details,
    operation: site.operation,
    source: site.source,
  };
  return operation_id !== undefined ? { draft, operation_id } : { draft };
}

/** A 2xx whose body cannot be read or mapped. After a mutation the effect may exist. */
export function invalidResponseDraft(site: FailureSite, reason: string, remote_status?: number): FailureDraft {
  return {
    code: 'connector.provider_response_invalid',
    category: 'internal',
    retryable: false,
    ...siteRefs(site),
    ...(remote_status !== undefined ? { remote_status } : {}),
    uncertain_outcome: site.mutation,
    redacted_details: { ...siteDetails(site), reason },
    operation: site.operation,
    source: site.source,
  };
}

/** The code a cancellation reason carries (the runtime aborts with a typed failure), if any. */
function reasonCode(reason: unknown): string | undefined {
  if (reason !== null && typeof reason === 'object') {
    const code = (reason as { code?: unknown }).code;
    if (typeof code === 'string' && /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/.test(code)) return code;
  }
  return undefined;
}

/** A transport failure → draft. `timeoutRetryable` is the page's timeout rule for this action. */
export function transportDraft(tf: TransportFailure, site: FailureSite, timeoutRetryable: boolean): FailureDraft {
  const maybeSent = tf.sent !== 'no';
  const uncertain = site.mutation && maybeSent;
  const base = {
    ...siteRefs(site),
    ...(tf.head?.request_id !== undefined ? { provider_request_id: tf.head.request_id } : {}),
    ...(tf.head !== undefined ? { remote_status: tf.head.status } : {}),
    uncertain_outcome: uncertain,
    operation: site.operation,
    source: site.source,
  };
  const details: JsonObject = { ...siteDetails(site), request_sent: tf.sent };
  switch (tf.kind) {
    case 'not_sent':
      return { ...base, code: 'connector.provider_unreachable', category: 'temporary', retryable: true, retry_after_ms: 1_000, redacted_details: details };
    case 'timeout':
      return { ...base, code: 'sla.timeout_exceeded', category: 'timeout', retryable: timeoutRetryable, redacted_details: details };
    case 'cancelled': {
      const code = reasonCode(tf.reason);
      return {
        ...base,
        code: 'connector.attempt_cancelled',
        category: 'conflict',
        retryable: false,
        redacted_details: { ...details, ...(code !== undefined ? { cancellation_reason: code } : {}) },
      };
    }
    case 'connection_lost':
      return { ...base, code: 'connector.provider_connection_lost', category: 'temporary', retryable: true, redacted_details: details };
    case 'response_too_large':
      return {
        ...base,
        code: 'connector.provider_response_invalid',
        category: 'internal',
        retryable: false,
        redacted_details: { ...details, reason: 'response_too_large' },
      };
  }
}
