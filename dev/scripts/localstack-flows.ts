/**
 * The main flows against a deployed AIP runtime on LocalStack (README.md,
 * "Deploy to LocalStack"), the ones the assembly test runs on the emulators
 * (test/assembly/assembly.test.ts): execute; plan → approve → commit; lost
 * answer (the provider commits, then times out) → outcome_unknown →
 * reconciled; compensation of a charge.
 *
 *   AIP_LOCALSTACK_URL=http://localhost.localstack.cloud:4566 npx tsx dev/scripts/localstack-flows.ts
 *
 * Without AIP_LOCALSTACK_URL (and without AIP_API_URL) it says it is skipped
 * and exits 0. Environment:
 *
 * | variable | default | |
 * |---|---|---|
 * | AIP_LOCALSTACK_URL | — | LocalStack's edge URL: the API URL is read from the `ApiUrl` output of `Aip-<env>-Stateless` (CloudFormation DescribeStacks) |
 * | AIP_ENV_NAME | `localstack` | the configuration's `envName` (infra/config.localstack.json) |
 * | AIP_API_URL | — | the API's base URL, instead of the lookup (any deployment that trusts the dev issuer, `npm start` too: `http://127.0.0.1:3000`) |
 * | AIP_PAYMENTS_SIM_URL | `http://127.0.0.1:4010` | the payments simulator the deployment calls (its `/_sim/faults` route plants the lost answer) |
 * | AIP_FLOW_TIMEOUT_MS | 300000 | bound on each wait (LocalStack's Scheduler fires nothing: reconciliation waits for the sweeper's minute, or the operator's reconcile) |
 *
 * Tokens are minted with the development key (`.local/dev-keys`, the one
 * `npx aip token` signs with and `dev/auth/serve-jwks.ts` serves), for
 * tenant `demo`, as the README's LocalStack steps set up. A submission that
 * waits for an approval is approved by a second principal. Exit code 1 when
 * a flow fails; each flow prints one line.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEV_AUDIENCE, DEV_ISSUER, loadDevKeys } from '../auth/keys.js';
import { mintToken } from '../auth/mint.js';
import { AipClient, AipClientError, type Action, type ActionState, TERMINAL_STATUSES } from '../../lib/client/index.js';

const TENANT = 'demo';
const WAIT = 20;

interface Clients {
  readonly alice: AipClient;
  readonly approver: AipClient;
  readonly operator: AipClient;
}

/** The `ApiUrl` output of the stateless stack, from LocalStack's CloudFormation (Query API; LocalStack routes by the credential scope and checks no signature). */
export async function apiUrlFromLocalStack(localstackUrl: string, envName: string): Promise<string> {
  const stack = `Aip-${envName}-Stateless`;
  const date = new Date().toISOString().slice(0, 10).replaceAll('-', '');
  const res = await fetch(`${localstackUrl.replace(/\/+$/, '')}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `AWS4-HMAC-SHA256 Credential=test/${date}/us-east-1/cloudformation/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: new URLSearchParams({ Action: 'DescribeStacks', StackName: stack, Version: '2010-05-15' }),
  });
  const xml = await res.text();
  if (!res.ok) throw new Error(`DescribeStacks ${stack}: HTTP ${res.status}: ${xml.slice(0, 300)}`);
  for (const member of xml.split('<member>')) {
    if (/<OutputKey>ApiUrl<\/OutputKey>/.test(member)) {
      const value = /<OutputValue>([^<]+)<\/OutputValue>/.exec(member)?.[1];
      if (value !== undefined) return value;
    }
  }
  throw new Error(`${stack} has no ApiUrl output (is it deployed? npm run deploy:localstack)`);
}

const charge = (id: string, amount: number, transaction: NonNullable<Action['transaction']>): Action => ({
  id,
  capability_id: 'payments.charge',
  input: { amount, currency: 'eur', customer: 'cus_localstack' },
  transaction,
});

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(what);
}

/** Submits; approves as the approver if the action waits for an approval; waits until it settles. */
async function settled(c: Clients, body: Action, timeoutMs: number): Promise<ActionState> {
  const sub = await c.alice.submitAction(body, { wait: WAIT });
  if (sub.action_result.status === 'requires_human') {
    const approvalId = (sub.action_result.metadata as { approval_id?: string } | undefined)?.approval_id;
    check(approvalId !== undefined, `${body.id}: requires_human without an approval`);
    await c.approver.decideApproval(approvalId as string, 'approve', { reason: 'localstack flows' });
  } else if (TERMINAL_STATUSES.includes(sub.action_result.status)) {
    return { action_result: sub.action_result, ...(sub.transaction_result !== undefined ? { transaction: sub.transaction_result } : {}) };
  }
  return c.alice.waitForAction(sub.action_id, { timeoutMs, pollSeconds: WAIT });
}

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

export async function runFlows(options: { apiUrl: string; simulatorUrl: string; timeoutMs: number; log: (line: string) => void }): Promise<boolean> {
  const keys = await loadDevKeys();
  const mint = (sub: string, scopes: string[]) => mintToken({ sub, tenants: [TENANT], scopes, issuer: DEV_ISSUER, audience: DEV_AUDIENCE, ttl: '1h' }, keys);
  const c: Clients = {
    alice: new AipClient({ baseUrl: options.apiUrl, token: await mint('alice', ['aip:actions:read', 'aip:actions:write']) }),
    approver: new AipClient({ baseUrl: options.apiUrl, token: await mint('approver', ['aip:approve', 'aip:actions:read']) }),
    operator: new AipClient({ baseUrl: options.apiUrl, token: await mint('ops', ['aip:actions:read', 'aip:operator']) }),
  };
  const t = options.timeoutMs;
  const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;
  let executed: ActionState | undefined;

  const flows: [string, () => Promise<string>][] = [
    [
      'execute',
      async () => {
        executed = await settled(c, charge(uid('exec'), 1_250, { mode: 'execute' }), t);
        check(executed.action_result.status === 'completed', `status ${executed.action_result.status}`);
        check(executed.transaction?.status === 'committed', `transaction ${executed.transaction?.status}`);
        return `completed, charge ${(executed.action_result.output as { charge_id: string }).charge_id}`;
      },
    ],
    [
      'plan → approve → commit',
      async () => {
        const plan = await c.alice.submitAction(charge(uid('plan'), 4_200, { mode: 'plan' }));
        const planId = (plan.action_result.output as { plan_id: string }).plan_id;
        const done = await settled(c, charge(uid('commit'), 4_200, { mode: 'commit', plan_id: planId }), t);
        check(done.action_result.status === 'completed', `commit ${done.action_result.status}`);
        const txn = await c.alice.getTransaction({ plan_id: planId });
        check(txn.status === 'committed', `transaction ${txn.status}`);
        return `plan ${planId} committed`;
      },
    ],
    [
      'lost answer → reconciled',
      async () => {
        const planted = await fetch(`${options.simulatorUrl}/_sim/faults`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]),
        });
        check(planted.ok, `planting the fault at ${options.simulatorUrl}: HTTP ${planted.status}`);
        const state = await settled(c, charge(uid('lost'), 5_040, { mode: 'execute' }), t);
        check(state.transaction?.status === 'outcome_unknown', `transaction ${state.transaction?.status} (expected outcome_unknown)`);
        const txId = state.transaction?.transaction_id as string;
        // The operator's reconcile races the sweeper (and, on AWS, the one-time schedule): either may start it.
        await c.operator.operatorReconcile(txId, { reason: 'localstack flows' }).catch((err: unknown) => {
          if (!(err instanceof AipClientError && err.code === 'runtime.reconcile_not_outcome_unknown')) throw err;
        });
        const txn = await waitFor(
          async () => {
            const x = await c.alice.getTransaction({ transaction_id: txId });
            return x.status === 'reconciled' ? x : undefined;
          },
          `transaction ${txId} reconciled`,
          t,
        );
        return `${txId} reconciled (operation ${txn.provider_operation?.operation_id ?? '?'})`;
      },
    ],
    [
      'compensation',
      async () => {
        check(executed?.action_result.status === 'completed', 'needs the executed charge of the first flow');
        const target = executed as ActionState;
        const done = await settled(
          c,
          {
            id: uid('refund'),
            capability_id: 'payments.charge',
            input: { charge_id: (target.action_result.output as { charge_id: string }).charge_id },
            transaction: { mode: 'compensate', compensation_for: target.action_result.action_id as string },
          },
          t,
        );
        check(done.action_result.status === 'completed', `compensation ${done.action_result.status}`);
        check(done.transaction?.status === 'compensated', `transaction ${done.transaction?.status}`);
        return 'refunded, compensated';
      },
    ],
  ];

  let ok = true;
  for (const [name, flow] of flows) {
    const started = Date.now();
    try {
      const detail = await flow();
      options.log(`✓ ${name}: ${detail} (${Date.now() - started} ms)`);
    } catch (err) {
      ok = false;
      options.log(`✗ ${name}: ${err instanceof Error ? err.message : String(err)} (${Date.now() - started} ms)`);
    }
  }
  return ok;
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const localstack = process.env.AIP_LOCALSTACK_URL;
  let apiUrl = process.env.AIP_API_URL;
  if (localstack === undefined && apiUrl === undefined) {
    log('localstack-flows: skipped (AIP_LOCALSTACK_URL is not set; see README.md, "Deploy to LocalStack")');
    process.exit(0);
  }
  apiUrl ??= await apiUrlFromLocalStack(localstack as string, process.env.AIP_ENV_NAME ?? 'localstack');
  log(`localstack-flows: API ${apiUrl}`);
  const ok = await runFlows({
    apiUrl,
    simulatorUrl: process.env.AIP_PAYMENTS_SIM_URL ?? 'http://127.0.0.1:4010',
    timeoutMs: Number(process.env.AIP_FLOW_TIMEOUT_MS ?? 300_000),
    log,
  });
  process.exit(ok ? 0 : 1);
}
