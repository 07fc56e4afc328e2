/**
 * `@aip-runtime/connector-sdk/errors`: the one error catalogue (stable
 * namespaced codes with category, retryability and HTTP status) and
 * `AipError`, the typed error whose code must be in it.
 */
export * from './catalogue.js';
export * from './aip-error.js';
