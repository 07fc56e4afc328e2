/**
 * Caller identity (middy `before`): rebuilds the CallerIdentity from
 * `requestContext.authorizer`, the context API Gateway copies from the Lambda
 * authorizer's answer, and from nowhere else (not the body, not a header).
 * Missing or malformed context → 401 `auth.unauthenticated`.
 *
 * Then the route's scope rule: when the route names scopes, the caller needs
 * at least one of them (403 `auth.insufficient_scope`).
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { decodeAuthorizerContext } from '../../lib/auth/decode-authorizer-context.js';
import { AipError } from '../../lib/errors/aip-error.js';
import { requestState, type AipHttpEvent } from './http.js';

export function callerIdentity(options: { anyOfScopes?: readonly string[] } = {}): MiddlewareObj<AipHttpEvent, APIGatewayProxyResult> {
  const required = options.anyOfScopes ?? [];
  return {
    name: 'callerIdentity',
    before: (request) => {
      const authorizer = request.event.requestContext?.authorizer as Record<string, unknown> | null | undefined;
      const caller = decodeAuthorizerContext(authorizer);
      if (required.length > 0 && !required.some((s) => caller.scopes.includes(s))) {
        throw new AipError('auth.insufficient_scope', undefined, { details: { required_any_of: [...required] } });
      }
      requestState(request.event).caller = caller;
    },
  };
}
