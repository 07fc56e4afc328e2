/**
 * Hostile input at the HTTP edge: fast-check fuzz against the
 * local stack's API Gateway (dev/local/http-server.ts: the real authorizer
 * and the real handlers over the real Runtime on DynamoDB Local and fauxqs).
 *
 * Every case must answer a 4xx `application/problem+json` of the
 * catalogue's RFC 9457 shape, never a 500, never hang (each request carries
 * an AbortSignal), and write nothing: the table's content is fingerprinted
 * (full Scan) before and after each property and must be identical.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LocalStack } from '../../dev/local/start.js';
import { ProblemSchema } from '../../packages/connector-sdk/src/protocol/problem.js';
import { dynamoClient, recordScenario, reliabilityStack, tableFingerprint } from './support.js';

/** Bound of one request: a hang fails the case instead of the file. */
const REQUEST_TIMEOUT_MS = 20_000;
/**
 * Runs per property; each run sends BATCH requests concurrently (the edge
 * serves them in parallel, and the fuzz gets through thousands of cases in
 * CI time). Sized so the file stays within about a minute on a loaded 2-core machine.
 */
const RUNS = Number(process.env.AIP_FUZZ_RUNS ?? 40);
const BATCH = 8;
const SEED = Number(process.env.AIP_FUZZ_SEED ?? 20261130);

let stack: LocalStack;
let table: string;
let ddb: DynamoDBClient;
let token: string;
const counts: Record<string, number> = {};
const statuses: Record<string, number> = {};

beforeAll(async () => {
  ({ stack, table } = await reliabilityStack('fuzz'));
  ddb = dynamoClient();
  token = await stack.mintToken({
    sub: 'fuzzer',
    tenants: ['demo'],
    scopes: ['aip:actions:read', 'aip:actions:write', 'aip:operator', 'aip:approve'],
    ttl: '2h',
  });
});

afterAll(async () => {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  recordScenario('hostile-input', {
    scenario: 'Hostile input at the HTTP edge',
    cases: total,
    held: [
      'every answer 4xx application/problem+json (RFC 9457, catalogued code)',
      'no 500',
      'no hang (per-request AbortSignal)',
      'table content unchanged (full Scan)',
    ],
    counts: { ...counts, ...Object.fromEntries(Object.entries(statuses).map(([s, n]) => [`status_${s}`, n])) },
  });
  ddb?.destroy();
  await stack?.stop();
});

interface Sent {
  method: string;
  path: string;
  body?: string | Uint8Array;
  contentType?: string;
}

/** Sends one hostile request; returns a failure description or undefined when the answer is a proper 4xx problem. */
async function send(req: Sent): Promise<string | undefined> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (req.body !== undefined) headers['content-type'] = req.contentType ?? 'application/json';
  const res = await fetch(`${stack.url}${req.path}`, {
    method: req.method,
    headers,
    ...(req.body !== undefined ? { body: req.body } : {}),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  const where = `${req.method} ${req.path.slice(0, 120)} → ${res.status}`;
  if (res.status < 400 || res.status >= 500) return `${where}: not a 4xx: ${text.slice(0, 300)}`;
  const type = res.headers.get('content-type') ?? '';
  if (type !== 'application/problem+json') return `${where}: content-type ${type}`;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return `${where}: body is not JSON`;
  }
  const parsed = ProblemSchema.safeParse(json);
  if (!parsed.success) return `${where}: not a problem body: ${text.slice(0, 300)}`;
  if (parsed.data.status !== res.status) return `${where}: problem.status ${parsed.data.status}`;
  return undefined;
}

/** Runs a property of hostile requests, and proves the table is unchanged afterwards. */
async function fuzz(name: string, arb: fc.Arbitrary<Sent>, runs = RUNS): Promise<void> {
  const before = await tableFingerprint(ddb, table);
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(arb, { minLength: BATCH, maxLength: BATCH }), async (reqs) => {
      n += reqs.length;
      const failures = (await Promise.all(reqs.map(send))).filter((f) => f !== undefined);
      if (failures.length > 0) throw new Error(failures.join('\n'));
    }),
    { numRuns: runs, seed: SEED, endOnFailure: true },
  );
  counts[name] = (counts[name] ?? 0) + n;
  const after = await tableFingerprint(ddb, table);
  expect(after.count).toBe(before.count);
  expect(after.digest).toBe(before.digest);
}

// --- generators --------------------------------------------------------------------

const uid = () => `fz-${randomUUID().slice(0, 12)}`;

/** A well-formed charge the fuzzers corrupt one way at a time. */
function validAction(): Record<string, unknown> {
  return { id: uid(), capability_id: 'payments.charge', input: { amount: 100, currency: 'eur', customer: 'cus_fuzz' }, transaction: { mode: 'execute' } };
}

const post = (body: string | Uint8Array, path = '/v1/actions'): Sent => ({ method: 'POST', path, body });

/** Any JSON value, including keys that attack prototypes. */
const hostileKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', ''),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
);
const hostileJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(hostileKey, tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** Serialises so `__proto__` stays an own key of the JSON text (JSON.stringify would keep it too, on own props). */
const text = (v: unknown) => JSON.stringify(v) ?? 'null';

/** Values of a type the field does not have. */
const wrongValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
  fc.string({ maxLength: 20 }),
);

/** Strings that are not IDs (ID_PATTERN: letters, digits and . _ : @ / -). */
const invalidId = fc.oneof(
  fc.constant(''),
  fc.constantFrom(
    ' ',
    'a b',
    '..\\etc\\passwd',
    'a?b',
    'a#b',
    'a\u0000b',
    '%00',
    'id\n',
    '<script>',
    "'; DROP TABLE x; --",
    '\u202e',
    '\ud800',
    '😀',
    'a'.repeat(10_000),
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).filter((s) => /[^A-Za-z0-9._:@/-]/.test(s)),
);

/** Percent-encodes a path segment; a lone surrogate becomes its (invalid) UTF-8 bytes. */
function pathEncode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return `${encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))}%ED%A0%80`;
  }
}

function deepNest(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

// --- properties --------------------------------------------------------------------

describe('hostile input at the HTTP edge', () => {
  it('random JSON values as a submission', async () => {
    await fuzz(
      'random_json',
      hostileJson.map((v) => post(text(v))),
    );
  });

  it('random JSON as an approval decision and a cancel', async () => {
    await fuzz(
      'random_json_other_routes',
      fc.tuple(hostileJson, fc.constantFrom('/v1/approvals/apr-x/decision', `/v1/actions/${uid()}/cancel`)).map(([v, path]) => post(text(v), path)),
      Math.ceil(RUNS / 2),
    );
  });

  it('deeply nested JSON', async () => {
    await fuzz(
      'deep_nesting',
      fc.tuple(fc.integer({ min: 64, max: 100_000 }), fc.constantFrom('array' as const, 'object' as const), fc.boolean()).map(([depth, kind, wrapped]) => {
        const nested = deepNest(depth, kind);
        if (!wrapped) return post(nested);
        const a = validAction();
        return post(text({ ...a, input: '__N__' }).replace('"__N__"', nested));
      }),
      Math.ceil(RUNS / 8),
    );
  });

  it('huge bodies and huge strings', async () => {
    await fuzz(
      'huge',
      fc.oneof(
        // Over the body limit (256 KiB): 413.
        fc
          .integer({ min: 256 * 1024 + 1, max: 2 * 1024 * 1024 })
          .map((n) => post(text({ ...validAction(), input: { amount: 1, currency: 'eur', customer: 'x'.repeat(n) } }))),
        // Under the limit, but strings far beyond any field's maximum.
        fc
          .tuple(fc.constantFrom('id', 'capability_id', 'customer', 'currency', 'idempotency_key'), fc.integer({ min: 5_000, max: 200_000 }))
          .map(([field, n]) => {
            const a = validAction();
            const big = 'é'.repeat(n / 2);
            if (field === 'customer' || field === 'currency') (a.input as Record<string, unknown>)[field] = big;
            else a[field] = big;
            return post(text(a));
          }),
      ),
      Math.ceil(RUNS / 8),
    );
  });

  it('wrong types in every field of an action', async () => {
    const paths = [
      ['id'],
      ['capability_id'],
      ['input'],
      ['transaction'],
      ['transaction', 'mode'],
      ['input', 'amount'],
      ['input', 'currency'],
      ['input', 'customer'],
    ];
    await fuzz(
      'wrong_types',
      fc.tuple(fc.constantFrom(...paths), wrongValue).map(([path, value]) => {
        const a = validAction();
        let target: Record<string, unknown> = a;
        for (const key of path.slice(0, -1)) target = target[key] as Record<string, unknown>;
        const last = path[path.length - 1] as string;
        // Keep only corruptions that change the field's type (a string for a string field is not "wrong").
        const orig = target[last];
        target[last] = typeof value === typeof orig && !Array.isArray(value) && value !== null && typeof value !== 'object' ? [value] : value;
        return post(text(a));
      }),
    );
  });

  it('unknown fields, at the top, in the transaction and in the wrapper', async () => {
    await fuzz(
      'unknown_fields',
      fc
        .tuple(
          fc.string({ minLength: 1, maxLength: 12 }).map((k) => `x_${k}`),
          hostileJson,
          fc.constantFrom('action', 'transaction', 'wrapper'),
        )
        .map(([key, value, where]) => {
          const a = validAction();
          if (where === 'action') return post(text({ ...a, [key]: value }));
          if (where === 'transaction') return post(text({ ...a, transaction: { mode: 'execute', [key]: value } }));
          return post(text({ action: a, transaction_id: uid(), requested_by: { id: 'fuzzer', kind: 'user' }, [key]: value }));
        }),
    );
  });

  it('__proto__ and constructor keys', async () => {
    const evil = fc.constantFrom('__proto__', 'constructor', 'prototype');
    await fuzz(
      'prototype_keys',
      fc
        .tuple(
          evil,
          fc.constantFrom('action', 'transaction', 'wrapper', 'principal'),
          fc.constantFrom('{"polluted":true}', '{"prototype":{"polluted":true}}', '[]', '"x"', 'null'),
        )
        .map(([key, where, value]) => {
          const a = validAction();
          const inject = (json: string) => json.replace(/^\{/, `{"${key}":${value},`);
          if (where === 'action') return post(inject(text(a)));
          if (where === 'transaction') return post(text({ ...a, transaction: '__T__' }).replace('"__T__"', inject(text({ mode: 'execute' }))));
          if (where === 'wrapper') return post(inject(text({ action: a, transaction_id: uid(), requested_by: { id: 'fuzzer', kind: 'user' } })));
          return post(text({ action: a, transaction_id: uid(), requested_by: '__P__' }).replace('"__P__"', inject(text({ id: 'fuzzer', kind: 'user' }))));
        }),
      Math.ceil(RUNS / 4),
    );
    // Nothing polluted the process's prototypes.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('invalid UTF-8 bytes, lone surrogates and control characters', async () => {
    const enc = new TextEncoder();
    await fuzz(
      'invalid_unicode',
      fc.oneof(
        // Raw bytes that are not UTF-8, spliced into a valid action's text.
        fc
          .tuple(
            fc.uint8Array({ minLength: 1, maxLength: 8 }).map((b) => Uint8Array.from(b, (x) => x | 0x80)),
            fc.constantFrom('id', 'customer'),
          )
          .map(([bytes, field]) => {
            const a = validAction();
            const marker = 'MARKER';
            if (field === 'customer') (a.input as Record<string, unknown>).customer = marker;
            else a.id = marker;
            const [head, tail] = text(a).split(marker) as [string, string];
            return {
              method: 'POST',
              path: '/v1/actions',
              body: Uint8Array.from([...enc.encode(head), 0xc3, 0x28, ...bytes, 0xff, ...enc.encode(tail)]),
            } satisfies Sent;
          }),
        // Lone surrogates and NULs as JSON escapes in ID fields.
        fc
          .constantFrom('\\ud800', '\\udfff', '\\u0000', '\\ud800\\ud800', 'a\\udc00b')
          .map((esc) => post(text({ ...validAction(), id: '__I__' }).replace('__I__', esc))),
        // A body that is not JSON at all.
        fc.uint8Array({ minLength: 1, maxLength: 512 }).map((b) => ({ method: 'POST', path: '/v1/actions', body: b }) satisfies Sent),
      ),
    );
  });

  it('invalid IDs in bodies, paths and queries', async () => {
    await fuzz(
      'invalid_ids',
      fc
        .tuple(
          invalidId,
          fc.constantFrom(
            'action_id',
            'capability_id',
            'transaction_id',
            'requested_by',
            'path_get',
            'path_cancel',
            'path_stream',
            'path_decision',
            'query_tx',
          ),
        )
        .map(([bad, where]) => {
          const a = validAction();
          const enc = pathEncode(bad);
          switch (where) {
            case 'action_id':
              return post(text({ ...a, id: bad }));
            case 'capability_id':
              return post(text({ ...a, capability_id: bad }));
            case 'transaction_id':
              return post(text({ action: a, transaction_id: bad, requested_by: { id: 'fuzzer', kind: 'user' } }));
            case 'requested_by':
              return post(text({ action: a, transaction_id: uid(), requested_by: { id: bad, kind: 'user' } }));
            case 'path_get':
              return { method: 'GET', path: `/v1/actions/${enc}` };
            case 'path_cancel':
              return post('{}', `/v1/actions/${enc}/cancel`);
            case 'path_stream':
              return { method: 'GET', path: `/v1/actions/${enc}/stream` };
            case 'path_decision':
              return post(text({ decision: 'approve' }), `/v1/approvals/${enc}/decision`);
            default:
              return { method: 'GET', path: `/v1/transactions?transaction_id=${enc}` };
          }
        }),
    );
  });

  it('conflicting transaction IDs between the wrapper and the action', async () => {
    await fuzz(
      'conflicting_transaction_ids',
      fc.tuple(fc.constantFrom('execute', 'plan', 'commit'), fc.boolean()).map(([mode, samePlan]) => {
        const wrapperTx = uid();
        const actionTx = uid();
        const a = validAction();
        a.transaction =
          mode === 'commit'
            ? { mode, transaction_id: actionTx, plan_id: samePlan ? `plan:${wrapperTx}` : `plan:${actionTx}` }
            : { mode, transaction_id: actionTx };
        return post(text({ action: a, transaction_id: wrapperTx, requested_by: { id: 'fuzzer', kind: 'user' } }));
      }),
      Math.ceil(RUNS / 4),
    );
  });
});
