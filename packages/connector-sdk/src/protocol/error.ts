import * as z from '../common/zod.js';
import { ERROR_CATEGORIES } from '../errors/catalogue.js';
import { JsonObjectSchema } from './json.js';
import { TextSchema } from './primitives.js';
import { ProviderOperationRefSchema } from './provider.js';

/** Stable namespaced error code: `<area>.<reason>[.<more>]`. */
export const ERROR_CODE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/;
export const ErrorCodeSchema = z.string().check(z.maxLength(128), z.regex(ERROR_CODE_PATTERN, { message: 'expected a namespaced code like area.reason' }));

export const ErrorCategorySchema = z.enum(ERROR_CATEGORIES);

/**
 * The wire error. `code` is any namespaced code: runtime codes come from the
 * catalogue, connector codes may be connector-namespaced. `details` must
 * already be redacted (safe for durable audit storage).
 */
export const ProtocolErrorSchema = z.deferred(() =>
  z.strictObject({
    code: ErrorCodeSchema,
    message: TextSchema(2048),
    category: ErrorCategorySchema,
    retryable: z.boolean(),
    retry_after_ms: z.optional(z.int().check(z.gte(0), z.lte(86_400_000))),
    provider_request_id: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
    provider_operation: z.optional(ProviderOperationRefSchema),
    /** Provider protocol status, normally HTTP. */
    remote_status: z.optional(z.int().check(z.gte(0), z.lte(999))),
    /** True when an external effect may have occurred. */
    uncertain_outcome: z.optional(z.boolean()),
    details: z.optional(JsonObjectSchema),
    /** Connector or provider component that produced the failure. */
    source: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  }),
);
export type ProtocolError = z.infer<typeof ProtocolErrorSchema>;
