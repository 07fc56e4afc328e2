/**
 * What `cdk deploy` ships, run end to end: the cloud assembly synthesized
 * with bundling (test/assembly/synth-app.ts, cached per source state by
 * ./synth.ts), "deployed" from its templates on DynamoDB Local, fauxqs, the
 * Scheduler emulator and the AWS gateway (./deployment.ts), every function
 * run from its staged bundle in its own Node process (./lambda-host.ts),
 * triggered as API Gateway, the SQS event source mappings, EventBridge
 * Scheduler, the EventBridge rule and the Function URLs would trigger it.
 *
 * The main flows through the REST API (execute; plan → approve → commit;
 * lost answer → reconciled, by the operator and on the schedule;
 * compensation; cancellation), every other route once, the sweeper's rule,
 * the console; in the `assembly-remote` environment a charge through the
 * remote connector host and its checkpoint receiver.
 *
 * Then IAM, proved: every AWS call each function made (and each invocation
 * of a function by a service) must be allowed by the template (the role's
 * identity policies, the function's resource policy), or the test fails
 * naming the function, the action and the resource. Grants no call used are
 * printed and written to `.vitest-tmp/assembly/iam-grants.md` (or to the path in
 * `AIP_IAM_REPORT`: `npm run iam:report` writes docs/iam-grants.md).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { generateDevKeys, type DevKeys } from '../../dev/auth/keys.js';
import { mintToken } from '../../dev/auth/mint.js';
import { startPaymentsSimulator, type PaymentsSimulator } from '../../dev/payments-simulator/server.js';
import { AipClient, AipClientError, type Action, type ActionState, TERMINAL_STATUSES } from '../../lib/client/index.js';
import { eventually, HANG_MS } from '../support/wait.js';
import type { AwsCall } from './aws-gateway.js';
import { callsByRole, deployAssembly, type AssemblyEnvironment } from './deployment.js';
import { evaluate, grantUse, roleGrants, type GrantUse } from './iam.js';
import { ASSEMBLY_CACHE_ROOT, synthesizedAssembly } from './synth.js';

const CONFIG = JSON.parse(readFileSync(join(import.meta.dirname, 'config.json'), 'utf8')) as {
  auth: { issuer: string; audience: string; jwksUrl: string };
  connectors: { credentials: { secret: string }[] }[];
  connectorEndpoints: Record<string, string>;
};
const TENANT = 'demo';
const SYNTH_HANG_MS = 900_000;
const WAIT = 20;
const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;

let dir: string;
let keys: DevKeys;
let jwks: Server;
let simulator: PaymentsSimulator;
let tls: { cert: string; key: string; certFile: string };
let tlsDir: string;
const environments: AssemblyEnvironment[] = [];
let externalUrls: Record<string, string>;
let externalSecrets: Record<string, string>;

function output(text: string): void {
  process.stdout.write(text);
}

beforeAll(async () => {
  ({ dir } = await synthesizedAssembly());
  tlsDir = join(ASSEMBLY_CACHE_ROOT, `tls-${process.pid}`);
  mkdirSync(tlsDir, { recursive: true });
  // A self-signed certificate for the Function URLs' https listeners on loopback; the functions trust it (NODE_EXTRA_CA_CERTS).
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(tlsDir, 'key.pem'),
        '-out',
        join(tlsDir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
  } catch (err) {
    throw new Error(`the assembly test makes its loopback TLS certificate with openssl (apt-get install openssl): ${String(err)}`);
  }
  tls = { cert: readFileSync(join(tlsDir, 'cert.pem'), 'utf8'), key: readFileSync(join(tlsDir, 'key.pem'), 'utf8'), certFile: join(tlsDir, 'cert.pem') };

  keys = await generateDevKeys();
  // The IdP's JWKS, over https as the configuration requires outside the local environments.
  jwks = createServer({ cert: tls.cert, key: tls.key }, (_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(keys.jwks)),
  );
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const apiKey = `sk_assembly_${randomUUID()}`;
  simulator = await startPaymentsSimulator({ apiKeys: [apiKey] });
  externalUrls = {
    [CONFIG.auth.jwksUrl]: `https://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`,
    [CONFIG.connectorEndpoints.payments as string]: simulator.url,
  };
  externalSecrets = Object.fromEntries(CONFIG.connectors.flatMap((c) => c.credentials.map((row) => [row.secret, apiKey])));
  // Synthesizing with bundling takes a minute on an idle machine, several on a loaded one: this bounds a hang only.
}, SYNTH_HANG_MS);

afterAll(async () => {
  await Promise.all(environments.map((e) => e.stop()));
  await simulator?.stop();
  jwks?.closeAllConnections();
  await new Promise<void>((resolve) => (jwks ? jwks.close(() => resolve()) : resolve()));
  if (tlsDir !== undefined) rmSync(tlsDir, { recursive: true, force: true });
});

function deploy(envName: string): Promise<AssemblyEnvironment> {
  return deployAssembly({
    dir,
    envName,
    dynamoEndpoint: inject('dynamoEndpoint'),
    sqsEndpoint: inject('sqsEndpoint'),
    externalUrls,
    externalSecrets,
    tls,
    output,
  }).then((env) => {
    environments.push(env);
    return env;
  });
}

/** The bearer token of each client (for the raw requests the typed client has no method for). */
const tokens = new WeakMap<AipClient, string>();

async function client(env: AssemblyEnvironment, sub: string, scopes: string[]): Promise<AipClient> {
  const token = await mintToken({ sub, tenants: [TENANT], scopes, issuer: CONFIG.auth.issuer, audience: CONFIG.auth.audience, ttl: '1h' }, keys);
  const c = new AipClient({ baseUrl: env.api.url, token });
  tokens.set(c, token);
  return c;
}

const bearer = (c: AipClient) => `Bearer ${tokens.get(c) ?? ''}`;

function charge(id: string, amount: number, transaction: NonNullable<Action['transaction']>, extra: Partial<Action> = {}): Action {
  return { id, capability_id: 'payments.charge', input: { amount, currency: 'eur', customer: 'cus_assembly' }, transaction, ...extra };
}

/**
 * Submits as a client should: a retryable answer is resubmitted (the same action ID, so at most one
 * action) after its Retry-After. On a busy machine the first request of a function can find the remote
 * connector host still starting, which is a 503 `connector.remote_unavailable`; a hang is bounded.
 */
async function submitted(c: AipClient, body: Action): Promise<ActionState> {
  const started = Date.now();
  let sub: Awaited<ReturnType<AipClient['submitAction']>>;
  for (;;) {
    try {
      sub = await c.submitAction(body, { wait: WAIT });
      break;
    } catch (err) {
      if (!(err instanceof AipClientError) || !err.retryable || Date.now() - started > HANG_MS) throw err;
      await sleep(err.retryAfterMs ?? 1_000);
    }
  }
  if (TERMINAL_STATUSES.includes(sub.action_result.status) || sub.action_result.status === 'requires_human') {
    return { action_result: sub.action_result, ...(sub.transaction_result !== undefined ? { transaction: sub.transaction_result } : {}) };
  }
  return c.waitForAction(sub.action_id, { timeoutMs: HANG_MS, pollSeconds: WAIT });
}

/** The IAM verdict of an environment: calls not allowed, invocations not allowed, and every grant's use. */
function iamVerdict(env: AssemblyEnvironment) {
  const { grants, managed } = roleGrants(env.stacks, env.resolver);
  const missing: string[] = [];
  for (const call of env.gateway.calls) {
    const role = env.principalRole.get(call.principal);
    if (role === undefined) {
      missing.push(`${call.principal}: ${call.action} on ${call.resource}: no role known for this caller`);
      continue;
    }
    // The Scheduler emulator looks the target queue's URL up by name; EventBridge Scheduler itself sends to the ARN.
    if (call.principal === role && !env.roleOf.has(call.principal) && call.action === 'sqs:GetQueueUrl') continue;
    if (managed.has(role)) throw new Error(`${role} has managed policies: its calls cannot be proved from the template`);
    if (!evaluate(grants.get(role) ?? [], call).allowed) missing.push(`${call.principal} (role ${role}): ${call.action} on ${call.resource} is not allowed`);
  }
  const refused = env.invokeChecks.filter((c) => !c.allowed).map((c) => `${c.functionId}: ${c.principal} may not invoke it (source ${c.sourceArn || '-'})`);
  const principals = new Set(env.principalRole.values());
  const uses = grantUse(new Map([...grants].filter(([role]) => principals.has(role))), callsByRole(env));
  return { missing, refused, uses };
}

/** Grants the Lambda service and X-Ray use with the function's role, not the function's code: not observable here. */
const PLATFORM_ACTIONS = /^(logs:CreateLogStream|logs:PutLogEvents|xray:PutTraceSegments|xray:PutTelemetryRecords)$/;
/** KMS actions on a key the code never names: DynamoDB (and SQS with SSE-KMS) use them server-side for the caller. */
const SSE_KMS_ACTIONS = /^kms:(Decrypt|Encrypt|ReEncrypt\*|GenerateDataKey\*?)$/;

const short = (r: string) =>
  r
    .replace(/asm[0-9a-f]{6}[-/]/g, '')
    .replace(/arn:aws:([a-z-]+):us-east-1:000000000000:/, '')
    .replace(/[0-9A-F]{8}(?=$|\/)/g, '')
    .replace(/^table\/Table\/index\//, 'index/');

/** The report of an environment; `ran`: only the functions that ran there (the second environment runs a few). */
function report(env: AssemblyEnvironment, uses: readonly GrantUse[], ran = false): string {
  const shown = new Set([...env.functions].filter(([, fn]) => !ran || fn.invocations > 0).map(([id]) => env.roleOf.get(id)));
  // Principals that are not functions (the Scheduler's role) always count.
  for (const [principal, role] of env.principalRole) if (!env.roleOf.has(principal)) shown.add(role);
  const lines: string[] = [
    `## Environment \`${env.envName}\``,
    '',
    '| function | invocations | cold starts | AWS calls | actions called |',
    '|---|---:|---:|---:|---|',
  ];
  for (const [id, fn] of [...env.functions].sort(([a], [b]) => a.localeCompare(b))) {
    if (ran && fn.invocations === 0) continue;
    const calls = env.gateway.calls.filter((c) => c.principal === id);
    const actions = [...new Set(calls.map((c) => c.action))].sort();
    lines.push(`| ${short(id)} | ${fn.invocations} | ${fn.coldStarts} | ${calls.length} | ${actions.join(', ') || '—'} |`);
  }
  const codeKeys = new Set(env.gateway.calls.filter((c) => c.action.startsWith('kms:')).map((c) => c.resource));
  const observable = uses.filter(
    (u) => shown.has(u.role) && !PLATFORM_ACTIONS.test(u.action) && !(SSE_KMS_ACTIONS.test(u.action) && !codeKeys.has(u.resource)),
  );
  lines.push(
    '',
    '### Grants no recorded call used',
    '',
    'Per role: the actions no call used on any of their resources, then the resources a used action never touched.',
    '',
    '| role | actions never used | used actions: resources never used |',
    '|---|---|---|',
  );
  for (const role of [...new Set(observable.map((u) => u.role))].sort()) {
    const mine = observable.filter((u) => u.role === role);
    const actions = [...new Set(mine.map((u) => u.action))];
    const never = actions.filter((a) => mine.every((u) => u.action !== a || !u.used));
    const partly = actions
      .filter((a) => !never.includes(a) && mine.some((u) => u.action === a && !u.used))
      .map(
        (a) =>
          `${a}: ${mine
            .filter((u) => u.action === a && !u.used)
            .map((u) => short(u.resource))
            .join(', ')}`,
      );
    if (never.length + partly.length > 0) lines.push(`| ${short(role)} | ${never.join(', ') || '—'} | ${partly.join('; ') || '—'} |`);
  }
  const platform = [...new Set(uses.filter((u) => PLATFORM_ACTIONS.test(u.action)).map((u) => u.action))].sort();
  const sse = [...new Set(uses.filter((u) => SSE_KMS_ACTIONS.test(u.action) && !codeKeys.has(u.resource)).map((u) => u.action))].sort();
  lines.push(
    '',
    `Not observable here, so not listed: ${platform.join(', ')} (the Lambda service and the X-Ray daemon use them with each role); ` +
      `${sse.join(', ')} on the table's key (DynamoDB's server-side encryption uses them on the caller's behalf).`,
    '',
  );
  return lines.join('\n');
}

const reports: string[] = [];

afterAll(() => {
  if (reports.length === 0) return;
  const text = [
    '# IAM grants: used and unused',
    '',
    'Generated by the assembly test (test/assembly/assembly.test.ts; `npm run iam:report`). Every AWS call each function',
    'made while the main flows ran on its cdk.out bundle was recorded and checked against its role in the template; a call',
    'the role does not allow fails the test. Below: per function, what ran and what it called; then the grants no call used',
    '(they may still be needed by a path the flows did not take: review before removing one).',
    '',
    ...reports,
  ].join('\n');
  const target = process.env.AIP_IAM_REPORT ?? join(ASSEMBLY_CACHE_ROOT, 'iam-grants.md');
  writeFileSync(target, text);
  console.log(text);
});

describe('the assembly, main environment (payments in the runtime, the console)', () => {
  let env: AssemblyEnvironment;
  let alice: AipClient;
  let approver: AipClient;
  let operator: AipClient;

  beforeAll(async () => {
    env = await deploy('assembly');
    [alice, approver, operator] = await Promise.all([
      client(env, 'alice', ['aip:actions:read', 'aip:actions:write']),
      client(env, 'approver', ['aip:actions:read', 'aip:approve']),
      client(env, 'ops', ['aip:actions:read', 'aip:operator']),
    ]);
  });

  it('execute: the charge completes through the authorizer, the submit function, the invoke queue and the worker', async () => {
    const mark = simulator.ledger().length;
    const id = uid('exec');
    const state = await submitted(alice, charge(id, 1_250, { mode: 'execute' }));
    expect(state.action_result.status).toBe('completed');
    expect(state.transaction?.status).toBe('committed');
    expect(simulator.ledger().slice(mark)).toMatchObject([{ kind: 'charge', amount: 1_250 }]);
    expect((await alice.getAction(id)).action_result.status).toBe('completed');
    expect(await alice.readStream(id)).toBeTypeOf('object');
    await expect(fetch(`${env.api.url}/v1/actions/${id}`)).resolves.toMatchObject({ status: 401 });
  });

  it('plan → approve → commit: one charge, after another principal approved', async () => {
    const mark = simulator.ledger().length;
    const plan = await alice.submitAction(charge(uid('plan'), 4_200, { mode: 'plan' }));
    const planId = (plan.action_result.output as { plan_id: string }).plan_id;
    const commitId = uid('commit');
    const sub = await alice.submitAction(charge(commitId, 4_200, { mode: 'commit', plan_id: planId }));
    expect(sub.disposition).toBe('requires_human');
    const approvalId = (sub.action_result.metadata as { approval_id: string }).approval_id;
    expect((await approver.listApprovals()).items.map((a) => a.approval_id)).toContain(approvalId);
    expect(await approver.getApproval(approvalId)).toMatchObject({ approval_id: approvalId, status: 'pending' });
    await approver.decideApproval(approvalId, 'approve', { reason: 'assembly' });
    const done = await alice.waitForAction(commitId, { timeoutMs: HANG_MS, pollSeconds: WAIT });
    expect(done.action_result.status).toBe('completed');
    expect((await alice.getTransaction({ plan_id: planId })).status).toBe('committed');
    expect(simulator.ledger().slice(mark)).toMatchObject([{ kind: 'charge', amount: 4_200 }]);
  });

  it('lost answer: the provider commits and times out (504) → outcome_unknown → the operator reconciles it, no second charge', async () => {
    const mark = simulator.ledger().length;
    simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
    const state = await submitted(alice, charge(uid('lost'), 5_040, { mode: 'execute' }));
    expect(state.transaction?.status).toBe('outcome_unknown');
    const txId = state.transaction?.transaction_id as string;
    // The operator's "reconcile now" races the one-time schedule (due 5 s after the timeout): either may start the reconciliation.
    await operator.operatorReconcile(txId, { reason: 'assembly' }).catch((err: unknown) => {
      expect(err).toMatchObject({ status: 409, code: 'runtime.reconcile_not_outcome_unknown' });
    });
    const txn = await eventually(
      async () => {
        const t = await operator.getTransaction({ transaction_id: txId });
        return t.status === 'reconciled' ? t : undefined;
      },
      // Each probe is a request through the gateway and two functions: probe gently.
      { what: `transaction ${txId} reconciled`, intervalMs: 250 },
    );
    expect(txn.provider_operation?.operation_id).toMatch(/^op_/);
    expect(simulator.ledger().slice(mark)).toHaveLength(1);
  });

  it('lost answer → the one-time schedule fires on time (EventBridge Scheduler → reconcile queue → consumer) → reconciled', async () => {
    const mark = simulator.ledger().length;
    simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
    const state = await submitted(alice, charge(uid('sched'), 5_050, { mode: 'execute' }));
    expect(state.transaction?.status).toBe('outcome_unknown');
    const txId = state.transaction?.transaction_id as string;
    await eventually(async () => ((await alice.getTransaction({ transaction_id: txId })).status === 'reconciled' ? true : undefined), {
      what: `transaction ${txId} reconciled on its schedule`,
      intervalMs: 250,
    });
    // The waited execute's attempt ran in the submit function (attemptWhenWaited "inline", the default): it created the schedule.
    expect(env.gateway.calls.some((c) => c.principal.startsWith('HttpSubmitAction') && c.action === 'scheduler:CreateSchedule')).toBe(true);
    expect(env.gateway.calls.some((c) => !env.roleOf.has(c.principal) && c.action === 'sqs:SendMessage')).toBe(true);
    expect(simulator.ledger().slice(mark)).toHaveLength(1);
  });

  it('compensation: the approved refund of an executed charge', async () => {
    const target = await submitted(alice, charge(uid('target'), 3_100, { mode: 'execute' }));
    const chargeId = (target.action_result.output as { charge_id: string }).charge_id;
    const compId = uid('refund');
    const sub = await alice.submitAction({
      id: compId,
      capability_id: 'payments.charge',
      input: { charge_id: chargeId },
      transaction: { mode: 'compensate', compensation_for: target.action_result.action_id as string },
    });
    expect(sub.disposition).toBe('requires_human');
    await approver.decideApproval((sub.action_result.metadata as { approval_id: string }).approval_id, 'approve');
    const done = await alice.waitForAction(compId, { timeoutMs: HANG_MS, pollSeconds: WAIT });
    expect(done.action_result.status).toBe('completed');
    expect(done.transaction?.status).toBe('compensated');
  });

  it('cancel, the operator views and resolution, health, capabilities, OpenAPI, MCP, the console and the sweeper', async () => {
    const plan = await alice.submitAction(charge(uid('plan'), 6_600, { mode: 'plan' }));
    const commitId = uid('cancel');
    await alice.submitAction(charge(commitId, 6_600, { mode: 'commit', plan_id: (plan.action_result.output as { plan_id: string }).plan_id }));
    expect((await alice.cancel(commitId)).action_result).toMatchObject({ status: 'cancelled' });

    const committed = await submitted(alice, charge(uid('resolve'), 700, { mode: 'execute' }));
    await expect(
      operator.operatorResolve(committed.transaction?.transaction_id as string, { effect: 'committed', reason: 'assembly: not escalated' }),
    ).rejects.toMatchObject({ status: 409 });
    expect(await operator.listOperator('pending_approvals')).toHaveProperty('items');
    expect(await operator.listOperator('outcome_unknown')).toHaveProperty('items');
    const overview = await fetch(`${env.api.url}/v1/operator/overview`, { headers: { authorization: bearer(operator) } });
    expect(overview.status).toBe(200);
    expect((await alice.health()).status).toBeDefined();
    expect(JSON.stringify(await alice.capabilities())).toContain('payments.charge');
    expect(await alice.openapi()).toHaveProperty('openapi');

    const mcp = await fetch(`${env.api.url}/v1/mcp`, {
      method: 'POST',
      headers: { authorization: bearer(alice), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(mcp.status).toBe(200);
    expect(await mcp.text()).toContain('payments.charge');

    const page = await fetch(`${env.api.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await (await fetch(`${env.api.url}/console/config.json`)).json()).toMatchObject({ mode: 'oidc', oidc: { client_id: 'aip-console' } });

    const [sweep] = await env.fireRule('SweeperSchedule');
    expect(sweep).not.toBeInstanceOf(Error);
  });

  it('every function of the template ran from its bundle, and every AWS call and invocation was allowed by the template', () => {
    const notRun = [...env.functions].filter(([, fn]) => fn.invocations === 0).map(([id]) => id);
    expect(notRun).toEqual([]);
    // Each function ran as its trigger would run it, through the resource policy the template gives it.
    const invokedBy = new Set(env.invokeChecks.map((c) => c.principal));
    expect([...invokedBy].sort()).toEqual(['apigateway.amazonaws.com', 'events.amazonaws.com']);
    expect(env.batches.size).toBe(2);
    const { missing, refused, uses } = iamVerdict(env);
    reports.push(report(env, uses));
    expect(missing).toEqual([]);
    expect(refused).toEqual([]);

    // The proof has teeth: without its CreateSchedule grant, the recorded call of the submit function (which ran the
    // waited execute's attempt inline, and settled it outcome_unknown) is refused.
    const worker = [...env.roleOf.keys()].find((id) => id.startsWith('HttpSubmitAction')) as string;
    const call = env.gateway.calls.find((c) => c.principal === worker && c.action === 'scheduler:CreateSchedule');
    expect(call).toBeDefined();
    const grants = roleGrants(env.stacks, env.resolver).grants.get(env.roleOf.get(worker) as string) ?? [];
    expect(evaluate(grants, call as AwsCall).allowed).toBe(true);
    const without = grants.map((g) => ({ ...g, actions: g.actions.filter((a) => a !== 'scheduler:CreateSchedule') }));
    expect(evaluate(without, call as AwsCall).allowed).toBe(false);
  });
});

describe('the assembly, remote placement (payments on the remote connector host)', () => {
  let env: AssemblyEnvironment;
  let alice: AipClient;

  beforeAll(async () => {
    env = await deploy('assembly-remote');
    alice = await client(env, 'alice', ['aip:actions:read', 'aip:actions:write']);
  });

  it('execute through the host (signed with KMS keys) and its checkpoint receiver', async () => {
    const mark = simulator.ledger().length;
    const state = await submitted(alice, charge(uid('remote'), 2_500, { mode: 'execute' }));
    expect(state.action_result.status).toBe('completed');
    expect(state.transaction?.status).toBe('committed');
    expect(simulator.ledger().slice(mark)).toMatchObject([{ kind: 'charge', amount: 2_500 }]);
    for (const part of ['RemoteConnectorHost9', 'RemoteConnectorHostCheckpointReceiver']) {
      expect([...env.functions].find(([id]) => id.startsWith(part))?.[1].invocations ?? 0, part).toBeGreaterThan(0);
    }
  });

  it('an execute nobody waits on goes through the invoke queue: the worker calls the host', async () => {
    const mark = simulator.ledger().length;
    const id = uid('remote-queued');
    const sub = await alice.submitAction(charge(id, 2_600, { mode: 'execute' }));
    expect(sub.disposition).toBe('accepted');
    const state = await alice.waitForAction(id, { timeoutMs: HANG_MS, pollSeconds: WAIT });
    expect(state.action_result.status).toBe('completed');
    expect(simulator.ledger().slice(mark)).toMatchObject([{ kind: 'charge', amount: 2_600 }]);
    expect([...env.functions].find(([fid]) => fid.startsWith('InvokeWorker'))?.[1].invocations ?? 0).toBeGreaterThan(0);
  });

  it('every AWS call and invocation in this environment was allowed by the template', () => {
    const { missing, refused, uses } = iamVerdict(env);
    reports.push(report(env, uses, true));
    expect(missing).toEqual([]);
    expect(refused).toEqual([]);
  });
});
