/**
 * The MCP endpoint over the wire, with the official SDK's `Client` and its
 * Streamable HTTP transport, against the local stack of `npm start`
 * (dev/local/start.ts: the real authorizer, handlers, Runtime, DynamoDB
 * Local, fauxqs, the payments connector and its simulator).
 *
 * Nothing sleeps: waits are the endpoint's own (a tools/call or tasks/result
 * waits within its request), the worker's and reconcile consumer's
 * `handled` events, and the Scheduler emulator fired by the test at a due
 * time the test's clock is moved to.
 *
 * Tenants: `demo` (commits of payments need one approval by `aip:approve`),
 * `acme` (no approval policy).
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startLocalStack, type LocalStack } from '../../dev/local/start.js';
import { reconcileScheduleName } from '../../lib/aws/scheduler/scheduler.js';
import { AipClient } from '../../lib/client/index.js';
import { SteppedClock } from './support.js';

const TENANT_A = 'demo';
const TENANT_B = 'acme';
const READ_WRITE = ['aip:actions:read', 'aip:actions:write'];

const clock = new SteppedClock();
let stack: LocalStack;
let aliceToken: string;
let readerToken: string;
let bobToken: string;
let approver: AipClient;
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startLocalStack({
    dynamoEndpoint: inject('dynamoEndpoint'),
    sqsEndpoint: inject('sqsEndpoint'),
    namePrefix: `mcp-${randomUUID().slice(0, 8)}`,
    inMemory: true,
    tenants: [TENANT_A, TENANT_B],
    approvalPolicies: [],
    runtimeSettings: {
      tenants: {
        [TENANT_A]: {
          approvals: [
            {
              policy_id: 'demo-payments',
              capabilities: ['payments.charge', 'payments.refund'],
              modes: ['commit', 'compensate'],
              approver_scopes: ['aip:approve'],
            },
          ],
        },
      },
    },
    clock,
    schedulerAutoFire: false,
    sweepIntervalMs: 0,
  });
  [aliceToken, readerToken, bobToken] = await Promise.all([
    stack.mintToken({ sub: 'alice', tenants: [TENANT_A], scopes: READ_WRITE, ttl: '2h' }),
    stack.mintToken({ sub: 'reader', tenants: [TENANT_A], scopes: ['aip:actions:read'], ttl: '2h' }),
    stack.mintToken({ sub: 'bob', tenants: [TENANT_B], scopes: [...READ_WRITE, 'aip:operator'], ttl: '2h' }),
  ]);
  approver = new AipClient({ baseUrl: stack.url, token: await stack.mintApproverToken({ ttl: '2h' }) });
});

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await stack?.stop();
});

// --- helpers -----------------------------------------------------------------------

const uid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 12)}`;

/** An SDK client over Streamable HTTP to the local stack's /v1/mcp, authenticated with the token. */
async function connect(token: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'aip-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.url}/v1/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, ...headers } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

function chargeInput(amount: number) {
  return { amount, currency: 'eur', customer: 'cus_mcp' };
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** A task-augmented tools/call: the CreateTaskResult's task. */
async function callAsTask(client: Client, name: string, args: Record<string, unknown>) {
  const created = await client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl: 600_000 } } }, CreateTaskResultSchema);
  return created.task;
}

function structured(result: CallToolResult): Record<string, any> {
  return result.structuredContent as Record<string, any>;
}

async function rpcError(call: Promise<unknown>): Promise<McpError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpError);
  return err as McpError;
}

function workerDone(action_id: string): Promise<unknown> {
  return stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === action_id);
}

const toolNames = (tools: Tool[]) => tools.map((t) => t.name).sort();

// --- the scenarios -------------------------------------------------------------------

describe('tools/list', () => {
  it('shows each principal the tools its scopes allow: capabilities by mode with contract annotations, and the reads', async () => {
    const alice = await connect(aliceToken);
    expect(alice.getServerCapabilities()).toMatchObject({ tools: {}, tasks: { cancel: {}, requests: { tools: { call: {} } } } });
    const { tools } = await alice.listTools();
    const names = toolNames(tools);
    expect(names).toEqual(
      expect.arrayContaining([
        'payments.charge.dry_run',
        'payments.charge.plan',
        'payments.charge.execute',
        'payments.charge.commit',
        'payments.charge.compensate',
        'payments.refund.execute',
        'aip.get_action',
        'aip.get_transaction',
        'aip.list_pending_approvals',
      ]),
    );
    // reconcile is the runtime's own action, never a tool.
    expect(names.filter((n) => n.endsWith('.reconcile'))).toEqual([]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('payments.charge.plan')?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
    // A charge can be compensated (refunded): not destructive; a refund cannot be undone: destructive.
    expect(byName.get('payments.charge.execute')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
    expect(byName.get('payments.refund.execute')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get('payments.charge.execute')?.execution).toEqual({ taskSupport: 'optional' });
    expect(byName.get('payments.charge.commit')?.inputSchema).toMatchObject({ required: ['plan_id', 'input'] });
    expect(byName.get('payments.charge.commit')?._meta).toMatchObject({ 'aip/approval_required': true });
    expect(byName.get('payments.charge.execute')?.inputSchema.properties?.input).toMatchObject({ type: 'object' });

    const reader = await connect(readerToken);
    expect(toolNames((await reader.listTools()).tools)).toEqual(['aip.get_action', 'aip.get_transaction', 'aip.list_pending_approvals']);
    // Calling a tool it was not offered is an unknown tool, not an action.
    const err = await rpcError(reader.callTool({ name: 'payments.charge.execute', arguments: { input: chargeInput(100) } }));
    expect(err.code).toBe(-32602);
  });
});

describe('tools/call', () => {
  it('an execute completes with its output, transaction status and receipt head; a retry replays it with no second effect', async () => {
    const bob = await connect(bobToken);
    const mark = stack.simulator.ledger().length;
    const amount = 1_000 + Math.floor(Math.random() * 1000);
    const first = await call(bob, 'payments.charge.execute', { input: chargeInput(amount) });
    expect(first.isError).toBeUndefined();
    const s = structured(first);
    expect(s).toMatchObject({ status: 'completed', task_status: 'completed', tenant_id: TENANT_B, output: { amount, status: 'succeeded' } });
    expect(s.transaction).toMatchObject({ status: 'committed' });
    expect(s.transaction.receipt_head).toMatch(/^[0-9a-f]{64}$/);
    expect(s.action_id).toMatch(/^mcp-[0-9a-f]{32}$/);

    // The same call again (a retry, from a new connection too): the same action, replayed.
    const again = await call(await connect(bobToken), 'payments.charge.execute', { input: chargeInput(amount) });
    expect(structured(again)).toMatchObject({ action_id: s.action_id, status: 'completed', replayed: true, output: s.output });
    expect(stack.simulator.ledger().slice(mark)).toHaveLength(1);

    // A deliberate second charge names a new idempotency key.
    const second = await call(bob, 'payments.charge.execute', { input: chargeInput(amount), idempotency_key: uid('again') });
    expect(structured(second).action_id).not.toBe(s.action_id);
    expect(structured(second).status).toBe('completed');
    expect(
      stack.simulator
        .ledger()
        .slice(mark)
        .map((e) => e.amount),
    ).toEqual([amount, amount]);

    // The state reads: the action and its transaction with the receipts.
    const read = await call(bob, 'aip.get_action', { action_id: s.action_id });
    expect(structured(read)).toMatchObject({ action_result: { action_id: s.action_id, status: 'completed' }, task_status: 'completed' });
    const txn = await call(bob, 'aip.get_transaction', { action_id: s.action_id, receipts: true });
    expect(structured(txn)).toMatchObject({ status: 'committed' });
    expect(structured(txn).receipts.length).toBe(structured(txn).receipt_count);
    // The first answer's head is a tip the chain had: the settlement's receipt itself, or, when the answer was read
    // between the action's settlement and the record's (the view shows the record as settled, ./settled-outcome.ts),
    // the receipt before it. Either way it is a link of the final chain.
    expect(structured(txn).receipts.map((r: { hash: string }) => r.hash)).toContain(s.transaction.receipt_head);
  });

  it('bad arguments are typed tool errors, never a 5xx; an unknown tool is an invalid-params error', async () => {
    const bob = await connect(bobToken);
    const mark = stack.simulator.ledger().length;
    const missing = await call(bob, 'payments.charge.execute', { amount: 5 });
    expect(missing.isError).toBe(true);
    expect(structured(missing).error).toMatchObject({ code: 'request.invalid', details: { path: '/amount' } });

    const invalid = await call(bob, 'payments.charge.execute', { input: { amount: 'twelve', currency: 'eur' } });
    expect(invalid.isError).toBe(true);
    expect(structured(invalid).error.code).toMatch(/^[a-z_]+\.[a-z_.]+$/);
    expect(structured(invalid).error.category).toBe('validation');

    const noPlan = await call(bob, 'payments.charge.commit', { input: chargeInput(5) });
    expect(structured(noPlan).error).toMatchObject({ code: 'request.invalid', details: { path: '/plan_id' } });

    const unknownPlan = await call(bob, 'payments.charge.commit', { plan_id: 'plan:nope', input: chargeInput(5) });
    expect(unknownPlan.isError).toBe(true);
    expect(structured(unknownPlan).error.code).toMatch(/\./);

    const err = await rpcError(bob.callTool({ name: 'payments.nothing', arguments: {} }));
    expect(err.code).toBe(-32602);
    expect(stack.simulator.ledger().slice(mark)).toEqual([]);

    // Malformed HTTP bodies are problems (4xx), never 5xx.
    const raw = await fetch(`${stack.url}/v1/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${bobToken}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":',
    });
    expect(raw.status).toBe(400);
    expect(raw.headers.get('content-type')).toBe('application/problem+json');
    const noAccept = await fetch(`${stack.url}/v1/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${bobToken}`, 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(noAccept.status).toBe(406);
    expect(await noAccept.json()).toMatchObject({ code: 'mcp.not_acceptable' });
    const get = await fetch(`${stack.url}/v1/mcp`, { headers: { Authorization: `Bearer ${bobToken}`, Accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
  });
});

describe('tasks', () => {
  it('a commit that waits for approval is an input_required task; approved over REST, the task completes', async () => {
    const alice = await connect(aliceToken);
    const mark = stack.simulator.ledger().length;
    const planned = await call(alice, 'payments.charge.plan', { input: chargeInput(4_200) });
    const plan = structured(planned);
    expect(plan).toMatchObject({ status: 'completed', output: { approval_required: true } });
    const plan_id = plan.output.plan_id as string;

    const task = await callAsTask(alice, 'payments.charge.commit', { plan_id, input: chargeInput(4_200) });
    expect(task).toMatchObject({ status: 'input_required' });
    expect(task.statusMessage).toMatch(/waiting for approval/);
    const got = await alice.experimental.tasks.getTask(task.taskId);
    expect(got).toMatchObject({ taskId: task.taskId, status: 'input_required' });
    // The same call without task support: a plain pending answer, never a false success.
    const pending = await call(alice, 'payments.charge.commit', { plan_id, input: chargeInput(4_200) });
    expect(pending.isError).toBeUndefined();
    expect(structured(pending)).toMatchObject({ action_id: task.taskId, status: 'requires_human', task_status: 'input_required', pending: true });
    expect((pending.content[0] as { text: string }).text).toMatch(/^PENDING, NOT COMPLETED/);

    // The caller's pending approvals, then an approver decides over REST.
    const approvals = structured(await call(alice, 'aip.list_pending_approvals', {}));
    const approval = approvals.items.find((a: { action_id: string }) => a.action_id === task.taskId);
    expect(approval).toMatchObject({ status: 'pending' });
    const worked = workerDone(task.taskId);
    await approver.approve(approval.approval_id);
    await worked;

    expect(await alice.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toMatchObject({ action_id: task.taskId, status: 'completed', transaction: { status: 'committed' } });
    expect(
      stack.simulator
        .ledger()
        .slice(mark)
        .map((e) => e.amount),
    ).toEqual([4_200]);
  });

  it('a task is cancelled with the runtime’s cancel; a terminal task cannot be', async () => {
    const alice = await connect(aliceToken);
    const plan = structured(await call(alice, 'payments.charge.plan', { input: chargeInput(6_600) }));
    const task = await callAsTask(alice, 'payments.charge.commit', { plan_id: plan.output.plan_id, input: chargeInput(6_600) });
    expect(task.status).toBe('input_required');
    const cancelled = await alice.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, structuredContent: { status: 'cancelled', task_status: 'cancelled' } });
    const err = await rpcError(alice.experimental.tasks.cancelTask(task.taskId));
    expect(err.code).toBe(-32602);
    // No approval is left pending for it.
    const page = await approver.listApprovals({ limit: 100 });
    expect(page.items.find((a) => a.action_id === task.taskId)).toBeUndefined();
  });

  it('a lost provider answer: the task stays working through reconciliation and completes when reconciled, with one charge', async () => {
    const bob = await connect(bobToken);
    const mark = stack.simulator.ledger().length;
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
    try {
      const args = { input: chargeInput(5_040), idempotency_key: uid('lost') };
      const task = await callAsTask(bob, 'payments.charge.execute', args);
      await workerDone(task.taskId);
      const unknown = await bob.experimental.tasks.getTask(task.taskId);
      expect(unknown).toMatchObject({ status: 'working' });
      expect(unknown.statusMessage).toMatch(/^outcome_unknown/);
      // A retry is the same action, still working: no blind second charge.
      const retried = await call(bob, 'payments.charge.execute', args);
      expect(structured(retried)).toMatchObject({ action_id: task.taskId, task_status: 'working', pending: true, transaction: { status: 'outcome_unknown' } });
      expect(stack.simulator.ledger().slice(mark)).toHaveLength(1);

      // The reconciliation schedule fires at its due time; the reconcile consumer reconciles.
      const txId = structured(retried).transaction.transaction_id as string;
      const schedule = stack.scheduler.list().find((s) => s.name === reconcileScheduleName({ tenant_id: TENANT_B, transaction_id: txId }));
      const at = schedule?.at as Date;
      clock.advanceTo(at);
      const reconciled = stack.handled('reconcile', (m) => m.kind === 'reconcile' && m.transaction_id === txId);
      await stack.scheduler.fireDue(at);
      await reconciled;

      expect(await bob.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
      const result = await bob.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result.structuredContent).toMatchObject({ action_id: task.taskId, task_status: 'completed', transaction: { status: 'reconciled' } });
      expect(stack.simulator.ledger().slice(mark)).toHaveLength(1);
    } finally {
      stack.simulator.setFaults([]);
    }
  });
});

describe('tenant isolation', () => {
  it("a foreign tenant's token gets nothing of another tenant: no tools call, no task, no approval", async () => {
    const alice = await connect(aliceToken);
    const plan = structured(await call(alice, 'payments.charge.plan', { input: chargeInput(7_100) }));
    const task = await callAsTask(alice, 'payments.charge.commit', { plan_id: plan.output.plan_id, input: chargeInput(7_100) });

    const bob = await connect(bobToken);
    const notFound = await rpcError(bob.experimental.tasks.getTask(task.taskId));
    expect(notFound.code).toBe(-32602);
    expect((await rpcError(bob.experimental.tasks.cancelTask(task.taskId))).code).toBe(-32602);
    const read = await call(bob, 'aip.get_action', { action_id: task.taskId });
    expect(read).toMatchObject({ isError: true, structuredContent: { error: { code: 'action.not_found' } } });
    const txn = await call(bob, 'aip.get_transaction', { plan_id: plan.output.plan_id });
    expect(structured(txn).error.code).toBe('transaction.not_found');
    // Committing alice's plan from acme is refused and charges nothing.
    const foreign = await call(bob, 'payments.charge.commit', { plan_id: plan.output.plan_id, input: chargeInput(7_100) });
    expect(foreign.isError).toBe(true);
    expect(structured(await call(bob, 'aip.list_pending_approvals', {})).items).toEqual([]);

    // Naming the other tenant is refused at the edge (403), before any MCP message is handled.
    await expect(connect(bobToken, { 'X-AIP-Tenant': TENANT_A })).rejects.toThrow(/403/);
    // alice's commit is still waiting, untouched.
    expect(await alice.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'input_required' });
  });
});
