/**
 * The connector conformance kit against the two reference connectors (they
 * fail no rule), the vitest helper on the ledger baseline, and against a deliberately broken
 * connector (it fails, and every message names the violated rule).
 */
import { describe, expect, it } from 'vitest';
import { REVIEW_ITEMS, conformanceRule, runConformance, type ConformanceRuleId, type ConformanceSubject } from '../../../lib/connectors/conformance/index.js';
import { describeConformance } from '../../../lib/connectors/conformance/vitest.js';
import ticketsConformanceSubject from '../../../lib/connectors/conformance/subjects/tickets.js';
import { TicketDesk } from '../../../lib/connectors/reference/ticket-desk.js';
import { createTicketsConnector, DEFAULT_TICKETS_CREDENTIAL_HANDLE } from '../../../lib/connectors/reference/tickets.js';
import { brokenConformanceSubject } from '../../fixtures/broken-connector.js';
import paymentsConformanceSubject from '../../support/payments-conformance-subject.js';
import { ledgerSubject } from '../../fixtures/broken-connectors/baseline.js';

// The vitest helper, as authors use it, on a connector that every rule applies to (one test per rule, none skipped).
// The reference connectors below are run through runConformance, which states which rules do not apply to them
// (a skipped rule is reported as skipped, never as passed, and this suite keeps no skipped test).
describeConformance('conformance: the ledger baseline (every rule applies)', () => ledgerSubject('baseline'));

describe('conformance: the reference connectors', () => {
  it.each([
    ['payments', paymentsConformanceSubject, ['streaming', 'placement']],
    ['tickets', ticketsConformanceSubject, ['placement']],
  ] as const)('%s fails no rule, and skips only what does not apply (no streaming capability, no second placement)', async (_name, make, skipped) => {
    const report = await runConformance(make());
    expect(report.results.filter((r) => r.status === 'failed').map((r) => r.message)).toEqual([]);
    expect(report.results.filter((r) => r.skipped).map((r) => r.id)).toEqual(skipped);
  });
});

describe('conformance: payments reconciles without an operation ID', () => {
  it('the kit finds the committed charge by the original idempotency key (payments.charge declares the lookup)', async () => {
    const report = await runConformance(paymentsConformanceSubject());
    const evidence = report.results.find((r) => r.id === 'recovery_evidence');
    expect(evidence?.status).toBe('passed');
    expect(evidence?.message).toContain("payments.charge: a reconcile without an operation ID finds the effect's operation by the original idempotency key");
  });
});

describe('conformance: the broken connector', () => {
  it('fails every rule it violates, with messages that name the rule and never the secret', async () => {
    const secret = 'csk_broken_fixture_secret_0123456789abcdef';
    const report = await runConformance(brokenConformanceSubject(), { secret });
    expect(report.passed).toBe(false);
    const failed = report.results.filter((r) => r.status === 'failed');
    expect(failed.map((r) => r.id)).toEqual([
      'manifest',
      'support_record',
      'secrets',
      'timeout_not_retryable',
      'explicit_unsupported',
      'deadline_bounds_wait',
      'checkpoint_before_wait',
      'effect_checkpoint',
      'recovery_evidence',
    ]);
    for (const r of failed) {
      expect(r.review_item).toBe(conformanceRule(r.id).review_item);
      expect(REVIEW_ITEMS).toContain(r.review_item);
      expect(r.message.startsWith(`[${r.id}] failed: `)).toBe(true);
    }
    for (const r of report.results) expect(r.message).not.toContain(secret);

    const message = (id: ConformanceRuleId): string => report.results.find((r) => r.id === id)?.message ?? '';
    // Claims flags it does not implement.
    expect(message('manifest')).toContain('broken.create: flag cancellation is true but cancel_typed answers connector.operation_unsupported');
    expect(message('manifest')).toContain('broken.create: flag reconciliation is true but reconcile_typed answers connector.operation_unsupported');
    // Implements methods it does not claim.
    expect(message('manifest')).toContain('broken.lookup: commit_typed is implemented (it returned a result) but flag transaction is false');
    // Not the exact nine flags.
    expect(message('support_record')).toContain('broken.lookup: the support record lacks approval');
    expect(message('support_record')).toContain('beyond the nine flags (refund)');
    // A plain Error instead of the typed unsupported failure.
    expect(message('explicit_unsupported')).toContain(
      'compensate_typed(broken.create): flag compensation is false, so it must reject with the typed ConnectorFailure connector.operation_unsupported',
    );
    expect(message('explicit_unsupported')).toContain('untyped Error');
    // A wait bounded by the cancellation only: with the deadline past and no abort, it waits on.
    expect(message('deadline_bounds_wait')).toContain('its deadline already past, still waiting on the response the provider held');
    // No checkpoint before the uncertain wait.
    expect(message('checkpoint_before_wait')).toContain('no provider operation was checkpointed before the connector waited on a response the provider held');
    // Effect published before the provider had it.
    expect(message('effect_checkpoint')).toContain('provider_effect_committed was published before the provider had durably recorded the effect');
    // uncertain_outcome lost.
    expect(message('recovery_evidence')).toContain('uncertain-commit scenario: uncertain_outcome is false');
    expect(message('recovery_evidence')).toContain('lost-response scenario: uncertain_outcome is false');
    // The secret leaked into a failure message, and resolved secrets were kept.
    expect(message('secrets')).toContain('secret material appears in the failure of commit_typed(broken.create) in the uncertain-commit scenario');
    expect(message('secrets')).toContain('resolved secrets were never disposed');
    // A lost commit reported retryable.
    expect(message('timeout_not_retryable')).toContain('the commit timed out and failed with broken.desk_failed, retryable=true');
    // Not exercised, and reported as such (never as passed): no retry scenario, no provider observations.
    expect(report.results.find((r) => r.id === 'retry_identity')).toMatchObject({
      status: 'skipped',
      passed: false,
      skipped: true,
      reason: 'no retry scenario was supplied',
    });
    expect(report.results.find((r) => r.id === 'plan_no_effect')).toMatchObject({
      status: 'skipped',
      reason: 'the subject’s provider does not report its effects (provider.effects)',
    });
  });
});

describe('conformance: what the kit demands of a subject', () => {
  it('a connector that claims transaction must come with the scenarios that exercise it', async () => {
    const withoutScenarios: ConformanceSubject = {
      name: 'tickets without scenarios',
      credential_handle: DEFAULT_TICKETS_CREDENTIAL_HANDLE,
      async setup(env) {
        const desk = new TicketDesk({ api_tokens: [env.secret] });
        return {
          connector: createTicketsConnector({ desk, credentials: env.credentials }),
          sampleInput: (id) => (id === 'tickets.create' ? { title: 'probe' } : { query: 'x' }),
        };
      },
    };
    const report = await runConformance(withoutScenarios);
    const byId = new Map(report.results.map((r) => [r.id, r]));
    expect(byId.get('checkpoint_before_wait')?.status).toBe('failed');
    expect(byId.get('checkpoint_before_wait')?.message).toContain('supplies no uncertainCommit scenario');
    expect(byId.get('effect_checkpoint')?.status).toBe('failed');
    // The input-decoy calls are real calls: they resolve credentials, so the credentials claim is exercised even here.
    expect(byId.get('secrets')?.status).toBe('passed');
    expect(byId.get('trusted_context')?.message).toContain('with a decoy tenant or account in one input field at a time');
    expect(byId.get('manifest')?.status).toBe('passed');
    expect(byId.get('explicit_unsupported')?.status).toBe('passed');
  });

  it('catches a secret written to a log line or to the console', async () => {
    const leaky: ConformanceSubject = {
      name: 'tickets with a leaky logger',
      credential_handle: DEFAULT_TICKETS_CREDENTIAL_HANDLE,
      async setup(env) {
        const inner = await ticketsConformanceSubject().setup(env);
        const desk = new TicketDesk({ api_tokens: [env.secret] });
        const connector = createTicketsConnector({
          desk,
          credentials: env.credentials,
          logger: (line) => {
            env.log({ ...line, debug_token: Buffer.from(env.secret).toString('base64') });
            if (line.event === 'effect_committed') console.warn('effect committed with token', env.secret);
          },
        });
        return {
          ...inner,
          connector,
          scenarios: {
            committedEffect: async () => ({
              action: {
                id: 'leak-1',
                capability_id: 'tickets.create',
                input: { title: 't' },
                transaction: { mode: 'commit', transaction_id: 'leak-tx', plan_id: 'plan:leak-tx' },
              },
              effectRecorded: () => desk.tickets().length === 1,
            }),
          },
        };
      },
    };
    const report = await runConformance(leaky);
    const secrets = report.results.find((r) => r.id === 'secrets');
    expect(secrets?.status).toBe('failed');
    expect(secrets?.message).toContain('secret material appears in a connector log line');
    expect(secrets?.message).toContain('secret material appears in a console log line');
  });
});
