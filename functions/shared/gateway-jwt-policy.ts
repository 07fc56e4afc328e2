/**
 * The HTTP API's caller identity (lib/auth/gateway-jwt.ts), for
 * ./caller-identity.ts, which imports this module only when a request came
 * through the HTTP API: REST deployments never load it, nor the deployment
 * configuration's schemas it parses.
 *
 * The policy the verified claims are checked against is the `auth` part of
 * the deployment's runtime configuration (issuer, audience, algorithm
 * allow-list, claim mapping): the part the REST API's Lambda authorizer
 * builds its verifier from.
 */
import { readFileSync } from 'node:fs';
import { ClaimMappingError, resolveClaimMapping, type ClaimsConfig } from '../../lib/auth/claims.js';
import { GatewayTokenRejectedError, identityFromGatewayClaims, type GatewayJwtPolicy } from '../../lib/auth/gateway-jwt.js';
import type { CallerIdentity } from '../../lib/auth/identity.js';
import { parseDeploymentRuntimeConfig, type DeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import { FUNCTION_ENV } from '../../lib/config/function-env.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { gatewayResponse } from '../../lib/http/gateway-responses.js';

export function gatewayJwtPolicy(
  auth: Pick<DeploymentRuntimeConfig['auth'], 'issuer' | 'audience' | 'algorithms'> & { readonly claims?: ClaimsConfig },
): GatewayJwtPolicy {
  return {
    issuer: auth.issuer,
    audiences: typeof auth.audience === 'string' ? [auth.audience] : [...auth.audience],
    algorithms: [...auth.algorithms],
    mapping: resolveClaimMapping(auth.claims ?? {}),
  };
}

/** From `AIP_RUNTIME_CONFIG` (JSON, or the path of a JSON file); throws a configuration error naming the variable. */
export function gatewayJwtPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): GatewayJwtPolicy {
  const variable = FUNCTION_ENV.runtimeConfig;
  const raw = env[variable]?.trim();
  if (!raw) throw new Error(`${variable} is not set`);
  return gatewayJwtPolicy(parseDeploymentRuntimeConfig(raw.startsWith('{') ? raw : readFileSync(raw, 'utf8')).auth);
}

/** The same problem the REST API's gateway response of `type` answers. */
function asGatewayProblem(type: 'UNAUTHORIZED' | 'ACCESS_DENIED'): AipError {
  const spec = gatewayResponse(type);
  return new AipError(spec.code, spec.detail);
}

/**
 * The caller of a request the JWT authorizer accepted, or the problem the
 * REST API would have answered: 401 `auth.unauthenticated` for a token its
 * Lambda authorizer would reject, 403 `auth.forbidden` for claims it would deny.
 */
export function gatewayCaller(claims: Readonly<Record<string, unknown>>, authorization: string | undefined, policy: GatewayJwtPolicy): CallerIdentity {
  const bearer = /^bearer +(\S+)$/i.exec(authorization?.trim() ?? '')?.[1];
  try {
    return identityFromGatewayClaims(claims, bearer, policy);
  } catch (err) {
    if (err instanceof GatewayTokenRejectedError) throw asGatewayProblem('UNAUTHORIZED');
    if (err instanceof ClaimMappingError) throw asGatewayProblem('ACCESS_DENIED');
    throw err;
  }
}
