import * as z from 'zod';
import { IdSchema } from './primitives.js';

export const PRINCIPAL_KINDS = ['user', 'agent', 'service', 'application'] as const;
export const PrincipalKindSchema = z.enum(PRINCIPAL_KINDS);
export type PrincipalKind = z.infer<typeof PrincipalKindSchema>;

/** Who acts: a principal ID and kind. */
export const PrincipalSchema = z.strictObject({
  id: IdSchema,
  kind: PrincipalKindSchema,
});
export type Principal = z.infer<typeof PrincipalSchema>;

/**
 * Identity context carried by an action. The commit recheck compares only
 * presence of the context and `tenant_id` / `external_account_id`; the other
 * fields are retained in the plan's identity snapshot but not compared.
 * The field set is closed (strict): there is no passthrough bag.
 */
export const IdentityContextSchema = z.strictObject({
  tenant_id: IdSchema.optional(),
  external_account_id: IdSchema.optional(),
  organization_id: IdSchema.optional(),
  workspace_id: IdSchema.optional(),
  user_id: IdSchema.optional(),
  session_id: IdSchema.optional(),
});
export type IdentityContext = z.infer<typeof IdentityContextSchema>;
