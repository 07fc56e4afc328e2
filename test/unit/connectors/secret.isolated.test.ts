import { Console } from 'node:console';
import { Writable } from 'node:stream';
import { format, inspect } from 'node:util';
import { describe, expect, it, vi } from 'vitest';

const calls = vi.hoisted(() => ({ timingSafeEqual: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      calls.timingSafeEqual += 1;
      return real.timingSafeEqual(a, b);
    },
  };
});

const { isAipError } = await import('../../../packages/connector-sdk/src/errors/aip-error.js');
const { ConnectorFailure, ConnectorSecret, REDACTED } = await import('../../../packages/connector-sdk/src/index.js');

const MATERIAL = 'sk_live_51SuperSecretMaterial';

function captureConsole(fn: (c: Console) => void): string {
  let out = '';
  const sink = new Writable({
    write(chunk, _enc, cb) {
      out += String(chunk);
      cb();
    },
  });
  fn(new Console({ stdout: sink, stderr: sink }));
  return out;
}

describe('ConnectorSecret', () => {
  it('cannot be serialized: JSON.stringify throws a typed error', () => {
    const s = ConnectorSecret.fromUtf8(MATERIAL);
    let caught: unknown;
    try {
      JSON.stringify({ nested: { s } });
    } catch (err) {
      caught = err;
    }
    expect(isAipError(caught, 'credentials.secret_not_serializable')).toBe(true);
    expect(String((caught as Error).message)).not.toContain(MATERIAL);
  });

  it('cannot be structured-cloned (DataCloneError)', () => {
    const s = ConnectorSecret.fromUtf8(MATERIAL);
    expect(() => structuredClone(s)).toThrow(expect.objectContaining({ name: 'DataCloneError' }));
    expect(() => structuredClone({ wrapper: s })).toThrow(expect.objectContaining({ name: 'DataCloneError' }));
  });

  it('renders as [REDACTED] in toString, String(), template strings, concatenation, util.inspect, util.format and console.log', () => {
    const s = ConnectorSecret.fromUtf8(MATERIAL);
    expect(REDACTED).toBe('[REDACTED]');
    expect(s.toString()).toBe(REDACTED);
    expect(String(s)).toBe(REDACTED);
    expect(`${s}`).toBe(REDACTED);
    // biome-ignore lint/style/useTemplate: this line tests `+` concatenation (ToPrimitive with the default hint), which a template literal would not
    expect('k=' + s).toBe('k=[REDACTED]');
    expect(inspect(s)).toBe(REDACTED);
    expect(inspect({ s }, { depth: 5, showHidden: true })).not.toContain(MATERIAL);
    expect(format('%s %o %O', s, s, { s })).not.toContain(MATERIAL);
    const logged = captureConsole((c) => {
      c.log(s);
      c.log({ credential: s });
      c.error('secret: %s', s);
      c.dir(s, { showHidden: true, depth: 5 });
    });
    expect(logged).toContain(REDACTED);
    expect(logged).not.toContain(MATERIAL);
    expect(Object.keys(s)).not.toContain('bytes');
    expect(JSON.stringify(Object.entries(s).map(([k]) => k))).not.toContain(MATERIAL);
  });

  it('exposes material only through scoped accessors', () => {
    const s = ConnectorSecret.fromUtf8(MATERIAL);
    expect(s.withUtf8((t) => t === MATERIAL)).toBe(true);
    expect(s.withBytes((b) => b.byteLength)).toBe(new TextEncoder().encode(MATERIAL).byteLength);
  });

  it('compares equal-length material with crypto.timingSafeEqual and different lengths as unequal without it', () => {
    const a = ConnectorSecret.fromUtf8('abcdef');
    const b = ConnectorSecret.fromUtf8('abcdef');
    const c = ConnectorSecret.fromUtf8('abcdeg');
    const d = ConnectorSecret.fromUtf8('abc');
    calls.timingSafeEqual = 0;
    expect(a.equals(b)).toBe(true);
    expect(a.equals(c)).toBe(false);
    expect(calls.timingSafeEqual).toBe(2);
    expect(a.equals(d)).toBe(false);
    expect(calls.timingSafeEqual).toBe(2);
  });

  it('zeroes the underlying buffer on dispose and throws on any later use', () => {
    const buffer = new TextEncoder().encode(MATERIAL);
    const s = ConnectorSecret.fromBytes(buffer);
    let leakedView: Uint8Array | undefined;
    s.withBytes((b) => {
      leakedView = b;
    });
    s.dispose();
    expect(s.disposed).toBe(true);
    expect(buffer.every((x) => x === 0)).toBe(true);
    expect(leakedView?.every((x) => x === 0)).toBe(true);
    for (const use of [
      () => s.withBytes(() => 1),
      () => s.withUtf8(() => 1),
      () => s.equals(ConnectorSecret.fromUtf8('x')),
      () => ConnectorSecret.fromUtf8('x').equals(s),
    ]) {
      let caught: unknown;
      try {
        use();
      } catch (err) {
        caught = err;
      }
      expect(isAipError(caught, 'credentials.secret_disposed')).toBe(true);
    }
    expect(() => s.dispose()).not.toThrow();
  });

  it('zeroes its bytes at the end of a `using` block', () => {
    const buffer = new TextEncoder().encode(MATERIAL);
    {
      using s = ConnectorSecret.fromBytes(buffer);
      expect(s.withUtf8((t) => t.length)).toBe(MATERIAL.length);
    }
    expect(buffer.every((x) => x === 0)).toBe(true);
  });

  it('treats empty material as a typed connector failure', () => {
    for (const make of [
      () => ConnectorSecret.fromUtf8(''),
      () => ConnectorSecret.fromBytes(new Uint8Array(0), { operation: 'transaction_commit', source: 'credentials:test' }),
    ]) {
      let caught: unknown;
      try {
        make();
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ConnectorFailure);
      expect((caught as InstanceType<typeof ConnectorFailure>).code).toBe('connector.credentials_unavailable');
    }
  });

  it('is recognised nominally, not by shape', () => {
    expect(ConnectorSecret.is(ConnectorSecret.fromUtf8('x'))).toBe(true);
    expect(ConnectorSecret.is({ not_serializable: Symbol('x'), withBytes: () => 1 })).toBe(false);
  });
});
