/**
 * Fault rules: an ordered list, each with a match, a fault, a number of uses
 * and an optional probability drawn from a seeded RNG (reproducible runs).
 *
 * For each request the first rule (in list order) that matches, applies to the
 * request and wins its draw is used and loses one of its `times`; a rule whose
 * uses are spent is removed. A rule that loses its probability draw is not
 * consumed, and the search continues with the next rule.
 */
import { FaultRuleList, type Fault, type FaultMatch, type FaultRuleInput, type FaultRuleParsed } from './schemas.js';

/** What the router knows about a request when it asks for a fault. */
export interface FaultContext {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly idempotencyKey: string | undefined;
  /** The `customer` of a charge request's body, when it has one. */
  readonly customer?: string | undefined;
  /** `create`: a new charge or refund is about to be committed. */
  readonly stage: 'create' | 'replay' | 'cancel' | 'read';
}

export interface SelectedFault {
  readonly rule_id: string;
  readonly fault: Fault;
}

/** A rule as reported by `faults()` / `GET /_sim/faults`. */
export interface FaultRuleView {
  readonly id: string;
  readonly match: FaultMatch;
  readonly fault: Fault;
  /** Uses left, or `always`. */
  readonly remaining: number | 'always';
  readonly probability: number;
}

interface LiveRule {
  readonly id: string;
  readonly match: FaultMatch;
  readonly fault: Fault;
  remaining: number | 'always';
  readonly probability: number;
}

/** mulberry32: a small, fast, seedable 32-bit generator returning [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `pending` and `decline` only make sense where a new charge or refund is created. */
function applies(fault: Fault, ctx: FaultContext): boolean {
  if (fault.type === 'pending' || fault.type === 'decline') return ctx.stage === 'create';
  return true;
}

function pathMatches(pattern: string | undefined, path: string): boolean {
  if (pattern === undefined) return true;
  if (pattern.endsWith('*')) return path.startsWith(pattern.slice(0, -1));
  return pattern === path;
}

export class FaultBook {
  private rules: LiveRule[] = [];
  private random: () => number;
  private counter = 0;

  constructor(private readonly seed: number) {
    this.random = seededRandom(seed);
  }

  /** Replaces every rule. Throws a ZodError (nothing changes) when a rule is invalid. */
  set(input: readonly FaultRuleInput[]): FaultRuleView[] {
    const parsed = FaultRuleList.parse(input);
    this.rules = parsed.map((r) => this.live(r));
    return this.list();
  }

  /** Appends rules after the current ones. Throws a ZodError when a rule is invalid. */
  add(input: readonly FaultRuleInput[]): FaultRuleView[] {
    const parsed = FaultRuleList.parse(input);
    this.rules.push(...parsed.map((r) => this.live(r)));
    return this.list();
  }

  clear(): void {
    this.rules = [];
  }

  /** Clears the rules and restarts the RNG from the seed. */
  reset(): void {
    this.rules = [];
    this.counter = 0;
    this.random = seededRandom(this.seed);
  }

  list(): FaultRuleView[] {
    return this.rules.map((r) => structuredClone({ ...r }));
  }

  select(ctx: FaultContext): SelectedFault | undefined {
    for (let i = 0; i < this.rules.length; i++) {
      const rule = this.rules[i];
      if (!rule) continue;
      const m = rule.match;
      if (m.method !== ctx.method) continue;
      if (!pathMatches(m.path, ctx.path)) continue;
      if (m.idempotency_key !== undefined && m.idempotency_key !== ctx.idempotencyKey) continue;
      if (m.customer !== undefined && m.customer !== ctx.customer) continue;
      if (!applies(rule.fault, ctx)) continue;
      if (rule.probability < 1 && !(this.random() < rule.probability)) continue;
      if (rule.remaining !== 'always') {
        rule.remaining -= 1;
        if (rule.remaining <= 0) this.rules.splice(i, 1);
      }
      return { rule_id: rule.id, fault: structuredClone(rule.fault) };
    }
    return undefined;
  }

  private live(r: FaultRuleParsed): LiveRule {
    this.counter += 1;
    return { id: r.id ?? `fault_${this.counter}`, match: r.match, fault: r.fault, remaining: r.times, probability: r.probability };
  }
}
