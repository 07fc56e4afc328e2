import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { CredentialHandle, credentialHandle } from '../../../packages/connector-sdk/src/index.js';

describe('CredentialHandle', () => {
  it('is opaque: it holds only its ID, which is what logs and JSON show', () => {
    const h = credentialHandle('payments/api_key');
    expect(Object.keys(h)).toEqual(['id']);
    expect(JSON.stringify({ h })).toBe('{"h":"payments/api_key"}');
    expect(`${h}`).toBe('CredentialHandle(payments/api_key)');
    expect(inspect(h)).toBe('CredentialHandle(payments/api_key)');
    expect(Object.isFrozen(h)).toBe(true);
  });

  it('is branded: a look-alike object is not a handle', () => {
    expect(CredentialHandle.is(credentialHandle('a'))).toBe(true);
    expect(CredentialHandle.is({ id: 'a' })).toBe(false);
    expect(credentialHandle('a').equals(CredentialHandle.of('a'))).toBe(true);
  });

  it('rejects an ID outside the protocol ID pattern (e.g. raw material with spaces)', () => {
    let caught: unknown;
    try {
      credentialHandle('Bearer abc def');
    } catch (err) {
      caught = err;
    }
    expect(isAipError(caught, 'credentials.handle_invalid')).toBe(true);
    expect(JSON.stringify((caught as { details: unknown }).details)).not.toContain('abc');
  });
});
