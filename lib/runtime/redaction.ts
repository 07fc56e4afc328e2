/**
 * The capability's data contract applied to what the runtime keeps:
 *
 * - `redaction_required`: once an action's outcome is definitive, its raw
 *   input is dropped from the action record (it reads as `{redacted: true,
 *   hash}`), on every path: settled attempts, rejections, cancellations,
 *   previews, the runtime's own reconcile actions, and the original action
 *   once its uncertain outcome was reconciled or resolved. Plans keep only
 *   `{redacted: true, hash}` as the input snapshot.
 * - `redact_pointers` (RFC 6901): the values they point at are replaced by
 *   REDACTED in every stored output (the action result, the transaction
 *   record's result, the idempotency reservation's stored result, the last
 *   reconciliation answer) as soon as it is written, and in the stored input
 *   once the outcome is definitive (until then an attempt or a reconciliation
 *   may still need it), and in a plan's input snapshot. The runtime never
 *   logs inputs or outputs, and receipts carry only a result digest.
 * - `retention_days`: see ./retention.ts.
 *
 * The hashes (input hash, plan hash, result digest) are computed over the
 * values as they were stored, so a redacted copy never changes an identity.
 */
import { parsePointer } from '../connectors/http/pointer.js';
import { FORBIDDEN_KEYS, type ActionResult, type Capability, type JsonObject, type JsonValue } from '../../packages/connector-sdk/src/protocol/index.js';

/** What replaces a redacted value. */
export const REDACTED = '[REDACTED]';

export interface DataPolicy {
  readonly redaction_required: boolean;
  readonly pointers: readonly string[];
  readonly retention_days?: number;
}

export function dataPolicyOf(capability: Pick<Capability, 'data'> | undefined): DataPolicy {
  const data = capability?.data;
  return {
    redaction_required: data?.redaction_required === true,
    pointers: [...(data?.redact_pointers ?? [])],
    ...(data?.retention_days !== undefined ? { retention_days: data.retention_days } : {}),
  };
}

/** A copy of `value` with the values at `pointers` replaced by REDACTED (missing paths are ignored). */
export function redactPointers<T extends JsonValue>(value: T, pointers: readonly string[]): T {
  if (pointers.length === 0 || value === null || typeof value !== 'object') return value;
  const copy = structuredClone(value) as JsonValue;
  for (const pointer of pointers) {
    let tokens: string[];
    try {
      tokens = parsePointer(pointer);
    } catch {
      continue;
    }
    if (tokens.length === 0 || tokens.some((t) => FORBIDDEN_KEYS.has(t))) continue;
    let cur: JsonValue = copy;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i] as string;
      const last = i === tokens.length - 1;
      if (Array.isArray(cur)) {
        if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= cur.length) break;
        if (last) cur[Number(token)] = REDACTED;
        else cur = cur[Number(token)] as JsonValue;
      } else if (cur !== null && typeof cur === 'object') {
        if (!Object.hasOwn(cur, token)) break;
        if (last) (cur as JsonObject)[token] = REDACTED;
        else cur = (cur as JsonObject)[token] as JsonValue;
      } else break;
    }
  }
  return copy as T;
}

/** The result with its output redacted at the pointers (the stored form). */
export function redactResult(result: ActionResult, policy: DataPolicy): ActionResult {
  if (policy.pointers.length === 0 || result.output === undefined) return result;
  return { ...result, output: redactPointers(result.output, policy.pointers) };
}

/**
 * How an action record's input is stored once its outcome is definitive:
 * dropped (`redact_input`), redacted at the pointers (`redacted_input`), or
 * kept (undefined).
 */
export function definitiveInputRedaction(policy: DataPolicy, input: JsonObject): { redact_input: true } | { redacted_input: JsonObject } | undefined {
  if (policy.redaction_required) return { redact_input: true };
  if (policy.pointers.length > 0) return { redacted_input: redactPointers(input, policy.pointers) };
  return undefined;
}
