/**
 * Regression test of defects 6 and 8 (the listings), over real HTTP
 * against the local stack (real authorizer, handlers, Runtime, DynamoDB
 * Local, fauxqs, payments simulator).
 *
 * Defect 6: operator cursors were unsigned base64 of DynamoDB keys, and the
 * status index is global per status, so an `acme` operator paging
 * `GET /v1/operator/transactions` got cursors naming `demo`'s transactions;
 * any principal could replay another's cursor; a crafted cursor reached
 * DynamoDB and came back as an untyped 500 (`ValidationException`). Cursors
 * must be opaque and bound to the tenant scope, the principal and the query:
 * anything else is a typed 400 `runtime.cursor_invalid`.
 *
 * Defect 8 (first half): any member of a tenant, without an approver or
 * operator scope, listed every pending approval of the tenant with
 * `GET /v1/approvals`. A caller sees only the approvals the authority rule
 * lets it read: approvers and operators all of them, a requester its own.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '../../dev/local/start.js';
import { ProblemSchema } from '../../packages/connector-sdk/src/protocol/problem.js';
import { reliabilityStack } from '../reliability/support.js';
import { HANG_MS } from '../support/wait.js';

const DEMO = 'demo';
const ACME = 'acme';
const RW = ['aip:actions:read', 'aip:actions:write'];
const WAIT = 20;
/** outcome_unknown transactions of demo (more than one page of limit 1). */
const UNKNOWN_COUNT = 3;

let stack: LocalStack;
const tokens: Record<string, string> = {};
/** alice's and carol's pending approvals (approval IDs). */
const pending: { alice: string[]; carol: string[] } = { alice: [], carol: [] };

beforeAll(async () => {
  ({ stack } = await reliabilityStack('defect68', {
    tenants: [DEMO, ACME],
    approvalPolicies: [],
    runtimeSettings: {
      tenants: {
        [DEMO]: { approvals: [{ policy_id: 'listings-commit', capabilities: ['payments.charge'], modes: ['commit'], approver_scopes: ['aip:approve'] }] },
      },
    },
  }));
  const mint = (sub: string, tenants: string[], scopes: string[]) => stack.mintToken({ sub, tenants, scopes, ttl: '2h' });
  Object.assign(tokens, {
    alice: await mint('alice', [DEMO], RW),
    // The same principal with read only: no approver, no operator scope.
    aliceRead: await mint('alice', [DEMO], ['aip:actions:read']),
    carol: await mint('carol', [DEMO], RW),
    carolRead: await mint('carol', [DEMO], ['aip:actions:read']),
    approver: await mint('approver-demo', [DEMO], ['aip:actions:read', 'aip:approve']),
    opsDemo: await mint('ops-demo', [DEMO], ['aip:actions:read', 'aip:operator']),
    opsDemo2: await mint('ops-demo-2', [DEMO], ['aip:actions:read', 'aip:operator']),
    opsAcme: await mint('ops-acme', [ACME], ['aip:operator']),
  });

  // demo: UNKNOWN_COUNT executes whose answer is lost after the provider committed (504): outcome_unknown.
  stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: UNKNOWN_COUNT }]);
  try {
    for (let i = 0; i < UNKNOWN_COUNT; i++) {
      const id = uid('unknown');
      const worked = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
      const sub = await call(tokens.alice as string, 'POST', '/v1/actions', charge(id, { mode: 'execute' }));
      expect(sub.status, JSON.stringify(sub.body)).toBeLessThan(300);
      const done = await finished(tokens.alice as string, id);
      await worked;
      expect((done.body.transaction as { status?: string } | undefined)?.status, JSON.stringify(done.body)).toBe('outcome_unknown');
    }
  } finally {
    stack.simulator.setFaults([]);
  }

  // demo: pending approvals, two requested by alice, one by carol (commits of their own plans).
  for (const who of ['alice', 'alice', 'carol'] as const) pending[who].push(await pendingCommit(tokens[who] as string));
});

afterAll(async () => {
  await stack?.stop();
});

const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;

interface Answer {
  status: number;
  contentType: string;
  body: Record<string, unknown>;
}

async function call(token: string, method: string, path: string, body?: unknown, tenant?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (tenant !== undefined) headers['x-aip-tenant'] = tenant;
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(HANG_MS),
  });
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function charge(id: string, transaction: Record<string, unknown>) {
  return { id, capability_id: 'payments.charge', input: { amount: 1_000, currency: 'eur', customer: 'cus_listings' }, transaction };
}

async function finished(token: string, id: string): Promise<Answer> {
  for (;;) {
    const a = await call(token, 'GET', `/v1/actions/${encodeURIComponent(id)}?wait=${WAIT}`);
    const status = (a.body.action_result as { status: string } | undefined)?.status;
    if (a.status !== 200 || !['accepted', 'running', 'queued', 'in_progress'].includes(status ?? '')) return a;
  }
}

/** A plan, then its commit, which waits for an approval: the approval ID. */
async function pendingCommit(token: string): Promise<string> {
  const plan = await call(token, 'POST', '/v1/actions', charge(uid('plan'), { mode: 'plan' }));
  expect(plan.status, JSON.stringify(plan.body)).toBeLessThan(300);
  const { plan_id } = (plan.body.action_result as { output: { plan_id: string } }).output;
  const commit = await call(token, 'POST', '/v1/actions', charge(uid('commit'), { mode: 'commit', plan_id }));
  expect(commit.status, JSON.stringify(commit.body)).toBe(202);
  return (commit.body.action_result as { metadata: { approval_id: string } }).metadata.approval_id;
}

const operatorList = (token: string, view: string, params: { limit?: number; cursor?: string } = {}, tenant?: string) =>
  call(
    token,
    'GET',
    `/v1/operator/transactions?view=${view}${params.limit !== undefined ? `&limit=${params.limit}` : ''}${params.cursor !== undefined ? `&cursor=${encodeURIComponent(params.cursor)}` : ''}`,
    undefined,
    tenant,
  );

const approvalsList = (token: string, params: { limit?: number; cursor?: string } = {}) => {
  const query = [params.limit !== undefined ? `limit=${params.limit}` : '', params.cursor !== undefined ? `cursor=${encodeURIComponent(params.cursor)}` : '']
    .filter((q) => q !== '')
    .join('&');
  return call(token, 'GET', `/v1/approvals${query ? `?${query}` : ''}`);
};

/** Every readable decoding of a cursor: as is, and base64 / base64url of the whole and of each `.`-separated part, as UTF-8 and Latin-1. */
function decodings(cursor: string): string[] {
  const out = [cursor];
  for (const part of [cursor, ...cursor.split('.')]) {
    for (const encoding of ['base64', 'base64url'] as const) {
      const bytes = Buffer.from(part, encoding);
      out.push(bytes.toString('utf8'), bytes.toString('latin1'));
    }
  }
  return out;
}

/** Asserts a 400 runtime.cursor_invalid problem (problem+json, never a 500). */
function cursorInvalid(a: Answer): void {
  expect(ProblemSchema.safeParse(a.body).success, JSON.stringify(a.body)).toBe(true);
  expect({ status: a.status, code: a.body.code }).toEqual({ status: 400, code: 'runtime.cursor_invalid' });
  expect(a.contentType).toContain('application/problem+json');
  expect(JSON.stringify(a.body)).not.toMatch(/ValidationException|GSI3|STATUS#|demo/);
}

const ids = (a: Answer) =>
  (a.body.items as Array<{ transaction?: { transaction_id: string }; approval_id?: string }>).map((i) => i.transaction?.transaction_id ?? i.approval_id);

describe('defect 6: operator cursors are opaque and bound to tenant, principal and query', () => {
  it('an acme operator paging outcome_unknown with limit 1 sees no demo item, and no cursor names demo in any decoding', async () => {
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await operatorList(tokens.opsAcme as string, 'outcome_unknown', { limit: 1, ...(cursor !== undefined ? { cursor } : {}) });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.items).toEqual([]);
      cursor = page.body.cursor as string | undefined;
      if (cursor !== undefined) {
        for (const text of decodings(cursor)) expect(text.toLowerCase()).not.toContain(DEMO);
        expect(cursor).toMatch(/^c1\.[A-Za-z0-9_-]+$/);
      }
      pages += 1;
    } while (cursor !== undefined && pages <= UNKNOWN_COUNT + 1);
    expect(cursor).toBeUndefined();
  });

  it('a demo operator pages through every outcome_unknown transaction with its own cursors', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages <= UNKNOWN_COUNT + 1; pages++) {
      const page = await operatorList(tokens.opsDemo as string, 'outcome_unknown', { limit: 1, ...(cursor !== undefined ? { cursor } : {}) });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(...(ids(page) as string[]));
      cursor = page.body.cursor as string | undefined;
      if (cursor === undefined) break;
    }
    expect(cursor).toBeUndefined();
    expect(seen).toHaveLength(UNKNOWN_COUNT);
    expect(new Set(seen).size).toBe(UNKNOWN_COUNT);
  });

  it("a cursor replayed by another principal, another tenant's operator, another view or another listing is a 400 runtime.cursor_invalid", async () => {
    const first = await operatorList(tokens.opsDemo as string, 'outcome_unknown', { limit: 1 });
    expect(first.status).toBe(200);
    const cursor = first.body.cursor as string;
    expect(typeof cursor).toBe('string');
    // Its own principal may use it.
    expect((await operatorList(tokens.opsDemo as string, 'outcome_unknown', { limit: 1, cursor })).status).toBe(200);

    cursorInvalid(await operatorList(tokens.opsDemo2 as string, 'outcome_unknown', { limit: 1, cursor }));
    cursorInvalid(await operatorList(tokens.opsAcme as string, 'outcome_unknown', { limit: 1, cursor }));
    cursorInvalid(await operatorList(tokens.opsDemo as string, 'reconciling', { limit: 1, cursor }));
    cursorInvalid(await operatorList(tokens.opsDemo as string, 'requires_human', { limit: 1, cursor }));
    cursorInvalid(await approvalsList(tokens.opsDemo as string, { limit: 1, cursor }));
  });

  it('a tampered cursor is a 400 runtime.cursor_invalid problem, never a 500', async () => {
    const first = await operatorList(tokens.opsDemo as string, 'outcome_unknown', { limit: 1 });
    const cursor = first.body.cursor as string;
    expect(typeof cursor).toBe('string');
    const flip = (s: string, i: number) => `${s.slice(0, i)}${s[i] === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;
    for (const i of [0, 3, Math.floor(cursor.length / 2), cursor.length - 1]) {
      cursorInvalid(await operatorList(tokens.opsDemo as string, 'outcome_unknown', { limit: 1, cursor: flip(cursor, i) }));
    }
    cursorInvalid(await operatorList(tokens.opsDemo as string, 'outcome_unknown', { limit: 1, cursor: cursor.slice(0, -4) }));
  });

  it('the old unsigned form, crafted with keys DynamoDB refuses (ValidationException), is a 400 runtime.cursor_invalid, never a 500', async () => {
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const crafted = [
      b64({ GSI3PK: 'STATUS#outcome_unknown' }),
      b64({ GSI3PK: 'STATUS#outcome_unknown', GSI3SK: '', PK: '', SK: '' }),
      b64({ GSI3PK: 'STATUS#outcome_unknown', GSI3SK: '2000-01-01T00:00:00.000Z#demo#x', PK: 'TXN#demo#x', SK: 'TXN' }),
    ];
    for (const cursor of crafted) {
      cursorInvalid(await operatorList(tokens.opsDemo as string, 'outcome_unknown', { limit: 1, cursor }));
      cursorInvalid(await operatorList(tokens.opsAcme as string, 'outcome_unknown', { limit: 1, cursor }));
    }
    cursorInvalid(await approvalsList(tokens.approver as string, { cursor: b64({ GSI3PK: `APPROVAL#pending#${DEMO}` }) }));
  });
});

describe('defect 8: listing approvals needs an approver or operator scope, or shows only your own requests', () => {
  it('a demo member with only aip:actions:read sees only the approvals requested for them', async () => {
    const alice = await approvalsList(tokens.aliceRead as string, { limit: 100 });
    expect(alice.status, JSON.stringify(alice.body)).toBe(200);
    expect((ids(alice) as string[]).sort()).toEqual([...pending.alice].sort());
    for (const item of alice.body.items as Array<{ requested_by: { id: string } }>) expect(item.requested_by.id).toBe('alice');
    expect(JSON.stringify(alice.body)).not.toContain(pending.carol[0]);

    const carol = await approvalsList(tokens.carolRead as string, { limit: 100 });
    expect(carol.status).toBe(200);
    expect(ids(carol)).toEqual(pending.carol);
  });

  it('an approver and an operator see every pending approval, page by page', async () => {
    const all = [...pending.alice, ...pending.carol].sort();
    for (const token of [tokens.approver, tokens.opsDemo] as string[]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages <= all.length + 1; pages++) {
        const page = await approvalsList(token, { limit: 1, ...(cursor !== undefined ? { cursor } : {}) });
        expect(page.status, JSON.stringify(page.body)).toBe(200);
        seen.push(...(ids(page) as string[]));
        cursor = page.body.cursor as string | undefined;
        if (cursor === undefined) break;
      }
      expect(cursor).toBeUndefined();
      expect(seen.sort()).toEqual(all);
    }
  });

  it("one member's approvals cursor is refused for another member", async () => {
    const page = await approvalsList(tokens.approver as string, { limit: 1 });
    const cursor = page.body.cursor as string;
    expect(typeof cursor).toBe('string');
    cursorInvalid(await approvalsList(tokens.aliceRead as string, { limit: 1, cursor }));
    cursorInvalid(await operatorList(tokens.opsDemo as string, 'pending_approvals', { limit: 1, cursor }));
  });
});
