/**
 * The four dry-run fidelity levels, each run by the runtime end to end: over
 * HTTP (the local API Gateway emulation, the real authorizer with the dev
 * key, the real route handlers) in front of a Runtime on DynamoDB Local.
 *
 * "For schema_only and policy_and_schema, the reviewed runtime creates its
 * own preview without invoking the handler. For downstream_validation and
 * full_simulation, it calls the handler and records the returned status and
 * output inside a dry-run result." For each level, a `dry_run` and a `plan`:
 * the preview is labelled with its fidelity, the handler is called exactly
 * for the two connector-run levels, what it returned is kept (the dry-run
 * result, the plan's `downstream_validation`, the transaction record), and
 * the policy facts (`approval_required`, the policy) are part of every
 * preview. Input that fails the capability's schema is refused at every
 * level before anything runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { generateDevKeys, type DevKeys } from '../../../dev/auth/keys.js';
import { mintToken } from '../../../dev/auth/mint.js';
import { devAuthOptions, startLocalHttpServer, type LocalHttpServer } from '../../../dev/local/http-server.js';
import { SILENT_LOGGER } from '../../../functions/shared/logger.js';
import { toRuntimeApi } from '../../../functions/shared/production-runtime.js';
import { defineCapability, defineConnector } from '../../../lib/connectors/define.js';
import { systemClock } from '../../../lib/ports/clock.js';
import { DRY_RUN_FIDELITIES, type DryRunFidelity } from '../../../lib/protocol/index.js';
import { Runtime } from '../../../lib/runtime/runtime.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TENANT, createHarness, type Harness } from './support.js';

/** Handler calls, per capability and mode. */
const calls: { capability_id: string; mode: string | undefined }[] = [];
const Input = z.strictObject({ amount: z.int().min(1).max(1_000), to: z.string().min(1).max(32) });

function capability(fidelity: DryRunFidelity) {
  const id = `fid.${fidelity}`;
  return defineCapability({
    id,
    input: Input,
    output: z.strictObject({ ok: z.boolean() }),
    approval: { verified_evidence: true },
    contract: {
      transaction: { modes: ['dry_run', 'plan', 'commit'], dry_run_fidelity: fidelity, requires_plan_before_commit: true },
      // Every preview carries the policy facts: later execution needs this approval.
      approval: { required: true, policy_id: 'fid-two-person', approver_scopes: ['fid:approve'] },
      execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 5_000 },
    },
  }).implement({
    invoke: () => ({ ok: true }),
    commit: () => ({ ok: true }),
    plan: (input, ctx) => {
      calls.push({ capability_id: id, mode: ctx.transaction?.mode });
      return { validated: true, fee: 1, total: input.amount + 1, checked_by: fidelity };
    },
  });
}

const connector = defineConnector({ id: 'fidelity', version: '1.0.0', capabilities: DRY_RUN_FIDELITIES.map(capability) });
const INVOKES_HANDLER: Record<DryRunFidelity, boolean> = {
  schema_only: false,
  policy_and_schema: false,
  downstream_validation: true,
  full_simulation: true,
};

let h: Harness;
let keys: DevKeys;
let server: LocalHttpServer;
let token: string;

beforeAll(async () => {
  h = await createHarness({ connectors: [connector], prefix: 'rt-fidelity' });
  // The same stores and connectors, on the system clock: the tokens the authorizer accepts are checked against it.
  const runtime = new Runtime({ ...h.readDeps, clock: systemClock, registry: h.registry, connectors: h.connectors });
  keys = await generateDevKeys();
  server = await startLocalHttpServer({ http: { runtime: toRuntimeApi(runtime), observability: { logger: SILENT_LOGGER } }, ...devAuthOptions(keys) });
  token = await mintToken({ sub: 'agent-1', tenants: [TENANT], scopes: ['aip:actions:read', 'aip:actions:write'] }, keys);
});
afterAll(async () => {
  await server?.stop();
  await h?.destroy();
});

async function submit(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/v1/actions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'X-AIP-Tenant': TENANT },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const preview = (
  fidelity: DryRunFidelity,
  mode: 'dry_run' | 'plan',
  transaction_id: string,
  input: Record<string, unknown> = { amount: 40, to: 'acct-7' },
) => ({
  id: uid(mode),
  capability_id: `fid.${fidelity}`,
  input,
  transaction: { mode, transaction_id },
});

const record = (transaction_id: string) => h.table.store.get({ tenant_id: TENANT, transaction_id });
const handlerCalls = (fidelity: DryRunFidelity) => calls.filter((c) => c.capability_id === `fid.${fidelity}`);

describe.each(DRY_RUN_FIDELITIES)('runtime preview at fidelity %s', (fidelity) => {
  const invokes = INVOKES_HANDLER[fidelity];

  it(`dry_run: labelled ${fidelity}; the handler is ${invokes ? 'called and its answer recorded' : 'not called: the runtime builds the preview'}`, async () => {
    const tx = uid('tx');
    const before = handlerCalls(fidelity).length;
    const out = await submit(preview(fidelity, 'dry_run', tx));
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    const result = out.body.action_result as { status: string; output: { dry_run: Record<string, unknown> } };
    expect(result.status).toBe('completed');
    const dry = result.output.dry_run;
    expect(dry.fidelity).toBe(fidelity);
    expect(dry).toMatchObject({ approval_required: true, approval_policy: { policy_id: 'fid-two-person' }, input_hash: expect.any(String) });
    if (invokes) {
      expect(dry).toMatchObject({ status: 'completed', output: { validated: true, total: 41, checked_by: fidelity } });
      expect(dry).not.toHaveProperty('handler_invoked');
      expect(handlerCalls(fidelity).slice(before)).toEqual([{ capability_id: `fid.${fidelity}`, mode: 'dry_run' }]);
      expect((await record(tx))?.data.downstream_validation).toMatchObject({ fidelity, status: 'completed', output: { total: 41 } });
    } else {
      expect(dry).toMatchObject({ handler_invoked: false, input_valid: true, capability_id: `fid.${fidelity}` });
      expect(dry).not.toHaveProperty('output');
      expect(handlerCalls(fidelity).length).toBe(before);
      expect((await record(tx))?.data.downstream_validation).toBeUndefined();
    }
    expect((await record(tx))?.status).toBe('dry_run_completed');
  });

  it(`plan: the plan's preview is labelled ${fidelity}${invokes ? ' and retains the downstream validation' : ' and has no downstream validation'}`, async () => {
    const tx = uid('tx');
    const before = handlerCalls(fidelity).length;
    const out = await submit(preview(fidelity, 'plan', tx));
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    const result = out.body.action_result as { status: string; output: Record<string, unknown> };
    expect(result.status).toBe('completed');
    expect(result.output).toMatchObject({ plan_id: `plan:${tx}`, approval_required: true, preview: { fidelity } });
    const rec = await record(tx);
    expect(rec?.status).toBe('planned');
    if (invokes) {
      expect(result.output.preview).toMatchObject({ status: 'completed', output: { total: 41, checked_by: fidelity } });
      expect(handlerCalls(fidelity).slice(before)).toEqual([{ capability_id: `fid.${fidelity}`, mode: 'plan' }]);
      expect(rec?.plan?.downstream_validation).toMatchObject({ fidelity, status: 'completed', output: { total: 41 } });
    } else {
      expect(result.output.preview).toMatchObject({ handler_invoked: false, input_valid: true });
      expect(handlerCalls(fidelity).length).toBe(before);
      expect(rec?.plan?.downstream_validation).toBeUndefined();
    }
    expect(rec?.plan).toMatchObject({ approval_required: true, approval_policy: { policy_id: 'fid-two-person' } });
  });

  it('input that fails the capability schema is refused before any preview: 400, no handler call, no record', async () => {
    const tx = uid('tx');
    const before = handlerCalls(fidelity).length;
    const out = await submit(preview(fidelity, 'dry_run', tx, { amount: 0, to: 'acct-7' }));
    expect(out.status, JSON.stringify(out.body)).toBe(400);
    expect(out.body.code).toBe('runtime.input_invalid');
    expect(handlerCalls(fidelity).length).toBe(before);
    expect(await record(tx)).toBeUndefined();
  });
});
