/**
 * The deployment's own connectors under the local stack (`npm start --
 * --config <file>`, dev/local/deployment-connectors.ts): a team's folder in
 * the OS temp directory (outside the repository, depending on it through
 * node_modules/aip-runtime) holds a deployment configuration with one
 * declarative HTTP connector (a JSON document) and one code connector module
 * written in TypeScript with the SDK, both pointed by `connectorEndpoints` at
 * a loopback stub provider.
 *
 * - the stack hosts both beside payments: an action on each, over HTTP,
 *   completes with the provider's answer, and the provider saw the secret of
 *   the configuration's credential row, read from its local variable;
 * - the module's typed failure reaches the caller as thrown (the module and
 *   the runtime share one copy of the SDK);
 * - the configuration's approval policies on them apply;
 * - the banner lists them, their capabilities and the variables, never a secret;
 * - a configuration whose document is broken is refused at start with the
 *   synth's InfraConfigError naming the field, and nothing was created;
 * - the configuration's `attemptWhenWaited` decides where a waited execute's
 *   first attempt runs, over the runtime setting, as in a deployment: `queue`
 *   sends it through the invoke queue and the worker; absent (the default,
 *   `inline`) it runs in the submit even when the runtime setting says `queue`.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { DescribeTableCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { banner, PROJECT_ROOT, startLocalStack } from '../../dev/local/start.js';
import { InfraConfigError, type InfraConfigInput } from '../../infra/config.js';
import { dynamoClient } from '../reliability/support.js';
import { RW, securityStack, type SecurityStack } from '../security/support.js';
import { HANG_MS } from '../support/wait.js';
import { CRM_DOCUMENT } from '../fixtures/team-crm-connector.js';
import { ORDERS_MODULE } from '../fixtures/team-orders-connector.js';

const TENANT = 'acme';
const CRM_SECRET = `crm-${randomUUID()}`;
const ORDERS_SECRET = `orders-${randomUUID()}`;

/** The provider stub: what it answered and the Authorization header of each request. */
const seen: { path: string; authorization: string | undefined }[] = [];
let provider: Server;
let providerUrl: string;
let team: string;
let s: SecurityStack;

function teamConfig(connectors: InfraConfigInput['connectors'], approvalPolicies: InfraConfigInput['approvalPolicies'] = []): InfraConfigInput {
  return {
    envName: 'team',
    approvalPolicies,
    auth: { issuer: 'https://issuer.example.com/', audience: 'aip-runtime', jwksUrl: 'https://issuer.example.com/.well-known/jwks.json' },
    connectors,
    connectorEndpoints: Object.fromEntries(
      Object.entries({ crm: `${providerUrl}/crm`, orders: `${providerUrl}/shop` }).filter(([id]) => connectors?.some((c) => c.id === id)),
    ),
  };
}

function writeConfig(name: string, config: InfraConfigInput): string {
  const file = join(team, name);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

beforeAll(async () => {
  provider = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    seen.push({ path: url.pathname, authorization: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/crm/contacts') res.end(JSON.stringify({ email: url.searchParams.get('email'), name: 'Ada Lovelace' }));
    else if (url.pathname === '/shop/orders/missing') res.writeHead(404).end('{}');
    else if (url.pathname.startsWith('/shop/orders/')) res.end(JSON.stringify({ state: 'shipped' }));
    else res.writeHead(404).end('{}');
  });
  await new Promise<void>((done) => provider.listen(0, '127.0.0.1', done));
  providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;

  // The team's repository: outside this one, depending on it.
  team = mkdtempSync(join(tmpdir(), 'aip-team-local-'));
  expect(relative(PROJECT_ROOT, team).startsWith('..')).toBe(true);
  mkdirSync(join(team, 'node_modules'));
  symlinkSync(PROJECT_ROOT, join(team, 'node_modules', 'aip-runtime'), 'dir');
  symlinkSync(join(PROJECT_ROOT, 'node_modules', 'zod'), join(team, 'node_modules', 'zod'), 'dir');
  writeFileSync(join(team, 'package.json'), JSON.stringify({ name: 'team-connectors', private: true, type: 'module' }));
  mkdirSync(join(team, 'connectors'));
  writeFileSync(join(team, 'connectors', 'orders.ts'), ORDERS_MODULE);
  const config = writeConfig(
    'aip.config.json',
    teamConfig(
      [
        { id: 'crm', http: CRM_DOCUMENT, credentials: [{ handle: 'crm/token', tenantId: TENANT, secret: 'team/crm/token' }] },
        { id: 'orders', module: './connectors/orders.ts', credentials: [{ handle: 'orders/api_key', tenantId: TENANT, secret: 'team/orders/api-key' }] },
      ],
      // Gates a mode these capabilities never run: applied (listed below) without holding the actions up.
      [{ id: 'orders-commits', connector: 'orders', modes: ['commit'], approverScopes: ['aip:approve'] }],
    ),
  );
  s = await securityStack('e2e-deploy', TENANT, {
    deploymentConfig: config,
    deploymentEnv: { AIP_LOCAL_SECRET_TEAM_CRM_TOKEN: CRM_SECRET, AIP_LOCAL_SECRET_TEAM_ORDERS_API_KEY: ORDERS_SECRET },
  });
});

afterAll(async () => {
  await s?.stop();
  await new Promise((done) => provider?.close(done));
  if (team !== undefined) rmSync(team, { recursive: true, force: true });
});

async function invoked(token: string, capability_id: string, input: Record<string, unknown>) {
  const id = `act-${randomUUID()}`;
  const sub = await s.call(token, 'POST', '/v1/actions', { id, capability_id, input, idempotency_key: `key-${id}` });
  expect(sub.status, JSON.stringify(sub.body)).toBeLessThan(300);
  return (await s.finished(token, id)).body.action_result as { status: string; output?: unknown; error?: unknown };
}

describe("the deployment's own connectors under the local stack", () => {
  it('hosts the declarative HTTP connector: an action completes with the provider answer, sent with the row secret', async () => {
    const token = await s.token('alice', RW);
    const mark = seen.length;
    const result = await invoked(token, 'crm.contact_lookup', { email: 'ada@example.com' });
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'completed', output: { email: 'ada@example.com', name: 'Ada Lovelace' } });
    expect(seen.slice(mark)).toEqual([{ path: '/crm/contacts', authorization: `Bearer ${CRM_SECRET}` }]);
  });

  it('hosts the code connector module: an action completes, sent with the row secret', async () => {
    const token = await s.token('alice', RW);
    const mark = seen.length;
    const result = await invoked(token, 'orders.status', { order_id: 'ord_1' });
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'completed', output: { order_id: 'ord_1', state: 'shipped' } });
    expect(seen.slice(mark)).toEqual([{ path: '/shop/orders/ord_1', authorization: `Bearer ${ORDERS_SECRET}` }]);
  });

  it("the runtime recognises the module's ConnectorFailure (one copy of the SDK)", async () => {
    const token = await s.token('alice', RW);
    const result = await invoked(token, 'orders.status', { order_id: 'missing' });
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'failed', error: { code: 'connector.provider_rejected', source: 'connector:orders' } });
  });

  it("applies the configuration's approval policies on them", async () => {
    const token = await s.token('alice', RW);
    const list = await s.call(token, 'GET', '/v1/capabilities', undefined, TENANT);
    expect(list.status).toBe(200);
    const items = list.body.items as { id: string; tenant_approval_policies?: { policy_id: string; modes: string[] }[] }[];
    expect(items.find((c) => c.id === 'orders.status')?.tenant_approval_policies).toEqual([
      expect.objectContaining({ policy_id: 'orders-commits', modes: ['commit'] }),
    ]);
    expect(items.find((c) => c.id === 'crm.contact_lookup')?.tenant_approval_policies).toEqual([]);
  });

  it('the banner lists them, their capabilities and credential variables, never a secret', () => {
    const text = banner(s.stack, 'token', undefined);
    expect(text).toContain(`Connectors of ${join(team, 'aip.config.json')} (in-process):`);
    expect(text).toMatch(/crm +declarative HTTP: crm\.contact_lookup/);
    expect(text).toMatch(/orders +module \.\/connectors\/orders\.ts: orders\.status/);
    expect(text).toContain('credential crm/token (tenant acme) from $AIP_LOCAL_SECRET_TEAM_CRM_TOKEN');
    expect(text).toContain('credential orders/api_key (tenant acme) from $AIP_LOCAL_SECRET_TEAM_ORDERS_API_KEY');
    expect(text).not.toContain('NOT SET');
    // The stack's tenant is the rows' tenant: no hint to mint another tenant's token.
    expect(text).not.toContain('npx aip token --tenant');
    expect(text).not.toContain(CRM_SECRET);
    expect(text).not.toContain(ORDERS_SECRET);
  });

  it('a broken document is refused at start, naming the field, and nothing is created', async () => {
    const broken = structuredClone(CRM_DOCUMENT);
    (broken.capabilities[0] as { operations: { invoke: { request: { method: string } } } }).operations.invoke.request.method = 'FETCH';
    const file = writeConfig('broken.json', teamConfig([{ id: 'crm', http: broken }]));
    const namePrefix = `e2e-broken-${randomUUID().slice(0, 8)}`;
    let caught: unknown;
    try {
      await startLocalStack({
        dynamoEndpoint: inject('dynamoEndpoint'),
        sqsEndpoint: inject('sqsEndpoint'),
        namePrefix,
        inMemory: true,
        sweepIntervalMs: 0,
        deploymentConfig: file,
      });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InfraConfigError);
    expect((caught as InfraConfigError).issues).toEqual([
      { path: 'connectors[0].http.capabilities[0].operations.invoke.request.method', message: expect.stringContaining('"GET"') },
    ]);
    const ddb = dynamoClient();
    try {
      await expect(ddb.send(new DescribeTableCommand({ TableName: namePrefix }))).rejects.toBeInstanceOf(ResourceNotFoundException);
    } finally {
      ddb.destroy();
    }
  });
});

describe("the configuration's attemptWhenWaited (where a waited execute's first attempt runs)", () => {
  /** A stack on a configuration with the crm connector and `attemptWhenWaited` (absent: the configuration's default). */
  async function stackOn(name: string, attemptWhenWaited: 'inline' | 'queue' | undefined, runtimeSettings: Record<string, unknown>) {
    const config = { ...teamConfig([{ id: 'crm', http: CRM_DOCUMENT }]), ...(attemptWhenWaited !== undefined ? { attemptWhenWaited } : {}) };
    return securityStack(`e2e-waited-${name}`, TENANT, { deploymentConfig: writeConfig(`${name}.json`, config), runtimeSettings });
  }

  /** A payments charge submitted with `Prefer: wait=20`: the answer's action status. */
  async function waitedCharge(w: SecurityStack, id: string): Promise<unknown> {
    const res = await fetch(`${w.stack.url}/v1/actions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await w.token('alice', RW)}`, 'content-type': 'application/json', prefer: 'wait=20' },
      body: JSON.stringify({
        id,
        capability_id: 'payments.charge',
        input: { amount: 1_250, currency: 'eur', customer: 'cus_waited' },
        transaction: { mode: 'execute' },
        idempotency_key: `key-${id}`,
      }),
      signal: AbortSignal.timeout(HANG_MS),
    });
    return ((await res.json()) as { action_result?: { status?: string } }).action_result?.status;
  }

  it('"queue": the waited execute goes through the invoke queue and the worker, as the deployment would send it', async () => {
    // The runtime setting says inline: the configuration decides, as AIP_RUNTIME_CONFIG does in a deployment.
    const w = await stackOn('queue', 'queue', { attempt_when_waited: 'inline' });
    try {
      const id = `act-${randomUUID()}`;
      const worked = w.stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
      const status = await waitedCharge(w, id);
      // The worker's batch held the waited execute's invoke message.
      expect(await worked).toMatchObject({ kind: 'invoke', action_id: id });
      expect(['completed', 'running', 'accepted']).toContain(status);
      const done = await w.finished(await w.token('alice', RW), id);
      expect((done.body.action_result as { status: string }).status).toBe('completed');
    } finally {
      await w.stop();
    }
  });

  it('absent (the default, "inline"): the attempt runs in the submit, even when the runtime setting says "queue"', async () => {
    const w = await stackOn('default', undefined, { attempt_when_waited: 'queue' });
    try {
      const waited = `act-${randomUUID()}`;
      const later = `act-${randomUUID()}`;
      // The first invoke batch the worker finishes holding either action: the later, unwaited one's (nobody waits: queued).
      const worked = w.stack.handled('invoke', (m) => m.kind === 'invoke' && (m.action_id === waited || m.action_id === later));
      // Answered settled: the attempt ran in the submit, with no invoke message.
      expect(await waitedCharge(w, waited)).toBe('completed');
      const token = await w.token('alice', RW);
      const sub = await w.call(token, 'POST', '/v1/actions', {
        id: later,
        capability_id: 'payments.charge',
        input: { amount: 1_300, currency: 'eur', customer: 'cus_waited' },
        transaction: { mode: 'execute' },
        idempotency_key: `key-${later}`,
      });
      expect(sub.status, JSON.stringify(sub.body)).toBe(202);
      expect(await worked).toMatchObject({ kind: 'invoke', action_id: later });
    } finally {
      await w.stop();
    }
  });
});
