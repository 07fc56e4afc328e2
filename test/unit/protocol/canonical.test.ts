import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { canonicalJson, hashJson, planInputHash, sha256Hex, validateAction } from '../../../packages/connector-sdk/src/protocol/index.js';
import { actionArb } from './arbitraries.js';

describe('canonicalJson (RFC 8785)', () => {
  it('sorts keys, drops whitespace and undefined properties', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x', { d: undefined, c: 2 }] })).toBe('{"a":[true,null,"x",{"c":2}],"b":1}');
  });
  it('formats numbers as ECMAScript does', () => {
    expect(canonicalJson([1e21, 1.5, -0, 0.000001, 1e-7])).toBe('[1e+21,1.5,0,0.000001,1e-7]');
  });
  it('is insensitive to key order', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })), (o) => {
        const reversed = Object.fromEntries(Object.entries(o).reverse());
        expect(canonicalJson(reversed)).toBe(canonicalJson(o));
        expect(JSON.parse(canonicalJson(o))).toEqual(JSON.parse(JSON.stringify(o)));
      }),
      { numRuns: 200 },
    );
  });
  it('hashes own keys named __proto__ / constructor as ordinary keys', () => {
    expect(canonicalJson(JSON.parse('{"__proto__":{"a":1},"constructor":2}'))).toBe('{"__proto__":{"a":1},"constructor":2}');
  });
  it('rejects non-JSON values with a typed error', () => {
    for (const v of [Number.NaN, Infinity, () => 1, 1n, new Date(), [undefined], Symbol('s')]) {
      expect(() => canonicalJson(v)).toThrow(AipError);
    }
  });
});

describe('hashing', () => {
  it('sha256Hex matches the known digest of "abc"', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex(new TextEncoder().encode('abc'))).toBe(sha256Hex('abc'));
  });
  it('planInputHash covers capability ID + input only', () => {
    expect(planInputHash('cap', { a: 1 })).toBe(hashJson({ capability_id: 'cap', input: { a: 1 } }));
    expect(planInputHash('cap', { a: 1 })).not.toBe(planInputHash('cap2', { a: 1 }));
    expect(planInputHash('cap', { a: 1 })).not.toBe(planInputHash('cap', { a: 2 }));
  });
  it('planInputHash never depends on Action.transaction, identity, metadata or idempotency key', () => {
    fc.assert(
      fc.property(actionArb, actionArb, (a, b) => {
        const mixed = validateAction({ ...b, id: a.id, capability_id: a.capability_id, input: a.input });
        expect(planInputHash(mixed.capability_id, mixed.input)).toBe(planInputHash(a.capability_id, a.input));
      }),
      { numRuns: 200 },
    );
  });
});
