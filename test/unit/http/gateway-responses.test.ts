import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../../lib/errors/catalogue.js';
import { ProblemSchema } from '../../../lib/errors/wire.js';
import { GATEWAY_RESPONSES, gatewayProblem, gatewayResponseHeaders, gatewayResponseTemplate } from '../../../lib/http/gateway-responses.js';

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

  it('cover the answers API Gateway gives without a handler', () => {
    expect(GATEWAY_RESPONSES.map((r) => r.type)).toEqual(
      expect.arrayContaining(['UNAUTHORIZED', 'ACCESS_DENIED', 'MISSING_AUTHENTICATION_TOKEN', 'REQUEST_TOO_LARGE', 'AUTHORIZER_FAILURE', 'INTEGRATION_TIMEOUT']),
    );
  });
});
