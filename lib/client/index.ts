/**
 * The typed TypeScript client of the AIP HTTPS API. See lib/client/README.md.
 */
export * from './client.js';
export * from './errors.js';
export * from './types.js';
