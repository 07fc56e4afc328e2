import middy from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { callerIdentity } from '../../../functions/shared/caller-identity.js';
import { httpErrorHandler } from '../../../functions/shared/error-handler.js';
import type { AipHttpEvent } from '../../../functions/shared/http.js';
import type { TenantRequirement } from '../../../lib/http/routes.js';
import { selectTenant, tenantSelection } from '../../../functions/shared/tenant.js';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { ALICE, expectProblem, lambdaContext, proxyEvent } from './support.js';

const MULTI: CallerIdentity = { ...ALICE, tenants: ['acme', 'globex'] };
const NONE: CallerIdentity = { ...ALICE, tenants: [] };

function code(fn: () => unknown): string | undefined {
  try {
    return String(fn());
  } catch (e) {
    if (e instanceof AipError) return e.code;
    throw e;
  }
}

describe('selectTenant', () => {
  it('uses the only tenant without a header', () => {
    expect(selectTenant(ALICE, [], 'required')).toBe('acme');
    expect(selectTenant(ALICE, [], 'optional')).toBe('acme');
  });
  it('uses the header when it names one of the caller’s tenants', () => {
    expect(selectTenant(MULTI, ['globex'], 'required')).toBe('globex');
    expect(selectTenant(MULTI, [' globex '], 'optional')).toBe('globex');
    expect(selectTenant(ALICE, ['acme', 'acme'], 'required')).toBe('acme');
  });
  it('refuses a tenant the caller does not belong to (403)', () => {
    expect(code(() => selectTenant(ALICE, ['globex'], 'required'))).toBe('auth.tenant_forbidden');
    expect(code(() => selectTenant(MULTI, ['initech'], 'optional'))).toBe('auth.tenant_forbidden');
  });
  it('requires the header from a caller of several tenants where a tenant is needed (400)', () => {
    expect(code(() => selectTenant(MULTI, [], 'required'))).toBe('auth.tenant_required');
    expect(selectTenant(MULTI, [], 'optional')).toBeUndefined();
  });
  it('refuses a caller with no tenant where one is needed', () => {
    expect(code(() => selectTenant(NONE, [], 'required'))).toBe('auth.tenant_forbidden');
    expect(selectTenant(NONE, [], 'optional')).toBeUndefined();
  });
  it('refuses malformed and conflicting headers (400)', () => {
    expect(code(() => selectTenant(MULTI, ['acme', 'globex'], 'required'))).toBe('request.invalid');
    expect(code(() => selectTenant(MULTI, ['ac me'], 'required'))).toBe('request.invalid');
    expect(code(() => selectTenant(MULTI, [''], 'required'))).toBe('request.invalid');
  });
});

describe('tenantSelection middleware', () => {
  function run(caller: CallerIdentity, headers: Record<string, string>, requirement: TenantRequirement) {
    let tenant: unknown = 'unset';
    const h = middy<AipHttpEvent, APIGatewayProxyResult>(async (event: AipHttpEvent) => {
      tenant = event.aip?.tenant_id;
      return { statusCode: 204, body: '' };
    })
      .use(httpErrorHandler())
      .use(callerIdentity())
      .use(tenantSelection({ requirement }));
    return h(proxyEvent({ caller, headers }), lambdaContext()).then((res) => ({ res, tenant }));
  }

  it('reads X-AIP-Tenant case-insensitively', async () => {
    expect((await run(MULTI, { 'x-aip-tenant': 'globex' }, 'required')).tenant).toBe('globex');
  });
  it('answers problems', async () => {
    expectProblem((await run(MULTI, {}, 'required')).res, 400, 'auth.tenant_required');
    expectProblem((await run(ALICE, { 'X-AIP-Tenant': 'globex' }, 'required')).res, 403, 'auth.tenant_forbidden');
  });
  it('does nothing when the route takes no tenant', async () => {
    expect((await run(MULTI, { 'X-AIP-Tenant': 'nope' }, 'none')).tenant).toBeUndefined();
  });
});
