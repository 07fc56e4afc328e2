/**
 * Helpers of the security regression tests (test/security): a local stack on
 * the run's emulators with a few principals, calls over real HTTP, refusals
 * checked as RFC 9457 problems, and "nothing written" proved by a table
 * fingerprint before and after.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LocalStack, LocalStackOptions } from '../../dev/local/start.js';
import type { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { ProblemSchema } from '../../packages/connector-sdk/src/protocol/problem.js';
import type { ReconcileDisposition } from '../../lib/runtime/types.js';
import { dynamoClient, reliabilityStack, tableFingerprint } from '../reliability/support.js';
import { eventually, HANG_MS } from '../support/wait.js';

export const RW = ['aip:actions:read', 'aip:actions:write'] as const;
export const WAIT = 20;

export interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;

export interface SecurityStack {
  readonly stack: LocalStack;
  readonly table: string;
  readonly ddb: DynamoDBClient;
  token(sub: string, scopes: readonly string[], tenants?: readonly string[]): Promise<string>;
  call(token: string, method: string, path: string, body?: unknown, tenant?: string): Promise<Answer>;
  /** Waits (long-polling GET with ?wait) until the action leaves accepted/running. */
  finished(token: string, id: string): Promise<Answer>;
  stop(): Promise<void>;
}

export async function securityStack(prefix: string, tenant: string, options: Partial<LocalStackOptions> = {}): Promise<SecurityStack> {
  const { stack, table } = await reliabilityStack(prefix, { tenants: [tenant], approvalPolicies: [], ...options });
  const ddb = dynamoClient();
  const call = async (token: string, method: string, path: string, body?: unknown, t?: string): Promise<Answer> => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    // What an MCP client sends (POST /v1/mcp needs both types); the REST routes ignore it.
    if (body !== undefined) headers.accept = 'application/json, text/event-stream';
    if (t !== undefined) headers['x-aip-tenant'] = t;
    const res = await fetch(`${stack.url}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(HANG_MS),
    });
    const text = await res.text();
    return { status: res.status, body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  return {
    stack,
    table,
    ddb,
    token: (sub, scopes, tenants = [tenant]) => stack.mintToken({ sub, tenants: [...tenants], scopes: [...scopes], ttl: '7d' }),
    call,
    async finished(token, id) {
      for (;;) {
        const a = await call(token, 'GET', `/v1/actions/${encodeURIComponent(id)}?wait=${WAIT}`);
        const status = (a.body.action_result as { status: string } | undefined)?.status;
        if (a.status !== 200 || !['accepted', 'running'].includes(status ?? '')) return a;
      }
    },
    async stop() {
      ddb.destroy();
      await stack.stop();
    },
  };
}

/** Asserts a 4xx problem+json with the status and code. */
export async function refused(answer: Promise<Answer> | Answer, status: number, code: string): Promise<Answer> {
  const a = await answer;
  expect(ProblemSchema.safeParse(a.body).success, JSON.stringify(a.body)).toBe(true);
  expect({ status: a.status, code: a.body.code }).toEqual({ status, code });
  return a;
}

/** Runs `fn` and proves the table (and the provider ledger) did not change. */
export async function writesNothing(s: SecurityStack, fn: () => Promise<void>): Promise<void> {
  const before = (await tableFingerprint(s.ddb, s.table)).digest;
  const ledger = s.stack.simulator.ledger().length;
  await fn();
  const after = (await tableFingerprint(s.ddb, s.table)).digest;
  const added = after.split('\n').filter((l) => !before.includes(l));
  expect(added.map((l) => l.slice(0, 300))).toEqual([]);
  expect(after).toBe(before);
  expect(s.stack.simulator.ledger().length).toBe(ledger);
}

/** Every string in a JSON answer, for "does it mention X" checks. */
export function mentions(body: unknown, needle: string): boolean {
  return JSON.stringify(body).includes(needle);
}

export function charge(id: string, transaction: Record<string, unknown>, extra: Record<string, unknown> = {}, amount = 1_000) {
  return { id, capability_id: 'payments.charge', input: { amount, currency: 'eur', customer: 'cus_sec' }, transaction, ...extra };
}

/** Executes a charge as `token` and waits for it: the completed action and its transaction. */
export async function executed(s: SecurityStack, token: string, extra: Record<string, unknown> = {}) {
  const id = uid('exec');
  const worked = s.stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
  const sub = await s.call(token, 'POST', '/v1/actions', charge(id, { mode: 'execute' }, extra));
  expect(sub.status, JSON.stringify(sub.body)).toBeLessThan(300);
  const done = await s.finished(token, id);
  await worked;
  return {
    id,
    answer: done,
    transaction: done.body.transaction as { transaction_id: string; status: string; provider_operation?: { provider: string; operation_id: string } },
  };
}

/** Plans a charge as `token`: the plan output (plan_id, transaction_id). */
export async function planned(s: SecurityStack, token: string, amount = 1_000) {
  const id = uid('plan');
  const sub = await s.call(token, 'POST', '/v1/actions', charge(id, { mode: 'plan' }, {}, amount));
  expect(sub.status, JSON.stringify(sub.body)).toBeLessThan(300);
  return { id, ...(sub.body.action_result as { output: { plan_id: string; transaction_id: string } }).output };
}

/**
 * Reconciles an outcome_unknown record round by round, as the sweeper would,
 * the runtime's clock moved to each round's due time, until a round ends in
 * one of `until`. By default that is the record escalated: `escalated` from
 * the round that hit the bound, or `requires_human` when the stack's own
 * reconcile consumer (its schedules fire as the clock moves) got there first.
 * How many rounds it takes depends on that race, so no round count is
 * assumed: the wait ends on the disposition (or a hang).
 */
export async function reconcileUntil(
  s: SecurityStack,
  clock: SteppedClock,
  where: { readonly token: string; readonly tenant_id: string; readonly transaction_id: string },
  until: readonly ReconcileDisposition[] = ['escalated', 'requires_human'],
): Promise<ReconcileDisposition> {
  const { token, tenant_id, transaction_id } = where;
  return eventually(
    async () => {
      const view = await s.call(token, 'GET', `/v1/transactions?transaction_id=${encodeURIComponent(transaction_id)}`);
      const due = (view.body as { earliest_reconcile_at?: string }).earliest_reconcile_at;
      if (due !== undefined) clock.advanceTo(Date.parse(due) + 1);
      const { disposition } = await s.stack.runtime.reconcile({ kind: 'reconcile', tenant_id, transaction_id, reason: 'sweeper' });
      return until.includes(disposition) ? disposition : undefined;
    },
    { what: `transaction ${transaction_id} reconciled to ${until.join(' or ')}`, intervalMs: 0 },
  );
}
