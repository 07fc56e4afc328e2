/**
 * The HTTP routes' access log and request metrics: one line per request with
 * route, status, error code, duration, request ID and principal;
 * never the token, body or query values. Metrics `HttpRequests`, `Http4xx`,
 * `Http5xx` with a `route` dimension.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import type { AipHttpEvent } from './http.js';
import { MetricUnit, powertoolsMiddlewares, type Observability } from './observability.js';

type Mw = MiddlewareObj<AipHttpEvent, APIGatewayProxyResult>;

function errorCode(response: APIGatewayProxyResult | null | undefined): string | undefined {
  if (!response || response.statusCode < 400 || typeof response.body !== 'string' || response.body.length > 65_536) return undefined;
  try {
    const code = (JSON.parse(response.body) as { code?: unknown }).code;
    return typeof code === 'string' && /^[a-z0-9_.]{1,128}$/.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Use it before the error handler, so its after/onError see the mapped response. */
export function accessLog(obs: Observability, routeId: string): Mw {
  const started = new WeakMap<object, number>();
  const finish = (request: { event: AipHttpEvent; response?: APIGatewayProxyResult | null }) => {
    const status = request.response?.statusCode ?? 500;
    const t0 = started.get(request.event);
    const caller = request.event.aip?.caller;
    // No method: the route ID names one method and path (lib/http/routes.ts).
    const line: Record<string, unknown> = {
      route: routeId,
      status,
      request_id: request.event.requestContext?.requestId,
    };
    if (t0 !== undefined) line.duration_ms = Math.round(performance.now() - t0);
    const code = errorCode(request.response);
    if (code !== undefined) line.error_code = code;
    if (caller) line.principal = `${caller.principal.kind}:${caller.principal.id}`;
    if (status >= 500) obs.logger.error('request', line);
    else obs.logger.info('request', line);
    const m = obs.metrics;
    if (m) {
      m.addDimension('route', routeId);
      m.addMetric('HttpRequests', MetricUnit.Count, 1);
      if (status >= 500) m.addMetric('Http5xx', MetricUnit.Count, 1);
      else if (status >= 400) m.addMetric('Http4xx', MetricUnit.Count, 1);
    }
  };
  return {
    name: 'accessLog',
    before: (request) => {
      started.set(request.event, performance.now());
    },
    after: (request) => finish(request),
    onError: (request) => finish(request),
  };
}

/** Powertools middlewares (outermost first), then the access log. */
export function httpObservability(obs: Observability, routeId: string): Mw[] {
  return [...powertoolsMiddlewares<AipHttpEvent, APIGatewayProxyResult>(obs), accessLog(obs, routeId)];
}
