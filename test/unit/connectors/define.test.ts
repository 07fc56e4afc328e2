import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  ConnectorFailure,
  EnvCredentialProvider,
  IMPLEMENTATION_FLAGS,
  admitConnector,
  defineCapability,
  defineConnector,
  type CapabilityHandlers,
  type JsonSchemaType,
} from '../../../packages/connector-sdk/src/index.js';
import { MemorySink, action, attempt } from './fixtures.js';

const ChargeInput = z.strictObject({ amount: z.int().positive(), currency: z.enum(['EUR', 'USD']) });
const ChargeOutput = z.strictObject({ charge_id: z.string(), status: z.enum(['succeeded', 'pending']) });

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

async function rejection(p: Promise<unknown>): Promise<ConnectorFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectorFailure);
  return err as ConnectorFailure;
}

const credentials = new EnvCredentialProvider({
  connector_id: 'payments',
  env: { PAY_KEY: 'sk_test_material' },
  references: [{ connector_id: 'payments', handle: 'payments/api_key', tenant_id: 'tenant-a', env: 'PAY_KEY' }],
});

describe('defineCapability', () => {
  it('derives every flag from the handlers present (plus the explicit retry and approval declarations)', () => {
    const none = defineCapability({ id: 'c.none', kind: 'resource', input: z.object({}), output: z.object({}) }).implement({});
    expect(IMPLEMENTATION_FLAGS.filter((f) => none.derived_support[f])).toEqual([]);

    const full = defineCapability({
      id: 'c.full',
      input: ChargeInput,
      output: ChargeOutput,
      retry: { downstream_idempotency: true },
      approval: { verified_evidence: true },
    }).implement({
      async *stream() {
        yield { type: 'text', text: 'x' };
        return { charge_id: 'c', status: 'succeeded' };
      },
      plan: () => ({ would_charge: true }),
      commit: () => ({ charge_id: 'c', status: 'succeeded' }),
      compensate: () => ({ charge_id: 'c', status: 'succeeded' }),
      cancel: () => ({ accepted: true }),
      reconcile: () => ({ terminal: false }),
    });
    expect(IMPLEMENTATION_FLAGS.filter((f) => full.derived_support[f])).toEqual([
      'invocation',
      'cancellation',
      'streaming',
      'retry',
      'transaction',
      'reconciliation',
      'compensation',
      'approval',
    ]);

    const planOnly = defineCapability({ id: 'c.plan', input: ChargeInput, output: ChargeOutput }).implement({
      invoke: () => ({ charge_id: 'c', status: 'pending' }),
      plan: () => ({}),
    });
    expect(planOnly.derived_support.transaction).toBe(false);
  });

  it('derives `transaction` from handlers for every mode the transaction contract declares', () => {
    const tx = (modes: ('execute' | 'plan' | 'commit' | 'reconcile' | 'compensate')[], dry_run_fidelity: 'schema_only' | 'full_simulation') => ({
      transaction: { modes, dry_run_fidelity, requires_plan_before_commit: true },
    });
    const invoke = () => ({ charge_id: 'c', status: 'succeeded' as const });
    const mk = (contract: ReturnType<typeof tx>, handlers: CapabilityHandlers<typeof ChargeInput, typeof ChargeOutput, JsonSchemaType>) =>
      defineCapability({ id: 'c', input: ChargeInput, output: ChargeOutput, contract }).implement(handlers).derived_support.transaction;
    expect(mk(tx(['execute'], 'schema_only'), { invoke })).toBe(true);
    expect(mk(tx(['execute', 'reconcile'], 'schema_only'), { invoke })).toBe(false);
    // schema_only plans are built by the runtime: no plan handler needed
    expect(mk(tx(['plan', 'commit'], 'schema_only'), { commit: invoke })).toBe(true);
    // full_simulation plans call plan_typed
    expect(mk(tx(['plan', 'commit'], 'full_simulation'), { commit: invoke })).toBe(false);
    expect(mk(tx(['plan', 'commit'], 'full_simulation'), { commit: invoke, plan: () => ({}) })).toBe(true);
  });

  it('puts JSON Schemas generated from the zod schemas into the capability', () => {
    const c = defineCapability({ id: 'payments.charge', description: 'Charge a card', input: ChargeInput, output: ChargeOutput }).implement({
      invoke: () => ({ charge_id: 'c', status: 'succeeded' }),
    });
    expect(c.capability).toMatchObject({
      id: 'payments.charge',
      kind: 'tool',
      description: 'Charge a card',
      input_schema: {
        type: 'object',
        properties: { amount: { type: 'integer' }, currency: { enum: ['EUR', 'USD'] } },
        required: ['amount', 'currency'],
        additionalProperties: false,
      },
      output_schema: { type: 'object', required: ['charge_id', 'status'] },
    });
  });

  it('refuses a retry declaration with nothing to retry and an invalid contract', () => {
    expect(
      isAipError(
        thrown(() => defineCapability({ id: 'c', input: z.object({}), output: z.object({}), retry: { downstream_idempotency: true } }).implement({})),
        'connector.definition_invalid',
      ),
    ).toBe(true);
    expect(
      isAipError(
        thrown(() => defineCapability({ id: 'has space', input: z.object({}), output: z.object({}) }).implement({})),
        'connector.definition_invalid',
      ),
    ).toBe(true);
  });
});

describe('defineConnector', () => {
  it('refuses, at definition time, a contract that advertises more than the handlers implement (naming the rule)', () => {
    const err = thrown(() =>
      defineConnector({
        id: 'payments',
        version: '1.0.0',
        capabilities: [
          defineCapability({
            id: 'payments.charge',
            input: ChargeInput,
            output: ChargeOutput,
            contract: {
              execution: { supports_cancel: true, supports_streaming: false, supports_retry: false, timeout_ms: 5_000 },
              credentials: { required: true },
            },
          }).implement({ invoke: () => ({ charge_id: 'c', status: 'succeeded' }) }),
        ],
      }),
    );
    expect(isAipError(err, 'connector.admission_rejected')).toBe(true);
    expect((err as { details: { issues: string[] } }).details.issues).toEqual([
      'payments.charge: execution.supports_cancel requires cancellation (flag cancellation is false)',
      'payments.charge: required credentials requires credentials (flag credentials is false)',
    ]);
  });

  it('sets the credentials flag when a credential provider is configured, and admits its own manifest', async () => {
    const connector = defineConnector({
      id: 'payments',
      version: '1.2.3',
      credentials,
      capabilities: [
        defineCapability({
          id: 'payments.charge',
          input: ChargeInput,
          output: ChargeOutput,
          contract: { credentials: { required: true, kind: 'api_key' } },
        }).implement({ invoke: () => ({ charge_id: 'c', status: 'succeeded' }) }),
      ],
    });
    expect(connector.implementation_support('payments.charge')).toMatchObject({ invocation: true, credentials: true, cancellation: false });
    expect(connector.implementation_support('unknown')).toBeUndefined();
    const report = await admitConnector(connector);
    expect(report.admitted).toBe(true);
    expect(report.manifest).toMatchObject({ connector_id: 'payments', version: '1.2.3', implementation_support: { 'payments.charge': { credentials: true } } });
    await expect(connector.health({})).resolves.toEqual({ ready: true });
  });

  it('leaves admission to the runtime with admission: defer', async () => {
    const connector = defineConnector({
      id: 'lying',
      version: '0.0.1',
      admission: 'defer',
      capabilities: [
        defineCapability({
          id: 'c',
          input: z.object({}),
          output: z.object({}),
          contract: { execution: { supports_cancel: true, supports_streaming: false, supports_retry: false, timeout_ms: 1 } },
        }).implement({ invoke: () => ({}) }),
      ],
    });
    expect((await admitConnector(connector)).issues.map((i) => i.rule)).toEqual(['execution.supports_cancel requires cancellation']);
  });

  it('rejects duplicate capability IDs', () => {
    const c = defineCapability({ id: 'c', input: z.object({}), output: z.object({}) }).implement({ invoke: () => ({}) });
    expect(
      isAipError(
        thrown(() => defineConnector({ id: 'd', version: '1.0.0', capabilities: [c, c] })),
        'connector.definition_invalid',
      ),
    ).toBe(true);
  });
});

describe('a defined connector at run time', () => {
  const seen: unknown[] = [];
  const charge = defineCapability({
    id: 'payments.charge',
    input: ChargeInput,
    output: ChargeOutput,
    contract: {
      execution: { supports_cancel: false, supports_streaming: false, supports_retry: true, timeout_ms: 5_000 },
      transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
      credentials: { required: true },
    },
    retry: { downstream_idempotency: true },
  }).implement({
    async invoke(input, ctx, call) {
      if (input.amount === 13) throw new Error('provider exploded');
      if (input.amount === 14) return { charge_id: 42 } as never;
      if (input.amount === 15) throw call.failure({ code: 'payments.card_declined', message: 'card declined', remote_status: 402 });
      const key = await call.withSecret((s) => s.withUtf8((t) => t.slice(0, 7)));
      seen.push({ input, key, idem: ctx.idempotency?.key });
      return { charge_id: `ch_${input.amount}`, status: 'succeeded' };
    },
    async reconcile(_input, ctx) {
      return { terminal: true, original_commit_completed: true, output: { charge_id: ctx.transaction?.provider_operation_id ?? '?', status: 'succeeded' } };
    },
  });
  const connector = defineConnector({
    id: 'payments',
    version: '1.0.0',
    credentials,
    capabilities: [charge],
    map_error: (err, operation) =>
      err instanceof Error && err.message === 'provider exploded'
        ? new ConnectorFailure({ code: 'payments.provider_error', operation, source: 'provider:sim', remote_status: 500, uncertain_outcome: true })
        : undefined,
  });

  it('validates input, resolves the secret at the edge, and returns a completed ActionResult with typed output', async () => {
    const result = await connector.invoke_typed(action(), attempt().context);
    expect(result).toEqual({ action_id: 'act-1', status: 'completed', output: { charge_id: 'ch_100', status: 'succeeded' } });
    expect(seen).toContainEqual({ input: { amount: 100, currency: 'EUR' }, key: 'sk_test', idem: 'idem-1' });
  });

  it('rejects input that does not match the schema with a typed failure, without calling the handler', async () => {
    const before = seen.length;
    const f = await rejection(connector.invoke_typed(action({ input: { amount: -1, currency: 'GBP' } }), attempt().context));
    expect(f.toJSON()).toMatchObject({ code: 'connector.input_invalid', operation: 'invocation', redacted_details: { paths: ['amount', 'currency'] } });
    expect(seen.length).toBe(before);
  });

  it('treats output that breaks the schema as an uncertain, non-retryable failure', async () => {
    const f = await rejection(connector.invoke_typed(action({ input: { amount: 14, currency: 'EUR' } }), attempt().context));
    expect(f.toJSON()).toMatchObject({ code: 'connector.output_invalid', uncertain_outcome: true, retryable: false });
  });

  it('maps provider errors through the author map_error, and passes typed failures through unchanged', async () => {
    const mapped = await rejection(connector.invoke_typed(action({ input: { amount: 13, currency: 'EUR' } }), attempt().context));
    expect(mapped.toJSON()).toMatchObject({ code: 'payments.provider_error', remote_status: 500, uncertain_outcome: true, operation: 'invocation' });
    const declined = await rejection(connector.invoke_typed(action({ input: { amount: 15, currency: 'EUR' } }), attempt().context));
    expect(declined.toJSON()).toMatchObject({ code: 'payments.card_declined', source: 'connector:payments', operation: 'invocation', remote_status: 402 });
    expect(connector.map_error(new Error('provider exploded'), 'transaction_commit')).toMatchObject({
      code: 'payments.provider_error',
      details: { connector_operation: 'transaction_commit' },
    });
  });

  it('fails with the credentials failure, not a fallback, when the tenant has no credential', async () => {
    const f = await rejection(connector.invoke_typed(action(), attempt({ tenant: { tenant_id: 'tenant-z' } }).context));
    expect(f.code).toBe('connector.credentials_unavailable');
  });

  it('answers operations without a handler with connector.operation_unsupported (permanent, retryable=false)', async () => {
    const ctx = attempt().context;
    const ops = [
      ['transaction_plan', connector.plan_typed(action(), ctx)],
      ['transaction_commit', connector.commit_typed(action(), ctx)],
      ['compensation', connector.compensate_typed(action(), ctx)],
      ['cancellation', connector.cancel_typed(action(), ctx)],
      ['emission', connector.emit_typed({ kind: 'event', event_type: 'x', payload: {} }, ctx)],
      ['ingestion', connector.ingest_typed({ provider: 'p', event_id: 'e', event_type: 't', payload: {}, received_at: '2030-01-01T00:00:00Z' }, ctx)],
    ] as const;
    for (const [operation, p] of ops) {
      const f = await rejection(p);
      expect(f.toJSON()).toMatchObject({ code: 'connector.operation_unsupported', category: 'permanent', retryable: false, operation });
    }
    const unknownCap = await rejection(connector.invoke_typed(action({ capability_id: 'other.cap' }), ctx));
    expect(unknownCap.code).toBe('connector.operation_unsupported');
  });

  it('validates a terminal reconciliation output against the output schema', async () => {
    const a = attempt(
      { transaction: { transaction_id: 'tx-1', mode: 'reconcile', provider_operation: { provider: 'sim', operation_id: 'op-5' } } },
      { transaction_checkpoints: { checkpoint: async () => undefined } },
    );
    await expect(connector.reconcile_typed(action({ transaction: { mode: 'reconcile', transaction_id: 'tx-1' } }), a.context)).resolves.toEqual({
      terminal: true,
      original_commit_completed: true,
      output: { charge_id: 'op-5', status: 'succeeded' },
    });
  });
});

describe('a schema of another Standard Schema library', () => {
  // Hand-written Standard Schemas (what valibot or arktype schemas are): validation may be asynchronous, issue paths
  // may be path segments, and the JSON Schema comes from `~standard.jsonSchema`.
  type Charge = { amount: number; currency: string };
  const chargeJson = { type: 'object', properties: { amount: { type: 'integer' }, currency: { type: 'string' } }, required: ['amount', 'currency'] };
  const ChargeIn = {
    '~standard': {
      version: 1 as const,
      vendor: 'hand',
      types: undefined as unknown as { input: Charge; output: Charge },
      validate: async (v: unknown) => {
        const c = v as Partial<Charge> | null;
        if (typeof c?.amount === 'number' && c.amount > 0 && typeof c.currency === 'string') return { value: { amount: c.amount, currency: c.currency } };
        return {
          issues: [
            { message: 'amount', path: [{ key: 'amount' }] },
            { message: 'currency', path: ['currency'] },
          ],
        };
      },
      jsonSchema: { input: () => chargeJson, output: () => chargeJson },
    },
  };
  const receiptJson = { type: 'object', properties: { receipt: { type: 'string' } }, required: ['receipt'] };
  const ReceiptOut = {
    '~standard': {
      version: 1 as const,
      vendor: 'hand',
      types: undefined as unknown as { input: { receipt: string }; output: { receipt: string } },
      validate: (v: unknown) =>
        typeof (v as { receipt?: unknown } | null)?.receipt === 'string'
          ? { value: v as { receipt: string } }
          : { issues: [{ message: 'receipt', path: ['receipt'] }] },
      jsonSchema: { input: () => receiptJson, output: () => receiptJson },
    },
  };
  const charge = defineCapability({ id: 'payments.charge', input: ChargeIn, output: ReceiptOut }).implement({
    // `input` is typed from the schema's `~standard.types`: no cast.
    invoke: (input) => (input.amount === 13 ? ({ receipt: 13 } as unknown as { receipt: string }) : { receipt: `${input.amount} ${input.currency}` }),
  });
  const connector = defineConnector({ id: 'payments', version: '1.0.0', capabilities: [charge] });

  it('advertises its Standard JSON Schema and runs a handler on the value its own validate produced', async () => {
    expect(charge.capability.input_schema).toEqual(chargeJson);
    await expect(connector.invoke_typed(action(), attempt().context)).resolves.toEqual({
      action_id: 'act-1',
      status: 'completed',
      output: { receipt: '100 EUR' },
    });
  });

  it('names the paths of its issues, path segments included, for input and output alike', async () => {
    const input = await rejection(connector.invoke_typed(action({ input: { amount: -1 } }), attempt().context));
    expect(input.toJSON()).toMatchObject({ code: 'connector.input_invalid', redacted_details: { paths: ['amount', 'currency'] } });
    const output = await rejection(connector.invoke_typed(action({ input: { amount: 13, currency: 'EUR' } }), attempt().context));
    expect(output.toJSON()).toMatchObject({ code: 'connector.output_invalid', redacted_details: { paths: ['receipt'] } });
  });

  it('is refused at definition when it cannot give its JSON Schema', () => {
    const { jsonSchema: _json, ...props } = ReceiptOut['~standard'];
    const err = thrown(() => defineCapability({ id: 'payments.refund', input: ChargeIn, output: { '~standard': props } }));
    expect(isAipError(err, 'connector.definition_invalid')).toBe(true);
    expect((err as Error).message).toContain('Standard JSON Schema');
  });
});

describe('streaming handlers', () => {
  const Progress = z.strictObject({ steps: z.int().min(1).max(10) });
  const Done = z.strictObject({ total: z.int() });
  const counting = defineConnector({
    id: 'counter',
    version: '1.0.0',
    capabilities: [
      defineCapability({
        id: 'count',
        input: Progress,
        output: Done,
        contract: { execution: { supports_cancel: false, supports_streaming: true, supports_retry: false, timeout_ms: 1_000 } },
      }).implement({
        async *stream(input) {
          for (let i = 0; i < input.steps; i++) yield { type: 'progress', progress: (i + 1) / input.steps };
          return { total: input.steps };
        },
      }),
    ],
  });

  it('publishes each yielded chunk through ctx.stream in order and returns the terminal output', async () => {
    const sink = new MemorySink();
    const a = attempt({ capability_id: 'count', streaming: true }, { stream_sink: sink });
    const result = await counting.invoke_typed(action({ capability_id: 'count', input: { steps: 3 } }), a.context);
    expect(result.output).toEqual({ total: 3 });
    expect(sink.written.map((c) => [c.sequence, c.chunk])).toEqual([
      [0, { type: 'progress', progress: 1 / 3 }],
      [1, { type: 'progress', progress: 2 / 3 }],
      [2, { type: 'progress', progress: 1 }],
    ]);
  });

  it('still returns the terminal result when the capability was not admitted with streaming', async () => {
    const result = await counting.invoke_typed(
      action({ capability_id: 'count', input: { steps: 2 } }),
      attempt({ capability_id: 'count', streaming: false }).context,
    );
    expect(result.output).toEqual({ total: 2 });
  });
});

describe('health', () => {
  it('uses the author health check when given', async () => {
    const c = defineConnector({ id: 'h', version: '1.0.0', capabilities: [], health: async () => ({ ready: false, detail: 'provider maintenance window' }) });
    await expect(c.health({})).resolves.toEqual({ ready: false, detail: 'provider maintenance window' });
  });
});
