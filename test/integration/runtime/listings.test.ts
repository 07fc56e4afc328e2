/**
 * Paging the listings against DynamoDB Local:
 * `listOperator` and `listApprovals` return sealed cursors
 * (lib/runtime/cursor.ts) that page through exactly what the caller may see,
 * and open only for the same principal, tenant scope, view and listing.
 * `listApprovals` shows an approver or operator every pending approval, and
 * anyone else only the approvals requested for them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { ACCOUNTS, OTHER_TENANT, TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
/** outcome_unknown transactions per tenant. */
const unknown: Record<string, string[]> = { [TENANT]: [], [OTHER_TENANT]: [] };
/** Pending approvals of TENANT by requester. */
const approvals: Record<string, string[]> = { 'agent-1': [], 'agent-2': [] };

const operatorB: CallerIdentity = { ...operator, principal: { id: 'ops-b', kind: 'user' }, tenants: [OTHER_TENANT] };
const operatorBoth: CallerIdentity = { ...operator, principal: { id: 'ops-both', kind: 'user' }, tenants: [TENANT, OTHER_TENANT] };
/** Members of TENANT without an approver or operator scope. */
const member = (id: string): CallerIdentity => caller(id, { scopes: ['pay:write'] });

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-list' });
  for (const [tenant, n] of [
    [TENANT, 3],
    [OTHER_TENANT, 2],
  ] as const) {
    for (let i = 0; i < n; i++) {
      const tx = uid('tx');
      const who = caller('agent-1', { tenants: [tenant] });
      await h.runtime.submit(
        who,
        transfer(
          uid('a'),
          { identity: { tenant_id: tenant, external_account_id: ACCOUNTS[0] }, transaction: { mode: 'execute', transaction_id: tx } },
          { scenario: 'uncertain' },
        ),
      );
      unknown[tenant]?.push(tx);
    }
  }
  await h.drain();
  for (const who of ['agent-1', 'agent-1', 'agent-2']) {
    const out = await h.runtime.submit(caller(who), {
      ...transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: uid('tx') } }),
      capability_id: 'pay.approved',
    });
    expect(out.disposition).toBe('requires_human');
    approvals[who]?.push((out.action_result.metadata as { approval_id: string }).approval_id);
  }
});
afterAll(async () => h.destroy());

type Page = { items: unknown[]; cursor?: string };

/** Every page of a listing (at most `max` pages), with the cursors it returned. */
async function pages(list: (cursor?: string) => Promise<Page>, max = 20): Promise<{ items: unknown[]; cursors: string[] }> {
  const items: unknown[] = [];
  const cursors: string[] = [];
  let cursor: string | undefined;
  for (let n = 0; n < max; n++) {
    const page = await list(cursor);
    items.push(...page.items);
    cursor = page.cursor;
    if (cursor === undefined) return { items, cursors };
    cursors.push(cursor);
  }
  throw new Error(`more than ${max} pages`);
}

const txIds = (items: unknown[]) => items.map((i) => (i as { transaction: { transaction_id: string } }).transaction.transaction_id).sort();
const approvalIds = (items: unknown[]) =>
  items.map((i) => ((i as { approval?: { approval_id: string } }).approval ?? (i as { approval_id: string })).approval_id).sort();

describe('listOperator pages with sealed cursors', () => {
  it('each operator pages through its own tenants only, one item at a time, with opaque cursors', async () => {
    const a = await pages((cursor) => h.runtime.listOperator(operator, { view: 'outcome_unknown', limit: 1, ...(cursor ? { cursor } : {}) }));
    expect(txIds(a.items)).toEqual([...(unknown[TENANT] ?? [])].sort());
    const b = await pages((cursor) => h.runtime.listOperator(operatorB, { view: 'outcome_unknown', limit: 1, ...(cursor ? { cursor } : {}) }));
    expect(txIds(b.items)).toEqual([...(unknown[OTHER_TENANT] ?? [])].sort());
    for (const cursor of [...a.cursors, ...b.cursors]) {
      expect(cursor).toMatch(/^c1\.[A-Za-z0-9_-]+$/);
      for (const encoding of ['base64', 'base64url'] as const) {
        const text = Buffer.from(cursor.slice(3), encoding).toString('latin1');
        expect(text).not.toMatch(/tenant-|TXN|STATUS/);
      }
    }
  });

  it("every page but the last is full of the operator's own records, and their number does not follow another tenant's records", async () => {
    const sizes = async (who: CallerIdentity, limit: number, tenant_id?: string): Promise<number[]> => {
      const seen: number[] = [];
      let cursor: string | undefined;
      do {
        const page = await h.runtime.listOperator(who, {
          view: 'outcome_unknown',
          limit,
          ...(tenant_id !== undefined ? { tenant_id } : {}),
          ...(cursor ? { cursor } : {}),
        });
        seen.push(page.items.length);
        cursor = page.cursor;
      } while (cursor !== undefined);
      return seen;
    };
    const full = (n: number, limit: number) => Array.from({ length: Math.ceil(n / limit) }, (_, i) => Math.min(limit, n - i * limit));
    const expectFull = async () => {
      for (const [who, tenant] of [
        [operator, TENANT],
        [operatorB, OTHER_TENANT],
      ] as const) {
        const n = unknown[tenant]?.length ?? 0;
        for (const limit of [1, 2, 3]) {
          expect(await sizes(who, limit), `${tenant}, limit ${limit}`).toEqual(full(n, limit));
          // With the tenant selected, the same.
          expect(await sizes(who, limit, tenant), `${tenant} selected, limit ${limit}`).toEqual(full(n, limit));
        }
        const overview = (await h.runtime.operatorOverview(who, tenant)).views.find((v) => v.view === 'outcome_unknown');
        expect(overview).toMatchObject({ count: n, more: false });
      }
    };
    await expectFull();
    const before = await sizes(operator, 1);
    // Another tenant's stuck work grows: the operator of TENANT pages exactly as before.
    for (let i = 0; i < 6; i++) {
      const tx = uid('tx');
      await h.runtime.submit(
        caller('agent-1', { tenants: [OTHER_TENANT] }),
        transfer(
          uid('a'),
          { identity: { tenant_id: OTHER_TENANT, external_account_id: ACCOUNTS[0] }, transaction: { mode: 'execute', transaction_id: tx } },
          { scenario: 'uncertain' },
        ),
      );
      unknown[OTHER_TENANT]?.push(tx);
    }
    await h.drain();
    expect(await sizes(operator, 1)).toEqual(before);
    await expectFull();
  });

  it('an operator of two tenants pages both, or the one it selects; the cursors of one scope do not open in the other', async () => {
    const both = await pages((cursor) => h.runtime.listOperator(operatorBoth, { view: 'outcome_unknown', limit: 2, ...(cursor ? { cursor } : {}) }));
    expect(txIds(both.items)).toEqual([...(unknown[TENANT] ?? []), ...(unknown[OTHER_TENANT] ?? [])].sort());
    const one = await pages((cursor) =>
      h.runtime.listOperator(operatorBoth, { view: 'outcome_unknown', tenant_id: OTHER_TENANT, limit: 1, ...(cursor ? { cursor } : {}) }),
    );
    expect(txIds(one.items)).toEqual([...(unknown[OTHER_TENANT] ?? [])].sort());

    const first = await h.runtime.listOperator(operatorBoth, { view: 'outcome_unknown', limit: 1 });
    const cursor = first.cursor as string;
    // The tenant scope is the set of tenants: their order in the token does not matter.
    expect(
      (await h.runtime.listOperator({ ...operatorBoth, tenants: [OTHER_TENANT, TENANT] }, { view: 'outcome_unknown', limit: 1, cursor })).items,
    ).toBeDefined();
    expect(await codeOf(h.runtime.listOperator(operatorBoth, { view: 'outcome_unknown', tenant_id: TENANT, limit: 1, cursor }))).toBe('runtime.cursor_invalid');
    expect(await codeOf(h.runtime.listOperator({ ...operatorBoth, tenants: [TENANT] }, { view: 'outcome_unknown', limit: 1, cursor }))).toBe(
      'runtime.cursor_invalid',
    );
  });

  it('a cursor opens only for its principal, view and listing; tampered and old-style cursors are refused before the store', async () => {
    const first = await h.runtime.listOperator(operator, { view: 'outcome_unknown', limit: 1 });
    const cursor = first.cursor as string;
    expect((await h.runtime.listOperator(operator, { view: 'outcome_unknown', limit: 1, cursor })).items).toHaveLength(1);
    expect(await codeOf(h.runtime.listOperator({ ...operator, principal: { id: 'ops-2', kind: 'user' } }, { view: 'outcome_unknown', limit: 1, cursor }))).toBe(
      'runtime.cursor_invalid',
    );
    expect(await codeOf(h.runtime.listOperator(operatorB, { view: 'outcome_unknown', limit: 1, cursor }))).toBe('runtime.cursor_invalid');
    expect(await codeOf(h.runtime.listOperator(operator, { view: 'requires_human', limit: 1, cursor }))).toBe('runtime.cursor_invalid');
    expect(await codeOf(h.runtime.listOperator(operator, { view: 'pending_approvals', limit: 1, cursor }))).toBe('runtime.cursor_invalid');
    expect(await codeOf(h.runtime.listApprovals(operator, TENANT, { limit: 1, cursor }))).toBe('runtime.cursor_invalid');
    expect(await codeOf(h.runtime.listOperator(operator, { view: 'outcome_unknown', limit: 1, cursor: `${cursor.slice(0, -2)}AA` }))).toBe(
      'runtime.cursor_invalid',
    );
    const old = Buffer.from(JSON.stringify({ GSI3PK: 'STATUS#outcome_unknown' })).toString('base64url');
    expect(await codeOf(h.runtime.listOperator(operator, { view: 'outcome_unknown', limit: 1, cursor: old }))).toBe('runtime.cursor_invalid');
  });

  it('pending_approvals pages every pending approval of the tenant', async () => {
    const all = await pages((cursor) =>
      h.runtime.listOperator(operator, { view: 'pending_approvals', tenant_id: TENANT, limit: 1, ...(cursor ? { cursor } : {}) }),
    );
    expect(approvalIds(all.items)).toEqual([...(approvals['agent-1'] ?? []), ...(approvals['agent-2'] ?? [])].sort());
  });
});

describe('listApprovals shows what the authority rule lets the caller read', () => {
  it('a member without an approver or operator scope sees only the approvals requested for them', async () => {
    const one = await pages((cursor) => h.runtime.listApprovals(member('agent-1'), TENANT, { limit: 1, ...(cursor ? { cursor } : {}) }));
    expect(approvalIds(one.items)).toEqual([...(approvals['agent-1'] ?? [])].sort());
    const two = await pages((cursor) => h.runtime.listApprovals(member('agent-2'), TENANT, { limit: 100, ...(cursor ? { cursor } : {}) }));
    expect(approvalIds(two.items)).toEqual(approvals['agent-2']);
    expect((await h.runtime.listApprovals(member('agent-3'), TENANT, { limit: 100 })).items).toEqual([]);
  });

  it('an approver (one of the policy approver scopes) and an operator see every pending approval, page by page', async () => {
    const all = [...(approvals['agent-1'] ?? []), ...(approvals['agent-2'] ?? [])].sort();
    const approver = caller('approver-1', { scopes: ['pay:approve'] });
    for (const who of [approver, operator]) {
      const listed = await pages((cursor) => h.runtime.listApprovals(who, TENANT, { limit: 1, ...(cursor ? { cursor } : {}) }));
      expect(approvalIds(listed.items)).toEqual(all);
    }
  });

  it('an approvals cursor opens only for its principal and tenant', async () => {
    const first = await h.runtime.listApprovals(operator, TENANT, { limit: 1 });
    const cursor = first.cursor as string;
    expect(typeof cursor).toBe('string');
    expect(await codeOf(h.runtime.listApprovals(member('agent-1'), TENANT, { limit: 1, cursor }))).toBe('runtime.cursor_invalid');
    expect(await codeOf(h.runtime.listApprovals(operatorBoth, TENANT, { limit: 1, cursor }))).toBe('runtime.cursor_invalid');
    expect(await codeOf(h.runtime.listOperator(operator, { view: 'pending_approvals', tenant_id: TENANT, limit: 1, cursor }))).toBe('runtime.cursor_invalid');
  });
});
