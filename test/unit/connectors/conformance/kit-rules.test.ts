/**
 * Kit behaviour that a one-rule mutant (mutations.test.ts) cannot show:
 * - the input decoys' schema walk (every place a string may go, nested
 *   objects and arrays included; a strict schema still gets its fields);
 * - `cancel_verified` claims only what it observed: a fake cancel the kit
 *   cannot check is skipped with the reason, never passed;
 * - a scenario the kit prepares is a scenario it runs: an execute-only
 *   capability whose uncertainCommit cleanup only releases what is held
 *   leaves no hold armed for a later scenario;
 * - the messages after the secret rotation name what was observed;
 * - a claim of credentials that no call ever resolved fails `secrets`.
 */
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defineCapability, defineConnector } from '../../../../lib/connectors/index.js';
import { describePath, inputSlots, withValueAt } from '../../../../lib/connectors/conformance/decoys.js';
import { runConformance, type ConformanceProvider, type ConformanceResult, type ConformanceSubject } from '../../../../lib/connectors/conformance/index.js';
import { ledgerSubject } from '../../../fixtures/broken-connectors/baseline.js';
import cachesSecret from '../../../fixtures/broken-connectors/caches-secret.js';
import ignoresDeadline from '../../../fixtures/broken-connectors/ignores-deadline.js';
import presentsFirstSecret from '../../../fixtures/broken-connectors/presents-first-secret.js';

function result(report: { results: readonly ConformanceResult[] }, id: string): ConformanceResult {
  const r = report.results.find((x) => x.id === id);
  if (r === undefined) throw new Error(`no result for ${id}`);
  return r;
}

describe('input decoys: the schema walk', () => {
  const schema = {
    type: 'object',
    additionalProperties: false,
    required: ['amount'],
    properties: {
      amount: { type: 'integer' },
      currency: { type: 'string', enum: ['eur', 'usd'] },
      note: { type: ['string', 'null'] },
      payer: { type: 'object', additionalProperties: false, properties: { account: { type: 'string' }, since: { type: 'integer' } } },
      lines: { type: 'array', items: { type: 'object', properties: { ref: { anyOf: [{ type: 'string' }, { type: 'number' }] } } } },
      tags: { type: 'array', items: { type: 'string' } },
    },
  };

  it('finds every place a string may go, and no place a constant is required; a strict root gets no extra names', () => {
    const slots = inputSlots(schema);
    expect(slots.map((s) => describePath(s.path))).toEqual(['note', 'payer.account', 'lines[0].ref', 'tags[0]']);
    for (const s of slots) expect(s.kinds).toEqual(['tenant', 'account']);
  });

  it('adds the usual authority names (their own kind first) where the root admits extra fields', () => {
    const slots = inputSlots({ ...schema, additionalProperties: {} });
    const byPath = new Map(slots.map((s) => [describePath(s.path), s.kinds]));
    expect(byPath.get('tenant_id')).toEqual(['tenant']);
    expect(byPath.get('external_account_id')).toEqual(['account']);
    expect(byPath.get('idempotency_key')).toEqual(['idempotency']);
    expect(byPath.get('note')).toEqual(['tenant', 'account']);
  });

  it('puts one value at a path, creating the objects and arrays on the way, and keeps the rest', () => {
    const base = { amount: 1, payer: { since: 2020 }, tags: ['a', 'b'] };
    expect(withValueAt(base, ['payer', 'account'], 'D')).toEqual({ amount: 1, payer: { since: 2020, account: 'D' }, tags: ['a', 'b'] });
    expect(withValueAt(base, ['lines', 0, 'ref'], 'D')).toEqual({ ...base, lines: [{ ref: 'D' }] });
    expect(withValueAt(base, ['tags', 0], 'D')).toEqual({ ...base, tags: ['D', 'b'] });
    expect(withValueAt(base, ['amount', 'x'], 'D')).toBeUndefined();
    expect(base).toEqual({ amount: 1, payer: { since: 2020 }, tags: ['a', 'b'] });
  });
});

describe('cancel_verified claims only what it observed', () => {
  const unobservable = (p: ConformanceProvider): ConformanceProvider => {
    const { effects: _effects, settle: _settle, ...rest } = p;
    return rest;
  };

  it('a cancel answered accepted without asking the provider is skipped, with the reason, when nothing can confirm it', async () => {
    const subject = ledgerSubject('fake cancel, provider without effects', {
      hooks: { cancel: async (ref) => ({ accepted: true, provider_operation: ref }) },
      provider: unobservable,
    });
    const report = await runConformance(subject);
    const r = result(report, 'cancel_verified');
    expect(r.status).toBe('skipped');
    expect(r.reason).toContain('answered accepted, but nothing confirmed it');
    expect(r.reason).toContain('the provider does not report its effects (provider.effects)');
    expect(r.reason).toContain('a later reconcile was not terminal yet');
    expect(r.reason).not.toContain('never landed');
    expect(report.results.filter((x) => x.status === 'failed').map((x) => x.message)).toEqual([]);
  });

  it('a real cancel is passed with what confirmed it: the reconcile, not effects it could not count', async () => {
    const report = await runConformance(ledgerSubject('real cancel, provider without effects', { provider: unobservable }));
    const r = result(report, 'cancel_verified');
    expect(r.status).toBe('passed');
    expect(r.reason).toContain('ledger.post: after the accepted cancel a later reconcile reports the commit not completed');
    expect(r.reason).toContain('not observed: the provider does not report its effects (provider.effects)');
    expect(r.reason).not.toContain('no new effect');
  });

  it('with every observation, both are named', async () => {
    const r = result(await runConformance(ledgerSubject('baseline')), 'cancel_verified');
    expect(r.reason).toBe(
      'ledger.post: after the accepted cancel the provider holds no new effect once it settled, and a later reconcile reports the commit not completed',
    );
  });
});

describe('a scenario the kit prepares is a scenario it runs', () => {
  it('an execute-only capability with a cleanup that only releases what is held passes every rule', async () => {
    // ledger.release() commits what is pending but does not disarm hold(): a cleanup that only releases what is held.
    // Preparing uncertainCommit for the commit mode the capability lacks would leave a hold armed, and the
    // committed-effect scenario would then wait on a held response and fail under effect_checkpoint.
    const inner = ledgerSubject('execute only', { modes: ['dry_run', 'plan', 'execute', 'reconcile'] });
    let prepared = 0;
    const subject: ConformanceSubject = {
      ...inner,
      async setup(env) {
        const instance = await inner.setup(env);
        const make = instance.scenarios?.uncertainCommit;
        if (make === undefined) throw new Error('the baseline has an uncertainCommit scenario');
        // As in the guide's example, no lostResponse scenario: its fault would consume a hold left armed.
        const { lostResponse: _none, ...scenarios } = instance.scenarios ?? {};
        return {
          ...instance,
          scenarios: {
            ...scenarios,
            uncertainCommit: async () => {
              prepared += 1;
              return make();
            },
          },
        };
      },
    };
    const report = await runConformance(subject);
    expect(report.results.filter((r) => r.status !== 'passed').map((r) => r.message)).toEqual([]);
    // The scenario itself and the deadline run; none for the commit mode the capability lacks.
    expect(prepared).toBe(2);
  });
});

describe('failure messages name what was observed', () => {
  it('after the rotation: a credential resolved in the attempt but refused is not called a kept secret', async () => {
    const r = result(await runConformance(presentsFirstSecret), 'credentials_per_attempt');
    expect(r.status).toBe('failed');
    expect(r.reason).toContain(
      'the provider refused the credential (connector.provider_auth_failed) although 1 credential (the rotated secret) resolved during the attempt',
    );
    expect(r.reason).not.toContain('kept');
  });

  it('after the rotation: no credential resolved in the attempt, and the provider refused it: a kept secret', async () => {
    const r = result(await runConformance(cachesSecret), 'credentials_per_attempt');
    expect(r.reason).toContain(
      'the provider refused the credential (connector.provider_auth_failed) and no credential was resolved during the attempt, so the connector presented a secret kept from before the rotation',
    );
  });

  it('after the rotation: a failure that is no credential refusal is reported as what it was', async () => {
    const subject = ledgerSubject('provider unavailable after the rotation', {
      provider: (p, ledger) => ({
        ...p,
        rotateSecret: (next) => {
          ledger.rotate([next]);
          ledger.failNext('unavailable');
        },
      }),
    });
    const report = await runConformance(subject);
    const r = result(report, 'credentials_per_attempt');
    expect(r.status).toBe('failed');
    expect(r.reason).toBe(
      'commit_typed(ledger.post) in the committed-effect scenario after the secret was rotated failed with ConnectorFailure connector.provider_unavailable (category temporary); 1 credential (the rotated secret) resolved during the attempt',
    );
  });

  it('a connector that ignores its deadline is reported with what it was doing', async () => {
    const r = result(await runConformance(ignoresDeadline), 'deadline_bounds_wait');
    expect(r.status).toBe('failed');
    expect(r.reason).toContain('its deadline already past, still waiting on the response the provider held');
  });
});

describe('a credentials claim no call resolves', () => {
  it('fails secrets, although every call (the input-decoy calls included) succeeded', async () => {
    const echo = defineCapability({
      id: 'echo.say',
      input: z.strictObject({ text: z.string().min(1) }),
      output: z.strictObject({ text: z.string() }),
      contract: {
        execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 1_000 },
        credentials: { required: true, kind: 'api_key' },
      },
    }).implement({
      invoke: (input, ctx, call) => {
        if (ctx.cancellation.aborted) throw call.failure({ code: 'connector.attempt_cancelled', category: 'conflict' });
        return { text: input.text };
      },
    });
    const report = await runConformance({
      name: 'echo claiming credentials',
      async setup(env) {
        return {
          connector: defineConnector({ id: 'echo', version: '1.0.0', capabilities: [echo], credentials: env.credentials }),
          sampleInput: () => ({ text: 'hi' }),
        };
      },
    });
    expect(result(report, 'secrets').message).toContain(
      'a capability claims credentials but no credential was resolved through the deployment credential provider during the run',
    );
    expect(result(report, 'trusted_context').reason).toContain('2 calls with a decoy tenant or account in one input field at a time (1 field)');
  });
});
