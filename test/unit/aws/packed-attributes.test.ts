/**
 * The codec of opaque attributes stored packed (lib/aws/dynamo/packed-attributes.ts, docs/table-design.md
 * "Opaque attributes stored packed"): lossless round trips, plain values read as they are, packed only when
 * smaller, an unknown or broken format refused with a typed error, the frozen format of version 1 read forever,
 * the size rules the bench bills by, the update builder's guards, and the test helper that decodes stored items
 * for searches.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  PACKED_FORMAT,
  itemSize,
  pack,
  packAttributes,
  packMapValues,
  packed,
  storedSize,
  unpack,
  unpackAttributes,
  unpackMapValues,
} from '../../../lib/aws/dynamo/packed-attributes.js';
import { UpdateBuilder } from '../../../lib/aws/dynamo/update-builder.js';
import { itemSize as billedItemSize, valueSize } from '../../../bench/lib/billing.js';
import { readableItem } from '../../support/packed-items.js';

const asJson = (v: unknown): unknown => JSON.parse(JSON.stringify(v));
const fromHex = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));

const result = {
  status: 'completed',
  output: { operation_id: 'op_3720301f367fc51dc075f3dd', charge_id: 'ch_e684f295e47a98ca7d7c4eab', status: 'succeeded' },
  completed_at: '2026-12-03T11:28:28.031Z',
  metadata: { replayed_from: 'exe-8b8116fd-2b4' },
};
const receipt = {
  actor: { kind: 'service', id: 'aip-runtime' },
  at: '2026-12-03T11:28:21.505Z',
  evidence: { attempt_id: 'att-62d14b39-5027-4b83-b7d1-82c54349f3e6', action_id: 'com-9f242dd7-5e0', fence: 1 },
  v: 2,
  prev_hash: 'cb9ec6fde6a7817a0c233416a2fee1c1270722f3c12f91d82b2ff6f7c81d3c4f',
  result_digest: '577844db8ddf0c3753fc8d81428f5a9fc9bb87b6549c71182ccf0cb155ab9200',
  event: 'transaction.settled.committed',
  hash: '1ea6422851a11dc21a61a441212611545c7c7c75373be399358113bf2ab29fa0',
  status: 'committed',
  revision: 3,
};

function refusal(f: () => unknown): Record<string, unknown> {
  try {
    f();
  } catch (err) {
    expect(isAipError(err)).toBe(true);
    return { code: (err as { code: string }).code, ...(err as { details: Record<string, unknown> }).details };
  }
  throw new Error('expected a refusal');
}

describe('pack and unpack', () => {
  it('round-trips every JSON value exactly as JSON says it', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(unpack(pack(v))).toEqual(asJson(v));
        // Stored plain when no smaller (-0 then stays -0, as DynamoDB's number 0 would read): equal as JSON.
        expect(asJson(unpack(packed(v)))).toEqual(asJson(v));
      }),
      { numRuns: 300 },
    );
  });

  it('stores a hex digest as its raw bytes, and reads it back as the same lower-case hex', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), (bytes) => {
        const hex = Buffer.from(bytes).toString('hex');
        const p = pack(hex);
        expect(p[0]).toBe(PACKED_FORMAT.hex);
        expect(p.length).toBe(bytes.length + 1);
        expect(unpack(p)).toBe(hex);
      }),
    );
    // Not lower-case hex of whole bytes: packed as JSON, read back unchanged.
    for (const s of ['ABCDEF', 'abc', 'sha256:ab', '']) expect(unpack(pack(s))).toBe(s);
    expect(pack('ABCDEF')[0]).toBe(PACKED_FORMAT.jsonDeflateV1);
  });

  it('reads a value that is not Binary as it is (items written before, values that packed no smaller)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(unpack(v)).toBe(v);
      }),
    );
    expect(unpack(undefined)).toBeUndefined();
  });

  it('packs only what gets smaller, by the size rules DynamoDB bills', () => {
    for (const small of [true, null, 7, 'a', {}, [], { ok: true }]) expect(packed(small)).toBe(small);
    for (const big of [result, receipt]) {
      const p = packed(big);
      expect(p).toBeInstanceOf(Uint8Array);
      expect(storedSize(p)).toBeLessThan(storedSize(big) * 0.7);
    }
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        // A map with an own `__proto__` key is stored packed whatever its size (the test after next).
        fc.pre(!JSON.stringify(v ?? null).includes('"__proto__"'));
        expect(storedSize(packed(v))).toBeLessThanOrEqual(storedSize(v));
      }),
    );
  });

  it('sizes values exactly as the bench bills them (bench/lib/billing.ts valueSize), a Binary value by its length', () => {
    const value = fc.oneof(fc.jsonValue(), fc.uint8Array({ minLength: 1, maxLength: 64 }));
    fc.assert(
      fc.property(value, (v) => {
        let av: AttributeValue | undefined;
        try {
          av = marshall({ v }, { removeUndefinedValues: true, convertEmptyValues: false }).v;
        } catch {
          fc.pre(false); // a number the SDK cannot store as a JS number (beyond the safe integers): never stored
        }
        // A map with an own `__proto__` key loses it in marshall (the next test): such a value is never stored plain.
        fc.pre(!JSON.stringify(v ?? null).includes('"__proto__"'));
        if (av !== undefined) expect(storedSize(v)).toBe(valueSize(av));
      }),
    );
  });

  it('stores a value holding an own __proto__ key packed, whatever its size, and reads it back whole (marshall would drop the key)', () => {
    for (const text of ['{"__proto__":0}', '{"a":{"__proto__":{"x":1}}}', '[{"__proto__":null}]', '{"__proto__":[1,2]}']) {
      const value = JSON.parse(text) as unknown;
      // What the SDK would store plain: the key is gone, so the plain value is never an option.
      expect(JSON.stringify(marshall({ v: value }, { removeUndefinedValues: true, convertEmptyValues: false }))).not.toContain('__proto__');
      const stored = packed(value);
      expect(stored).toBeInstanceOf(Uint8Array);
      const back = unpack(stored);
      expect(JSON.stringify(back)).toBe(text);
    }
    // A string value spelled like the key is no map key: a small value stays plain.
    expect(packed({ k: '__proto__' })).toEqual({ k: '__proto__' });
  });

  it('sizes items exactly as the bench bills them (bench/lib/billing.ts itemSize): every name and value', () => {
    // Names with a prefix: never an Object.prototype property name, which the SDK's marshall would refuse.
    const name = fc.string({ maxLength: 12 }).map((n) => `a${n}`);
    const item = fc.dictionary(
      name,
      fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.dictionary(name, fc.string())),
    );
    fc.assert(
      fc.property(item, (i) => {
        expect(itemSize(i)).toBe(billedItemSize(marshall(i, { removeUndefinedValues: true, convertEmptyValues: false })));
      }),
    );
  });

  it('refuses a Binary value of an unknown format, or one that does not decode, with a typed error naming it', () => {
    expect(refusal(() => unpack(Uint8Array.of(0x7f, 1, 2), 'result'))).toMatchObject({
      code: 'internal.unexpected',
      reason: 'packed_format_unknown',
      format: 0x7f,
      attribute: 'result',
    });
    expect(refusal(() => unpack(new Uint8Array(0)))).toMatchObject({ reason: 'packed_format_unknown' });
    expect(refusal(() => unpack(Uint8Array.of(PACKED_FORMAT.jsonDeflateV1, 0xff, 0xff, 0xff)))).toMatchObject({ reason: 'packed_value_corrupt' });
  });

  it('reads version 1 exactly as it was first written (the dictionary is frozen: a change is a new format byte)', () => {
    expect(unpack(fromHex('01abc6268a9c06f2b361e90214b046a606b53a98861b99e91a1ae91a1887181a5a1959581959e819181b4629d50200'))).toEqual({
      status: 'completed',
      output: { ok: true, n: 1250 },
      completed_at: '2026-12-03T11:28:28.031Z',
    });
    expect(unpack(fromHex('01abc6f00bbe24af43b45b213e87ba38318932a8540b00'))).toEqual({
      actor: { kind: 'service', id: 'aip-runtime' },
      event: 'transaction.settled.committed',
      v: 2,
      hash: 'ab'.repeat(32),
    });
    // Strings from the start, the middle and the end of the dictionary.
    expect(unpack(fromHex('01ab56c2ec8a95e81a62f6c60a122b7353f34a8af174ad307b4de8bd171c4d73447bbb166783007f0d84cd6b00'))).toEqual({
      verified_tenant: 't-1',
      connector_id: 'payments',
      endpoint: 'in-process',
      version: '1.0.0',
      fence_token: 1,
      compensation: { mode: 'supported' },
      category: 'temporary',
      event: 'transaction.planned',
      status: 'completed',
    });
  });

  it('packs and unpacks the named attributes of an item only', () => {
    const names = new Set(['result', 'receipt', 'absent']);
    const item = { PK: 'TXN#t#x', SK: 'TXN', status: 'committed', result, receipt };
    const stored = packAttributes(item, names);
    expect(stored.result).toBeInstanceOf(Uint8Array);
    expect(stored.receipt).toBeInstanceOf(Uint8Array);
    expect(stored).not.toHaveProperty('absent');
    expect({ PK: stored.PK, SK: stored.SK, status: stored.status }).toEqual({ PK: 'TXN#t#x', SK: 'TXN', status: 'committed' });
    expect(unpackAttributes(stored, names)).toEqual(item);
    expect(unpackAttributes(item, names)).toEqual(item);
  });
});

describe("a map updated key by key (a record's data): its values packed one by one", () => {
  it('packs each value only when smaller, keeps the map a map, and reads every value back', () => {
    const data = { transaction_context: true, last_reconcile_result: result, reconcile_action_id: 'rec-1', count: 3 };
    const stored = packMapValues(data) as Record<string, unknown>;
    expect(stored.last_reconcile_result).toBeInstanceOf(Uint8Array);
    expect({ a: stored.transaction_context, b: stored.reconcile_action_id, c: stored.count }).toEqual({ a: true, b: 'rec-1', c: 3 });
    expect(unpackMapValues(stored, 'data')).toEqual(data);
    // A map written before (every value plain) reads as it is.
    expect(unpackMapValues(data, 'data')).toEqual(data);
    expect(packMapValues('not a map')).toBe('not a map');
  });

  it('round-trips any map of JSON values', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.stringMatching(/^[a-z_]{1,12}$/), fc.jsonValue()), (raw) => {
        const data = asJson(raw) as Record<string, unknown>;
        expect(asJson(unpackMapValues(packMapValues(data), 'data'))).toEqual(data);
      }),
    );
  });

  it('UpdateBuilder.mergeData sets each key to its stored (packed when smaller) value, and replays it as stored', () => {
    const b = new UpdateBuilder();
    b.mergeData({ last_reconcile_result: result, attempts: 2 });
    const values = Object.values(b.render().ExpressionAttributeValues);
    expect(values.some((v) => v instanceof Uint8Array && JSON.stringify(unpack(v)) === JSON.stringify(result))).toBe(true);
    expect(values).toContain(2);
    const after = b.applyTo({ data: { transaction_context: true } }) as { data: Record<string, unknown> };
    expect(unpackMapValues(after.data, 'data')).toEqual({ transaction_context: true, last_reconcile_result: result, attempts: 2 });
  });
});

describe('UpdateBuilder with packed attributes', () => {
  it('writes a packed attribute whole and packed, and replays it as stored', () => {
    const b = new UpdateBuilder(new Set(['result']));
    b.condition(`${b.n('status')} = ${b.v('running')}`);
    b.set('result', result).set('status', 'completed');
    const r = b.render();
    const stored = Object.values(r.ExpressionAttributeValues).find((v) => v instanceof Uint8Array);
    expect(unpack(stored)).toEqual(result);
    const after = b.applyTo({ status: 'running' }) as Record<string, unknown>;
    expect(after.result).toBeInstanceOf(Uint8Array);
    expect(unpackAttributes(after, new Set(['result']))).toEqual({ status: 'completed', result });
  });

  it('refuses a condition that names a packed attribute, and a nested update of one', () => {
    const b = new UpdateBuilder(new Set(['result', 'data']));
    b.set('result', result);
    expect(refusal(() => b.condition(`attribute_not_exists(${b.n('result')})`))).toMatchObject({ code: 'internal.unexpected' });
    expect(refusal(() => b.mergeData({ a: 1 }))).toMatchObject({ code: 'internal.unexpected' });
    // Another attribute whose placeholder shares a prefix is not mistaken for it.
    for (let i = 0; i < 12; i++) b.n(`a${i}`);
    expect(() => b.condition(`${b.n('a9')} = ${b.v(1)}`)).not.toThrow();
  });
});

describe('readableItem (the search helper of tests that look for planted strings in what was written)', () => {
  it('finds a string planted inside a packed attribute, which a search of the raw item misses', () => {
    const planted = `secret-${'x'.repeat(8)}-4242`;
    const item = packAttributes({ PK: 'ACTION#t#a', SK: 'ACTION', input: { note: planted, pad: 'p'.repeat(200) } }, new Set(['input']));
    const raw = marshall(item);
    expect(JSON.stringify(raw)).not.toContain(planted);
    expect(JSON.stringify(readableItem(raw))).toContain(planted);
    expect(JSON.stringify(readableItem(item))).toContain(planted);
  });

  it('throws on Binary it cannot decode rather than searching it vacuously', () => {
    expect(() => readableItem(marshall({ PK: 'x', blob: Uint8Array.of(0x7f, 1) }))).toThrow();
  });
});
