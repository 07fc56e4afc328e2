/**
 * The operator console on the local stack (`npm start`): the console
 * function's handler (functions/console/serve.ts) at `/console/`, with a
 * development config.json, and the development sign-in endpoint
 * `POST /_local/token`. LOCAL ONLY: these paths are served by the local HTTP
 * server before its route table (dev/local/http-server.ts `localRoutes`);
 * they are not routes of lib/http/routes.ts and no deployment has them.
 *
 * `POST /_local/token` with `{"sub": "<principal>", "scopes": [...]}`
 * (Content-Type application/json, so a page of another origin cannot send it
 * without a CORS preflight, which this server never grants), with a loopback
 * `Host` and (when sent) a loopback `Origin` (else 403
 * `request.origin_forbidden`: DNS rebinding, a page the developer visits), answers
 * `{"access_token", "token_type": "Bearer", "expires_in"}`: a development
 * token (dev/auth/mint.ts) for the stack's tenant, with only the scopes the
 * console offers.
 */
import type { ServerResponse } from 'node:http';
import { CONSOLE_PATH, createConsoleHandler, type ConsoleConfig } from '../../functions/console/serve.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { ID_MAX_LENGTH, ID_PATTERN } from '../../packages/connector-sdk/src/protocol/primitives.js';
import { PROBLEM_CONTENT_TYPE, toProblem } from '../../packages/connector-sdk/src/protocol/problem.js';
import type { MintTokenOptions } from '../auth/mint.js';
import type { LocalRoutes } from './http-server.js';

export const LOCAL_TOKEN_PATH = '/_local/token';
/** Lifetime of a console development token. */
export const CONSOLE_TOKEN_TTL_SECONDS = 12 * 3600;

/** Scopes the development sign-in offers (and the only ones it mints). */
export const CONSOLE_DEV_SCOPES = ['aip:actions:read', 'aip:actions:write', 'aip:operator', 'aip:approve'] as const;
export const CONSOLE_DEV_SUBJECTS = ['dev-operator', 'dev-approver', 'dev-user'] as const;

export interface LocalConsoleOptions {
  /** The console build (console/build.ts). */
  readonly assetsDir: string;
  /** The tenant of the minted tokens. */
  readonly tenant: string;
  readonly mint: (options: MintTokenOptions) => Promise<string>;
  /** Serve this config.json instead of the development one (tests: an OIDC sign-in against a loopback IdP). */
  readonly config?: ConsoleConfig;
}

/** The development config.json. */
export function localConsoleConfig(tenant: string): ConsoleConfig {
  return {
    mode: 'dev',
    environment: 'local',
    tenant,
    dev: { token_endpoint: LOCAL_TOKEN_PATH, subjects: [...CONSOLE_DEV_SUBJECTS], scopes: [...CONSOLE_DEV_SCOPES], default_scopes: [...CONSOLE_DEV_SCOPES] },
  };
}

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
  res.end(JSON.stringify(body));
}

/** Whether a host name (no port) is loopback: localhost, 127.0.0.0/8 or ::1. */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  return v4?.slice(1).every((octet) => Number(octet) <= 255) === true;
}

/** The host name of a `Host` header value (`name[:port]`, `[v6][:port]`), or undefined when it is not one. */
function hostnameOf(host: string): string | undefined {
  return /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?$/.exec(host)?.[1];
}

/**
 * The sign-in answers a loopback `Host` only (a DNS-rebinding page reaches
 * this server under its own name), and an `Origin`, when the request carries
 * one, that is an http(s) loopback origin (a page the developer visits sends
 * its own; `null` from a sandboxed frame or a file is refused too).
 */
function loopbackRequest(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  const host = headers.host;
  if (typeof host !== 'string') return false;
  const name = hostnameOf(host);
  if (name === undefined || !isLoopbackHost(name)) return false;
  const origin = headers.origin;
  if (origin === undefined) return true;
  if (typeof origin !== 'string') return false;
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.pathname === '/' && isLoopbackHost(url.hostname);
}

function forbidden(res: ServerResponse): void {
  const err = new AipError('request.origin_forbidden');
  send(res, 403, toProblem(err, LOCAL_TOKEN_PATH), PROBLEM_CONTENT_TYPE);
}

function refuse(res: ServerResponse, status: number, detail: string): void {
  send(
    res,
    status,
    { type: 'urn:aip:error:request.invalid', title: 'Invalid request', status, detail, code: 'request.invalid', category: 'validation', retryable: false },
    'application/problem+json',
  );
}

async function mintFor(options: LocalConsoleOptions, body: Buffer, contentType: string | undefined, res: ServerResponse): Promise<void> {
  if (!/^application\/json\b/i.test(contentType ?? '')) return refuse(res, 415, 'send application/json');
  let input: unknown;
  try {
    input = JSON.parse(body.toString('utf8'));
  } catch {
    return refuse(res, 400, 'the body is not JSON');
  }
  const { sub, scopes } = (typeof input === 'object' && input !== null ? input : {}) as { sub?: unknown; scopes?: unknown };
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > ID_MAX_LENGTH || !ID_PATTERN.test(sub)) return refuse(res, 400, 'sub must be a principal ID');
  if (!Array.isArray(scopes) || !scopes.every((s): s is string => typeof s === 'string' && (CONSOLE_DEV_SCOPES as readonly string[]).includes(s))) {
    return refuse(res, 400, `scopes must be a list of ${CONSOLE_DEV_SCOPES.join(', ')}`);
  }
  const token = await options.mint({ sub, tenants: [options.tenant], scopes: [...new Set(scopes)], ttl: CONSOLE_TOKEN_TTL_SECONDS });
  send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: CONSOLE_TOKEN_TTL_SECONDS });
}

export function localConsoleRoutes(options: LocalConsoleOptions): LocalRoutes {
  const serve = createConsoleHandler({ assetsDir: options.assetsDir, config: options.config ?? localConsoleConfig(options.tenant) });
  return async (req, res) => {
    if (req.path === LOCAL_TOKEN_PATH) {
      if (!loopbackRequest(req.headers)) forbidden(res);
      else if (req.method !== 'POST') refuse(res, 405, 'POST only');
      else await mintFor(options, req.body, req.headers['content-type'], res);
      return true;
    }
    if (req.path !== CONSOLE_PATH && !req.path.startsWith(`${CONSOLE_PATH}/`)) return false;
    const out = await serve({ httpMethod: req.method, path: req.path, pathParameters: null });
    res.writeHead(out.statusCode, out.headers as Record<string, string>);
    res.end(out.body);
    return true;
  };
}
