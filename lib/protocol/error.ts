import * as z from 'zod';
import { ERROR_CATEGORIES } from '../errors/catalogue.js';
import { JsonObjectSchema } from './json.js';
import { TextSchema } from './primitives.js';
import { ProviderOperationRefSchema } from './provider.js';

/** Stable namespaced error code: `<area>.<reason>[.<more>]`. */
export const ERROR_CODE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/;
export const ErrorCodeSchema = z.string().max(128).regex(ERROR_CODE_PATTERN, { message: 'expected a namespaced code like area.reason' });

export const ErrorCategorySchema = z.enum(ERROR_CATEGORIES);

/**
 * The wire error. `code` is any namespaced code: runtime codes come from the
 * catalogue, connector codes may be connector-namespaced. `details` must
 * already be redacted (safe for durable audit storage).
 */
export const ProtocolErrorSchema = z.strictObject({
  code: ErrorCodeSchema,
  message: TextSchema(2048),
  category: ErrorCategorySchema,
  retryable: z.boolean(),
  retry_after_ms: z.number().int().min(0).max(86_400_000).optional(),
  provider_request_id: z.string().min(1).max(512).optional(),
  provider_operation: ProviderOperationRefSchema.optional(),
  /** Provider protocol status, normally HTTP. */
  remote_status: z.number().int().min(0).max(999).optional(),
  /** True when an external effect may have occurred. */
  uncertain_outcome: z.boolean().optional(),
  details: JsonObjectSchema.optional(),
  /** Connector or provider component that produced the failure. */
  source: z.string().min(1).max(200).optional(),
});
export type ProtocolError = z.infer<typeof ProtocolErrorSchema>;
