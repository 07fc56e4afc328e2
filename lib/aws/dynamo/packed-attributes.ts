/**
 * Opaque attributes stored packed (docs/table-design.md, "Opaque attributes stored packed"): a JSON value an
 * item holds whole (a result, an envelope, a receipt body, ...) is stored as a Binary attribute, one format byte
 * followed by the value's bytes in that format. AWS's own guidance for large attribute values: compress them and
 * store them as Binary. Only the adapter packs and unpacks (each store mapping, in one place); the domain reads
 * the same records as before.
 *
 * Formats (the first byte of the Binary value):
 * - 0x01 `json-deflate-d1`: raw DEFLATE (node:zlib, level 9) of the value's JSON text, compressed with the preset
 *   dictionary DICTIONARY_V1 below.
 * - 0x02 `hex`: a lower-case hex string of whole bytes (a sha256 digest), stored as its raw bytes: 32 bytes for 64
 *   characters.
 *
 * THE DICTIONARY IS FROZEN. It is part of the stored format: an item packed with it can only be read with exactly
 * the same bytes. A better dictionary is a NEW format byte with its own constant; the reader keeps every format it
 * ever wrote. Never edit DICTIONARY_V1, never reuse a format byte.
 *
 * Reading: a value that is not Binary is read as it is (items written before this change, and values that packed
 * no smaller, are stored plain: migrate on read, nothing backfilled). A Binary value of an unknown format, or one
 * that does not decode, is a typed store error, never a silent wrong value.
 */
import { deflateRawSync, inflateRawSync, constants as zlib } from 'node:zlib';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';

type Item = Record<string, unknown>;

export const PACKED_FORMAT = { jsonDeflateV1: 0x01, hex: 0x02 } as const;

/**
 * Strings our items repeat, the commonest last (DEFLATE reaches the end of the dictionary with the shortest
 * distances). FROZEN: see above. Content: keys and values of action envelopes, results, errors, receipts and their
 * evidence, plans, actors and principals, statuses, modes and receipt events, ID prefixes, the genesis hash.
 */
const DICTIONARY_V1 = Buffer.from(
  [
    '"verified_tenant":"","connector_id":"","connector_instance":"","replica":"","endpoint":"https://","endpoint":"in-process",',
    '"peer_identity":"","peer_did":"did:","version":"1.0.0","manifest_hash":"","policy_revision":"1","credential_revision":"0",',
    '"health_revision":"0","admission_reservation":"att-","fence_token":1,',
    '"service_level":{"timeout_ms":10000,"supports_streaming":false,"supports_retry":true,"supports_cancel":true},',
    '"idempotency":{"contract":{"required":false,"downstream_idempotent":true}},"data":{"redact_pointers":["/',
    '"redaction_required":false,"approval_required":false,"approval_required":true,',
    '"compensation":{"mode":"not_required","mode":"best_effort","mode":"supported","compensation_capability_id":"',
    '"planning_action_id":"pla-","input_hash":"","[REDACTED]"',
    '"transaction_id":true,"capability_id":true,"plan_id":true,"expires_at":"20',
    '"input_snapshot":{"redacted":false,"value":{',
    '"planned_by":{"kind":"agent","id":"',
    '"preview":{"fidelity":"policy_and_schema","handler_invoked":false,"capability_id":"',
    '"input_valid":true,"dry_run":{"plan_id":"plan:txn-',
    '"reconciliation":{"cursor":"20","terminal":true,"evidence":{"provider_status":"succeeded","remote_status":200,',
    '"provider_request_id":"req_","original_commit_completed":true}',
    '"details":{"uncertain_outcome":true,"http_method":"POST","route":"/v1/","request_sent":"maybe","probe":"found"',
    '"connector_operation":"invocation","source":"connector:',
    '"message":"The connection to the provider broke after the request may have been sent; the outcome is uncertain"',
    '"code":"connector.provider_connection_lost","category":"temporary","category":"permanent","category":"validation",',
    '"error":{"retryable":false,"retryable":true,"uncertain_outcome":true,"provider_operation":{"provider":"',
    '"request_id":"req_","operation_id":"op_',
    '"status":"cancelled","status":"requires_human","status":"accepted","status":"running",',
    '"mode":"dry_run","mode":"plan","mode":"commit","mode":"compensate","mode":"execute",',
    '"event":"transaction.dry_run_completed","event":"transaction.planned","event":"transaction.plan_claimed",',
    '"event":"transaction.compensation_started","event":"transaction.reconcile_started","event":"transaction.escalated",',
    '"event":"transaction.settled.outcome_unknown","event":"transaction.settled.reconciled","event":"transaction.settled.compensated",',
    '"event":"transaction.attempt_started","event":"transaction.settled.failed","status":"failed",',
    '"status":"outcome_unknown","status":"reconciling","status":"reconciled","status":"compensating","status":"compensated",',
    '"status":"dry_run_completed","status":"planned","status":"committing",',
    '{"scheme":"aip_runtime_service","issuer":"aip-runtime","scopes":[]}',
    '{"scheme":"bearer_jwt","scopes":["aip:actions:read","aip:actions:write"]}',
    '{"kind":"user","id":"{"kind":"service","id":"aip-runtime"}',
    '"idempotency_key":true,"capability_id":true,"transaction":{"mode":true,"transaction_id":"txn-',
    '"compensation_for":"exe-","plan_id":"plan:txn-',
    '"metadata":{"transaction_id":"txn-","replayed_from":"exe-"},"replayed":true,',
    '"output":{"status":"succeeded","amount":","currency":"',
    '"prev_hash":"0000000000000000000000000000000000000000000000000000000000000000",',
    '"event":"transaction.prepared","status":"prepared","revision":1}',
    '"evidence":{"attempt_id":"att-","operation_id":"op_","action_id":"exe-","fence":1,"provider":"',
    '"actor":{"kind":"agent","id":"","at":"20',
    '"v":2,"prev_hash":"","result_digest":"',
    '"event":"transaction.settled.committed","hash":"","status":"committed","revision":2}',
    '"completed_at":"20","status":"completed"}',
  ].join(''),
  'utf8',
);

const DEFLATE_OPTIONS = { level: 9, memLevel: 9, strategy: zlib.Z_DEFAULT_STRATEGY, dictionary: DICTIONARY_V1 } as const;
const INFLATE_OPTIONS = { dictionary: DICTIONARY_V1 } as const;

const HEX = /^(?:[0-9a-f]{2})+$/;
const UTF8 = new TextEncoder();

/** Bytes a value takes in an item by DynamoDB's size rules (as bench/lib/billing.ts counts them). */
export function storedSize(value: unknown): number {
  if (value === null || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return UTF8.encode(value).length;
  if (typeof value === 'number') {
    const digits = String(Math.abs(value))
      .replace(/[eE].*$/, '')
      .replace('.', '')
      .replace(/^0+/, '')
      .replace(/0+$/, '');
    return Math.ceil(Math.max(1, digits.length) / 2) + 1;
  }
  if (value instanceof Uint8Array) return value.length;
  if (Array.isArray(value)) return 3 + value.reduce((s: number, v) => s + storedSize(v) + 1, 0);
  if (typeof value === 'object') return 3 + Object.entries(value).reduce((s, [k, v]) => s + UTF8.encode(k).length + storedSize(v) + 1, 0);
  return 0;
}

/** Bytes an item takes by DynamoDB's size rules: each attribute's name and value (as bench/lib/billing.ts counts them). */
export function itemSize(item: Item): number {
  return Object.entries(item).reduce((s, [name, value]) => (value === undefined ? s : s + UTF8.encode(name).length + storedSize(value)), 0);
}

function framed(format: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(body.length + 1);
  out[0] = format;
  out.set(body, 1);
  return out;
}

/** The packed bytes of a JSON value: a hex string as raw bytes, anything else as dictionary-deflated JSON. */
export function pack(value: unknown): Uint8Array {
  if (typeof value === 'string' && HEX.test(value)) return framed(PACKED_FORMAT.hex, Buffer.from(value, 'hex'));
  const json = JSON.stringify(value);
  if (json === undefined) throw new AipError('internal.unexpected', 'a packed attribute must hold a JSON value');
  return framed(PACKED_FORMAT.jsonDeflateV1, deflateRawSync(Buffer.from(json, 'utf8'), DEFLATE_OPTIONS));
}

/**
 * True when a map anywhere in the value has an own `__proto__` key (JSON.parse makes one from `{"__proto__": …}`).
 * The SDK's marshall builds each map by assigning its keys to a plain object, where that key sets the prototype
 * instead: stored plain, the key would be lost without an error.
 */
function holdsProtoKey(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return false;
  if (Array.isArray(value)) return value.some(holdsProtoKey);
  return Object.hasOwn(value, '__proto__') || Object.values(value).some(holdsProtoKey);
}

/**
 * The value as an item stores it: packed when that is smaller than the plain value, else as it is, unless the
 * plain value would not survive the SDK's marshalling ({@link holdsProtoKey}): that one is always packed, whole.
 */
export function packed(value: unknown): unknown {
  if (value === undefined || value instanceof Uint8Array) return value;
  const bytes = pack(value);
  return bytes.length < storedSize(value) || holdsProtoKey(value) ? bytes : value;
}

function unreadable(reason: string, format?: number, attribute?: string): AipError {
  return new AipError('internal.unexpected', 'A stored attribute is packed in a format this version cannot read', {
    details: { reason, ...(format !== undefined ? { format } : {}), ...(attribute !== undefined ? { attribute } : {}) },
  });
}

/** The value a stored attribute holds: packed bytes decoded, any other value as it is. */
export function unpack(stored: unknown, attribute?: string): unknown {
  if (!(stored instanceof Uint8Array)) return stored;
  const format = stored[0];
  if (format === PACKED_FORMAT.hex) return Buffer.from(stored.subarray(1)).toString('hex');
  if (format !== PACKED_FORMAT.jsonDeflateV1) throw unreadable('packed_format_unknown', format, attribute);
  let text: string;
  try {
    text = inflateRawSync(stored.subarray(1), INFLATE_OPTIONS).toString('utf8');
  } catch {
    throw unreadable('packed_value_corrupt', format, attribute);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw unreadable('packed_value_corrupt', format, attribute);
  }
}

/** An item with the named attributes packed (each only when smaller). */
export function packAttributes<T extends Item>(item: T, names: ReadonlySet<string>): T {
  const out: Item = { ...item };
  for (const name of names) if (out[name] !== undefined) out[name] = packed(out[name]);
  return out as T;
}

/** An item with the named attributes unpacked (plain values kept as they are). */
export function unpackAttributes<T extends Item>(item: T, names: ReadonlySet<string>): T {
  const out: Item = { ...item };
  for (const name of names) if (out[name] instanceof Uint8Array) out[name] = unpack(out[name], name);
  return out as T;
}

function isMap(value: unknown): value is Item {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/**
 * A map attribute that updates write key by key (a transaction record's `data`: `SET data.<key> = :v`): each of its
 * values packed on its own, only when smaller. The map itself stays a map, so a nested update still names one key.
 */
export function packMapValues(map: unknown): unknown {
  if (!isMap(map)) return map;
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, v === undefined ? v : packed(v)]));
}

/** A map attribute with each packed value decoded (plain values, and maps written before, kept as they are). */
export function unpackMapValues(map: unknown, attribute: string): unknown {
  if (!isMap(map)) return map;
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, v instanceof Uint8Array ? unpack(v, `${attribute}.${k}`) : v]));
}
