import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { ProblemSchema } from '../../../packages/connector-sdk/src/protocol/problem.js';
import {
  GATEWAY_RESPONSE_TYPES,
  GATEWAY_RESPONSES,
  gatewayProblem,
  gatewayResponse,
  gatewayResponseHeaders,
  gatewayResponseTemplate,
  type GatewayResponseType,
} from '../../../lib/http/gateway-responses.js';

describe('gateway responses', () => {
  it('are valid problem documents whose status is the catalogue’s', () => {
    for (const spec of GATEWAY_RESPONSES) {
      const problem = ProblemSchema.parse(gatewayProblem(spec));
      expect(problem.status).toBe(spec.status);
      expect(ERROR_CATALOGUE[spec.code].http).toBe(spec.status);
      expect(JSON.parse(gatewayResponseTemplate(spec))).toEqual(problem);
    }
  });

  it('have single-quoted header mapping values for the stack', () => {
    const unauthorized = GATEWAY_RESPONSES.find((r) => r.type === 'UNAUTHORIZED');
    expect(unauthorized).toBeDefined();
    expect(gatewayResponseHeaders(unauthorized!)).toEqual({
      'Content-Type': "'application/problem+json'",
      'Cache-Control': "'no-store'",
      'WWW-Authenticate': `'Bearer realm="aip"'`,
    });
  });

  it('cover the answers API Gateway gives without a handler: every response type, exactly once', () => {
    expect(GATEWAY_RESPONSES.map((r) => r.type)).toEqual(
      expect.arrayContaining([
        'UNAUTHORIZED',
        'ACCESS_DENIED',
        'MISSING_AUTHENTICATION_TOKEN',
        'REQUEST_TOO_LARGE',
        'AUTHORIZER_FAILURE',
        'INTEGRATION_TIMEOUT',
      ]),
    );
    expect(GATEWAY_RESPONSES.map((r) => r.type).sort()).toEqual([...GATEWAY_RESPONSE_TYPES].sort());
    expect(new Set(GATEWAY_RESPONSES.map((r) => r.type)).size).toBe(GATEWAY_RESPONSES.length);
  });

  it('answer the catch-alls and the credential types with the documented codes', () => {
    const codeOf = (type: GatewayResponseType) => ({ status: gatewayResponse(type).status, code: gatewayResponse(type).code });
    expect(codeOf('DEFAULT_4XX')).toEqual({ status: 400, code: 'request.rejected' });
    expect(codeOf('DEFAULT_5XX')).toEqual({ status: 500, code: 'internal.unexpected' });
    expect(codeOf('BAD_REQUEST_PARAMETERS')).toEqual({ status: 400, code: 'request.invalid' });
    expect(codeOf('BAD_REQUEST_BODY')).toEqual({ status: 400, code: 'request.invalid' });
    expect(codeOf('EXPIRED_TOKEN')).toEqual({ status: 401, code: 'auth.unauthenticated' });
    expect(codeOf('INVALID_SIGNATURE')).toEqual({ status: 401, code: 'auth.unauthenticated' });
    expect(codeOf('INVALID_API_KEY')).toEqual({ status: 403, code: 'auth.api_key_invalid' });
    expect(codeOf('WAF_FILTERED')).toEqual({ status: 403, code: 'request.blocked' });
    expect(codeOf('RESOURCE_NOT_FOUND')).toEqual({ status: 404, code: 'request.route_not_found' });
    expect(codeOf('UNSUPPORTED_MEDIA_TYPE')).toEqual({ status: 415, code: 'request.unsupported_media_type' });
    expect(codeOf('API_CONFIGURATION_ERROR')).toEqual({ status: 500, code: 'internal.unexpected' });
    // Every 401 carries the bearer challenge (RFC 9110 §11.6.1).
    for (const spec of GATEWAY_RESPONSES.filter((r) => r.status === 401)) expect(spec.headers?.['WWW-Authenticate'], spec.type).toBe('Bearer realm="aip"');
  });
});
