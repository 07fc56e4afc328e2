/**
 * The operator overview (lib/runtime/reads.ts `overview`) against DynamoDB Local and fauxqs:
 * - its answer per view is what that view's listing says of its first page (size, more, oldest), for records
 *   in each view, a kept entry (a reconciliation's `outcome_unknown` entry) and a pending approval;
 * - it reads every partition of the views' listings once: the `outcome_unknown` partitions, which the
 *   `reconciling` listing reads for the entries its records keep, are queried once for both
 *   (`TransactionStore.listByStatuses`), and no Query is sent twice.
 * DynamoDB requests are recorded by middleware on the SDK client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import type { OperatorView } from '../../../lib/runtime/reads.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

const STALL_MS = 60_000;
const provider = new TestProvider();
let h: Harness;
/** Query requests while recording: the index partition and the whole input. */
let queries: { pk: string; input: string }[] | undefined;

function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v !== null && typeof v === 'object' && typeof (v as { S?: unknown }).S === 'string') return (v as { S: string }).S;
  return '';
}

beforeAll(async () => {
  h = await createHarness({
    connectors: [testConnector(provider)],
    prefix: 'rt-overview',
    config: {
      stall_after_ms: STALL_MS,
      tenants: { [TENANT]: { approvals: [{ policy_id: 'echo-gate', capabilities: ['pay.echo'], modes: ['none'], approver_scopes: ['aip:approve'] }] } },
    },
  });
  h.table.raw.middlewareStack.add(
    (next, context) => async (args) => {
      if (queries !== undefined && context.commandName === 'QueryCommand') {
        const input = args.input as { ExpressionAttributeValues?: Record<string, unknown> };
        queries.push({ pk: text(input.ExpressionAttributeValues?.[':pk']), input: JSON.stringify(input) });
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordQueries' },
  );
  const record = async (tx: string) => (await h.table.store.get({ tenant_id: TENANT, transaction_id: tx }))?.status;
  // Two executes whose provider response is lost (outcome_unknown); then one of them reconciling, its attempt never enqueued.
  const lost = [uid('tx'), uid('tx')];
  for (const tx of lost)
    await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
  await h.drain();
  for (const tx of lost) expect(await record(tx)).toBe('outcome_unknown');
  h.clock.advance(
    Math.max(
      0,
      Date.parse((await h.table.store.get({ tenant_id: TENANT, transaction_id: lost[0] as string }))?.next_reconcile_at as string) - h.clock.now().getTime(),
    ),
  );
  h.crash.arm('after_admission_before_enqueue');
  const request = { action: transfer(uid('r'), { transaction: { mode: 'reconcile' } }), transaction_id: lost[0], requested_by: caller().principal };
  expect(await codeOf(h.runtime.submit(caller(), request))).toBe('runtime.crash_injected');
  expect(await record(lost[0] as string)).toBe('reconciling');
  // A commit that claimed its plan and was never enqueued, stalled since.
  const planned = uid('tx');
  await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: planned } }));
  h.crash.arm('after_admission_before_enqueue');
  expect(await codeOf(h.runtime.submit(caller(), transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${planned}` } })))).toBe(
    'runtime.crash_injected',
  );
  expect(await record(planned)).toBe('committing');
  h.clock.advance(STALL_MS + 1);
  // An action waiting for an approval.
  await h.runtime.submit(caller(), { ...transfer(uid('a')), capability_id: 'pay.echo' });
});
afterAll(async () => h?.destroy());

describe('the operator overview', () => {
  it("answers per view what the view's listing says of its first page", async () => {
    const { views } = await h.runtime.operatorOverview(operator, TENANT);
    expect(views.map((v) => v.view)).toEqual(['outcome_unknown', 'requires_human', 'reconciling', 'stalled_committing', 'pending_approvals']);
    for (const entry of views) {
      const page = await h.runtime.listOperator(operator, { view: entry.view as OperatorView, tenant_id: TENANT, limit: 100 });
      const times = page.items.map((i) => (i.kind === 'transaction' ? i.updated_at : i.approval.created_at)).sort();
      expect(entry).toMatchObject({ count: page.items.length, more: page.cursor !== undefined });
      expect(entry.oldest_at).toBe(times[0]);
    }
    expect(Object.fromEntries(views.map((v) => [v.view, v.count]))).toEqual({
      outcome_unknown: 1,
      requires_human: 0,
      reconciling: 1,
      stalled_committing: 1,
      pending_approvals: 1,
    });
  });

  it('queries every partition of its listings once, those two listings share included', async () => {
    queries = [];
    try {
      await h.runtime.operatorOverview(operator, TENANT);
    } finally {
      const sent = queries;
      queries = undefined;
      const partitions = new Set([
        ...keys.statusListingPartitions('outcome_unknown'),
        ...keys.statusListingPartitions('outcome_unknown', true),
        ...keys.statusListingPartitions('reconciling'),
        ...keys.statusListingPartitions('committing'),
        keys.approvalPendingIndex(TENANT),
      ]);
      // outcome_unknown, its escalated partitions, reconciling, committing and planned: 33 each, and the tenant's pending approvals.
      expect(partitions.size).toBe(5 * 33 + 1);
      expect(new Set(sent.map((q) => q.pk))).toEqual(partitions);
      expect(sent).toHaveLength(partitions.size);
      expect(new Set(sent.map((q) => q.input)).size).toBe(sent.length);
    }
  });
});
