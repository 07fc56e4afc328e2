import * as z from '../common/zod.js';

/**
 * A provider-local operation reference, checkpointed once the provider has
 * accepted work. Provider and operation ID must be non-empty. These are
 * provider-chosen, so they are not constrained to the protocol ID pattern,
 * only bounded and free of control characters.
 */
export const ProviderOperationRefSchema = z.deferred(() => {
  const token = z.string().check(
    z.minLength(1),
    z.maxLength(512),
    z.regex(/^[^\x00-\x1f\x7f]+$/, { message: 'contains control characters' }),
    z.refine((s) => s.trim().length > 0, { message: 'must not be blank' }),
  );
  return z.strictObject({
    provider: token,
    operation_id: token,
    request_id: z.optional(token),
  });
});
export type ProviderOperationRef = z.infer<typeof ProviderOperationRefSchema>;

/** Opaque reconciliation cursor (connector-defined, never credential material). */
export const ReconciliationCursorSchema = z.string().check(z.minLength(1), z.maxLength(4096));
