/**
 * Authentication for the HTTP edge: JWT verification (jose), claim mapping
 * presets, the authorizer context contract and IAM policies. See docs/http-api.md.
 */
export * from './identity.js';
export * from './claims.js';
export * from './verifier.js';
export * from './authorizer-context.js';
export * from './policy.js';
export * from './config.js';
export * from './scopes.js';
