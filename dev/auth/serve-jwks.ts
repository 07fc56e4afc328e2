/**
 * Serves the development JWKS (the public half of the dev signing key,
 * ./keys.ts) and nothing else, so a LocalStack deployment can verify the
 * tokens `npx aip token` mints:
 *
 *   HOST=0.0.0.0 PORT=4011 npx tsx dev/auth/serve-jwks.ts
 *
 * Lambda containers reach it at `http://host.docker.internal:4011/.well-known/jwks.json`
 * (infra/config.localstack.json). `npm start` serves the same JWKS at
 * `http://127.0.0.1:3000/.well-known/jwks.json`, but only on loopback, which a
 * container cannot reach on Linux; this server binds where it is told and
 * exposes public key material only.
 *
 * Environment:
 *   HOST           listen address (default 127.0.0.1; 0.0.0.0 for Docker containers)
 *   PORT           listen port (default 4011; 0 picks a free one)
 *   AIP_DEV_KEYS   dev key directory (default .local/dev-keys, the one `aip token` signs with)
 *
 * FOR LOCAL DEVELOPMENT ONLY. The key is created on first use, like `aip token` does.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { DEFAULT_DEV_KEYS_DIR, DEV_ALGORITHM, DEV_AUDIENCE, DEV_ISSUER, loadDevKeys } from './keys.js';

export const JWKS_PATH = '/.well-known/jwks.json';
export const DEFAULT_JWKS_PORT = 4011;

export interface JwksServer {
  /** Base URL, e.g. `http://127.0.0.1:4011` (no trailing slash). */
  readonly url: string;
  /** The JWKS URL (`<url>/.well-known/jwks.json`). */
  readonly jwksUrl: string;
  readonly kid: string;
  stop(): Promise<void>;
}

export interface JwksServerOptions {
  /** @default 127.0.0.1 */
  readonly host?: string;
  /** @default 4011; 0 picks a free port */
  readonly port?: number;
  /** @default .local/dev-keys */
  readonly keysDir?: string;
}

export async function startJwksServer(options: JwksServerOptions = {}): Promise<JwksServer> {
  const keys = await loadDevKeys(options.keysDir ?? DEFAULT_DEV_KEYS_DIR);
  const body = JSON.stringify(keys.jwks);
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://jwks').pathname;
    if ((req.method === 'GET' || req.method === 'HEAD') && path === JWKS_PATH) {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=60' });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error: `only GET ${JWKS_PATH} is served` }));
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_JWKS_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;
  return {
    url,
    jwksUrl: `${url}${JWKS_PATH}`,
    kid: keys.kid,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

async function main(): Promise<void> {
  const rawPort = process.env.PORT?.trim();
  if (rawPort !== undefined && rawPort !== '' && !/^\d{1,5}$/.test(rawPort)) {
    process.stderr.write('serve-jwks: PORT must be a port number\n');
    process.exitCode = 2;
    return;
  }
  const server = await startJwksServer({
    host: process.env.HOST?.trim() || '127.0.0.1',
    port: rawPort ? Number(rawPort) : DEFAULT_JWKS_PORT,
    ...(process.env.AIP_DEV_KEYS?.trim() ? { keysDir: process.env.AIP_DEV_KEYS.trim() } : {}),
  });
  process.stdout.write(
    `${JSON.stringify({ component: 'dev-jwks', msg: 'listening', jwks_url: server.jwksUrl, kid: server.kid, issuer: DEV_ISSUER, audience: DEV_AUDIENCE, algorithm: DEV_ALGORITHM })}\n`,
  );
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    void server.stop();
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}
