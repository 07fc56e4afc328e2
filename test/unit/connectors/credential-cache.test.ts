/**
 * Credentials cached per execution environment (lib/aws/secrets/secret-cache.ts
 * on Powertools Parameters), against the Secrets Manager request shapes
 * (aws-sdk-client-mock), through the payments connector (the declarative HTTP
 * connector) and a connector built with defineConnector, with a stand-in
 * provider `fetch` that accepts one current key.
 *
 * Time is Date under fake timers (the Powertools cache and the refresh floor
 * read Date.now); nothing sleeps and nothing asserts timing.
 */
import { inspect } from 'node:util';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SecretValueCache } from '../../../lib/aws/secrets/secret-cache.js';
import { SecretsManagerCredentialProvider } from '../../../lib/aws/secrets/secrets-manager-provider.js';
import * as z from 'zod';
import { ConnectorFailure, defineCapability, defineConnector, type HandlerCall, toProtocolError } from '../../../packages/connector-sdk/src/index.js';
import type { HttpConnectorLogLine } from '../../../lib/connectors/http/index.js';
import { createPaymentsConnector } from '../../../lib/connectors/reference/payments.js';
import { action, attempt, T0 } from './fixtures.js';

const sm = mockClient(SecretsManagerClient);
// The unit files share a module graph (vitest.config.ts): the client's own send comes back after this file.
afterAll(() => sm.restore());
const client = new SecretsManagerClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
const SECRET_ID = 'aip/payments/tenant-a';
const KEY_1 = 'sk_cache_one_9fQ2vX';
const KEY_2 = 'sk_cache_two_Lm4Rt7';
const REFERENCES = [{ connector_id: 'payments', handle: 'payments/api_key', tenant_id: 'tenant-a', secret_id: SECRET_ID }];

/** The keys the provider accepts, what Secrets Manager returns, and every request the connector sent. */
let accepted: Set<string>;
let storedKey: string;
let sent: { authorization: string | null; idempotency_key: string | null }[];
let logs: HttpConnectorLogLine[];
/** Status the provider answers a key it does not accept with. */
let refusal: 401 | 403;

const fakeFetch = (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const headers = new Headers(init?.headers);
  sent.push({ authorization: headers.get('authorization'), idempotency_key: headers.get('idempotency-key') });
  if (![...accepted].some((k) => headers.get('authorization') === `Bearer ${k}`)) {
    return Response.json({ error: { type: 'authentication_error', message: 'bad key' } }, { status: refusal });
  }
  expect(String(input)).toContain('/v1/charges');
  const n = sent.length;
  return Response.json(
    { id: `ch_${n}`, operation_id: `op_${n}`, status: 'succeeded', amount: 100, currency: 'EUR' },
    { status: 200, headers: { 'request-id': `req_${n}` } },
  );
}) as typeof fetch;

function connectorWith(provider: SecretsManagerCredentialProvider) {
  return createPaymentsConnector({ baseUrl: 'http://payments.test', credentials: provider, fetch: fakeFetch, logger: (l) => logs.push(l) });
}

function provider(max_age_seconds?: number, cache = new SecretValueCache({ client })): SecretsManagerCredentialProvider {
  return new SecretsManagerCredentialProvider({
    cache,
    connector_id: 'payments',
    references: REFERENCES,
    ...(max_age_seconds !== undefined ? { max_age_seconds } : {}),
  });
}

async function execute(connector: Pick<ReturnType<typeof connectorWith>, 'invoke_typed'>, n: number) {
  return connector.invoke_typed(action({ id: `act-${n}` }), attempt({ action_id: `act-${n}`, deadline_at: new Date(Date.now() + 30_000) }).context);
}

const fetches = () => sm.commandCalls(GetSecretValueCommand).length;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
  sm.reset();
  accepted = new Set([KEY_1]);
  storedKey = KEY_1;
  refusal = 401;
  sent = [];
  logs = [];
  sm.on(GetSecretValueCommand, { SecretId: SECRET_ID }).callsFake(async () => ({ SecretString: storedKey }));
});

afterEach(() => {
  vi.useRealTimers();
});

describe('credentials cached per execution environment', () => {
  it('sends one GetSecretValue per age across many executes, with the same request shape as before', async () => {
    const connector = connectorWith(provider());
    for (let i = 0; i < 200; i++) {
      expect((await execute(connector, i)).status).toBe('completed');
      vi.advanceTimersByTime(1_000); // 200 s: inside the default age of 300 s
    }
    expect(fetches()).toBe(1);
    expect(sm.commandCalls(GetSecretValueCommand)[0]?.args[0].input).toEqual({ SecretId: SECRET_ID });
    expect(sent.every((r) => r.authorization === `Bearer ${KEY_1}`)).toBe(true);
  });

  it('fetches again once the age has passed, and a rotation takes effect then', async () => {
    const connector = connectorWith(provider(60));
    await execute(connector, 1);
    storedKey = KEY_2; // rotated in Secrets Manager; the provider accepts both until the old one is revoked
    accepted.add(KEY_2);
    vi.advanceTimersByTime(59_000);
    await execute(connector, 2);
    expect(fetches()).toBe(1);
    expect(sent.at(-1)?.authorization).toBe(`Bearer ${KEY_1}`);
    vi.advanceTimersByTime(2_000);
    await execute(connector, 3);
    expect(fetches()).toBe(2);
    expect(sent.at(-1)?.authorization).toBe(`Bearer ${KEY_2}`);
  });

  it('concurrent uses in a cold environment share one request', async () => {
    const connector = connectorWith(provider());
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => execute(connector, i)));
    expect(results.every((r) => r.status === 'completed')).toBe(true);
    expect(fetches()).toBe(1);
  });

  it('connectors of one environment share the cache; age 0 fetches on every use', async () => {
    const cache = new SecretValueCache({ client });
    await execute(connectorWith(provider(300, cache)), 1);
    await execute(connectorWith(provider(300, cache)), 2);
    expect(fetches()).toBe(1);
    const uncached = connectorWith(provider(0));
    await execute(uncached, 3);
    await execute(uncached, 4);
    expect(fetches()).toBe(3);
  });

  for (const status of [401, 403] as const) {
    it(`a ${status} refetches the secret at once and, when it was rotated, sends the same request once more`, async () => {
      refusal = status;
      const connector = connectorWith(provider());
      await execute(connector, 1);
      // Rotated and the old key revoked, long before the cached value's age.
      storedKey = KEY_2;
      accepted = new Set([KEY_2]);
      vi.advanceTimersByTime(5_000);
      sent = [];
      const result = await execute(connector, 2);
      expect(result.status).toBe('completed');
      expect(fetches()).toBe(2);
      expect(sent.map((r) => r.authorization)).toEqual([`Bearer ${KEY_1}`, `Bearer ${KEY_2}`]);
      // The same request: the provider deduplicates on the idempotency key even if it had acted on the refused one.
      expect(sent[0]?.idempotency_key).toBeTruthy();
      expect(sent[1]?.idempotency_key).toBe(sent[0]?.idempotency_key);
      expect(logs.filter((l) => l.event === 'provider_credential_rotated')).toHaveLength(1);
      // Later executes use the refreshed value without another request.
      await execute(connector, 3);
      expect(fetches()).toBe(2);
    });
  }

  it('a refusal of the current secret refetches it but does not resend, and surfaces the typed failure', async () => {
    const connector = connectorWith(provider());
    await execute(connector, 1);
    accepted = new Set(['sk_somebody_else']);
    vi.advanceTimersByTime(5_000);
    sent = [];
    const failure = await execute(connector, 2).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(ConnectorFailure);
    expect((failure as ConnectorFailure).code).toBe('payments.authentication_failed');
    expect(sent).toHaveLength(1);
    expect(fetches()).toBe(2);
    // Refusals in a row force at most one refetch per second: a bad credential costs bounded requests.
    await execute(connector, 3).catch(() => undefined);
    expect(fetches()).toBe(2);
    vi.advanceTimersByTime(1_000);
    await execute(connector, 4).catch(() => undefined);
    expect(fetches()).toBe(3);
    // No secret in the failure, its protocol error or the log lines.
    const rendered = [inspect(failure, { depth: 8 }), JSON.stringify(toProtocolError(failure as ConnectorFailure)), JSON.stringify(logs)].join('\n');
    for (const key of [KEY_1, KEY_2]) expect(rendered).not.toContain(key);
  });

  it('a failed fetch is not cached: the next use asks again', async () => {
    sm.reset();
    sm.on(GetSecretValueCommand)
      .rejectsOnce(Object.assign(new Error('throttled'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } }))
      .callsFake(async () => ({ SecretString: storedKey }));
    const connector = connectorWith(provider());
    const failure = await execute(connector, 1).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((failure as ConnectorFailure).code).toBe('connector.credentials_resolution_failed');
    expect((failure as ConnectorFailure).redacted_details).toMatchObject({ reason: 'secrets_manager:ThrottlingException' });
    expect((await execute(connector, 2)).status).toBe('completed');
    expect(fetches()).toBe(2);
  });

  it('binary secrets are copied per use: disposing one leaves the cached value intact', async () => {
    sm.reset();
    sm.on(GetSecretValueCommand).resolves({ SecretBinary: new TextEncoder().encode(KEY_1) });
    const p = provider();
    const scope = { tenant_id: 'tenant-a' };
    const handle = attempt().context.credential!;
    const first = await p.resolve(handle, scope);
    first.dispose();
    const second = await p.resolve(handle, scope);
    expect(second.withUtf8((t) => t)).toBe(KEY_1);
    expect(fetches()).toBe(1);
  });
});

/**
 * The same provider behind a connector built with defineConnector. `style`:
 * `await` keeps the secret until the answer is in; `early` disposes it before
 * the answer is awaited (lib/connectors/reference/tickets.ts does so).
 */
function definedConnector(p: SecretsManagerCredentialProvider, options: { style?: 'await' | 'early'; effectFirst?: boolean; code?: string } = {}) {
  const send = async (call: HandlerCall, key: string | undefined, body: unknown): Promise<Response> => {
    const request = (secret: { withUtf8<T>(fn: (t: string) => T): T }) =>
      fakeFetch('http://payments.test/v1/charges', {
        method: 'POST',
        headers: { authorization: secret.withUtf8((k) => `Bearer ${k}`), ...(key !== undefined ? { 'idempotency-key': key } : {}) },
        body: JSON.stringify(body),
      });
    if (options.style === 'early') return (await call.withSecret((secret) => ({ pending: request(secret) }))).pending;
    return call.withSecret(request);
  };
  const charge = defineCapability({
    id: 'payments.charge',
    input: z.object({ amount: z.number(), currency: z.string() }),
    output: z.object({ charge_id: z.string() }),
    contract: { credentials: { required: true, kind: 'api_key' } },
  }).implement({
    invoke: async (input, ctx, call) => {
      if (options.effectFirst === true) ctx.execution_checkpoints.provider_effect_committed();
      const res = await send(call, ctx.idempotency?.key, input);
      if (res.status === 401 || res.status === 403) {
        throw call.failure({ code: options.code ?? 'connector.provider_auth_failed', category: 'permanent', retryable: false, remote_status: res.status });
      }
      const json = (await res.json()) as { id: string };
      return { charge_id: json.id };
    },
  });
  return defineConnector({
    id: 'payments',
    version: '1.0.0',
    credentials: p,
    capabilities: [charge],
    ...(options.code !== undefined ? { credential_refusal_codes: [options.code] } : {}),
  });
}

describe('credentials of a connector built with defineConnector (the same shared refresh)', () => {
  const rotate = () => {
    storedKey = KEY_2;
    accepted = new Set([KEY_2]);
    vi.advanceTimersByTime(5_000);
    sent = [];
  };

  for (const [status, style] of [
    [401, 'await'],
    [403, 'early'],
  ] as const) {
    it(`a ${status} (secret disposed ${style === 'early' ? 'before' : 'after'} the answer) refetches the secret and, rotated, runs the handler once more`, async () => {
      refusal = status;
      const connector = definedConnector(provider(), { style });
      await execute(connector, 1);
      expect(fetches()).toBe(1);
      rotate();
      const result = await execute(connector, 2);
      expect(result.status).toBe('completed');
      expect(fetches()).toBe(2);
      expect(sent.map((r) => r.authorization)).toEqual([`Bearer ${KEY_1}`, `Bearer ${KEY_2}`]);
      expect(sent[1]?.idempotency_key).toBe(sent[0]?.idempotency_key);
      await execute(connector, 3);
      expect(fetches()).toBe(2);
    });
  }

  it('a refusal of the current secret refetches it once, does not run the handler again, and surfaces the typed failure', async () => {
    const connector = definedConnector(provider());
    await execute(connector, 1);
    accepted = new Set(['sk_somebody_else']);
    vi.advanceTimersByTime(5_000);
    sent = [];
    const failure = await execute(connector, 2).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((failure as ConnectorFailure).code).toBe('connector.provider_auth_failed');
    expect(sent).toHaveLength(1);
    expect(fetches()).toBe(2);
    const rendered = [inspect(failure, { depth: 8 }), JSON.stringify(toProtocolError(failure as ConnectorFailure))].join('\n');
    for (const key of [KEY_1, KEY_2]) expect(rendered).not.toContain(key);
  });

  it("a connector's own refusal code counts when it declares it", async () => {
    const connector = definedConnector(provider(), { code: 'payments.authentication_failed' });
    await execute(connector, 1);
    rotate();
    expect((await execute(connector, 2)).status).toBe('completed');
    expect(sent).toHaveLength(2);
  });

  it('after a provider effect of the attempt, a refusal is not sent again', async () => {
    const connector = definedConnector(provider(), { effectFirst: true });
    await execute(connector, 1);
    rotate();
    const failure = await execute(connector, 2).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((failure as ConnectorFailure).code).toBe('connector.provider_auth_failed');
    expect(sent).toHaveLength(1);
    expect(fetches()).toBe(1);
  });
});
