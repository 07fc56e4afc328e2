import * as z from '../common/zod.js';
import { IdSchema } from './primitives.js';

export const PRINCIPAL_KINDS = ['user', 'agent', 'service', 'application'] as const;
export const PrincipalKindSchema = z.enum(PRINCIPAL_KINDS);
export type PrincipalKind = z.infer<typeof PrincipalKindSchema>;

/** Who acts: a principal ID and kind. */
export const PrincipalSchema = z.deferred(() =>
  z.strictObject({
    id: IdSchema,
    kind: PrincipalKindSchema,
  }),
);
export type Principal = z.infer<typeof PrincipalSchema>;

/**
 * Identity context carried by an action. The commit recheck compares only
 * presence of the context and `tenant_id` / `external_account_id`; the other
 * fields are retained in the plan's identity snapshot but not compared.
 * The field set is closed (strict): there is no passthrough bag.
 */
export const IdentityContextSchema = z.deferred(() =>
  z.strictObject({
    tenant_id: z.optional(IdSchema),
    external_account_id: z.optional(IdSchema),
    organization_id: z.optional(IdSchema),
    workspace_id: z.optional(IdSchema),
    user_id: z.optional(IdSchema),
    session_id: z.optional(IdSchema),
  }),
);
export type IdentityContext = z.infer<typeof IdentityContextSchema>;
