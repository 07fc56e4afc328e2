/**
 * The declarative HTTP connector: point it at a REST API with
 * configuration alone. See README.md next to this file.
 */
export * from './config.js';
export * from './connector.js';
export * from '../../../packages/connector-sdk/src/idempotency.js';
/** @public */
export { MappingError, applyMapping, buildRequest, renderTemplate, resolveSource, requestPreview, type BuiltRequest, type MappingScope } from './mapping.js';
/** @public */
export { getPointer, setPointer, parsePointer, parseTemplate, isSafePointer, type TemplatePart } from './pointer.js';
/** @public */
export { TransportFailure, MAX_RESPONSE_BYTES, type ProviderResponse, type ResponseHead } from './transport.js';
/** @public */
export { defaultErrorRule, matchErrorRule, retryAfterMs } from './errors.js';
