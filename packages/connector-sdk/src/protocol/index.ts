/**
 * The AIP protocol model: zod schemas (`XxxSchema`) and inferred types
 * (`Xxx`), the wire shapes of an error (ProtocolError, the RFC 9457 problem),
 * the core envelope validator, and canonical hashing helpers. It builds on
 * lib/errors (the catalogue and AipError), which imports nothing from here.
 * See docs/protocol-model.md.
 */
export * from './primitives.js';
export * from './json.js';
export * from './identity.js';
export * from './provider.js';
export * from './error.js';
export * from './problem.js';
export * from './action.js';
export * from './capability.js';
export * from './transaction.js';
export * from './stream-chunk.js';
export * from './canonical.js';
export * from './validate.js';
