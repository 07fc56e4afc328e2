/**
 * Runtime.capabilities and Runtime.health (GET /v1/capabilities, GET
 * /v1/health): what the registry shows a caller, and connector readiness with
 * each health check bounded in time. Answers are checked against the HTTP
 * edge's response schemas (lib/http/schemas.ts), which are strict: a field the
 * runtime leaks (credentials, data-handling pointers, manifest hashes) fails.
 */
import * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import { CapabilityListSchema, HealthSchema } from '../../../lib/http/schemas.js';
import { TestProvider, testConnector } from './connectors.js';
import { OTHER_TENANT, TENANT, caller, codeOf, createHarness, type Harness } from './support.js';

const HEALTH_TIMEOUT_MS = 50;
const Ping = z.strictObject({ n: z.int() });

/** A one-capability connector with the given health check. */
function connectorWithHealth(id: string, health: Parameters<typeof defineConnector>[0]['health']) {
  const ping = defineCapability({
    id: `${id}.ping`,
    input: Ping,
    output: Ping,
    contract: { execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 1_000 } },
  }).implement({
    invoke: async (input) => input,
  });
  return defineConnector({ id, version: '2.0.0', capabilities: [ping], ...(health !== undefined ? { health } : {}) });
}

let h: Harness;
let degraded: Harness;
let hangingAborted = false;
beforeAll(async () => {
  const provider = new TestProvider();
  [h, degraded] = await Promise.all([
    createHarness({
      connectors: [testConnector(provider)],
      prefix: 'rt-meta',
      config: {
        health_timeout_ms: HEALTH_TIMEOUT_MS,
        tenants: {
          [TENANT]: {
            approvals: [
              { policy_id: 'echo-review', capabilities: ['pay.echo'], modes: ['none'] },
              { policy_id: 'all-execute', capabilities: ['*'], modes: ['execute'], approver_scopes: ['ops:approve'], allow_self_approval: true },
            ],
          },
        },
      },
    }),
    createHarness({
      prefix: 'rt-meta-health',
      config: { health_timeout_ms: HEALTH_TIMEOUT_MS },
      connectors: [
        testConnector(provider),
        connectorWithHealth('down', async () => ({ ready: false, detail: 'provider\nmaintenance window' })),
        connectorWithHealth('broken', async () => {
          throw new Error('token sk_live_do_not_show rejected');
        }),
        connectorWithHealth(
          'hanging',
          (ctx) =>
            new Promise(() => {
              ctx.signal?.addEventListener('abort', () => (hangingAborted = true), { once: true });
            }),
        ),
      ],
    }),
  ]);
});
afterAll(async () => Promise.all([h.destroy(), degraded.destroy()]));

describe('Runtime.capabilities', () => {
  it('lists the registered capabilities the caller’s scopes allow it to invoke, sorted, with schemas and contract summaries only', async () => {
    const list = CapabilityListSchema.parse(await h.runtime.capabilities(caller()));
    const ids = list.items.map((i) => i.id);
    expect(ids).toEqual([...h.registry.ids()]);
    expect(ids).toContain('pay.transfer');
    expect(list.tenant_id).toBeUndefined();

    const transfer = list.items.find((i) => i.id === 'pay.transfer');
    const registered = h.registry.lookup('pay.transfer').capability;
    expect(transfer).toEqual({
      id: 'pay.transfer',
      kind: 'tool',
      connector_id: 'testpay',
      connector_version: '1.0.0',
      input_schema: registered.input_schema,
      output_schema: registered.output_schema,
      transaction: registered.transaction,
      compensation: registered.compensation,
      execution: registered.execution,
    });
    const approved = list.items.find((i) => i.id === 'pay.approved');
    expect(approved?.approval).toEqual({ required: true, policy_id: 'treasury-two-person', approver_scopes: ['pay:approve'] });
    expect(list.items.find((i) => i.id === 'pay.idempotent')?.idempotency).toEqual({ required: true, downstream_idempotent: true });
    // The data-handling contract (redaction pointers) is not part of the summary.
    expect(Object.keys(list.items.find((i) => i.id === 'pay.secret') ?? {})).not.toContain('data');
    expect(list.items.every((i) => !('tenant_approval_policies' in i))).toBe(true);
  });

  it('leaves out capabilities whose authorization scopes the caller lacks', async () => {
    const list = await h.runtime.capabilities(caller('agent-2', { scopes: ['aip:approve'] }));
    expect(list.items.map((i) => i.id)).not.toContain('pay.transfer');
    expect(list.items.map((i) => i.id)).toEqual(h.registry.ids().filter((id) => id !== 'pay.transfer'));
  });

  it('with a tenant: names the tenant’s approval policies that select each capability, in evaluation order', async () => {
    const list = CapabilityListSchema.parse(await h.runtime.capabilities(caller(), TENANT));
    expect(list.tenant_id).toBe(TENANT);
    const allExecute = { policy_id: 'all-execute', modes: ['execute'], approver_scopes: ['ops:approve'], allow_self_approval: true };
    expect(list.items.find((i) => i.id === 'pay.echo')?.tenant_approval_policies).toEqual([
      { policy_id: 'echo-review', modes: ['none'], approver_scopes: ['aip:approve'], allow_self_approval: false },
      allExecute,
    ]);
    expect(list.items.find((i) => i.id === 'pay.refund')?.tenant_approval_policies).toEqual([allExecute]);
  });

  it('refuses a tenant the caller does not belong to, and an expired caller', async () => {
    expect(await codeOf(h.runtime.capabilities(caller(), OTHER_TENANT))).toBe('runtime.tenant_forbidden');
    const expired = caller('agent-1', { expires_at: new Date(h.clock.now().getTime() - 1_000).toISOString() });
    expect(await codeOf(h.runtime.capabilities(expired))).toBe('runtime.caller_expired');
    expect(await codeOf(h.runtime.health(expired))).toBe('runtime.caller_expired');
  });
});

describe('Runtime.health', () => {
  it('is ok when every hosted connector is ready (the default check: discovery succeeds)', async () => {
    expect(HealthSchema.parse(await h.runtime.health(caller()))).toEqual({ status: 'ok', connectors: [{ id: 'testpay', ready: true }] });
    expect(await h.runtime.health()).toEqual({ status: 'ok', connectors: [{ id: 'testpay', ready: true }] });
  });

  it('is degraded when one is not ready; a throwing check names only its failure code, a hanging one is cut off at the timeout', async () => {
    const report = HealthSchema.parse(await degraded.runtime.health(caller()));
    expect(report.status).toBe('degraded');
    expect(report.connectors.map((c) => c.id)).toEqual(['broken', 'down', 'hanging', 'testpay']);
    const [broken, down, hanging, testpay] = report.connectors;
    expect(broken).toEqual({ id: 'broken', ready: false, detail: expect.stringMatching(/^health check failed: [a-z_]+\.[a-z_.]+$/) });
    expect(JSON.stringify(report)).not.toContain('sk_live');
    expect(down).toEqual({ id: 'down', ready: false, detail: 'provider maintenance window' });
    expect(hanging).toEqual({ id: 'hanging', ready: false, detail: `health check timed out after ${HEALTH_TIMEOUT_MS} ms` });
    expect(hangingAborted).toBe(true);
    expect(testpay).toEqual({ id: 'testpay', ready: true });
  });
});
