/**
 * Sealed pagination cursors for the listings a caller pages through
 * (`listOperator`, `listApprovals`).
 *
 * The stores page with their own cursors (base64url JSON of DynamoDB keys,
 * lib/aws/dynamo/pagination.ts). Those name other tenants' records (the
 * status index is global per status) and are trivially forged, so they never
 * leave the runtime as they are: `seal` encrypts a store cursor with
 * AES-256-GCM and binds it to the listing it came from, and `open` gives it
 * back only to that listing.
 *
 * - Wire form: `c1.` + base64url(iv (12 random bytes) | ciphertext | tag (16 bytes)).
 *   The plaintext is the store cursor (its bytes when it is canonical
 *   base64url, which the DynamoDB adapters' cursors are, else its UTF-8),
 *   behind a one-byte form flag.
 * - Binding (the GCM additional authenticated data, canonical JSON): the
 *   listing name, the tenant scope (the selected tenant, or the caller's
 *   sorted tenants), the principal (id and kind) and the query fields that
 *   define the listing (e.g. the operator view). Limits are not bound: a
 *   caller may change its page size between pages.
 * - Key: HKDF-SHA256 of the deployment's key material (any string of at least
 *   32 characters, e.g. a Secrets Manager generated password). Material may
 *   also be JSON `{"current": "...", "previous": ["..."]}`: cursors are sealed
 *   with `current` and opened with any of them (rotation without breaking the
 *   cursors callers hold).
 * - `open` throws `runtime.cursor_invalid` (400) for anything that is not a
 *   cursor this deployment sealed for this binding: tampered, truncated,
 *   another principal's, another tenant scope's, another query's, another
 *   listing's, an old unsigned cursor, a cursor sealed under a retired key.
 *   The refusal says nothing about which check failed.
 *
 * No AWS SDK here: the composition root fetches the material
 * (functions/shared/compose-runtime.ts) and hands a sealer to the Runtime
 * (`RuntimeDeps.cursors`).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { canonicalJson } from '../../packages/connector-sdk/src/protocol/index.js';

/** Version prefix of the sealed form. */
export const SEALED_CURSOR_PREFIX = 'c1.';
/** Longest sealed cursor accepted (and the HTTP schemas' `cursor` bound, lib/http/schemas.ts). */
export const MAX_SEALED_CURSOR_LENGTH = 4096;
/** Shortest key material accepted (characters). */
export const MIN_CURSOR_KEY_MATERIAL_LENGTH = 32;

const IV_BYTES = 12;
const TAG_BYTES = 16;
const FORM_UTF8 = 0x00;
const FORM_BASE64URL = 0x01;
const HKDF_SALT = Buffer.from('aip-runtime/pagination-cursor', 'utf8');
const HKDF_INFO = Buffer.from('c1 aes-256-gcm', 'utf8');

/** What a cursor is bound to: it opens only for the same listing, tenant scope, principal and query. */
export interface CursorBinding {
  /** The listing, e.g. `operator` or `approvals`. */
  readonly listing: string;
  /** The tenant scope of the listing: the selected tenant, or every tenant of the caller. Order does not matter. */
  readonly tenants: readonly string[];
  readonly principal: { readonly id: string; readonly kind: string };
  /** The query fields that define the listing (undefined fields are left out). */
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
}

export interface CursorSealer {
  /** The opaque form of a store cursor, bound to `binding`. */
  seal(raw: string, binding: CursorBinding): Promise<string>;
  /** The store cursor sealed for `binding`; anything else throws `runtime.cursor_invalid`. */
  open(sealed: unknown, binding: CursorBinding): Promise<string>;
}

/** Key material: the current one seals and opens, previous ones only open. */
export interface CursorKeyMaterial {
  readonly current: string;
  readonly previous?: readonly string[];
}

/** The typed refusal of a cursor (never says which check failed). */
export function cursorInvalid(): AipError {
  return new AipError('runtime.cursor_invalid', undefined, { details: { field: 'cursor' } });
}

/**
 * Reads key material as stored in a secret: a plain string (one key), or
 * JSON `{"current": "...", "previous": ["..."]}` (`previous` may also be a
 * single string). Throws (naming the problem, never the value) when a key is
 * shorter than {@link MIN_CURSOR_KEY_MATERIAL_LENGTH}.
 */
export function parseCursorKeyMaterial(secret: string): CursorKeyMaterial {
  let material: CursorKeyMaterial;
  const text = secret.trim();
  if (text.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error('cursor key material: not valid JSON');
    }
    const o = parsed as { current?: unknown; previous?: unknown };
    const previous = o.previous === undefined ? [] : Array.isArray(o.previous) ? o.previous : [o.previous];
    if (typeof o.current !== 'string' || previous.some((p) => typeof p !== 'string')) {
      throw new Error('cursor key material: JSON must be {"current": string, "previous"?: string | string[]}');
    }
    material = { current: o.current, previous: previous as string[] };
  } else {
    material = { current: text };
  }
  for (const key of [material.current, ...(material.previous ?? [])]) {
    if (key.length < MIN_CURSOR_KEY_MATERIAL_LENGTH)
      throw new Error(`cursor key material: every key needs at least ${MIN_CURSOR_KEY_MATERIAL_LENGTH} characters`);
  }
  return material;
}

/** The AES-256 key of a key material string (HKDF-SHA256). */
function deriveKey(material: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(material, 'utf8'), HKDF_SALT, HKDF_INFO, 32));
}

/** The additional authenticated data of a binding (canonical JSON). */
export function bindingBytes(binding: CursorBinding): Buffer {
  const query: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(binding.query ?? {})) if (v !== undefined) query[k] = v;
  return Buffer.from(
    canonicalJson({
      v: 1,
      listing: binding.listing,
      tenants: [...new Set(binding.tenants)].sort(),
      principal: { id: binding.principal.id, kind: binding.principal.kind },
      query,
    }),
    'utf8',
  );
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Bytes of a canonical base64url string (re-encoding gives the same string), else undefined. */
function canonicalBase64url(text: string): Buffer | undefined {
  if (text.length === 0 || !BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

interface Keys {
  readonly seal: Buffer;
  /** Current first, then previous ones. */
  readonly open: readonly Buffer[];
}

/**
 * The AES-256-GCM sealer. `source` is the key material, or a function that
 * fetches it (called once, on first use; a failed fetch is retried by the
 * next call, and its error propagates as is: it is not a bad cursor).
 */
export class AesGcmCursorSealer implements CursorSealer {
  readonly #source: CursorKeyMaterial | (() => Promise<CursorKeyMaterial>);
  #keys: Promise<Keys> | undefined;

  constructor(source: CursorKeyMaterial | (() => Promise<CursorKeyMaterial>)) {
    if (typeof source !== 'function') AesGcmCursorSealer.#derive(source); // fail fast on bad material
    this.#source = source;
  }

  static #derive(material: CursorKeyMaterial): Keys {
    for (const key of [material.current, ...(material.previous ?? [])]) {
      if (typeof key !== 'string' || key.length < MIN_CURSOR_KEY_MATERIAL_LENGTH) {
        throw new Error(`cursor key material: every key needs at least ${MIN_CURSOR_KEY_MATERIAL_LENGTH} characters`);
      }
    }
    const seal = deriveKey(material.current);
    return { seal, open: [seal, ...(material.previous ?? []).map(deriveKey)] };
  }

  #resolve(): Promise<Keys> {
    if (this.#keys === undefined) {
      const source = this.#source;
      const attempt = (async () => AesGcmCursorSealer.#derive(typeof source === 'function' ? await source() : source))();
      this.#keys = attempt;
      attempt.catch(() => {
        if (this.#keys === attempt) this.#keys = undefined;
      });
    }
    return this.#keys;
  }

  async seal(raw: string, binding: CursorBinding): Promise<string> {
    const keys = await this.#resolve();
    const bytes = canonicalBase64url(raw);
    const plaintext = bytes !== undefined ? Buffer.concat([Buffer.of(FORM_BASE64URL), bytes]) : Buffer.concat([Buffer.of(FORM_UTF8), Buffer.from(raw, 'utf8')]);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', keys.seal, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(bindingBytes(binding));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const sealed = SEALED_CURSOR_PREFIX + Buffer.concat([iv, ciphertext, cipher.getAuthTag()]).toString('base64url');
    // Unreachable with the stores' cursors (DynamoDB keys of protocol IDs); a cursor the caller could not send back is a bug.
    if (sealed.length > MAX_SEALED_CURSOR_LENGTH) throw new Error(`sealed cursor longer than ${MAX_SEALED_CURSOR_LENGTH} characters`);
    return sealed;
  }

  async open(sealed: unknown, binding: CursorBinding): Promise<string> {
    if (typeof sealed !== 'string' || sealed.length > MAX_SEALED_CURSOR_LENGTH || !sealed.startsWith(SEALED_CURSOR_PREFIX)) throw cursorInvalid();
    const bytes = canonicalBase64url(sealed.slice(SEALED_CURSOR_PREFIX.length));
    if (bytes === undefined || bytes.length < IV_BYTES + 1 + TAG_BYTES) throw cursorInvalid();
    const keys = await this.#resolve();
    const iv = bytes.subarray(0, IV_BYTES);
    const ciphertext = bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES);
    const tag = bytes.subarray(bytes.length - TAG_BYTES);
    const aad = bindingBytes(binding);
    for (const key of keys.open) {
      let plaintext: Buffer;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad);
        decipher.setAuthTag(tag);
        plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
      } catch {
        continue; // not this key (or not authentic): try the next one
      }
      const form = plaintext[0];
      const body = plaintext.subarray(1);
      if (form === FORM_BASE64URL && body.length > 0) return body.toString('base64url');
      if (form === FORM_UTF8) {
        const text = body.toString('utf8');
        if (text.length > 0 && Buffer.from(text, 'utf8').equals(body)) return text;
      }
      throw cursorInvalid();
    }
    throw cursorInvalid();
  }
}

/** A sealer with a fresh random key: cursors open only in this process (tests, a single local process). */
export function ephemeralCursorSealer(): CursorSealer {
  return new AesGcmCursorSealer({ current: randomBytes(32).toString('base64url') });
}

const DEFAULT_SEALERS = new WeakMap<object, CursorSealer>();

/**
 * The sealer of a Runtime's dependencies: `deps.cursors`, else one ephemeral
 * sealer per dependency bundle (the production composition always passes one,
 * functions/shared/compose-runtime.ts).
 */
export function cursorSealerOf(deps: { readonly cursors?: CursorSealer | undefined }): CursorSealer {
  if (deps.cursors !== undefined) return deps.cursors;
  let sealer = DEFAULT_SEALERS.get(deps);
  if (sealer === undefined) {
    sealer = ephemeralCursorSealer();
    DEFAULT_SEALERS.set(deps, sealer);
  }
  return sealer;
}
