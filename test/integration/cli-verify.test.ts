/**
 * `aip verify` (dev/cli/verify.ts), run as the real bin/aip.mjs in a child
 * process, on a receipt chain the local stack really wrote: a committed
 * charge read back with `GET /v1/transactions?…&include=result,receipts`.
 * The document as the API returned it verifies (exit 0); a receipt removed
 * from the middle, the last receipt removed with the anchor kept, a
 * receipt's evidence altered, the action result altered and the anchor
 * dropped each fail (exit 1) with the matching verdict; a transaction ID is
 * fetched from the stack and verified; usage and fetch errors exit 2.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex, type Receipt } from '../../packages/connector-sdk/src/protocol/index.js';
import { charge, planned, RW, securityStack, uid, type SecurityStack } from '../security/support.js';

const T = 'demo';
let s: SecurityStack;
let token: string;
let dir: string;
/** The API's answer for a committed charge, with its result and whole chain. */
let doc: { transaction_id: string; receipts: Receipt[]; receipt_count: number; receipt_head: string; action_result: Record<string, unknown> } & Record<
  string,
  unknown
>;
let actionView: Record<string, unknown>;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `node bin/aip.mjs …` with no AIP_* settings from the environment. */
function aip(args: readonly string[]): Promise<Run> {
  const { AIP_URL: _u, AIP_TENANT: _t, ...rest } = process.env;
  const env = { ...rest, AIP_TOKEN: '' };
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/aip.mjs', ...args], { env }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Writes `value` as a JSON file and returns its path. */
function file(name: string, value: unknown): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(value, null, 2));
  return path;
}

const clone = <V>(v: V): V => JSON.parse(JSON.stringify(v)) as V;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'aip-verify-'));
  s = await securityStack('cli-verify', T);
  token = await s.token('alice', RW);
  // A plan and its commit: a chain of three receipts (planned, plan claimed, settled), evidence on some.
  const plan = await planned(s, token);
  const id = uid('commit');
  const worked = s.stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
  const sub = await s.call(token, 'POST', '/v1/actions', charge(id, { mode: 'commit', plan_id: plan.plan_id }, { idempotency_key: uid('k') }));
  expect(sub.status, JSON.stringify(sub.body)).toBeLessThan(300);
  const done = await s.finished(token, id);
  await worked;
  const run = { id, transaction: done.body.transaction as { transaction_id: string; status: string } };
  expect(run.transaction.status).toBe('committed');
  const view = await s.call(token, 'GET', `/v1/transactions?transaction_id=${encodeURIComponent(run.transaction.transaction_id)}&include=result,receipts`);
  expect(view.status).toBe(200);
  doc = view.body as typeof doc;
  actionView = (await s.call(token, 'GET', `/v1/actions/${encodeURIComponent(run.id)}`)).body;
});
afterAll(async () => s?.stop());

describe('aip verify <file>', () => {
  it('the document as the API returned it: valid, exit 0, with the receipts listed', async () => {
    // A real chain: v2 receipts, evidence on some, the settlement's result digest.
    expect(doc.receipts.length).toBeGreaterThanOrEqual(3);
    expect(doc.receipts.every((r) => r.v === 2)).toBe(true);
    expect(doc.receipts.some((r) => r.result_digest !== undefined)).toBe(true);
    const r = await aip(['verify', file('valid', doc)]);
    expect(r.code, r.stderr).toBe(0);
    const [verdict, ...list] = r.stdout.trimEnd().split('\n');
    expect(verdict).toMatch(new RegExp(`^VALID: transaction ${doc.transaction_id}: ${doc.receipts.length} receipts`));
    expect(verdict).toContain('action_result matches its result_digest');
    expect(list).toHaveLength(doc.receipts.length);
    const last = doc.receipts.at(-1) as Receipt;
    expect(list.at(-1)).toContain(`#${last.seq}`);
    expect(list.at(-1)).toContain(last.event);
    expect(list.at(-1)).toContain(last.at);
    expect(list[0]).toContain('user:alice');

    const quiet = await aip(['verify', file('valid', doc), '--quiet']);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout.trimEnd().split('\n')).toHaveLength(1);

    const json = await aip(['verify', file('valid', doc), '--json']);
    expect(json.code).toBe(0);
    const v = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(v).toMatchObject({
      valid: true,
      verdict: 'valid',
      source: 'file',
      transaction_id: doc.transaction_id,
      expected_count: doc.receipt_count,
      expected_head: doc.receipt_head,
      head: doc.receipt_head,
      result_checked: true,
    });
    expect((v.receipts as unknown[]).length).toBe(doc.receipts.length);
    expect(json.stderr.trim()).toMatch(/^VALID: /);
  });

  it('a receipt removed from the middle: removed, exit 1', async () => {
    const cut = clone(doc);
    cut.receipts.splice(1, 1);
    const r = await aip(['verify', file('removed', cut), '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: false, verdict: 'removed', at_seq: 1 });
    const text = await aip(['verify', file('removed', cut)]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^INVALID \(removed\): .*receipt #1 is missing/);
    expect(text.stdout).toContain('(receipt #1 missing here)');
  });

  it('the last receipt removed, the anchor kept: truncated, exit 1', async () => {
    const cut = clone(doc);
    cut.receipts.pop();
    const r = await aip(['verify', file('truncated', cut), '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: false, verdict: 'truncated', at_seq: doc.receipts.length - 1, expected_count: doc.receipt_count });
    expect(r.stderr).toMatch(/^INVALID \(truncated\)/);
  });

  it("one receipt's evidence altered: altered at that receipt, exit 1", async () => {
    const altered = clone(doc);
    const i = altered.receipts.findIndex((r) => r.evidence !== undefined && r.evidence !== null && typeof r.evidence === 'object');
    expect(i).toBeGreaterThanOrEqual(0);
    altered.receipts[i] = { ...(altered.receipts[i] as Receipt), evidence: { ...(altered.receipts[i]?.evidence as object), note: 'edited afterwards' } };
    const r = await aip(['verify', file('altered', altered), '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: false, verdict: 'altered', at_seq: i });
  });

  it('the action_result altered: result_mismatch, exit 1', async () => {
    const altered = clone(doc);
    altered.action_result = { ...altered.action_result, output: { ...(altered.action_result.output as object), amount: 1 } };
    const r = await aip(['verify', file('result', altered), '--json']);
    expect(r.code).toBe(1);
    const digested = doc.receipts.filter((x) => x.result_digest !== undefined).at(-1) as Receipt;
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: false, verdict: 'result_mismatch', at_seq: digested.seq });
  });

  it('no anchor (receipt_count / receipt_head missing): unverifiable, exit 1, even for an intact chain', async () => {
    const { receipt_count: _c, receipt_head: _h, ...bare } = doc;
    for (const [name, d] of [
      ['no-anchor', bare],
      ['no-head', { ...bare, receipt_count: doc.receipt_count }],
      ['no-count', { ...bare, receipt_head: doc.receipt_head }],
    ] as const) {
      const r = await aip(['verify', file(name, d), '--json']);
      expect(r.code, name).toBe(1);
      expect(JSON.parse(r.stdout), name).toMatchObject({ valid: false, verdict: 'unverifiable' });
      expect(r.stderr, name).toContain('a truncated chain would look complete');
    }
    // Truncated AND without anchor: still refused, never valid.
    const cut = clone(bare) as typeof bare;
    cut.receipts.pop();
    expect((await aip(['verify', file('no-anchor-cut', cut)])).code).toBe(1);
  });

  it('accepts the wrapped shapes: { transaction: … } verifies; the GET /v1/actions/{id} view carries no receipts and is unverifiable', async () => {
    expect((await aip(['verify', file('wrapped', { transaction: doc }), '--quiet'])).code).toBe(0);
    const r = await aip(['verify', file('action-view', actionView)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^UNVERIFIABLE: .*carries no receipts/);
  });

  it('legacy receipts (no version, seven fields hashed) still verify', async () => {
    const tid = 'txn-legacy-1';
    const receipts: Record<string, unknown>[] = [];
    let prev = '0'.repeat(64);
    for (const [seq, status, event] of [
      [0, 'prepared', 'transaction.prepared'],
      [1, 'committed', 'transaction.settled.committed'],
    ] as const) {
      const body = { seq, transaction_id: tid, status, revision: seq + 1, at: `2025-01-01T00:00:0${seq}.000Z`, prev_hash: prev, event };
      const hash = sha256Hex(canonicalJson(body));
      receipts.push({ ...body, hash });
      prev = hash;
    }
    const legacy = { transaction_id: tid, status: 'committed', receipts, receipt_count: 2, receipt_head: prev };
    const r = await aip(['verify', file('legacy', legacy)]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^VALID: transaction txn-legacy-1: 2 receipts/);
  });
});

describe('aip verify <transaction-id>', () => {
  it('fetches the transaction from the local stack and verifies it: exit 0', async () => {
    const r = await aip(['verify', doc.transaction_id, '--url', s.stack.url, '--token', token, '--tenant', T, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      valid: true,
      verdict: 'valid',
      source: 'api',
      transaction_id: doc.transaction_id,
      expected_head: doc.receipt_head,
      result_checked: true,
    });
  });

  it('fetch and usage errors exit 2', async () => {
    const unknown = await aip(['verify', 'txn-does-not-exist', '--url', s.stack.url, '--token', token, '--tenant', T]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('transaction.not_found');
    const unauthenticated = await aip(['verify', doc.transaction_id, '--url', s.stack.url]);
    expect(unauthenticated.code).toBe(2);
    expect((await aip(['verify'])).code).toBe(2);
    // Not a file, so a transaction ID: not found either, and the answer says so.
    const missing = await aip(['verify', join(dir, 'missing.json'), '--url', s.stack.url, '--token', token, '--tenant', T]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('there is no file named');
    const notJson = join(dir, 'broken.json');
    writeFileSync(notJson, '{ not json');
    const broken = await aip(['verify', notJson]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('is not valid JSON');
  });
});
