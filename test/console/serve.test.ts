/**
 * The console's static site handler (functions/console/serve.ts, the
 * deployed console function and the local stack's /console/) on the real
 * console build, and the local stack's development sign-in endpoint
 * (dev/local/console.ts). No browser: test/console/console.test.ts drives one.
 */
import type { ServerResponse } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  consoleConfigFromEnv,
  consoleCsp,
  createConsoleHandler,
  CONSOLE_CONFIG_ENV,
  type ConsoleConfig,
  type ConsoleHandler,
} from '../../functions/console/serve.js';
import { CONSOLE_DEV_SCOPES, localConsoleConfig, localConsoleRoutes, LOCAL_TOKEN_PATH } from '../../dev/local/console.js';
import { devVerifierConfig, generateDevKeys, type DevKeys } from '../../dev/auth/keys.js';
import { mintToken } from '../../dev/auth/mint.js';
import { createTokenVerifier } from '../../lib/auth/verifier.js';
import { consoleBuild } from './support.js';

const OIDC: ConsoleConfig = {
  mode: 'oidc',
  environment: 'prod',
  oidc: { issuer: 'https://idp.example.com/tenant/', client_id: 'aip-console', scopes: ['openid', 'aip:operator'] },
};

let assetsDir: string;
let serve: ConsoleHandler;
beforeAll(async () => {
  assetsDir = await consoleBuild();
  serve = createConsoleHandler({ assetsDir, config: OIDC });
});

const get = (path: string, extra: { stagePath?: string; method?: string } = {}) =>
  serve({ httpMethod: extra.method ?? 'GET', path, pathParameters: null, ...(extra.stagePath ? { requestContext: { path: extra.stagePath } } : {}) });

describe('console site handler', () => {
  it('serves index.html under /console/ with a strict CSP, and redirects /console keeping the stage prefix', async () => {
    const index = await get('/console/');
    expect(index.statusCode).toBe(200);
    expect(index.headers).toMatchObject({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
    });
    expect(index.body).toContain('<div id="app"></div>');
    const csp = String(index.headers?.['Content-Security-Policy']);
    for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) expect(csp).toContain(d);
    expect(csp).not.toContain('unsafe-inline');

    const redirect = await get('/console', { stagePath: '/api/console' });
    expect(redirect).toMatchObject({ statusCode: 308, headers: { Location: '/api/console/' } });
    // A gateway that matched `/console/` to the `/console` resource: the browser's path has the slash, so no redirect loop.
    expect(await get('/console', { stagePath: '/api/console/' })).toMatchObject({ statusCode: 200, body: index.body });
  });

  it('serves the hashed assets as immutable, with their types', async () => {
    const index = await get('/console/');
    const scripts = [...String(index.body).matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)].map((m) => m[1] as string);
    expect(scripts.some((s) => s.endsWith('.js'))).toBe(true);
    for (const file of scripts) {
      const asset = await get(`/console/${file}`);
      expect(asset.statusCode, file).toBe(200);
      expect(asset.headers?.['Cache-Control']).toBe('public, max-age=31536000, immutable');
      expect(asset.headers?.['Content-Type']).toBe(file.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
    }
    const head = await get(`/console/${scripts[0]}`, { method: 'HEAD' });
    expect(head).toMatchObject({ statusCode: 200, body: '' });
  });

  it('serves config.json uncached', async () => {
    const config = await get('/console/config.json');
    expect(config.headers).toMatchObject({ 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    expect(JSON.parse(config.body)).toEqual(OIDC);
  });

  it('answers 404 problems for anything that is not a file of the build, a traversal included, and for other methods', async () => {
    for (const path of [
      '/console/nope.js',
      '/console/../package.json',
      '/console/assets/../../package.json',
      '/console/src/main.tsx',
      '/consolex',
      '/v1/health',
    ]) {
      const out = await get(path);
      expect(out.statusCode, path).toBe(404);
      expect(out.headers?.['Content-Type']).toBe('application/problem+json');
      expect(JSON.parse(out.body)).toMatchObject({ status: 404, code: 'request.route_not_found' });
    }
    expect((await get('/console/', { method: 'POST' })).statusCode).toBe(404);
  });

  it('lets the page fetch only its own origin locally, and the identity provider when deployed', () => {
    expect(consoleCsp(localConsoleConfig('demo'))).toContain("connect-src 'self';");
    expect(consoleCsp(OIDC)).toContain("connect-src 'self' https://idp.example.com https:;");
  });

  it('reads the deployed config.json from the environment', () => {
    expect(consoleConfigFromEnv({ [CONSOLE_CONFIG_ENV]: JSON.stringify(OIDC) })).toEqual(OIDC);
    expect(() => consoleConfigFromEnv({})).toThrow(CONSOLE_CONFIG_ENV);
  });
});

/** A ServerResponse stand-in that records what the route wrote. */
function recorder() {
  const out = { status: 0, headers: {} as Record<string, unknown>, body: '' };
  const res = {
    writeHead(status: number, headers: Record<string, unknown>) {
      out.status = status;
      out.headers = headers;
      return res;
    },
    end(body?: string | Buffer) {
      out.body = body === undefined ? '' : String(body);
      return res;
    },
  };
  return { res: res as unknown as ServerResponse, out };
}

describe('local development sign-in (POST /_local/token)', () => {
  let keys: DevKeys;
  let routes: ReturnType<typeof localConsoleRoutes>;
  beforeAll(async () => {
    keys = await generateDevKeys();
    routes = localConsoleRoutes({ assetsDir, tenant: 'demo', mint: (o) => mintToken(o, keys) });
  });

  const post = async (body: unknown, contentType = 'application/json', extra: Record<string, string> = {}) => {
    const { res, out } = recorder();
    const handled = await routes(
      {
        method: 'POST',
        path: LOCAL_TOKEN_PATH,
        headers: { host: '127.0.0.1:8787', 'content-type': contentType, ...extra },
        body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
      },
      res,
    );
    expect(handled).toBe(true);
    return out;
  };

  it('mints a development token for the stack tenant with the scopes asked for', async () => {
    const out = await post({ sub: 'dev-operator', scopes: ['aip:operator', 'aip:actions:read'] });
    expect(out.status).toBe(200);
    expect(out.headers['Cache-Control']).toBe('no-store');
    const body = JSON.parse(out.body) as { access_token: string; token_type: string; expires_in: number };
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 43_200 });
    const caller = await createTokenVerifier(devVerifierConfig(keys)).verify(body.access_token);
    expect(caller).toMatchObject({ principal: { id: 'dev-operator' }, tenants: ['demo'] });
    expect([...caller.scopes].sort()).toEqual(['aip:actions:read', 'aip:operator']);
  });

  it('refuses other content types, unknown scopes and bad principals with problems', async () => {
    expect((await post({ sub: 'x', scopes: [] }, 'text/plain')).status).toBe(415);
    expect((await post({ sub: 'x', scopes: ['aip:admin'] })).status).toBe(400);
    expect((await post({ sub: 'no spaces allowed', scopes: [...CONSOLE_DEV_SCOPES] })).status).toBe(400);
    const bad = await post('{');
    expect(bad.status).toBe(400);
    expect(bad.headers['Content-Type']).toBe('application/problem+json');
    const { res, out } = recorder();
    await routes({ method: 'GET', path: LOCAL_TOKEN_PATH, headers: { host: 'localhost:8787' }, body: Buffer.alloc(0) }, res);
    expect(out.status).toBe(405);
  });

  it('answers loopback only: a Host or Origin off 127.0.0.0/8, ::1 and localhost is a 403 problem, and mints nothing', async () => {
    const ok = { sub: 'dev-operator', scopes: ['aip:operator'] };
    for (const host of ['127.0.0.1:8787', '127.9.8.7', 'localhost', 'LOCALHOST:1', '[::1]:8787', '[::1]']) {
      expect((await post(ok, 'application/json', { host })).status, host).toBe(200);
    }
    for (const origin of ['http://127.0.0.1:8787', 'http://localhost:3000', 'https://[::1]:8443']) {
      expect((await post(ok, 'application/json', { origin })).status, origin).toBe(200);
    }
    const refused: Record<string, string>[] = [
      { host: 'evil.example:8787' },
      { host: 'localhost.evil.example' },
      { host: '128.0.0.1' },
      { host: '127.0.0.256' },
      { host: '0.0.0.0:8787' },
      { host: 'evil.example@127.0.0.1' },
      { host: '[::2]:8787' },
      { host: '' },
      { origin: 'https://evil.example' },
      { origin: 'http://localhost.evil.example' },
      { origin: 'null' },
      { origin: 'file://' },
      { origin: 'http://user@127.0.0.1' },
    ];
    for (const headers of refused) {
      const out = await post(ok, 'application/json', headers);
      expect(out.status, JSON.stringify(headers)).toBe(403);
      expect(out.headers['Content-Type']).toBe('application/problem+json');
      expect(JSON.parse(out.body)).toMatchObject({ code: 'request.origin_forbidden', status: 403 });
      expect(out.body).not.toContain('access_token');
    }
    // No Host at all (not HTTP/1.1 as a browser sends it) is refused too.
    const { res, out } = recorder();
    await routes({ method: 'POST', path: LOCAL_TOKEN_PATH, headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(ok)) }, res);
    expect(out.status).toBe(403);
  });

  it('leaves every other path to the API routes', async () => {
    const { res } = recorder();
    expect(await routes({ method: 'GET', path: '/v1/health', headers: {}, body: Buffer.alloc(0) }, res)).toBe(false);
  });
});
