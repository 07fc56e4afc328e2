/**
 * The declarative HTTP connector: point it at a REST API with
 * configuration alone. See README.md next to this file.
 */
export * from './config.js';
export * from './connector.js';
// The downstream idempotency key derivation is the SDK's (every connector uses it), re-exported for the HTTP connector's users.
export {
  IDEMPOTENCY_DERIVATION_VERSION,
  deriveIdempotencyKey,
  downstreamIdempotencyKey,
  originalIdempotencyKey,
  type IdempotencyIdentity,
} from '@aip-runtime/connector-sdk';
/** @public */
export { MappingError, applyMapping, buildRequest, renderTemplate, resolveSource, requestPreview, type BuiltRequest, type MappingScope } from './mapping.js';
/** @public */
export { getPointer, setPointer, parsePointer, parseTemplate, isSafePointer, type TemplatePart } from './pointer.js';
/** @public */
export { TransportFailure, MAX_RESPONSE_BYTES, RequestHeaders, type ProviderResponse, type ResponseHead } from './transport.js';
/** @public */
export {
  nodeProviderFetch,
  type HeaderReader,
  type ProviderFetch,
  type ProviderFetchInit,
  type ProviderFetchResponse,
  type ResponseBody,
} from './provider-fetch.js';
/** @public */
export { defaultErrorRule, matchErrorRule, retryAfterMs } from './errors.js';
