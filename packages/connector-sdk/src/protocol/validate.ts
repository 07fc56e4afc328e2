import type * as z from '../common/zod.js';
import { AipError } from '../errors/aip-error.js';
import type { ErrorCode } from '../errors/catalogue.js';
import { ActionSchema, type Action } from './action.js';
import { ENVELOPE_LIMITS, inspectJson } from './json.js';
import { TransactionRequestSchema, type TransactionRequest } from './transaction.js';

/** One rendered validation issue: a path and a message that never echoes input values. */
export interface EnvelopeIssue {
  path: string;
  message: string;
}

/** At most this many issues are reported. */
export const MAX_REPORTED_ISSUES = 20;

function safeSegment(seg: PropertyKey): string {
  if (typeof seg === 'number') return String(seg);
  if (typeof seg === 'symbol') return '?';
  // Keys are caller-chosen: keep them short and printable.
  const s = seg.length > 64 ? `${seg.slice(0, 64)}…` : seg;
  return s.replace(/[^A-Za-z0-9._:@/-]/g, '?');
}

/** Renders a path as a JSON Pointer (RFC 6901), sanitized. */
export function renderPath(path: readonly PropertyKey[]): string {
  return path.map((p) => `/${safeSegment(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

function renderMessage(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${issue.expected}`;
    case 'too_big':
      return `too big: at most ${String(issue.maximum)}${issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' items' : ''}`;
    case 'too_small':
      return `too small: at least ${String(issue.minimum)}${issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' items' : ''}`;
    case 'invalid_format':
      // Our regex checks carry our own messages; zod's built-in ones name the format.
      return issue.format === 'regex' ? issue.message : `invalid ${issue.format}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'unrecognized_keys':
      return `unrecognized key(s): ${issue.keys.map(safeSegment).join(', ')}`;
    case 'invalid_union':
      return 'does not match any allowed shape';
    case 'invalid_key':
      return 'invalid key';
    case 'invalid_element':
      return 'invalid element';
    case 'not_multiple_of':
      return `not a multiple of ${String(issue.divisor)}`;
    case 'custom':
      // Custom messages are written by this module's schemas, never from input.
      return issue.message;
    default:
      return 'invalid';
  }
}

/** Renders zod issues as a bounded, value-free list. */
export function renderIssues(issues: readonly z.core.$ZodIssue[]): EnvelopeIssue[] {
  return issues.slice(0, MAX_REPORTED_ISSUES).map((i) => ({ path: renderPath(i.path), message: renderMessage(i) }));
}

/**
 * Structural guard run before any schema: plain JSON only, no forbidden keys,
 * bounded depth and size. Throws a typed AipError.
 */
export function guardEnvelope(input: unknown): void {
  const problem = inspectJson(input);
  if (problem === undefined) return;
  const path = renderPath(problem.path);
  switch (problem.kind) {
    case 'too_deep':
      throw new AipError('envelope.too_deep', undefined, { details: { path, max_depth: ENVELOPE_LIMITS.maxDepth } });
    case 'too_large':
      throw new AipError('envelope.too_large', undefined, {
        details: { path, max_size: ENVELOPE_LIMITS.maxSize, max_nodes: ENVELOPE_LIMITS.maxNodes },
      });
    case 'forbidden_key':
      throw new AipError('envelope.forbidden_key', undefined, { details: { path } });
    case 'not_json':
      throw new AipError('envelope.invalid', undefined, { details: { issues: [{ path, message: `not plain JSON (${problem.reason})` }] } });
  }
}

/**
 * Parses an envelope that already passed guardEnvelope. The value is first
 * detached from the caller through a JSON round trip (bounded by the guard's
 * size limit), so the returned envelope shares no objects with the input and
 * later caller mutation cannot change what was validated or hashed.
 */
function parseOrThrow<T>(schema: z.ZodMiniType<T>, input: unknown): T {
  let result: z.core.util.SafeParseResult<T>;
  try {
    result = schema.safeParse(JSON.parse(JSON.stringify(input)) as unknown);
  } catch {
    throw new AipError('envelope.invalid', undefined, { details: { issues: [{ path: '', message: 'could not be validated' }] } });
  }
  if (!result.success) {
    throw new AipError('envelope.invalid', undefined, { details: { issues: renderIssues(result.error.issues) } });
  }
  return result.data;
}

function rule(code: ErrorCode, path: string, message?: string): AipError {
  return new AipError(code, message, { details: { path } });
}

/** The public transaction rules of the core message validator. */
function applyActionRules(action: Action, base: string): void {
  const tx = action.transaction;
  if (tx === undefined) return;
  if (tx.mode === 'commit' && tx.plan_id === undefined) {
    throw rule('envelope.commit_requires_plan_id', `${base}/transaction/plan_id`);
  }
  if (tx.mode === 'compensate' && tx.compensation_for === undefined) {
    throw rule('envelope.compensate_requires_compensation_for', `${base}/transaction/compensation_for`);
  }
}

/**
 * Core envelope validator for an Action. Every failure is an AipError with a
 * catalogued 4xx code; no input value is echoed. Returns a detached copy
 * that shares no objects with the caller's value.
 */
export function validateAction(input: unknown): Action {
  guardEnvelope(input);
  const action = parseOrThrow(ActionSchema, input);
  applyActionRules(action, '');
  return action;
}

/**
 * Core envelope validator for a TransactionRequest. Applies the same commit
 * rule as validateAction to the wrapped action (a commit inside a
 * TransactionRequest needs a plan_id too), requires a transaction context
 * on the wrapped action, and requires the wrapper and action transaction IDs
 * to match when both are present. Use `transactionRequestAction` to get the
 * action with the wrapper transaction ID copied in.
 */
export function validateTransactionRequest(input: unknown): TransactionRequest {
  guardEnvelope(input);
  const req = parseOrThrow(TransactionRequestSchema, input);
  const tx = req.action.transaction;
  if (tx === undefined) throw rule('envelope.transaction_context_required', '/action/transaction');
  applyActionRules(req.action, '/action');
  if (tx.transaction_id !== undefined && tx.transaction_id !== req.transaction_id) {
    throw rule('envelope.transaction_id_mismatch', '/action/transaction/transaction_id');
  }
  return req;
}

/**
 * The action a TransactionRequest governs: when the action omits the
 * transaction ID, the wrapper's value is copied in (the request must already
 * be validated).
 */
export function transactionRequestAction(req: TransactionRequest): Action {
  const tx = req.action.transaction;
  if (tx === undefined) throw rule('envelope.transaction_context_required', '/action/transaction');
  if (tx.transaction_id !== undefined) return req.action;
  return { ...req.action, transaction: { ...tx, transaction_id: req.transaction_id } };
}
