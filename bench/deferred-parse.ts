/**
 * Warm parse speed of deferred schemas (`z.deferred`,
 * packages/connector-sdk/src/common/zod.ts) against the same schemas built at
 * once: what the Proxy costs on the hot path once the schema is built.
 *
 *   npm run bench:deferred-parse
 *
 * One builder makes the protocol's Action and ActionResult shapes (objects,
 * optional objects, a record, a refinement) twice: every object built at
 * once, and every object deferred as packages/connector-sdk/src/protocol
 * defers them (strings, numbers and enums stay eager there). Each parses a
 * full action and a failed result, then an invalid action, in rounds that
 * alternate the two; zod runs without its JIT, as deployed
 * (infra/bundling.ts ZOD_JITLESS_BANNER), unless JIT=1. Prints the median
 * and the best round, µs per parse; nothing is asserted.
 */
Object.assign(((globalThis as { __zod_globalConfig?: object }).__zod_globalConfig ??= {}), { jitless: process.env.JIT !== '1' });
const z = await import('../packages/connector-sdk/src/common/zod.js');

type Make = <T extends object>(build: () => T) => T;

function protocol(make: Make) {
  const Id = z.string().check(z.minLength(1), z.maxLength(256), z.regex(/^[A-Za-z0-9._:@/-]+$/));
  const Time = z.iso.datetime({ offset: true });
  const Json = z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v));
  const Identity = make(() => z.strictObject({ tenant_id: z.optional(Id), user_id: z.optional(Id), session_id: z.optional(Id) }));
  const Observability = make(() => z.strictObject({ trace_id: z.optional(z.string().check(z.maxLength(128))), correlation_id: z.optional(Id) }));
  const Labels = make(() => z.record(z.string().check(z.maxLength(63)), z.string().check(z.maxLength(256))));
  const Metadata = make(() => z.strictObject({ observability: z.optional(Observability), labels: z.optional(Labels) }));
  const Transaction = make(() =>
    z.strictObject({ mode: z.enum(['dry_run', 'plan', 'execute', 'commit']), transaction_id: z.optional(Id), plan_id: z.optional(Id) }),
  );
  const Action = make(() =>
    z.strictObject({
      id: Id,
      capability_id: Id,
      input: Json,
      idempotency_key: z.optional(z.string().check(z.maxLength(256))),
      identity: z.optional(Identity),
      metadata: z.optional(Metadata),
      transaction: z.optional(Transaction),
    }),
  );
  const ProtocolError = make(() =>
    z.strictObject({ code: z.string(), message: z.string().check(z.maxLength(2048)), retryable: z.boolean(), details: z.optional(Json) }),
  );
  const Result = make(() =>
    z
      .strictObject({
        action_id: Id,
        status: z.enum(['completed', 'failed']),
        error: z.optional(ProtocolError),
        completed_at: z.optional(Time),
        metadata: z.optional(Json),
      })
      .check(z.refine((r) => r.status !== 'failed' || r.error !== undefined)),
  );
  return { Action, Result };
}

const action = {
  id: 'act-1',
  capability_id: 'payments.charge',
  input: { amount: 1250, currency: 'eur' },
  idempotency_key: 'idem-1',
  identity: { tenant_id: 'acme', user_id: 'u-1' },
  metadata: { observability: { trace_id: 't-1' }, labels: { team: 'billing' } },
  transaction: { mode: 'execute', transaction_id: 'tx-1' },
};
const result = {
  action_id: 'act-1',
  status: 'failed',
  error: { code: 'payments.declined', message: 'declined', retryable: false },
  completed_at: '2026-01-01T00:00:00Z',
};
const invalid = { ...action, identity: { tenant_id: 'a b' }, transaction: { mode: 'later' } };

const variants = [
  { name: 'built at once', ...protocol((build) => build()) },
  { name: 'deferred', ...protocol(z.deferred) },
];
const cases = [
  { name: 'Action, valid', run: (v: (typeof variants)[number]) => v.Action.safeParse(action) },
  { name: 'ActionResult, failed', run: (v: (typeof variants)[number]) => v.Result.safeParse(result) },
  { name: 'Action, 2 issues', run: (v: (typeof variants)[number]) => v.Action.safeParse(invalid) },
];
const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 15);
const samples = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const c of cases) {
    for (const v of variants) {
      const t0 = performance.now();
      for (let i = 0; i < N; i++) c.run(v);
      const us = ((performance.now() - t0) * 1000) / N;
      const key = `${c.name}\t${v.name}`;
      samples.set(key, [...(samples.get(key) ?? []), us]);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const lines = [
  `Warm parse, µs per parse (${process.version}, zod ${process.env.JIT === '1' ? 'with' : 'without'} its JIT; ${ROUNDS} rounds of ${N}, alternating):`,
  '',
  '| schema, input | built at once: median (best) | deferred: median (best) | deferred − at once (medians) |',
  '|---|---:|---:|---:|',
];
for (const c of cases) {
  const now = samples.get(`${c.name}\tbuilt at once`) ?? [];
  const deferred = samples.get(`${c.name}\tdeferred`) ?? [];
  const f = (x: number) => x.toFixed(2);
  lines.push(
    `| ${c.name} | ${f(median(now))} (${f(Math.min(...now))}) | ${f(median(deferred))} (${f(Math.min(...deferred))}) | ${f(median(deferred) - median(now))} |`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
