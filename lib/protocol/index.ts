/**
 * The AIP protocol model: zod schemas (`XxxSchema`) and inferred types
 * (`Xxx`), the core envelope validator, and canonical hashing helpers.
 * See docs/protocol-model.md.
 */
export * from './primitives.js';
export * from './json.js';
export * from './identity.js';
export * from './provider.js';
export * from './error.js';
export * from './action.js';
export * from './capability.js';
export * from './transaction.js';
export * from './canonical.js';
export * from './validate.js';
