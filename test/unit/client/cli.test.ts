/**
 * The `aip` CLI (dev/cli/main.ts) against a real local HTTP server; one test
 * runs the real bin/aip.mjs entry in a child process.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../../dev/cli/main.js';
import { problem, startApiStub, type ApiStub, type StubRoute } from '../../support/api-stub.js';

let stub: ApiStub;
beforeAll(async () => {
  stub = await startApiStub();
});
afterAll(async () => stub.stop());
beforeEach(() => {
  stub.requests.length = 0;
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(argv: string[], route?: StubRoute, extra: Partial<CliIo> = {}): Promise<Run> {
  if (route) stub.setRoute(route);
  let stdout = '';
  let stderr = '';
  const code = await main(argv, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env: { AIP_URL: stub.url, AIP_TOKEN: 'tok-env', AIP_TENANT: 'demo' },
    ...extra,
  });
  return { code, stdout, stderr };
}

const result = (status: string, extra: Record<string, unknown> = {}) => ({ action_id: 'act-1', status, ...extra });
const submitted = (status: string, disposition = 'accepted', http = 202) => ({
  status: http,
  body: { action_id: 'act-1', tenant_id: 'demo', disposition, status_url: '/v1/actions/act-1', action_result: result(status) },
});

describe('aip submit', () => {
  it('builds an envelope from flags and prints what the runtime answered', async () => {
    const r = await run(
      [
        'submit',
        'payments.charge',
        '--input',
        '{"amount":1250,"currency":"eur","customer":"cus_1"}',
        '--mode',
        'execute',
        '--idempotency-key',
        'order-1',
        '--wait',
        '5',
      ],
      () => submitted('accepted'),
    );
    expect(r.code).toBe(0);
    const req = stub.requests[0];
    expect(req?.headers.prefer).toBe('wait=5');
    expect(req?.headers.authorization).toBe('Bearer tok-env');
    expect(req?.headers['x-aip-tenant']).toBe('demo');
    expect(req?.body).toMatchObject({
      capability_id: 'payments.charge',
      input: { amount: 1250, currency: 'eur', customer: 'cus_1' },
      idempotency_key: 'order-1',
      transaction: { mode: 'execute' },
    });
    expect((req!.body as { id: string }).id).toMatch(/^act-/);
    expect(r.stdout).toContain('action act-1 (tenant demo): accepted, HTTP 202');
    expect(r.stdout).toContain('aip wait act-1');
  });

  it('submits a JSON file or standard input as is, and prints JSON with --json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aip-cli-'));
    const envelope = { id: 'a-file', capability_id: 'payments.charge', input: { amount: 1 } };
    writeFileSync(join(dir, 'action.json'), JSON.stringify(envelope));
    const fromFile = await run(['submit', join(dir, 'action.json'), '--json'], () => submitted('completed', 'completed', 200));
    expect(stub.requests[0]?.body).toEqual(envelope);
    expect(JSON.parse(fromFile.stdout)).toMatchObject({ http_status: 200, disposition: 'completed' });
    const fromStdin = await run(['submit', '-'], undefined, { stdin: async () => JSON.stringify({ ...envelope, id: 'a-stdin' }) });
    expect(fromStdin.code).toBe(0);
    expect(stub.requests[1]?.body).toEqual({ ...envelope, id: 'a-stdin' });
  });

  it('refuses bad flags before sending', async () => {
    expect((await run(['submit', 'payments.charge', '--input', '[1]'])).code).toBe(2);
    expect((await run(['submit', 'payments.charge', '--input', '{}', '--mode', 'teleport'])).code).toBe(2);
    expect((await run(['submit', 'payments.charge', '--input', '{}', '--wait', '30'])).code).toBe(2);
    expect((await run(['submit', 'payments.charge', '--input', '{}', '--plan-id', 'p'])).code).toBe(2);
    expect((await run(['get', 'a1', '--reason', 'x'])).stderr).toContain('--reason does not apply to "get"');
    expect((await run(['frobnicate'])).code).toBe(2);
    expect(stub.requests).toEqual([]);
  });
});

describe('aip get and wait', () => {
  it('prints a failed action with its error and exits 1', async () => {
    const r = await run(['get', 'act-1'], () => ({
      status: 200,
      body: { action_result: result('failed', { error: { code: 'connector.unexpected_error', message: 'boom', category: 'internal', retryable: false } }) },
    }));
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('status:  failed');
    expect(r.stdout).toContain('connector.unexpected_error: boom');
  });

  it('waits with progress on stderr and the final state on stdout', async () => {
    const answers = ['accepted', 'running', 'completed'];
    const r = await run(['wait', 'act-1', '--timeout', '60'], () => ({
      status: 200,
      body: { action_result: result(answers.shift() ?? 'completed', { output: { id: 'ch_1' } }) },
    }));
    expect(r.code).toBe(0);
    expect(
      r.stderr
        .split('\n')
        .filter((l) => l.startsWith('waiting for act-1'))
        .map((l) => l.split(': ')[1]?.split(' ')[0]),
    ).toEqual(['accepted', 'running', 'completed']);
    expect(r.stdout).toContain('status:  completed');
    expect(r.stdout).toContain('"id": "ch_1"');
  });

  it('exits 3 when the wait times out', async () => {
    const r = await run(['wait', 'act-1', '--timeout', '0'], () => ({ status: 200, body: { action_result: result('running') } }));
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('did not finish within 0 ms');
  });
});

describe('aip approvals, operators and transactions', () => {
  it('approves and denies with a reason', async () => {
    const route: StubRoute = (req) => ({ status: 200, body: { approval_id: req.path.split('/')[3], status: 'approved' } });
    expect((await run(['approve', 'ap-1', '--reason', 'checked'], route)).code).toBe(0);
    expect((await run(['deny', 'ap-2'])).code).toBe(0);
    expect(stub.requests.map((r) => [r.path, r.body])).toEqual([
      ['/v1/approvals/ap-1/decision', { decision: 'approve', reason: 'checked' }],
      ['/v1/approvals/ap-2/decision', { decision: 'deny' }],
    ]);
  });

  it('shows what an approval approves', async () => {
    const approval = {
      approval_id: 'ap-1',
      status: 'pending',
      expires_at: '2030-01-01T01:00:00.000Z',
      facts: {
        capability_id: 'payments.charge',
        mode: 'commit',
        action_id: 'act-9',
        input: { amount: 7777, currency: 'eur', card: '[REDACTED]' },
        requested_by: { id: 'alice', kind: 'user' },
        requested_at: '2030-01-01T00:00:00.000Z',
        plan: { plan_id: 'plan:tx-1', status: 'planned', fidelity: 'downstream_validation', preview: { fidelity: 'downstream_validation', status: 'valid' } },
        policy: { policy_id: 'treasury', approver_scopes: ['pay:approve'], allow_self_approval: false },
        approvals: { so_far: 1, needed: 2, approved_by: [{ id: 'bob', kind: 'user' }] },
      },
    };
    const r = await run(['approvals', 'show', 'ap-1'], () => ({ status: 200, body: approval }));
    expect(r.code).toBe(0);
    expect(stub.requests.map((q) => [q.method, q.path])).toEqual([['GET', '/v1/approvals/ap-1']]);
    for (const text of [
      'approval ap-1: pending',
      'payments.charge (mode commit)',
      'user:alice at 2030-01-01T00:00:00.000Z',
      '1 of 2 (user:bob)',
      '"amount": 7777',
      'fidelity downstream_validation',
      'plan:tx-1 (planned',
    ])
      expect(r.stdout).toContain(text);
    expect(JSON.parse((await run(['approvals', 'show', 'ap-1', '--json'])).stdout)).toEqual(approval);
    expect((await run(['approvals', 'show'])).code).toBe(2);
    expect((await run(['approvals', 'bogus'])).code).toBe(2);
  });

  it("shows the second operator of a four-eyes resolution the provider's answer at proposal time: approvals show, the operator list, a refusal", async () => {
    const check = {
      verdict: 'agrees',
      answer: {
        obtained: true,
        looked_up_at: '2030-01-01T00:00:01.000Z',
        capability_id: 'payments.charge',
        effect: 'committed',
        provider_operation: { provider: 'payments-simulator', operation_id: 'op_7' },
      },
    };
    const proposal = { effect: 'committed', reason: 'charge found', transaction_id: 'tx-7' };
    const shown = await run(['approvals', 'show', 'apr-res-1'], () => ({
      status: 200,
      body: {
        approval_id: 'apr-res-1',
        status: 'pending',
        subject: { resolution: proposal, provider_check: check },
        facts: {
          capability_id: 'payments.charge',
          mode: 'resolve',
          action_id: 'act-7',
          requested_by: { id: 'ops-1', kind: 'user' },
          requested_at: '2030-01-01T00:00:01.000Z',
          policy: { policy_id: 'resolution-four-eyes', approver_scopes: ['aip:operator'] },
          approvals: { so_far: 0, needed: 1, approved_by: [] },
          resolution: { proposal, transaction_status: 'outcome_unknown', provider_check_at_proposal: check },
        },
      },
    }));
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('provider at proposal: committed (operation payments-simulator/op_7), verdict agrees, at 2030-01-01T00:00:01.000Z');
    expect(shown.stdout).toContain('approving asks the provider again');

    const listed = await run(['operator', 'approvals'], () => ({
      status: 200,
      body: {
        items: [
          {
            kind: 'approval',
            approval: {
              approval_id: 'apr-res-1',
              capability_id: 'payments.charge',
              status: 'pending',
              expires_at: '2030-01-01T01:00:00.000Z',
              subject: {
                resolution: proposal,
                provider_check: { verdict: 'no_answer', answer: { obtained: false, looked_up_at: 'x', reason: 'provider_unavailable' } },
              },
            },
          },
        ],
      },
    }));
    expect(listed.code).toBe(0);
    expect(stub.requests.at(-1)?.path).toBe('/v1/operator/transactions');
    const [header, row] = listed.stdout.split('\n');
    expect(header?.split(/\s+/)).toEqual(['transaction_id', 'approval_id', 'capability_id', 'status', 'proposed_effect', 'provider_at_proposal', 'expires_at']);
    expect(row).toContain('tx-7');
    expect(row).toContain('committed');
    expect(row).toContain('no answer (no_answer)');

    // Refused at the approval: the provider now contradicts the proposal; the hint names what it said at proposal time.
    const refused = await run(['approve', 'apr-res-1'], () =>
      problem(409, 'operator.resolution_contradicts_provider', {
        details: {
          transaction_id: 'tx-7',
          contradicted: ['effect'],
          resolution: { effect: 'not_committed' },
          provider_answer: { effect: 'committed' },
          approval_id: 'apr-res-1',
          provider_check_at_proposal: {
            verdict: 'no_answer',
            answer: { obtained: false, looked_up_at: '2030-01-01T00:00:01.000Z', reason: 'provider_unavailable' },
          },
        },
      }),
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('When it was proposed the provider said: no answer (provider_unavailable), verdict no_answer');
    expect(refused.stderr).toContain('aip deny apr-res-1');
  });

  it('reconciles and resolves as an operator through the operator routes', async () => {
    const route: StubRoute = (req) => ({
      status: req.path.endsWith('/resolve') ? 202 : 200,
      body: req.path.endsWith('/resolve') ? { status: 'requires_human', approval: {} } : { transaction: {} },
    });
    expect((await run(['operator', 'reconcile', 'tx-1', '--reason', 'provider back'], route)).code).toBe(0);
    const resolved = await run([
      'operator',
      'resolve',
      'tx-2',
      '--effect',
      'committed',
      '--reason',
      'found the charge',
      '--provider',
      'payments',
      '--operation-id',
      'op-7',
    ]);
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain('waiting for a second operator');
    expect(stub.requests.map((q) => [q.method, q.path, q.body])).toEqual([
      ['POST', '/v1/operator/transactions/tx-1/reconcile', { reason: 'provider back' }],
      [
        'POST',
        '/v1/operator/transactions/tx-2/resolve',
        { effect: 'committed', reason: 'found the charge', provider_operation: { provider: 'payments', operation_id: 'op-7' } },
      ],
    ]);
    // Refused before sending: a bad effect, no reason, half a provider operation.
    expect((await run(['operator', 'resolve', 'tx-2', '--effect', 'maybe', '--reason', 'x'])).code).toBe(2);
    expect((await run(['operator', 'resolve', 'tx-2', '--effect', 'committed'])).code).toBe(2);
    expect((await run(['operator', 'resolve', 'tx-2', '--effect', 'committed', '--reason', 'x', '--provider', 'payments'])).code).toBe(2);
    expect(stub.requests).toHaveLength(2);
  });

  it('resolve: a resolution the provider contradicts is shown with its answer; --override-provider sends the override with its reason', async () => {
    const contradicted: StubRoute = () =>
      problem(409, 'operator.resolution_contradicts_provider', {
        details: {
          transaction_id: 'tx-3',
          contradicted: ['effect'],
          resolution: { effect: 'not_committed' },
          provider_answer: { effect: 'committed', provider_operation: { provider: 'payments-simulator', operation_id: 'op_9' } },
        },
      });
    const r = await run(['operator', 'resolve', 'tx-3', '--effect', 'not_committed', '--reason', 'no debit'], contradicted);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('operator.resolution_contradicts_provider (HTTP 409)');
    expect(r.stderr).toContain('the provider answered: committed (operation payments-simulator/op_9); the resolution says: not_committed');
    expect(r.stderr).toContain('--override-provider');
    const ok = await run(
      ['operator', 'resolve', 'tx-3', '--effect', 'not_committed', '--reason', 'no debit', '--override-provider', 'ledger lags (INC-7)'],
      () => ({
        status: 200,
        body: { transaction: { transaction_id: 'tx-3', status: 'reconciled' } },
      }),
    );
    expect(ok.code).toBe(0);
    expect(stub.requests.at(-1)?.body).toEqual({ effect: 'not_committed', reason: 'no debit', provider_override: { reason: 'ledger lags (INC-7)' } });
    // An empty override is refused before sending.
    const sent = stub.requests.length;
    expect((await run(['operator', 'resolve', 'tx-3', '--effect', 'not_committed', '--reason', 'x', '--override-provider', ' '])).code).toBe(2);
    expect(stub.requests).toHaveLength(sent);
  });

  it('lists an operator view as a table', async () => {
    const r = await run(['operator', 'outcome-unknown', '--limit', '10'], () => ({
      status: 200,
      body: {
        items: [{ tenant_id: 'demo', transaction_id: 'txn-1', status: 'outcome_unknown', next_reconcile_at: '2030-01-01T00:00:05.000Z' }],
        cursor: 'next',
      },
    }));
    expect(r.code).toBe(0);
    expect(stub.requests[0]?.query).toEqual({ view: 'outcome_unknown', limit: '10' });
    expect(r.stdout.split('\n')[0]).toMatch(/^tenant_id\s+transaction_id\s+status\s+next_reconcile_at$/);
    expect(r.stdout).toContain('txn-1');
    expect(r.stdout).toContain('(more: --cursor next)');
    expect((await run(['operator', 'everything'])).code).toBe(2);
    for (const [list, view] of [
      ['stalled', 'stalled_committing'],
      ['approvals', 'pending_approvals'],
      ['requires-human', 'requires_human'],
      ['reconciling', 'reconciling'],
    ]) {
      await run(['operator', list as string], () => ({ status: 200, body: { items: [] } }));
      expect(stub.requests.at(-1)?.query.view).toBe(view);
    }
  });

  it('shows a transaction with its receipts', async () => {
    const r = await run(['transactions', '--plan-id', 'plan:txn-1'], () => ({
      status: 200,
      body: {
        transaction_id: 'txn-1',
        plan_id: 'plan:txn-1',
        status: 'committed',
        receipts: [
          {
            seq: 0,
            transaction_id: 'txn-1',
            status: 'planned',
            revision: 1,
            at: '2030-01-01T00:00:00.000Z',
            prev_hash: '0'.repeat(64),
            hash: 'a'.repeat(64),
            event: 'transaction.planned',
          },
        ],
      },
    }));
    expect(r.code).toBe(0);
    expect(stub.requests[0]?.query).toEqual({ plan_id: 'plan:txn-1', include: 'result,receipts' });
    expect(r.stdout).toContain('transaction txn-1: committed');
    expect(r.stdout).toContain('#0 2030-01-01T00:00:00.000Z transaction.planned -> planned');
    expect((await run(['transactions', '--plan-id', 'p', '--action-id', 'a'])).code).toBe(2);
  });

  it('reports a problem answer with its code and status, and the problem JSON with --json', async () => {
    const r = await run(['approvals', '--json'], () => problem(403, 'auth.tenant_forbidden'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('auth.tenant_forbidden (HTTP 403)');
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 'auth.tenant_forbidden', status: 403 });
  });

  it('lets --url, --token and --tenant win over the environment', async () => {
    await run(['health', '--token', 'tok-flag', '--tenant', 'other', '--url', stub.url], () => ({ status: 200, body: { status: 'ok' } }));
    expect(stub.requests[0]?.headers.authorization).toBe('Bearer tok-flag');
    // health is not tenant-scoped: no tenant header.
    expect(stub.requests[0]?.headers['x-aip-tenant']).toBeUndefined();
  });

  it('exits 1 when health is degraded', async () => {
    const r = await run(['health', '--url', stub.url], () => ({
      status: 200,
      body: { status: 'degraded', connectors: [{ connector_id: 'payments', ready: false }] },
    }));
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('health: degraded');
  });
});

describe('aip token', () => {
  it('mints a development token for the local stack', async () => {
    const r = await run(['token', '--sub', 'alice', '--tenant', 'acme', '--scope', 'aip:actions:read aip:approve', '--ttl', '10m']);
    expect(r.code).toBe(0);
    const claims = decodeJwt(r.stdout.trim());
    expect(claims).toMatchObject({
      sub: 'alice',
      iss: 'https://aip.local/dev',
      aud: 'aip-local',
      'aip:tenants': ['acme'],
      scope: 'aip:actions:read aip:approve',
    });
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(600);
    expect(r.stderr).toContain('accepted only by the local stack');
  });
});

describe('bin/aip.mjs', () => {
  it('runs as an ESM entry', async () => {
    stub.setRoute(() => ({ status: 200, body: { status: 'ok' } }));
    const { stdout } = await promisify(execFile)(process.execPath, ['bin/aip.mjs', 'health', '--url', stub.url], { env: { ...process.env, AIP_TOKEN: '' } });
    expect(stdout.trim()).toBe('health: ok');
  });
});
