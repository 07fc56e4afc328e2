/**
 * The connector host as a Lambda function behind a Function URL (auth type
 * NONE: every request is authenticated by its runtime signature before any
 * work; docs/infra.md "Remote connector host"). Buffered invoke mode: the
 * answer (with any stream chunks) is one signed body.
 *
 * Environment: AIP_CONNECTOR_HOST_CONFIG (lib/runtime/remote/config.ts).
 * The host is composed on the first request (its endpoint may be the
 * Function URL it is served on) and reused by the container.
 */
import type { LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';
import { REMOTE_ENV } from '../../lib/runtime/remote/config.js';
import type { HostRequest, HostResponse, RemoteConnectorHost } from '../../lib/runtime/remote/host.js';
import { once } from '../shared/lazy.js';
import { composeConnectorHost, parseHostConfig } from './compose.js';

/** Function URL event → transport-neutral request (lower-case headers, body decoded). */
export function toHostRequest(event: LambdaFunctionURLEvent): HostRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) headers[k.toLowerCase()] = v;
  const body = event.body === undefined ? '' : event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
  return { method: event.requestContext.http.method, path: `${event.rawPath}${query}`, headers, body };
}

export function toFunctionUrlResult(answer: HostResponse): LambdaFunctionURLResult {
  return { statusCode: answer.status, headers: { ...answer.headers }, body: answer.body, isBase64Encoded: false };
}

const host = once(
  (domainName: string): Promise<RemoteConnectorHost> =>
    composeConnectorHost(parseHostConfig(process.env[REMOTE_ENV.hostConfig]), { endpoint: `https://${domainName}` }),
);

export async function handler(event: LambdaFunctionURLEvent): Promise<LambdaFunctionURLResult> {
  return toFunctionUrlResult(await (await host(event.requestContext.domainName)).handle(toHostRequest(event)));
}
