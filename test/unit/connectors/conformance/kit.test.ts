/**
 * Kit checks on small in-process connectors (no provider), and the SDK
 * behaviour the kit's probes rely on.
 */
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import {
  ConnectorFailure,
  FrozenConnectorBase,
  defineCapability,
  defineConnector,
  implementationSupport,
  type ActionExecutionContext,
  type ConnectorContext,
  type ConnectorManifest,
  type ImplementationSupport,
} from '../../../../lib/connectors/index.js';
import { AttemptRecorder, conformanceAttempt, runConformance, secretNeedles, type ConformanceSubject } from '../../../../lib/connectors/conformance/index.js';
import { credentialHandle } from '../../../../lib/connectors/index.js';
import type { Action, ActionResult } from '../../../../lib/protocol/index.js';

const echo = defineCapability({
  id: 'echo.say',
  input: z.strictObject({ text: z.string().min(1) }),
  output: z.strictObject({ text: z.string() }),
  contract: { execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 1_000 } },
}).implement({
  invoke: (input, ctx, call) => {
    if (ctx.cancellation.aborted) throw call.failure({ code: 'connector.attempt_cancelled', category: 'conflict' });
    return { text: input.text };
  },
});

function subjectOf(
  connector: FrozenConnectorBase | ReturnType<typeof defineConnector>,
  sample: Record<string, unknown> | undefined = { text: 'hi' },
): ConformanceSubject {
  return { name: 'unit', setup: async () => ({ connector, sampleInput: () => sample }) };
}

describe('defineConnector and unsupported operations', () => {
  it('answers an operation without a handler with connector.operation_unsupported even for invalid input', async () => {
    const connector = defineConnector({ id: 'echo', version: '1.0.0', capabilities: [echo] });
    const attempt = conformanceAttempt(
      { id: 'a-1', capability_id: 'echo.say', input: {} },
      { tenant_id: 't', credential_handle: credentialHandle('x/y'), recorder: new AttemptRecorder() },
    );
    const err = await connector.commit_typed({ id: 'a-1', capability_id: 'echo.say', input: { wrong: true } }, attempt.context).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorFailure);
    expect((err as ConnectorFailure).toJSON()).toMatchObject({
      code: 'connector.operation_unsupported',
      category: 'permanent',
      retryable: false,
      operation: 'transaction_commit',
    });
    // An implemented operation still validates its input.
    const invalid = await connector.invoke_typed({ id: 'a-1', capability_id: 'echo.say', input: { wrong: true } }, attempt.context).catch((e: unknown) => e);
    expect((invalid as ConnectorFailure).code).toBe('connector.input_invalid');
  });
});

describe('the kit on small connectors', () => {
  it('passes a minimal well-behaved connector (rules it cannot exercise are skipped)', async () => {
    const report = await runConformance(subjectOf(defineConnector({ id: 'echo', version: '1.0.0', capabilities: [echo] })));
    expect(report.results.filter((r) => r.status === 'failed')).toEqual([]);
    expect(report.passed).toBe(true);
    // Skipped, with the reason, never passed: nothing in this subject can exercise them.
    expect(report.results.filter((r) => r.skipped).map((r) => r.id)).toEqual([
      'credentials_per_attempt',
      'retry_identity',
      'no_raw_idempotency_key',
      'timeout_not_retryable',
      'streaming',
      'plan_no_effect',
      'cancelled_call_no_effect',
      'deadline_bounds_wait',
      'cancel_verified',
      'checkpoint_before_wait',
      'effect_checkpoint',
      'reconcile_pending_not_terminal',
      'placement',
    ]);
    for (const r of report.results.filter((x) => x.skipped)) {
      expect(r.passed).toBe(false);
      expect(r.message).toBe(`[${r.id}] skipped: ${r.reason}`);
    }
    expect(report.results.find((r) => r.id === 'cancelled_call_no_effect')?.reason).toBe(
      'the subject’s provider does not report its effects (provider.effects)',
    );
    expect(report.counts).toEqual({ passed: 7, failed: 0, skipped: 13 });
  });

  it('flags an unsupported failure with the wrong shape, and a hand-rolled claim of an absent method', async () => {
    class Sloppy extends FrozenConnectorBase {
      readonly id = 'sloppy';
      async discover(_ctx: ConnectorContext): Promise<ConnectorManifest> {
        return {
          connector_id: 'sloppy',
          version: '1.0.0',
          capabilities: [echo.capability],
          implementation_support: { 'echo.say': this.implementation_support() },
        };
      }
      implementation_support(): ImplementationSupport {
        return implementationSupport({ invocation: true, compensation: true });
      }
      async invoke_typed(action: Action, _ctx: ActionExecutionContext): Promise<ActionResult> {
        return { action_id: action.id, status: 'completed', output: { text: 'x' } };
      }
      override async cancel_typed(): Promise<never> {
        throw new ConnectorFailure({
          code: 'connector.operation_unsupported',
          category: 'temporary',
          retryable: true,
          operation: 'invocation',
          source: this.source,
        });
      }
    }
    const report = await runConformance(subjectOf(new Sloppy()));
    const msg = (id: string): string => report.results.find((r) => r.id === id)?.message ?? '';
    expect(msg('manifest')).toContain('echo.say: flag compensation is true but compensate_typed answers connector.operation_unsupported');
    expect(msg('explicit_unsupported')).toContain(
      'cancel_typed(echo.say) answers connector.operation_unsupported without the typed shape (category is temporary, not permanent, retryable is true, operation is invocation, not cancellation)',
    );
  });

  it('needs no sample input to see unclaimed methods, and reports a sample that fails the manifest schema', async () => {
    const report = await runConformance(subjectOf(defineConnector({ id: 'echo', version: '1.0.0', capabilities: [echo] }), undefined));
    expect(report.results.find((r) => r.id === 'manifest')?.status).toBe('passed');
    const withBadSample = await runConformance(subjectOf(defineConnector({ id: 'echo', version: '1.0.0', capabilities: [echo] }), { text: 42 }));
    expect(withBadSample.results.find((r) => r.id === 'manifest')?.message).toContain(
      'the sample input for invoke_typed does not satisfy the input_schema of echo.say',
    );
  });

  it('searches every textual form of the secret', () => {
    const needles = secretNeedles('csk_0123456789abcdef');
    expect(needles).toContain('csk_0123456789abcdef');
    expect(needles).toContain(Buffer.from('csk_0123456789abcdef').toString('base64url'));
    expect(needles).toContain(Buffer.from('csk_0123456789abcdef').toString('hex'));
    expect(needles.some((n) => n.startsWith('63 73 6b 5f'))).toBe(true);
  });
});
