/**
 * RFC 8785 (JCS) canonical JSON, with no Node.js import: the runtime, the
 * CLI and the operator console (in the browser) canonicalise receipts with
 * this one function.
 */
import canonicalizeModule from 'canonicalize';
import { AipError } from '../errors/aip-error.js';
import { inspectJson } from './json.js';

// `canonicalize` is CommonJS (`module.exports = fn`) with an ESM-style
// `export default` typing; under NodeNext the default import is typed as the
// module record. Accept both runtime shapes (Node ESM interop and bundlers).
type Serialize = (input: unknown) => string | undefined;
const canonicalizeAny = canonicalizeModule as unknown as Serialize | { default: Serialize };
const canonicalize: Serialize = typeof canonicalizeAny === 'function' ? canonicalizeAny : canonicalizeAny.default;

/**
 * RFC 8785 (JCS) canonical JSON. Accepts only plain JSON (objects with
 * `undefined` properties are allowed and those properties are dropped, as in
 * JSON.stringify; own keys such as `__proto__` or `constructor` are hashed
 * like any other key; -0 serializes as 0). Anything else is a programming error in the caller, since
 * values reaching this point have already been validated: it throws
 * AipError('internal.unexpected').
 */
export function canonicalJson(value: unknown): string {
  const problem = inspectJson(value, {
    maxDepth: 64,
    maxNodes: 1_000_000,
    maxSize: 64 * 1_048_576,
    maxStringLength: 16 * 1_048_576,
    rejectForbiddenKeys: false,
  });
  if (problem !== undefined) {
    throw new AipError('internal.unexpected', 'value cannot be canonicalized as JSON', {
      details: { reason: problem.kind },
    });
  }
  const out = canonicalize(value);
  if (out === undefined) throw new AipError('internal.unexpected', 'value cannot be canonicalized as JSON');
  return out;
}
