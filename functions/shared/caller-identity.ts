/**
 * Caller identity (middy `before`): rebuilds the CallerIdentity from what
 * API Gateway verified, and from nowhere else (not the body, not a header):
 *
 * - REST API: `requestContext.authorizer`, the context API Gateway copies
 *   from the Lambda authorizer's answer. Missing or malformed context → 401
 *   `auth.unauthenticated`.
 * - HTTP API: the claims its JWT authorizer verified (the request state's
 *   `gatewayJwt`, ./http-api-event.ts), checked and mapped as the Lambda
 *   authorizer would (./gateway-jwt-policy.ts, loaded only for such a
 *   request): a token it would have rejected → 401 `auth.unauthenticated`,
 *   claims it would have denied → 403 `auth.forbidden`, the problems the
 *   REST API's gateway responses answer.
 *
 * Then the route's scope rule: when the route names scopes, the caller needs
 * at least one of them (403 `auth.insufficient_scope`).
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { decodeAuthorizerContext } from '../../lib/auth/decode-authorizer-context.js';
import type { GatewayJwtPolicy } from '../../lib/auth/gateway-jwt.js';
import type { CallerIdentity } from '../../lib/auth/identity.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { header, requestState, type AipHttpEvent } from './http.js';

export interface CallerIdentityOptions {
  readonly anyOfScopes?: readonly string[];
  /** HTTP API requests: what to check the verified claims against. @default from AIP_RUNTIME_CONFIG, read on first use */
  readonly gatewayJwt?: GatewayJwtPolicy | (() => GatewayJwtPolicy);
}

export function callerIdentity(options: CallerIdentityOptions = {}): MiddlewareObj<AipHttpEvent, APIGatewayProxyResult> {
  const required = options.anyOfScopes ?? [];
  let policy: GatewayJwtPolicy | undefined;
  const fromGateway = async (event: AipHttpEvent, claims: Readonly<Record<string, unknown>>): Promise<CallerIdentity> => {
    const gateway = await import('./gateway-jwt-policy.js');
    policy ??= typeof options.gatewayJwt === 'function' ? options.gatewayJwt() : (options.gatewayJwt ?? gateway.gatewayJwtPolicyFromEnv());
    return gateway.gatewayCaller(claims, header(event, 'authorization'), policy);
  };
  return {
    name: 'callerIdentity',
    before: async (request) => {
      const state = requestState(request.event);
      const caller =
        state.gatewayJwt !== undefined
          ? await fromGateway(request.event, state.gatewayJwt.claims)
          : decodeAuthorizerContext(request.event.requestContext?.authorizer as Record<string, unknown> | null | undefined);
      if (required.length > 0 && !required.some((s) => caller.scopes.includes(s))) {
        throw new AipError('auth.insufficient_scope', undefined, { details: { required_any_of: [...required] } });
      }
      state.caller = caller;
    },
  };
}
