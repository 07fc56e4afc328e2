/**
 * A minimal OpenID Connect provider on loopback for the console's sign-in
 * test: discovery, an authorization endpoint that signs the user in at once
 * (no login form), a token endpoint that redeems a code only with the PKCE
 * verifier of its S256 challenge, and a JWKS. The ID token is RS256, signed
 * with a key made per start; the access token comes from `accessToken`
 * (the local stack's development token, which the API accepts). TEST ONLY.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export interface AuthorizeRequest {
  readonly params: Record<string, string>;
}

export interface TokenRequest {
  readonly params: Record<string, string>;
  readonly headers: IncomingMessage['headers'];
  readonly verified: boolean;
}

export interface LoopbackIdp {
  readonly url: string;
  readonly authorizeRequests: AuthorizeRequest[];
  readonly tokenRequests: TokenRequest[];
  stop(): Promise<void>;
}

const cors = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'content-type, accept, authorization, dpop',
  'Access-Control-Allow-Methods': 'GET, POST',
};

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...cors });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startLoopbackIdp(options: { clientId: string; subject: string; accessToken: () => Promise<string> }): Promise<LoopbackIdp> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { challenge: string; nonce: string; redirect_uri: string; client_id: string }>();
  const authorizeRequests: AuthorizeRequest[] = [];
  const tokenRequests: TokenRequest[] = [];
  let issuer = '';

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', issuer);
      if (req.method === 'OPTIONS') {
        res.writeHead(204, cors);
        res.end();
      } else if (req.method === 'GET' && url.pathname === '/.well-known/openid-configuration') {
        json(res, 200, {
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['none'],
        });
      } else if (req.method === 'GET' && url.pathname === '/jwks') {
        json(res, 200, { keys: [jwk] });
      } else if (req.method === 'GET' && url.pathname === '/authorize') {
        const params = Object.fromEntries(url.searchParams);
        authorizeRequests.push({ params });
        const ok =
          params.client_id === options.clientId &&
          params.response_type === 'code' &&
          params.code_challenge_method === 'S256' &&
          typeof params.code_challenge === 'string' &&
          typeof params.redirect_uri === 'string' &&
          typeof params.state === 'string' &&
          (params.scope ?? '').split(' ').includes('openid');
        if (!ok) return json(res, 400, { error: 'invalid_request' });
        const code = randomBytes(16).toString('base64url');
        codes.set(code, {
          challenge: params.code_challenge as string,
          nonce: params.nonce ?? '',
          redirect_uri: params.redirect_uri as string,
          client_id: params.client_id as string,
        });
        const back = new URL(params.redirect_uri as string);
        back.searchParams.set('code', code);
        back.searchParams.set('state', params.state as string);
        res.writeHead(302, { Location: back.href, 'Cache-Control': 'no-store' });
        res.end();
      } else if (req.method === 'POST' && url.pathname === '/token') {
        const params = Object.fromEntries(new URLSearchParams(await readBody(req)));
        const grant = codes.get(params.code ?? '');
        codes.delete(params.code ?? '');
        const verified =
          grant !== undefined &&
          params.grant_type === 'authorization_code' &&
          params.client_id === grant.client_id &&
          params.redirect_uri === grant.redirect_uri &&
          params.client_secret === undefined &&
          createHash('sha256')
            .update(params.code_verifier ?? '')
            .digest('base64url') === grant.challenge;
        tokenRequests.push({ params, headers: req.headers, verified });
        if (!verified || grant === undefined) return json(res, 400, { error: 'invalid_grant' });
        const now = Math.floor(Date.now() / 1000);
        const id_token = await new SignJWT({ nonce: grant.nonce })
          .setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'JWT' })
          .setIssuer(issuer)
          .setAudience(grant.client_id)
          .setSubject(options.subject)
          .setIssuedAt(now)
          .setExpirationTime(now + 300)
          .sign(privateKey);
        json(res, 200, { access_token: await options.accessToken(), token_type: 'Bearer', expires_in: 3600, id_token, scope: 'openid aip:operator' });
      } else {
        json(res, 404, { error: 'not_found' });
      }
    })().catch(() => {
      if (!res.headersSent) json(res, 500, { error: 'server_error' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: issuer,
    authorizeRequests,
    tokenRequests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
