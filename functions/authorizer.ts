/**
 * API Gateway (REST) Lambda authorizer: verifies the JWT bearer token and
 * answers with an IAM policy plus the caller's identity as context.
 *
 * Works as a TOKEN authorizer (identity source `method.request.header.Authorization`,
 * recommended, with validation expression {@link AUTHORIZATION_HEADER_PATTERN})
 * and as a REQUEST authorizer (it reads the Authorization header itself).
 *
 * Outcomes, as API Gateway turns them into responses:
 * - valid token with a usable identity → Allow on the whole stage (so a
 *   cached result is right for every route), context = identity (strings);
 * - missing, malformed, expired, wrong issuer/audience, `alg: none`, unknown
 *   key, bad signature → `throw new Error('Unauthorized')` → 401 (UNAUTHORIZED);
 * - verified but unusable claims (no usable subject, bad principal kind,
 *   wrong token_use) → Deny → 403 (ACCESS_DENIED);
 * - keys unavailable (JWKS endpoint down) or a bad configuration → any other
 *   error → 500 (AUTHORIZER_FAILURE; the stack maps it to a 503 problem).
 *
 * Configuration: the `auth` part of AIP_RUNTIME_CONFIG (JSON, or a path to a
 * JSON file): issuer, audience, jwksUrl, algorithms, optional claims mapping
 * and clock tolerance; `AIP_AUTH_CLAIMS` (a preset name or JSON) overrides the
 * claims mapping. See docs/http-api.md.
 */
import { readFileSync } from 'node:fs';
import middy from '@middy/core';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent, APIGatewayTokenAuthorizerEvent, Context } from 'aws-lambda';
import { encodeAuthorizerContext } from '../lib/auth/authorizer-context.js';
import { ClaimMappingError } from '../lib/auth/claims.js';
import { AuthConfigError, parseClaimsOverride, verifierConfigFromRuntimeConfig } from '../lib/auth/config.js';
import { allowResult, denyResult } from '../lib/auth/policy.js';
import { createTokenVerifier, KeySourceUnavailableError, TokenRejectedError, type TokenVerifier, type TokenVerifierConfig } from '../lib/auth/verifier.js';
import { FUNCTION_ENV } from '../lib/config/function-env.js';
import { lazyHandler } from './shared/lazy.js';
import { errorFacts, isConfigurationError } from './shared/logger.js';
import { loggingMiddlewares, loggingObservability, type Observability } from './shared/observability-base.js';

/** API Gateway identity validation expression for the Authorization header. */
export const AUTHORIZATION_HEADER_PATTERN = '^[Bb]earer [-0-9A-Za-z._~+/]+=*$';
export const CLAIMS_OVERRIDE_ENV = 'AIP_AUTH_CLAIMS';

export type AuthorizerEvent = APIGatewayTokenAuthorizerEvent | APIGatewayRequestAuthorizerEvent;
export type AuthorizerHandler = (event: AuthorizerEvent, context: Context) => Promise<APIGatewayAuthorizerResult>;

export interface AuthorizerDeps {
  /** The verifier, or a factory called once on the first invocation. */
  readonly verifier: TokenVerifier | (() => TokenVerifier);
  readonly observability?: Observability;
}

/** The error whose message API Gateway turns into a 401. */
export function unauthorized(): Error {
  return new Error('Unauthorized');
}

function authorizationHeader(event: AuthorizerEvent): string | undefined {
  if (event.type === 'TOKEN') return event.authorizationToken;
  const headers = event.headers ?? {};
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === 'authorization' && typeof v === 'string') return v;
  return undefined;
}

/** `Bearer <token>` → token; anything else → undefined. */
export function bearerToken(value: string | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^bearer +([^\s]+)$/i.exec(value.trim());
  return m?.[1];
}

/**
 * Reads the verifier configuration from the function environment. Every
 * configuration problem is an {@link AuthConfigError} whose message names the
 * variable (and the field inside it), never a value, so the authorizer can
 * log it.
 */
export function verifierFromEnv(env: NodeJS.ProcessEnv = process.env): TokenVerifier {
  const variable = FUNCTION_ENV.runtimeConfig;
  const raw = env[variable]?.trim();
  if (!raw) throw new AuthConfigError(`${variable} is not set`);
  let json = raw;
  if (!raw.startsWith('{')) {
    try {
      json = readFileSync(raw, 'utf8');
    } catch (err) {
      throw new AuthConfigError(`${variable} is neither JSON nor the path of a readable file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  const claims = parseClaimsOverride(env[CLAIMS_OVERRIDE_ENV]);
  const inVariable = (err: unknown): AuthConfigError =>
    new AuthConfigError(`${variable}: ${err instanceof Error ? err.message.replace(/^auth configuration: /, '') : 'invalid'}`);
  let config: TokenVerifierConfig;
  try {
    config = verifierConfigFromRuntimeConfig(json, claims);
  } catch (err) {
    throw inVariable(err);
  }
  try {
    // Its errors are about the configuration (algorithms, audience, tolerance, JWKS URL scheme): no network here.
    return createTokenVerifier(config);
  } catch (err) {
    throw inVariable(err);
  }
}

export function createAuthorizerHandler(deps: AuthorizerDeps): AuthorizerHandler {
  let verifier: TokenVerifier | undefined;

  const build = async (): Promise<AuthorizerHandler> => {
    const obs = deps.observability ?? loggingObservability();
    const { logger } = obs;
    const body = async (event: AuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
      const token = bearerToken(authorizationHeader(event));
      if (token === undefined) {
        logger.info('authorizer: no bearer token');
        throw unauthorized();
      }
      try {
        verifier ??= typeof deps.verifier === 'function' ? deps.verifier() : deps.verifier;
        const identity = await verifier.verify(token);
        logger.debug('authorizer: allowed', { principal: `${identity.principal.kind}:${identity.principal.id}`, tenants: identity.tenants.length });
        return allowResult(identity.principal.id, event.methodArn, encodeAuthorizerContext(identity));
      } catch (err) {
        if (err instanceof TokenRejectedError) {
          logger.info('authorizer: token rejected', { reason: err.reason });
          throw unauthorized();
        }
        if (err instanceof ClaimMappingError) {
          logger.warn('authorizer: verified token denied', { reason: err.reason });
          return denyResult('unmapped', event.methodArn);
        }
        if (err instanceof KeySourceUnavailableError) logger.error('authorizer: signing keys unavailable', errorFacts(err.cause));
        // A bad environment: the message names the variable (and field) to fix, never a value.
        else if (isConfigurationError(err)) logger.error('authorizer: invalid configuration', errorFacts(err));
        else logger.error('authorizer: unexpected failure', errorFacts(err));
        throw new Error('Authorizer unavailable');
      }
    };
    const h = middy<AuthorizerEvent, APIGatewayAuthorizerResult>(body, { timeoutEarlyInMillis: 0 });
    h.use(loggingMiddlewares<AuthorizerEvent, APIGatewayAuthorizerResult>(obs));
    return (event, context) => h(event, context);
  };

  return lazyHandler(build);
}

/** The deployed authorizer (`functions/authorizer.handler`). */
export const handler: AuthorizerHandler = createAuthorizerHandler({ verifier: () => verifierFromEnv() });
