/**
 * Tenant selection (middy `before`, after callerIdentity).
 *
 * The tenant of a request is chosen from the caller's verified memberships:
 * - `X-AIP-Tenant: <id>` names it; it must be one of the caller's tenants
 *   (403 `auth.tenant_forbidden` otherwise; 400 `request.invalid` if it is not an ID);
 * - without the header, a caller with exactly one tenant uses it;
 * - a caller with several tenants must send the header (400 `auth.tenant_required`)
 *   on routes that need a tenant; on routes where it is optional (operator
 *   listings, capabilities) no tenant is selected and the runtime answers
 *   across the caller's tenants;
 * - a caller with no tenant gets 403 `auth.tenant_forbidden` on routes that need one.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import type { CallerIdentity } from '../../lib/auth/identity.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { TenantRequirement } from '../../lib/http/routes.js';
import { TENANT_HEADER } from '../../lib/http/schemas.js';
import { ID_MAX_LENGTH, ID_PATTERN } from '../../packages/connector-sdk/src/protocol/primitives.js';
import { headerValues, requestState, type AipHttpEvent } from './http.js';

/** Pure selection rule; throws the AipErrors listed above. */
export function selectTenant(caller: CallerIdentity, headerValue: readonly string[], requirement: Exclude<TenantRequirement, 'none'>): string | undefined {
  const named = [...new Set(headerValue.map((v) => v.trim()))];
  if (named.length > 1) {
    throw new AipError('request.invalid', `Send one ${TENANT_HEADER} header`, { details: { location: 'header', header: TENANT_HEADER } });
  }
  const requested = named[0];
  if (requested !== undefined) {
    if (requested.length === 0 || requested.length > ID_MAX_LENGTH || !ID_PATTERN.test(requested)) {
      throw new AipError('request.invalid', `${TENANT_HEADER} is not a valid tenant ID`, { details: { location: 'header', header: TENANT_HEADER } });
    }
    if (!caller.tenants.includes(requested)) throw new AipError('auth.tenant_forbidden');
    return requested;
  }
  if (caller.tenants.length === 1) return caller.tenants[0];
  if (requirement === 'optional') return undefined;
  if (caller.tenants.length === 0) throw new AipError('auth.tenant_forbidden', 'The caller belongs to no tenant');
  throw new AipError('auth.tenant_required');
}

export function tenantSelection(options: { requirement: TenantRequirement }): MiddlewareObj<AipHttpEvent, APIGatewayProxyResult> {
  return {
    name: 'tenantSelection',
    before: (request) => {
      if (options.requirement === 'none') return;
      const state = requestState(request.event);
      if (state.caller === undefined) throw new AipError('auth.unauthenticated');
      const tenant = selectTenant(state.caller, headerValues(request.event, TENANT_HEADER), options.requirement);
      if (tenant !== undefined) state.tenant_id = tenant;
    },
  };
}
