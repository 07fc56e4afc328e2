/**
 * `aip-conformance` in process (packages/connector-sdk/src/conformance/cli.ts): the
 * module contract (the export forms a module may use), the report, the
 * exit codes (0 no failed rule, 1 a failed rule, 2 usage or load error).
 * The bin itself is spawned once in package.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { main } from '../../../../packages/connector-sdk/src/conformance/cli.js';
import {
  CONFORMANCE_RULE_IDS,
  subjectsFromModule,
  type ConformanceReport,
  type ConformanceSubject,
} from '../../../../packages/connector-sdk/src/conformance/index.js';

const ROOT = new URL('../../../../', import.meta.url).pathname;

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { stdout: (t) => (out += t), stderr: (t) => (err += t), cwd: ROOT });
  return { code, out, err };
}

const subject = (name: string): ConformanceSubject => ({ name, setup: async () => Promise.reject(new Error('not run')) });

describe('aip-conformance: module contract', () => {
  it('accepts a default subject, a function returning subjects, `subject`, `subjects`, and the flat setup form', async () => {
    expect((await subjectsFromModule({ default: subject('a') })).map((s) => s.name)).toEqual(['a']);
    expect((await subjectsFromModule({ default: async () => [subject('b'), subject('c')] })).map((s) => s.name)).toEqual(['b', 'c']);
    expect((await subjectsFromModule({ subject: () => subject('d') })).map((s) => s.name)).toEqual(['d']);
    expect((await subjectsFromModule({ subjects: [subject('e')] })).map((s) => s.name)).toEqual(['e']);
    const setup = async () => Promise.reject(new Error('not run'));
    expect(await subjectsFromModule({ setup, credential_handle: 'bank/api_key' }, 'my-bank')).toMatchObject([
      { name: 'my-bank', credential_handle: 'bank/api_key' },
    ]);
    expect((await subjectsFromModule({ setup, name: 'bank' }))[0]?.name).toBe('bank');
  });

  it('refuses a module without a subject, and a default export that is not one', async () => {
    await expect(subjectsFromModule({ helper: 1 })).rejects.toThrow('the module exports no conformance subject');
    await expect(subjectsFromModule({ default: () => ({ name: 'x' }) })).rejects.toThrow('the default export is not a conformance subject');
  });
});

describe('aip-conformance: runs and exit codes', () => {
  it('prints usage with --help (0) and refuses bad arguments (2)', async () => {
    expect(await cli('--help')).toMatchObject({ code: 0, out: expect.stringContaining('Usage: aip-conformance') });
    expect(await cli()).toMatchObject({ code: 2, err: expect.stringContaining('name at least one module') });
    expect(await cli('--frobnicate', 'x.ts')).toMatchObject({ code: 2, err: expect.stringContaining('unknown option --frobnicate') });
    expect(await cli('--call-timeout-ms', '0', 'x.ts')).toMatchObject({ code: 2 });
  });

  it('exits 2 when a module cannot be loaded or exports no subject', async () => {
    const missing = await cli('test/fixtures/broken-connectors/does-not-exist.ts');
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('cannot load test/fixtures/broken-connectors/does-not-exist.ts');
    const noSubject = await cli('test/fixtures/broken-connectors/fake-ledger.ts');
    expect(noSubject.code).toBe(2);
    expect(noSubject.err).toContain('exports no conformance subject');
  });

  it('exits 0 for a conforming connector and lists every rule', async () => {
    const run = await cli('test/fixtures/broken-connectors/baseline.ts');
    expect(run.code).toBe(0);
    expect(run.out).toContain('conformance: ledger (baseline)');
    expect(run.out).toMatch(/passed\s+cancel_verified\s+/);
    const n = CONFORMANCE_RULE_IDS.length;
    expect(run.out).toContain(`${n} rules: ${n} passed, 0 failed, 0 skipped — CONFORMS`);
  });

  it('exits 1 when any subject fails a rule; --json prints every report', async () => {
    const run = await cli('--json', 'test/fixtures/broken-connectors/baseline.ts', 'test/fixtures/broken-connectors/cancel-without-provider.ts');
    expect(run.code).toBe(1);
    const reports = JSON.parse(run.out) as ConformanceReport[];
    expect(reports.map((r) => [r.subject, r.passed])).toEqual([
      ['ledger (baseline)', true],
      ['cancel-without-provider: answers a cancel as accepted without cancelling', false],
    ]);
    const failed = reports[1]?.results.find((r) => r.status === 'failed');
    expect(failed).toMatchObject({ id: 'cancel_verified', review_item: expect.stringContaining('cancellation') });
    expect(failed?.reason).toContain('answered accepted, but the provider committed the operation afterwards');
  });

  it('shows a skipped rule as skipped with its reason, and a failed one with its review item', async () => {
    const run = await cli('test/fixtures/broken-connectors/checkpoint-after-wait.ts');
    expect(run.code).toBe(1);
    expect(run.out).toMatch(
      /FAILED\s+checkpoint_before_wait\s+commit_typed\(ledger\.post\) in the uncertain-commit scenario: no provider operation was checkpointed/,
    );
    expect(run.out).toContain('review item: “provider operation IDs are checkpointed before an uncertain commit wait”');
    expect(run.out).toMatch(/skipped\s+reconcile_pending_not_terminal\s+no provider operation was checkpointed to reconcile/);
  });
});
