/**
 * The operator console's static site, as a Lambda proxy handler: the Vite
 * build of console/ (index.html and hashed assets) and its `config.json`.
 *
 * Deployed, API Gateway routes `GET /console` and `GET /console/{proxy+}`
 * here with no authorizer (static code and public sign-in settings only; the
 * data comes from the API with the operator's token), so the console and the
 * API share one origin and need no CORS (docs/infra.md, "Operator console").
 * Locally, dev/local/start.ts serves the same handler.
 *
 * Every answer carries a strict Content-Security-Policy (scripts and styles
 * from the console's own origin only, no framing), `nosniff` and
 * `no-referrer`. Hashed assets are immutable; index.html and config.json are
 * never cached. Anything but a file of the build is a 404 problem, so no
 * path can reach outside the assets folder.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { ConsoleConfig } from '../../console/src/config-types.js';
import { PROBLEM_CONTENT_TYPE } from '../../packages/connector-sdk/src/protocol/problem.js';
import { gatewayProblem, gatewayResponse } from '../../lib/http/gateway-responses.js';
import { fromHttpApiEvent, isHttpApiEvent, type HttpApiEvent } from '../shared/http-api-event.js';

export type { ConsoleConfig };

/** The environment variable holding the deployed console's config.json (set by infra/console.ts). */
export const CONSOLE_CONFIG_ENV = 'AIP_CONSOLE_CONFIG';
/** Where the bundled function finds the build, beside its code (infra/console.ts copies it there). */
export const CONSOLE_ASSETS_FOLDER = 'console-assets';
/** The path the console is served under, below the API's base. */
export const CONSOLE_PATH = '/console';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
};

export interface ConsoleSiteOptions {
  /** The Vite build: index.html and assets/. */
  readonly assetsDir: string;
  /** The config.json to serve (read per request: the local stack may fill it in late). */
  readonly config: ConsoleConfig | (() => ConsoleConfig);
}

/** The Content-Security-Policy of every console answer. The API and the identity provider are fetched (connect-src). */
export function consoleCsp(config: ConsoleConfig): string {
  const connect = new Set(["'self'"]);
  for (const url of [config.api_base_url, config.oidc?.issuer]) {
    if (url !== undefined && /^https?:\/\//.test(url)) connect.add(new URL(url).origin);
  }
  // OIDC: the authorization server's token endpoint may live on another host than the issuer (Cognito's domain).
  if (config.mode === 'oidc') connect.add('https:');
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${[...connect].join(' ')}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly immutable: boolean;
}

/** Reads the whole build once (a few hundred KiB): file name relative to the build → asset. */
function loadAssets(dir: string): Map<string, Asset> {
  const out = new Map<string, Asset>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const rel = relative(dir, path).split(sep).join('/');
        const type = CONTENT_TYPES[extname(name)];
        if (type !== undefined) out.set(rel, { body: readFileSync(path), type, immutable: rel.startsWith('assets/') });
      }
    }
  };
  walk(dir);
  if (!out.has('index.html')) throw new Error(`the console build in ${dir} has no index.html (build it: node --import tsx console/build.ts <dir>)`);
  return out;
}

function securityHeaders(config: ConsoleConfig): Record<string, string> {
  return {
    'Content-Security-Policy': consoleCsp(config),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Strict-Transport-Security': 'max-age=31536000',
    'Cross-Origin-Opener-Policy': 'same-origin',
  };
}

function notFound(): APIGatewayProxyResult {
  const spec = gatewayResponse('MISSING_AUTHENTICATION_TOKEN');
  return {
    statusCode: spec.status,
    headers: { 'Content-Type': PROBLEM_CONTENT_TYPE, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' },
    body: JSON.stringify(gatewayProblem(spec)),
  };
}

export type ConsoleHandler = (
  event: Pick<APIGatewayProxyEvent, 'httpMethod' | 'path' | 'pathParameters'> & { requestContext?: { path?: string } },
) => Promise<APIGatewayProxyResult>;

export function createConsoleHandler(options: ConsoleSiteOptions): ConsoleHandler {
  let assets: Map<string, Asset> | undefined;
  const configOf = () => (typeof options.config === 'function' ? options.config() : options.config);
  return async (event) => {
    assets ??= loadAssets(options.assetsDir);
    const method = event.httpMethod.toUpperCase();
    if (method !== 'GET' && method !== 'HEAD') return notFound();
    const config = configOf();
    const path = event.path;
    const rest = path.startsWith(CONSOLE_PATH) ? path.slice(CONSOLE_PATH.length) : undefined;
    if (rest === undefined || (rest !== '' && !rest.startsWith('/'))) return notFound();
    // The path as the browser asked for it (with the stage prefix, deployed), which decides where relative asset URLs point.
    const full = event.requestContext?.path ?? path;
    if (rest === '' && !full.endsWith('/')) {
      // `/console` → `/console/`, keeping the stage prefix (relative asset URLs need the slash).
      return { statusCode: 308, headers: { Location: `${full}/`, 'Cache-Control': 'no-store', ...securityHeaders(config) }, body: '' };
    }
    const file = event.pathParameters?.proxy ?? rest.slice(1);
    if (file === 'config.json') {
      return {
        statusCode: 200,
        headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...securityHeaders(config) },
        body: method === 'HEAD' ? '' : JSON.stringify(config),
      };
    }
    const asset = assets.get(file === '' ? 'index.html' : file);
    if (asset === undefined) return notFound();
    return {
      statusCode: 200,
      headers: {
        'Content-Type': asset.type,
        'Cache-Control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
        ...securityHeaders(config),
      },
      body: method === 'HEAD' ? '' : asset.body.toString('utf8'),
    };
  };
}

/** Parses the deployed configuration from {@link CONSOLE_CONFIG_ENV}. */
export function consoleConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ConsoleConfig {
  const raw = env[CONSOLE_CONFIG_ENV];
  if (raw === undefined || raw === '') throw new Error(`${CONSOLE_CONFIG_ENV} is not set`);
  return JSON.parse(raw) as ConsoleConfig;
}

let deployed: ConsoleHandler | undefined;

/**
 * The deployed function's handler: the build beside the bundle, the configuration from the environment.
 * Behind the HTTP API it gets payload format 2.0 events, put in the REST shape first (../shared/http-api-event.ts).
 */
export const handler = (event: Parameters<ConsoleHandler>[0] | HttpApiEvent): Promise<APIGatewayProxyResult> => {
  deployed ??= createConsoleHandler({ assetsDir: join(dirname(fileURLToPath(import.meta.url)), CONSOLE_ASSETS_FOLDER), config: consoleConfigFromEnv() });
  return deployed(isHttpApiEvent(event) ? fromHttpApiEvent(event) : event);
};
