/**
 * Section 1: DynamoDB cost per action, for each mode, on DynamoDB Local.
 *
 * Each scenario drives the real Runtime: `submit` (the API Lambda's work),
 * then, when the action was accepted, `runAttempt` with the InvokeMessage
 * received from the queue (the worker Lambda's work), or `reconcile` with a
 * ReconcileMessage (the reconcile consumer's work). Setup that is not part of
 * the measured action (the plan a commit needs, the committed charge a
 * compensation refunds) runs with the meter off.
 *
 * Run 0 of every scenario is a warm-up whose call trace (with call sites)
 * is kept for the report; runs 1..N are measured. The scenarios take turns
 * (run i of every scenario before run i+1 of any).
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionResult } from '../../packages/connector-sdk/src/protocol/index.js';
import { decodeQueueMessage, type InvokeMessage, type ReconcileMessage } from '../../lib/ports/messages.js';
import type { SubmitOutcome } from '../../lib/runtime/types.js';
import { TENANT, uid, type Harness } from '../lib/harness.js';
import { sumBilled, type BilledSummary } from '../lib/billing.js';
import { meanSummary, summarize, traceLine, type CallRecord, type CostSummary } from '../lib/meter.js';
import { distribution, type Distribution } from '../lib/stats.js';
import { SETTLED_STATUSES } from '../../functions/shared/wait.js';

export interface PhaseFigures {
  readonly phase: string;
  readonly cost: CostSummary;
  readonly latency_ms: Distribution;
}

export interface ScenarioFigures {
  readonly id: string;
  readonly label: string;
  readonly runs: number;
  readonly phases: PhaseFigures[];
  readonly total: CostSummary;
  readonly latency_ms: Distribution;
  /** The warm-up run's calls, one line each, with call sites. */
  readonly trace: string[];
  /** Capacity as AWS bills it, from the warm-up run's item images (bench/lib/billing.ts). Counts are properties of the code: one run tells them. */
  readonly billed?: BilledFigures;
}

/** An item's size as the warm-up run wrote or read it, with the attributes that make it up (largest first). */
export interface ItemSizeFigure {
  /** Item kind: ACTION, IDEM, TXN, RCPT, ROUTE, PLAN, ... */
  readonly kind: string;
  /** Its largest image in the action, bytes (AWS's item size rules). */
  readonly bytes: number;
  /** Where: `<phase>: <request> <verb>` of that largest image. */
  readonly at: string;
  /** Billed units of that write or read. */
  readonly units: number;
  readonly attributes: readonly { readonly name: string; readonly bytes: number }[];
}

export interface BilledFigures {
  readonly total: BilledSummary;
  readonly phases: { readonly phase: string; readonly billed: BilledSummary }[];
  /** The largest image of each item kind the action touched. */
  readonly items: readonly ItemSizeFigure[];
}

/** The billed figures of a traced run: per phase, in all, and the largest image per item kind. */
export function billedFigures(phases: readonly { phase: string; calls: readonly CallRecord[] }[]): BilledFigures | undefined {
  const all = phases.flatMap((p) => p.calls);
  if (!all.some((c) => c.billed !== undefined)) return undefined;
  const items = new Map<string, ItemSizeFigure>();
  for (const p of phases) {
    for (const c of p.calls) {
      for (const it of c.billed?.items ?? []) {
        const kind = it.what.replace(/^[A-Za-z]+:/, '');
        const bytes = Math.max(it.before, it.after);
        const known = items.get(kind);
        if (known === undefined || bytes > known.bytes)
          items.set(kind, { kind, bytes, at: `${p.phase}: ${c.op} ${it.what}`, units: it.units, attributes: it.attributes.slice(0, 12) });
      }
    }
  }
  return {
    total: sumBilled(all.map((c) => c.billed)),
    phases: phases.map((p) => ({ phase: p.phase, billed: sumBilled(p.calls.map((c) => c.billed)) })),
    items: [...items.values()].sort((a, b) => b.bytes - a.bytes),
  };
}

interface Phase<C> {
  readonly name: string;
  /** Untimed, unmetered preparation of the phase (e.g. receiving the queued message). */
  setup?(ctx: C): Promise<void>;
  run(ctx: C): Promise<void>;
}

interface Scenario<C> {
  readonly id: string;
  readonly label: string;
  prepare(): Promise<C>;
  readonly phases: readonly Phase<C>[];
}

function expect(what: string, actual: unknown, wanted: unknown): void {
  if (actual !== wanted) throw new Error(`benchmark scenario went off its path: ${what} was ${JSON.stringify(actual)}, expected ${JSON.stringify(wanted)}`);
}

/** The figures of one scenario, collected one run at a time (so that scenarios can take turns). */
export class ScenarioRun<C> {
  private readonly perPhase = new Map<string, { costs: CostSummary[]; ms: number[] }>();
  private readonly totals: CostSummary[] = [];
  private readonly totalMs: number[] = [];
  private readonly trace: string[] = [];
  private billed: BilledFigures | undefined;

  constructor(
    private readonly h: Harness,
    readonly scenario: Scenario<C>,
  ) {}

  /** Run `i`: 0 is the traced warm-up, 1.. are measured. */
  async iterate(i: number): Promise<void> {
    const { h, scenario: s } = this;
    const ctx = await h.meter.quiet(() => s.prepare());
    h.meter.captureSites = i === 0;
    h.meter.billing = i === 0;
    const all: ReturnType<Harness['meter']['since']> = [];
    const traced: { phase: string; calls: CallRecord[] }[] = [];
    let ms = 0;
    try {
      for (const p of s.phases) {
        if (p.setup) await h.meter.quiet(() => p.setup!(ctx));
        const mark = h.meter.mark();
        const t0 = performance.now();
        await p.run(ctx);
        const dt = performance.now() - t0;
        const calls = h.meter.since(mark);
        all.push(...calls);
        ms += dt;
        if (i === 0) {
          this.trace.push(`${p.name}:`, ...calls.map((c) => `  ${traceLine(c)}`));
          traced.push({ phase: p.name, calls });
          continue;
        }
        const slot = this.perPhase.get(p.name) ?? { costs: [], ms: [] };
        slot.costs.push(summarize(calls));
        slot.ms.push(dt);
        this.perPhase.set(p.name, slot);
      }
    } finally {
      h.meter.captureSites = false;
      h.meter.billing = false;
    }
    if (i === 0) this.billed = billedFigures(traced);
    if (i > 0) {
      this.totals.push(summarize(all));
      this.totalMs.push(ms);
    }
    h.meter.clear();
  }

  figures(runs: number): ScenarioFigures {
    const s = this.scenario;
    return {
      id: s.id,
      label: s.label,
      runs,
      phases: s.phases.map((p) => ({
        phase: p.name,
        cost: meanSummary(this.perPhase.get(p.name)?.costs ?? []),
        latency_ms: distribution(this.perPhase.get(p.name)?.ms ?? []),
      })),
      total: meanSummary(this.totals),
      latency_ms: distribution(this.totalMs),
      trace: runs === 0 ? [...this.trace, '(no measured runs)'] : [...this.trace],
      ...(this.billed !== undefined ? { billed: this.billed } : {}),
    };
  }
}

// --- the actions ---------------------------------------------------------------------------

export function chargeAction(mode: string, extra: Record<string, unknown> = {}, key: string | null = uid('idem')): Record<string, unknown> {
  return {
    id: uid(mode.slice(0, 3)),
    capability_id: 'payments.charge',
    input: { amount: 1250, currency: 'eur', customer: 'cus_bench', description: 'benchmark' },
    ...(key !== null ? { idempotency_key: key } : {}),
    transaction: { mode, ...extra },
  };
}

async function submit(h: Harness, body: unknown, disposition: string): Promise<SubmitOutcome> {
  const out = await h.runtime.submit(h.caller, body);
  expect('submit disposition', out.disposition, disposition);
  return out;
}

/** Receives the one queued invoke message (unmetered). */
async function receiveOne(h: Harness): Promise<InvokeMessage> {
  const messages = await h.meter.quiet(() => h.receiveInvokes());
  expect('invoke messages', messages.length, 1);
  return messages[0]!;
}

/** Runs an attempt on a received message. */
async function runReceived(h: Harness, message: InvokeMessage, status: string): Promise<ActionResult | undefined> {
  const out = await h.worker.runAttempt(message);
  expect('attempt transaction status', out.transaction_status, status);
  return out.action_result;
}

/** Receives and runs the queued attempt; expects exactly one. */
async function attempt(h: Harness, status: string): Promise<ActionResult | undefined> {
  return runReceived(h, await receiveOne(h), status);
}

/** The worker phase: the message is received outside the clock (the queue wait is not the runtime's). */
function attemptPhase(h: Harness, status: string): Phase<Record<string, unknown>> {
  return {
    name: 'attempt (worker)',
    setup: async (c) => {
      c.message = await receiveOne(h);
    },
    run: async (c) => void (await runReceived(h, c.message as InvokeMessage, status)),
  };
}

/** A committed charge, made quietly (setup). */
async function committedCharge(h: Harness): Promise<{ action: Record<string, unknown>; charge_id: string }> {
  const action = chargeAction('execute');
  await submit(h, action, 'accepted');
  const result = await attempt(h, 'committed');
  const charge_id = (result?.output as { charge_id?: string } | undefined)?.charge_id;
  if (charge_id === undefined) throw new Error('setup: the charge has no charge_id');
  return { action, charge_id };
}

/** The next POST /v1/charges commits at the provider but its response is lost. */
function loseNextChargeResponse(h: Harness): void {
  h.emulators.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'drop_after_commit' }, times: 1 }]);
}

export function costScenarios(h: Harness): Scenario<Record<string, unknown>>[] {
  return [
    {
      id: 'execute',
      label: 'execute (with idempotency key)',
      prepare: async () => ({ action: chargeAction('execute') }),
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'accepted')) }, attemptPhase(h, 'committed')],
    },
    {
      id: 'execute_no_key',
      label: 'execute (no idempotency key)',
      prepare: async () => ({ action: chargeAction('execute', {}, null) }),
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'accepted')) }, attemptPhase(h, 'committed')],
    },
    {
      id: 'dry_run',
      label: 'dry_run',
      prepare: async () => ({ action: chargeAction('dry_run', {}, null) }),
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'completed')) }],
    },
    {
      id: 'plan',
      label: 'plan',
      prepare: async () => ({ action: chargeAction('plan', {}, null) }),
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'completed')) }],
    },
    {
      id: 'commit',
      label: 'commit (of a plan)',
      prepare: async () => {
        const plan = await submit(h, chargeAction('plan', {}, null), 'completed');
        const plan_id = (plan.action_result.output as { plan_id: string }).plan_id;
        return { action: chargeAction('commit', { plan_id }) };
      },
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'accepted')) }, attemptPhase(h, 'committed')],
    },
    {
      id: 'execute_outcome_unknown',
      label: 'execute, provider response lost (→ outcome_unknown)',
      prepare: async () => {
        loseNextChargeResponse(h);
        return { action: chargeAction('execute') };
      },
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'accepted')) }, attemptPhase(h, 'outcome_unknown')],
    },
    {
      id: 'reconcile',
      label: 'reconcile (outcome_unknown → reconciled)',
      prepare: async () => {
        loseNextChargeResponse(h);
        const action = chargeAction('execute');
        await submit(h, action, 'accepted');
        await attempt(h, 'outcome_unknown');
        const txn = await h.transactions.get({ tenant_id: TENANT, action_id: action.id as string });
        if (txn === undefined) throw new Error('setup: no transaction');
        // Make the reconciliation due (the record asks for it 5 s later) without waiting.
        h.clock.advance(6_000);
        // What the schedule delivers when it fires: its stored Input, as the Scheduler emulator would send it.
        const schedule = h.emulators.scheduler
          .list()
          .find((s) => (JSON.parse(s.target.Input ?? '{}') as { transaction_id?: string }).transaction_id === txn.transaction_id);
        if (schedule?.target.Input === undefined) throw new Error('setup: no reconciliation schedule');
        return { message: decodeQueueMessage(schedule.target.Input) };
      },
      phases: [
        {
          name: 'reconcile (consumer)',
          run: async (c) => {
            const out = await h.consumer.reconcile(c.message as ReconcileMessage);
            expect('reconcile disposition', out.disposition, 'reconciled');
          },
        },
      ],
    },
    {
      id: 'compensate',
      label: 'compensate (refund of a committed charge)',
      prepare: async () => {
        const { action, charge_id } = await committedCharge(h);
        return { action: { ...chargeAction('compensate', { compensation_for: action.id }), input: { charge_id } } };
      },
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'accepted')) }, attemptPhase(h, 'compensated')],
    },
    {
      id: 'replay_key',
      label: 'idempotent replay (same key, new action ID)',
      prepare: async () => {
        const { action } = await committedCharge(h);
        return { action: { ...action, id: uid('rep') } };
      },
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'replayed')) }],
    },
    {
      id: 'replay_action',
      label: 'idempotent replay (same action resubmitted)',
      prepare: async () => ({ action: (await committedCharge(h)).action }),
      phases: [{ name: 'admit (API)', run: async (c) => void (await submit(h, c.action, 'replayed')) }],
    },
    {
      id: 'read_view',
      label: 'read: transaction view with receipts (committed execute)',
      prepare: async () => {
        const { action } = await committedCharge(h);
        return { action_id: action.id };
      },
      phases: [
        {
          name: 'GET /v1/transactions?include=receipts',
          run: async (c) => {
            const view = await h.runtime.getTransaction(h.caller, { tenant_id: TENANT, action_id: c.action_id as string }, { result: true, receipts: true });
            expect('view status', view.status, 'committed');
          },
        },
      ],
    },
    {
      id: 'poll_action',
      label: 'read: one Prefer: wait poll (getActionResult of a committed execute)',
      prepare: async () => ({ action_id: (await committedCharge(h)).action.id }),
      phases: [
        {
          name: 'getActionResult',
          run: async (c) => {
            const result = await h.runtime.getActionResult(h.caller, TENANT, c.action_id as string);
            expect('action status', result.status, 'completed');
          },
        },
      ],
    },
    {
      id: 'poll_settled',
      label: 'read: the Prefer: wait poll that sees an execute settled (pollAction: the action item, then the final view from it: its transaction)',
      prepare: async () => ({ action_id: (await committedCharge(h)).action.id }),
      phases: [
        {
          name: 'pollAction',
          run: async (c) => {
            const poll = await h.runtime.pollAction(h.caller, TENANT, c.action_id as string, SETTLED_STATUSES);
            expect('action status', poll.state?.action_result.status, 'completed');
          },
        },
      ],
    },
    {
      id: 'get_action',
      label: 'read: action state with its transaction (getAction of a committed execute; once at the end of a wait)',
      prepare: async () => ({ action_id: (await committedCharge(h)).action.id }),
      phases: [
        {
          name: 'getAction',
          run: async (c) => {
            const state = await h.runtime.getAction(h.caller, TENANT, c.action_id as string);
            expect('action status', state.action_result.status, 'completed');
          },
        },
      ],
    },
  ];
}

/**
 * Warm-up with the meter off: V8 and, above all, DynamoDB Local's JVM compile
 * their hot paths only after many requests, and connection pools fill. Without
 * it the first scenario measured runs up to twice as slow as the same work later.
 */
export async function warmUp(h: Harness, rounds = 25): Promise<void> {
  await h.meter.quiet(async () => {
    for (let i = 0; i < rounds; i++) {
      await submit(h, chargeAction('execute'), 'accepted');
      await attempt(h, 'committed');
      await submit(h, chargeAction('plan', {}, null), 'completed');
    }
  });
  h.meter.clear();
}

export async function runCostSection(h: Harness, runs: number, log: (line: string) => void): Promise<ScenarioFigures[]> {
  await warmUp(h);
  // The scenarios take turns, one run each, so that background load and the
  // emulators' warm-up fall on every scenario alike.
  const all = costScenarios(h).map((s) => new ScenarioRun(h, s));
  for (let i = 0; i <= runs; i++) {
    for (const run of all) {
      try {
        await run.iterate(i);
      } catch (err) {
        h.meter.recording = true;
        const message = err instanceof AipError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
        throw new Error(`section 1, scenario ${run.scenario.id}, run ${i}: ${message}`, { cause: err });
      }
    }
    if (i === 0 || i === runs) log(`  run ${i} of ${runs} done`);
  }
  return all.map((run) => run.figures(runs));
}
