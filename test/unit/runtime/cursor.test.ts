/**
 * The pagination cursor sealer (lib/runtime/cursor.ts): AES-256-GCM, bound to
 * listing, tenant scope, principal and query; every other cursor is a typed
 * 400 `runtime.cursor_invalid`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { CursorSchema } from '../../../lib/http/schemas.js';
import {
  AesGcmCursorSealer,
  MAX_SEALED_CURSOR_LENGTH,
  SEALED_CURSOR_PREFIX,
  cursorSealerOf,
  parseCursorKeyMaterial,
  type CursorBinding,
} from '../../../lib/runtime/cursor.js';

const KEY = `${'k'.repeat(20)}0123456789abcdefghij`; // 40 characters, fixed
const OTHER_KEY = 'z'.repeat(48);
const sealer = new AesGcmCursorSealer({ current: KEY });

const binding: CursorBinding = { listing: 'operator', tenants: ['demo'], principal: { id: 'ops-1', kind: 'user' }, query: { view: 'outcome_unknown' } };
/** A store cursor as the DynamoDB adapters make it (base64url JSON of a LastEvaluatedKey). */
const RAW = Buffer.from(
  JSON.stringify({ PK: 'TXN#demo#txn-1', SK: 'TXN', GSI3PK: 'STATUS#outcome_unknown', GSI3SK: '2026-01-01T00:00:00.000Z#demo#txn-1' }),
).toString('base64url');

async function refusal(p: Promise<unknown>): Promise<AipError> {
  try {
    await p;
  } catch (err) {
    expect(isAipError(err, 'runtime.cursor_invalid'), String(err)).toBe(true);
    return err as AipError;
  }
  throw new Error('expected runtime.cursor_invalid');
}

describe('seal / open', () => {
  it('round-trips a store cursor for the same binding', async () => {
    const sealed = await sealer.seal(RAW, binding);
    expect(sealed.startsWith(SEALED_CURSOR_PREFIX)).toBe(true);
    expect(sealed).toMatch(/^c1\.[A-Za-z0-9_-]+$/);
    expect(await sealer.open(sealed, binding)).toBe(RAW);
    // Tenant order and absent query fields do not matter.
    expect(await sealer.open(sealed, { ...binding, query: { view: 'outcome_unknown', other: undefined } })).toBe(RAW);
    // Any string, not only base64url.
    const text = 'not base64url: ü {"a":1}';
    expect(await sealer.open(await sealer.seal(text, binding), binding)).toBe(text);
  });

  it('is opaque: nothing of the store cursor or the binding shows, and two seals differ (random IV)', async () => {
    const a = await sealer.seal(RAW, binding);
    const b = await sealer.seal(RAW, binding);
    expect(a).not.toBe(b);
    for (const part of [a, a.slice(SEALED_CURSOR_PREFIX.length)]) {
      for (const encoding of ['base64', 'base64url'] as const) {
        const text = Buffer.from(part, encoding).toString('latin1');
        for (const needle of ['demo', 'TXN', 'STATUS', 'ops-1', 'outcome']) expect(text).not.toContain(needle);
      }
    }
  });

  it('fits the HTTP cursor schema', async () => {
    const sealed = await sealer.seal(RAW, binding);
    expect(CursorSchema.safeParse(sealed).success).toBe(true);
    // The schema's bound is the sealed cursor's maximum length: one character more is refused.
    expect(CursorSchema.safeParse('c'.repeat(MAX_SEALED_CURSOR_LENGTH)).success).toBe(true);
    expect(CursorSchema.safeParse('c'.repeat(MAX_SEALED_CURSOR_LENGTH + 1)).success).toBe(false);
  });

  it('refuses a flipped bit anywhere in the cursor', async () => {
    const sealed = await sealer.seal(RAW, binding);
    const bytes = Buffer.from(sealed.slice(SEALED_CURSOR_PREFIX.length), 'base64url');
    for (let i = 0; i < bytes.length; i++) {
      for (const bit of [0, 3, 7]) {
        const flipped = Buffer.from(bytes);
        flipped[i] = (flipped[i] as number) ^ (1 << bit);
        await refusal(sealer.open(SEALED_CURSOR_PREFIX + flipped.toString('base64url'), binding));
      }
    }
    await refusal(sealer.open(`c2.${sealed.slice(3)}`, binding));
  });

  it('refuses it for another principal, tenant scope, view or listing', async () => {
    const sealed = await sealer.seal(RAW, binding);
    for (const other of [
      { ...binding, principal: { id: 'ops-2', kind: 'user' } },
      { ...binding, principal: { id: 'ops-1', kind: 'agent' } },
      { ...binding, tenants: ['acme'] },
      { ...binding, tenants: ['demo', 'acme'] },
      { ...binding, tenants: [] },
      { ...binding, query: { view: 'reconciling' } },
      { ...binding, query: {} },
      { ...binding, listing: 'approvals' },
    ]) {
      await refusal(sealer.open(sealed, other));
    }
  });

  it('refuses a cursor sealed with another key', async () => {
    const other = new AesGcmCursorSealer({ current: OTHER_KEY });
    await refusal(sealer.open(await other.seal(RAW, binding), binding));
  });

  it('refuses the old unsigned form, and anything that is not a sealed cursor, with the same typed 400', async () => {
    const err = await refusal(sealer.open(RAW, binding));
    expect(err.httpStatus).toBe(400);
    expect(err.details).toEqual({ field: 'cursor' });
    for (const bad of ['', 'c1.', 'c1.AAAA', 'c1.!!!!', `c1.${'A'.repeat(MAX_SEALED_CURSOR_LENGTH)}`, 42, null, undefined, {}, ['c1.x']]) {
      await refusal(sealer.open(bad, binding));
    }
  });

  it('rotation: a cursor sealed under the previous key still opens; one under a retired key does not', async () => {
    const old = new AesGcmCursorSealer({ current: KEY });
    const sealedOld = await old.seal(RAW, binding);
    const rotated = new AesGcmCursorSealer(parseCursorKeyMaterial(JSON.stringify({ current: OTHER_KEY, previous: [KEY] })));
    expect(await rotated.open(sealedOld, binding)).toBe(RAW);
    const sealedNew = await rotated.seal(RAW, binding);
    expect(await new AesGcmCursorSealer({ current: OTHER_KEY }).open(sealedNew, binding)).toBe(RAW);
    await refusal(old.open(sealedNew, binding));
    await refusal(new AesGcmCursorSealer({ current: OTHER_KEY }).open(sealedOld, binding));
  });
});

describe('property: any mutation of a sealed cursor is refused', () => {
  it('replacing, inserting or deleting characters', async () => {
    const sealed = await sealer.seal(RAW, binding);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ';
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), ch: fc.constantFrom(...alphabet) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), ch: fc.constantFrom(...alphabet) }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), ch: fc.constant('') }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (mutations) => {
        let s = sealed;
        for (const m of mutations) {
          const at = m.at % (s.length + (m.kind === 'insert' ? 1 : 0) || 1);
          if (m.kind === 'replace') s = s.slice(0, at) + m.ch + s.slice(at + 1);
          else if (m.kind === 'insert') s = s.slice(0, at) + m.ch + s.slice(at);
          else s = s.slice(0, at) + s.slice(at + 1);
        }
        fc.pre(s !== sealed);
        await refusal(sealer.open(s, binding));
      }),
      { numRuns: 500 },
    );
  });

  it('flipping any bit of the decoded bytes', async () => {
    const sealed = await sealer.seal(RAW, binding);
    const bytes = Buffer.from(sealed.slice(SEALED_CURSOR_PREFIX.length), 'base64url');
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: bytes.length * 8 - 1 }), async (bit) => {
        const flipped = Buffer.from(bytes);
        flipped[bit >> 3] = (flipped[bit >> 3] as number) ^ (1 << (bit & 7));
        await refusal(sealer.open(SEALED_CURSOR_PREFIX + flipped.toString('base64url'), binding));
      }),
      { numRuns: 300 },
    );
  });

  it('round-trips any store cursor and binding', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 600 }),
        fc.array(fc.string({ minLength: 1, maxLength: 20 }), { maxLength: 3 }),
        fc.string({ minLength: 1, maxLength: 20 }),
        async (raw, tenants, id) => {
          const b: CursorBinding = { listing: 'approvals', tenants, principal: { id, kind: 'user' } };
          expect(await sealer.open(await sealer.seal(raw, b), { ...b, tenants: [...tenants].reverse() })).toBe(raw);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('key material', () => {
  it('accepts a generated password or {"current","previous"} JSON, and refuses short keys without echoing them', () => {
    expect(parseCursorKeyMaterial(KEY)).toEqual({ current: KEY });
    expect(parseCursorKeyMaterial(JSON.stringify({ current: KEY, previous: OTHER_KEY }))).toEqual({ current: KEY, previous: [OTHER_KEY] });
    for (const bad of [
      'short-secret-value',
      JSON.stringify({ current: KEY, previous: ['short-secret-value'] }),
      JSON.stringify({ previous: [KEY] }),
      '{not json',
    ]) {
      let message = '';
      try {
        parseCursorKeyMaterial(bad);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^cursor key material: /);
      expect(message).not.toContain('short-secret-value');
    }
    expect(() => new AesGcmCursorSealer({ current: 'too-short' })).toThrow(/at least 32 characters/);
  });

  it('fetches key material once, on first use, and retries a failed fetch', async () => {
    let calls = 0;
    const lazy = new AesGcmCursorSealer(async () => {
      calls += 1;
      if (calls === 1) throw new Error('unavailable');
      return { current: KEY };
    });
    expect(calls).toBe(0);
    await expect(lazy.seal(RAW, binding)).rejects.toThrow('unavailable');
    const sealed = await lazy.seal(RAW, binding);
    expect(await lazy.open(sealed, binding)).toBe(RAW);
    expect(await sealer.open(sealed, binding)).toBe(RAW); // same material, same key
    expect(calls).toBe(2);
  });

  it('without a configured sealer, a Runtime gets one random key per dependency bundle', async () => {
    const deps = {};
    const a = cursorSealerOf(deps);
    expect(cursorSealerOf(deps)).toBe(a);
    await refusal(cursorSealerOf({}).open(await a.seal(RAW, binding), binding));
    expect(cursorSealerOf({ cursors: sealer })).toBe(sealer);
  });
});
