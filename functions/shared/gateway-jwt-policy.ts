/**
 * What lib/auth/gateway-jwt.ts checks a verified HTTP API request against:
 * the `auth` part of the deployment's runtime configuration (issuer,
 * audience, algorithm allow-list, claim mapping), the same part the REST
 * API's Lambda authorizer builds its verifier from.
 */
import { readFileSync } from 'node:fs';
import { resolveClaimMapping, type ClaimsConfig } from '../../lib/auth/claims.js';
import type { GatewayJwtPolicy } from '../../lib/auth/gateway-jwt.js';
import { parseDeploymentRuntimeConfig, type DeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import { FUNCTION_ENV } from '../../lib/config/function-env.js';

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
