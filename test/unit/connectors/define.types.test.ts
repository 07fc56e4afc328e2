/**
 * Type-level tests for the authoring helper. `npx tsc --noEmit` checks them
 * (an unexpected type or a missing @ts-expect-error error fails the build);
 * vitest runs them as ordinary tests too.
 */
import * as z from 'zod';
import { describe, expectTypeOf, it } from 'vitest';
import type { ActionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  defineCapability,
  defineConnector,
  type ActionExecutionContext,
  type CancelOutcome,
  type CapabilityInput,
  type CapabilityOutput,
  type DefinedConnector,
  type FrozenConnector,
  type HandlerCall,
  type ImplementationSupport,
  type ReconciliationResult,
} from '../../../packages/connector-sdk/src/index.js';

const Input = z.strictObject({ amount: z.int(), currency: z.enum(['EUR', 'USD']), note: z.string().optional(), retries: z.int().default(0) });
const Output = z.strictObject({ charge_id: z.string(), status: z.enum(['succeeded', 'pending']) });
const Preview = z.strictObject({ fee: z.number() });

describe('defineCapability types', () => {
  it('types handler input from the input schema (parsed output, defaults applied)', () => {
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      invoke(input, ctx, call) {
        expectTypeOf(input).toEqualTypeOf<{ amount: number; currency: 'EUR' | 'USD'; note?: string | undefined; retries: number }>();
        expectTypeOf(ctx).toEqualTypeOf<ActionExecutionContext>();
        expectTypeOf(call).toEqualTypeOf<HandlerCall>();
        return { charge_id: 'c', status: 'succeeded' };
      },
    });
  });

  it('types return values to the output schema, literal unions included, sync or async', () => {
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      invoke: () => ({ charge_id: 'c', status: 'pending' }),
      commit: async (input) => ({ charge_id: String(input.amount), status: input.amount > 0 ? 'succeeded' : 'pending' }),
    });
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      // @ts-expect-error 'refunded' is not in the output enum
      invoke: () => ({ charge_id: 'c', status: 'refunded' }),
    });
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      // @ts-expect-error charge_id is missing
      commit: async () => ({ status: 'succeeded' }),
    });
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      invoke(input) {
        // @ts-expect-error `amount` is a number, not a string
        input.amount.toUpperCase();
        return { charge_id: 'c', status: 'succeeded' };
      },
    });
  });

  it('types previews, reconciliation and cancellation results', () => {
    defineCapability({ id: 'x', input: Input, output: Output, preview: Preview }).implement({
      plan: (input) => ({ fee: input.amount * 0.01 }),
      reconcile: async (_input, ctx) => {
        expectTypeOf(ctx.transaction?.provider_operation_id).toEqualTypeOf<string | undefined>();
        return { terminal: true, original_commit_completed: true, output: { charge_id: 'c', status: 'succeeded' } };
      },
      cancel: async () => ({ accepted: false }),
    });
    defineCapability({ id: 'x', input: Input, output: Output, preview: Preview }).implement({
      // @ts-expect-error the preview schema wants `fee`
      plan: () => ({ cost: 1 }),
    });
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      // @ts-expect-error a terminal result must say whether the original commit completed
      reconcile: async () => ({ terminal: true }),
    });
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      // @ts-expect-error reconciliation output must match the output schema
      reconcile: async () => ({ terminal: true, original_commit_completed: false, output: { charge_id: 1, status: 'succeeded' } }),
    });
    type R = ReconciliationResult<z.input<typeof Output>>;
    expectTypeOf<Extract<R, { terminal: true }>['original_commit_completed']>().toEqualTypeOf<boolean>();
    expectTypeOf<CancelOutcome['accepted']>().toEqualTypeOf<boolean>();
  });

  it('types stream handlers: yielded chunks are StreamChunks, the return value is the output', () => {
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      async *stream(input) {
        yield { type: 'text', text: `charging ${input.amount}` };
        yield { type: 'progress', progress: 0.5 };
        return { charge_id: 'c', status: 'succeeded' };
      },
    });
    defineCapability({ id: 'x', input: Input, output: Output }).implement({
      // @ts-expect-error chunks must be StreamChunks
      async *stream() {
        yield { kind: 'text' };
        return { charge_id: 'c', status: 'succeeded' };
      },
    });
  });

  it('exposes the input and output types of a defined capability', () => {
    const cap = defineCapability({ id: 'x', input: Input, output: Output }).implement({ invoke: () => ({ charge_id: 'c', status: 'succeeded' }) });
    expectTypeOf<CapabilityInput<typeof cap>>().toEqualTypeOf<z.output<typeof Input>>();
    expectTypeOf<CapabilityOutput<typeof cap>>().toEqualTypeOf<{ charge_id: string; status: 'succeeded' | 'pending' }>();
  });
});

describe('defineConnector types', () => {
  it('produces a FrozenConnector with the nine-flag record and typed operations', () => {
    const connector = defineConnector({ id: 'd', version: '1.0.0', capabilities: [] });
    expectTypeOf(connector).toEqualTypeOf<DefinedConnector>();
    expectTypeOf(connector).toMatchTypeOf<FrozenConnector>();
    expectTypeOf(connector.implementation_support).returns.toEqualTypeOf<ImplementationSupport | undefined>();
    expectTypeOf(connector.invoke_typed).returns.resolves.toEqualTypeOf<ActionResult>();
    expectTypeOf(connector.reconcile_typed).returns.resolves.toEqualTypeOf<ReconciliationResult>();
  });

  it('keeps the page names of the nine flags', () => {
    expectTypeOf<keyof ImplementationSupport>().toEqualTypeOf<
      'invocation' | 'cancellation' | 'streaming' | 'retry' | 'transaction' | 'reconciliation' | 'compensation' | 'approval' | 'credentials'
    >();
  });
});
