import * as z from './common/zod.js';

/**
 * The nine independent implementation-support flags, exactly as the connector
 * page names them. For every admitted capability `implementation_support`
 * returns one record with all nine.
 */
export const IMPLEMENTATION_FLAGS = [
  'invocation',
  'cancellation',
  'streaming',
  'retry',
  'transaction',
  'reconciliation',
  'compensation',
  'approval',
  'credentials',
] as const;

export type ImplementationFlag = (typeof IMPLEMENTATION_FLAGS)[number];

/** What each flag means when true (the page's table). */
export const IMPLEMENTATION_FLAG_MEANING: Readonly<Record<ImplementationFlag, string>> = {
  invocation: 'Normal invocation is implemented',
  cancellation: 'Runtime cancellation reaches a downstream operation',
  streaming: 'Incremental output is implemented',
  retry: 'Retry classification and downstream idempotency are implemented',
  transaction: 'Transaction planning and commit behavior are implemented',
  reconciliation: 'An uncertain provider outcome can be reconciled',
  compensation: 'Compensation is implemented as a governed action',
  approval: 'Verified approval evidence and resume behavior are implemented',
  credentials: 'Credential handles resolve through the deployment provider',
};

/** Exactly nine booleans: strict, so a missing or extra flag is rejected. Built on first use (`z.deferred`). */
export const ImplementationSupportSchema = z.deferred(() =>
  z.strictObject({
    invocation: z.boolean(),
    cancellation: z.boolean(),
    streaming: z.boolean(),
    retry: z.boolean(),
    transaction: z.boolean(),
    reconciliation: z.boolean(),
    compensation: z.boolean(),
    approval: z.boolean(),
    credentials: z.boolean(),
  }),
);

export type ImplementationSupport = Readonly<Record<ImplementationFlag, boolean>>;

/** A frozen nine-flag record; unspecified flags are false. */
export function implementationSupport(flags: Partial<Record<ImplementationFlag, boolean>> = {}): ImplementationSupport {
  const out = {} as Record<ImplementationFlag, boolean>;
  for (const f of IMPLEMENTATION_FLAGS) out[f] = flags[f] === true;
  return Object.freeze(out);
}

/** Every flag false. */
export const NO_IMPLEMENTATION_SUPPORT: ImplementationSupport = implementationSupport();

/** The flags that are true, in the page's order. */
export function claimedFlags(support: ImplementationSupport): ImplementationFlag[] {
  return IMPLEMENTATION_FLAGS.filter((f) => support[f]);
}
