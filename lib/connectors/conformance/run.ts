/**
 * runConformance: checks a connector against the page's "Review an
 * implementation" list and reports one result per rule (see rules.ts for the
 * rule list and README.md for how each is observed).
 *
 * The run, in order:
 * 1. discovery, admission and the nine-flag records;
 * 2. probes: every typed method of every capability called with an
 *    already-cancelled context, and every effect method once more after its
 *    deadline was lost (claims, typed unsupported answers, no effect);
 * 3. plan_typed in plan and dry_run mode (no effect);
 * 4. the scenarios: uncertain commit (checkpoint before the wait, recovery
 *    evidence, timeout retryability, reconcile while pending, cancel then
 *    verify), the same in the other of commit/execute (only when the
 *    capability has that mode: a scenario the kit prepares is one it runs),
 *    lost response, committed effect (+ reconcile by idempotency key),
 *    rejected before effect, retry, streamed;
 * 5. input decoys: every string field the input schema allows, one at a
 *    time, in a call of its own;
 * 6. the secret is rotated and the committed-effect scenario runs again;
 * 7. the uncertain commit once more, its deadline already passed and the
 *    attempt never aborted: the connector must return on its own;
 * 8. other placements are compared with the local one;
 * 9. secrets, decoys and raw idempotency keys presented to the provider, and
 *    disposal are checked.
 *
 * Every action body carries decoys (decoys.ts) and, when it has one, an
 * idempotency key the kit planted; every attempt gets its own credential
 * handle object, so a resolution names its attempt; every attempt is ended
 * and retired when the kit is done with it, so a kept context is dead and any
 * use of it is seen.
 */
import { randomBytes } from 'node:crypto';
import Ajv2020Module from 'ajv/dist/2020.js';
import {
  fidelityInvokesHandler,
  isJsonObject,
  type Action,
  type Capability,
  type JsonObject,
  type ProviderOperationRef,
  type TransactionMode,
} from '../../protocol/index.js';
import { ADMISSION_RULES, admitManifest, formatAdmissionIssue } from '../admission.js';
import type { ExecutionAttempt, OriginalRequestIdentity } from '../context.js';
import { CredentialHandle } from '../credentials/handle.js';
import { selectMethod } from '../dispatch.js';
import { ConnectorFailureRecordSchema, isConnectorFailure, type ConnectorFailure } from '../failure.js';
import { CancelOutcomeSchema, ReconciliationResultSchema, reconcileLookupOf, type FrozenConnector, type ReconciliationResult } from '../interfaces.js';
import type { ConnectorManifest } from '../manifest.js';
import { TYPED_METHOD_OPERATION } from '../operations.js';
import { IMPLEMENTATION_FLAGS, ImplementationSupportSchema } from '../support.js';
import { DECOY_KINDS, Decoys, describeKinds, describePath, inputSlots, withValueAt } from './decoys.js';
import {
  AttemptRecorder,
  CALL_TIMED_OUT,
  Evidence,
  PlantedCredentialProvider,
  bounded,
  captureConsole,
  conformanceAttempt,
  deadlineCancellation,
  describeThrown,
  nextSequence,
  secretNeedles,
  settle,
  type Outcome,
  type PlantedResolution,
} from './harness.js';
import { RuleLedger, reportOf } from './ledger.js';
import { CONFORMANCE_RULES, type ConformanceRuleId } from './rules.js';
import {
  CAPABILITY_METHODS,
  type CapabilityMethod,
  type ConformanceInstance,
  type ConformanceReport,
  type ConformanceSubject,
  type ScenarioBase,
} from './subject.js';

export interface RunConformanceOptions {
  /** Plant this secret instead of a fresh random one. */
  readonly secret?: string;
  /** Safety bound for each connector call the kit makes (default 15 000 ms). Not a synchronisation device. */
  readonly call_timeout_ms?: number;
  /**
   * How long the kit waits for a call whose deadline has already passed, and
   * whose attempt it does not abort, to return on its own (default 1 000 ms;
   * `deadline_bounds_wait`). Only a connector that ignores its deadline waits
   * this long: one that honours it returns at once.
   */
  readonly deadline_grace_ms?: number;
}

/** The verified tenant and account of every attempt the kit builds. */
export const CONFORMANCE_TENANT_ID = 'conformance-tenant';
export const CONFORMANCE_ACCOUNT_ID = 'conformance-account';

type AjvValidate = ((data: unknown) => boolean) & { errors?: unknown[] | null };
type AjvCtor = new (opts: Record<string, unknown>) => { compile(schema: unknown): AjvValidate };
const Ajv2020 = ((Ajv2020Module as unknown as { default?: AjvCtor }).default ?? Ajv2020Module) as unknown as AjvCtor;

/** Which flag makes a method a claim, and whether the claim is required or optional for this capability. */
function claimOf(
  method: CapabilityMethod,
  cap: Capability,
  support: Readonly<Record<string, unknown>>,
): { flag: string; claim: 'required' | 'optional' | 'absent' } {
  const on = (f: string): boolean => support[f] === true;
  const tx = cap.transaction;
  switch (method) {
    case 'invoke_typed':
      return { flag: on('streaming') && !on('invocation') ? 'streaming' : 'invocation', claim: on('invocation') || on('streaming') ? 'required' : 'absent' };
    case 'plan_typed': {
      if (!on('transaction')) return { flag: 'transaction', claim: 'absent' };
      const needed = tx === undefined || (tx.modes.some((m) => m === 'dry_run' || m === 'plan') && fidelityInvokesHandler(tx.dry_run_fidelity));
      return { flag: 'transaction', claim: needed ? 'required' : 'optional' };
    }
    case 'commit_typed':
      if (!on('transaction')) return { flag: 'transaction', claim: 'absent' };
      return { flag: 'transaction', claim: tx === undefined || tx.modes.includes('commit') ? 'required' : 'optional' };
    case 'compensate_typed':
      return { flag: 'compensation', claim: on('compensation') ? 'required' : 'absent' };
    case 'cancel_typed':
      return { flag: 'cancellation', claim: on('cancellation') ? 'required' : 'absent' };
    case 'reconcile_typed':
      return { flag: 'reconciliation', claim: on('reconciliation') ? 'required' : 'absent' };
  }
}

const PROBE_MODE: Record<CapabilityMethod, TransactionMode | undefined> = {
  invoke_typed: undefined,
  plan_typed: 'plan',
  commit_typed: 'commit',
  compensate_typed: 'compensate',
  cancel_typed: undefined,
  reconcile_typed: 'reconcile',
};

/** Methods that can change the provider's system of record. */
const EFFECT_METHODS = ['invoke_typed', 'commit_typed', 'compensate_typed'] as const;

const UNSUPPORTED = 'connector.operation_unsupported';
const ATTEMPT_ENDED = 'connector.attempt_ended';

function codeOf(err: unknown): string | undefined {
  const c = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof c === 'string' ? c : undefined;
}

function sameOperation(a: ProviderOperationRef | undefined, b: ProviderOperationRef | undefined): boolean {
  return a !== undefined && b !== undefined && a.provider === b.provider && a.operation_id === b.operation_id;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Canonical JSON (sorted keys), for comparing placements. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'undefined';
}

function safeJsonText(v: unknown): string | undefined {
  try {
    return JSON.stringify(v);
  } catch {
    return undefined;
  }
}

const turn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/** One attempt the kit opened: its context, what it recorded, and its own credential handle object. */
interface OpenAttempt {
  readonly attempt: ExecutionAttempt;
  readonly recorder: AttemptRecorder;
  readonly label: string;
  readonly handle: CredentialHandle;
  readonly startSeq: number;
  endSeq: number | undefined;
  ended: boolean;
}

interface KitEnv {
  readonly tenant_id: string;
  readonly account_id: string;
  readonly handle_id: string;
  readonly planted: PlantedCredentialProvider;
  readonly ledger: RuleLedger;
  readonly evidence: Evidence;
  readonly call_timeout_ms: number;
  readonly deadline_grace_ms: number;
}

/** What the uncertain-commit scenario ran: later steps repeat it on the same capability. */
interface UncertainRun {
  readonly capability_id: string;
  readonly mode: TransactionMode | undefined;
  /** The provider held the response the connector waited on (the scenario works as arranged). */
  readonly held: boolean;
}

/** The methods the input decoys are tried with (they take the capability's own input and reach the provider). */
const DECOY_METHODS = ['invoke_typed', 'plan_typed', 'commit_typed'] as const;

const AUTH_CATEGORIES: ReadonlySet<string> = new Set(['authentication', 'authorization']);

/** The provider refused the connector's credential (as far as the failure says). */
function isAuthRefusal(f: ConnectorFailure): boolean {
  return f.code === 'connector.provider_auth_failed' || AUTH_CATEGORIES.has(f.category) || f.remote_status === 401 || f.remote_status === 403;
}

type Extra = {
  cancelled?: boolean;
  cancel_reason?: unknown;
  deadline_at?: Date;
  provider_operation?: ProviderOperationRef;
  original_request?: OriginalRequestIdentity;
};

class Kit {
  readonly #i: ConformanceInstance;
  readonly #c: FrozenConnector;
  readonly #env: KitEnv;
  readonly #ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
  readonly #validators = new Map<unknown, AjvValidate | null>();
  readonly #decoys = new Decoys();
  readonly #byHandle = new Map<CredentialHandle, OpenAttempt>();
  readonly #implemented = new Set<string>();
  readonly #probeClass = new Map<string, string>();
  #manifest: ConnectorManifest | undefined;
  #probeCount = 0;
  #typedFailures = 0;
  #attemptsEnded = 0;
  #timeoutChecked = false;
  #deadContexts = 0;

  constructor(instance: ConformanceInstance, env: KitEnv) {
    this.#i = instance;
    this.#c = instance.connector;
    this.#env = env;
    env.planted.observer = (r) => this.#onResolution(r);
  }

  get #ledger(): RuleLedger {
    return this.#env.ledger;
  }

  get claimsCredentials(): boolean {
    return this.#claims('credentials');
  }

  async run(): Promise<void> {
    if (!(await this.#discover())) return;
    this.#supportRecords();
    await this.#probes();
    this.#sampleSchemas();
    await this.#plans();
    const primary = await this.#uncertainCommit();
    await this.#uncertainInOtherMode(primary);
    await this.#lostResponse();
    await this.#committedEffect();
    await this.#rejectedBeforeEffect();
    await this.#retry();
    await this.#streamed();
    await this.#inputDecoys();
    await this.#rotation();
    // Last of the scenarios: a connector that rightly refuses to start work past its deadline leaves the
    // arrangement unused (e.g. a hold still armed), and nothing after this depends on the provider's state.
    await this.#deadlineWithoutAbort(primary);
    await this.#placements();
    await this.#providerAuthority();
    this.#closingNotes();
  }

  // -- helpers -----------------------------------------------------------------

  #capability(id: string): Capability | undefined {
    return this.#manifest?.capabilities.find((c) => c.id === id);
  }

  #support(id: string): Readonly<Record<string, unknown>> {
    try {
      const s = this.#c.implementation_support(id);
      return s !== null && typeof s === 'object' ? (s as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }

  #claims(flag: string): boolean {
    return (this.#manifest?.capabilities ?? []).some((c) => this.#support(c.id)[flag] === true);
  }

  #validator(schema: unknown): AjvValidate | null {
    if (!this.#validators.has(schema)) {
      try {
        this.#validators.set(schema, this.#ajv.compile(schema));
      } catch {
        this.#validators.set(schema, null);
      }
    }
    return this.#validators.get(schema) ?? null;
  }

  /** Whether the manifest's input schema for this action admits `input` (for compensate: the compensating capability's). */
  #admitsInput(action: Action, input: JsonObject): boolean {
    const cap = this.#capability(action.capability_id);
    if (cap === undefined) return false;
    const target = action.transaction?.mode === 'compensate' ? (this.#capability(cap.compensation?.compensation_capability_id ?? cap.id) ?? cap) : cap;
    const validate = this.#validator(target.input_schema);
    return validate !== null && validate(input) === true;
  }

  /** The action with decoys in its identity and labels, and the kit's own idempotency key in place of the caller's. */
  #decorate(action: Action): Action {
    const key = action.idempotency_key;
    return this.#decoys.apply(key !== undefined ? { ...action, idempotency_key: this.#decoys.plantKey(key) } : action);
  }

  /** Reports authority taken from an action body (decoys) found in `value`. */
  #scanAuthority(where: string, value: unknown): void {
    const kinds = this.#decoys.kindsIn(value);
    if (kinds.length > 0) this.#ledger.fail('trusted_context', `${where} carries the ${describeKinds(kinds)} taken from the action body`);
  }

  #open(action: Action, label: string, extra: Extra = {}): OpenAttempt {
    const cap = this.#capability(action.capability_id);
    const support = this.#support(action.capability_id);
    const handle = CredentialHandle.of(this.#env.handle_id);
    const recorder = new AttemptRecorder();
    recorder.onLate = (use) =>
      this.#ledger.fail('context_attempt_scoped', `a ${use} was published through the context of ${label} after that attempt had ended (a kept context)`);
    const attempt = conformanceAttempt(action, {
      tenant_id: this.#env.tenant_id,
      external_account_id: this.#env.account_id,
      credential_handle: handle,
      recorder,
      ...(this.#i.attempt_timeout_ms !== undefined ? { attempt_timeout_ms: this.#i.attempt_timeout_ms } : {}),
      ...(extra.deadline_at !== undefined ? { deadline_at: extra.deadline_at } : {}),
      ...(cap !== undefined ? { capability: cap } : {}),
      streaming: cap?.execution?.supports_streaming === true && support.streaming === true,
      ...(extra.provider_operation !== undefined ? { provider_operation: extra.provider_operation } : {}),
      ...(extra.original_request !== undefined ? { original_request: extra.original_request } : {}),
      ...(extra.cancelled === true ? { cancelled: true, ...(extra.cancel_reason !== undefined ? { cancel_reason: extra.cancel_reason } : {}) } : {}),
      ...(this.#i.trusted !== undefined ? { adjust: (base, a) => (this.#i.trusted as NonNullable<ConformanceInstance['trusted']>)(base, a) } : {}),
    });
    const open: OpenAttempt = { attempt, recorder, label, handle, startSeq: nextSequence(), endSeq: undefined, ended: false };
    this.#byHandle.set(handle, open);
    return open;
  }

  /** Ends the attempt for good: the stream closes and the context is retired (a kept copy is dead). */
  async #close(open: OpenAttempt, drain = false): Promise<void> {
    if (open.ended) return;
    // One event-loop turn first: a publication right after the method returned is effect_checkpoint's
    // business ("after the method returned"); only a use after the attempt ended is a kept context.
    await turn();
    if (open.ended) return;
    open.ended = true;
    open.recorder.ended = true;
    open.endSeq = nextSequence();
    this.#attemptsEnded += 1;
    await open.attempt.end({ drain });
    (open.attempt as { retire?: () => void }).retire?.();
  }

  #onResolution(r: PlantedResolution): void {
    const open = this.#byHandle.get(r.handle_ref);
    const where = open !== undefined ? ` (during ${open.label})` : '';
    if (open?.ended === true) {
      this.#ledger.fail(
        'context_attempt_scoped',
        `a credential was resolved through the context of ${open.label} after that attempt had ended (a kept context)`,
      );
    }
    if (!r.answered) {
      const kind = this.#decoys.kindOf(r.handle);
      this.#ledger.fail(
        'trusted_context',
        `a credential was resolved through ${kind !== undefined ? `the ${describeKinds([kind])} taken from the action body` : 'a handle other than the context’s'}${where}`,
      );
    }
    if (r.scope.tenant_id !== this.#env.tenant_id) {
      const kind = this.#decoys.kindOf(r.scope.tenant_id);
      this.#ledger.fail(
        'trusted_context',
        `a credential was resolved for a tenant that is ${kind !== undefined ? `the decoy ${describeKinds([kind])} taken from the action body` : 'not the verified one'}${where}`,
      );
    }
    const account = r.scope.external_account_id;
    if (account !== undefined && account !== this.#env.account_id) {
      const kind = this.#decoys.kindOf(account);
      this.#ledger.fail(
        'trusted_context',
        `a credential was resolved for an external account that is ${kind !== undefined ? `the decoy ${describeKinds([kind])} taken from the action body` : 'not the verified one'}${where}`,
      );
    }
  }

  /** How many credential resolutions the planted provider answered during the attempt. */
  #resolvedDuring(open: OpenAttempt): number {
    const end = open.endSeq ?? nextSequence();
    return this.#env.planted.resolutions.filter((r) => r.seq > open.startSeq && r.seq < end).length;
  }

  /** The attempt reached the provider: it must have resolved its own credential during the attempt. */
  #checkResolvedDuring(open: OpenAttempt, capability_id: string): void {
    if (this.#support(capability_id).credentials !== true) return;
    if (this.#resolvedDuring(open) === 0) {
      this.#ledger.fail(
        'credentials_per_attempt',
        `${open.label} reached the provider but resolved no credential during the attempt: it authenticated with a secret resolved before the attempt`,
      );
    } else {
      this.#ledger.note('credentials_per_attempt', `${capability_id}: every attempt that reached the provider resolved its credential during the attempt`);
    }
  }

  /** Calls a typed method, bounded, recording its outcome as evidence. */
  async #call<T>(label: string, fn: () => Promise<T>): Promise<Outcome<T> | typeof CALL_TIMED_OUT> {
    let p: Promise<T>;
    try {
      p = fn();
    } catch (err) {
      p = Promise.reject(err);
    }
    const out = await bounded(settle(p), this.#env.call_timeout_ms);
    if (out === CALL_TIMED_OUT) return out;
    this.#env.evidence.add(out.ok ? `the result of ${label}` : `the failure of ${label}`, out.ok ? out.value : out.error);
    if (!out.ok && isConnectorFailure(out.error)) this.#scanAuthority(`the failure of ${label}`, out.error.provider_operation);
    return out;
  }

  /** The call failed because the connector used a context whose attempt had ended: reported once, the scenario is not judged further. */
  #deadContext(label: string, out: Outcome<unknown> | typeof CALL_TIMED_OUT): boolean {
    if (out === CALL_TIMED_OUT || out.ok || codeOf(out.error) !== ATTEMPT_ENDED) return false;
    this.#ledger.fail(
      'context_attempt_scoped',
      `${label} failed with ${ATTEMPT_ENDED}: the connector used the context of an attempt that had ended (a kept context)`,
    );
    this.#deadContexts += 1;
    return true;
  }

  /** Checkpoints as evidence (secrets) and as authority (decoys). */
  #recordCheckpoints(open: OpenAttempt): void {
    for (const c of open.recorder.checkpoints) {
      this.#env.evidence.add(`a checkpoint of ${open.label}`, c);
      this.#scanAuthority(`a checkpoint of ${open.label}`, c);
    }
    for (const c of open.recorder.chunks) this.#env.evidence.add(`a stream chunk of ${open.label}`, c);
  }

  /** Every failure must be a typed ConnectorFailure with the twelve fields. */
  #typedFailure(label: string, err: unknown): err is ConnectorFailure {
    if (!isConnectorFailure(err)) {
      this.#ledger.fail('recovery_evidence', `${label} threw an untyped ${describeThrown(err)} instead of a ConnectorFailure, losing its recovery evidence`);
      return false;
    }
    if (!ConnectorFailureRecordSchema.safeParse(err.toJSON()).success) {
      this.#ledger.fail('recovery_evidence', `${label}: the failure ${err.code} does not serialize to the twelve ConnectorFailure fields`);
      return false;
    }
    this.#typedFailures += 1;
    return true;
  }

  /** The page's timeout rule: a commit or execute that timed out is never retryable. */
  #checkTimeout(label: string, action: Action, f: ConnectorFailure, lostByDeadline: boolean): void {
    const mode = action.transaction?.mode;
    if (mode !== 'commit' && mode !== 'execute') return;
    if (!lostByDeadline && f.code !== 'sla.timeout_exceeded' && f.category !== 'timeout') return;
    this.#timeoutChecked = true;
    if (f.retryable) {
      this.#ledger.fail(
        'timeout_not_retryable',
        `${label}: the ${mode} timed out and failed with ${f.code}, retryable=true (a commit or execute that timed out is never retryable)`,
      );
    } else {
      this.#ledger.note(
        'timeout_not_retryable',
        `${action.capability_id}: ${mode === 'execute' ? 'an' : 'a'} ${mode} that lost its deadline fails with retryable=false`,
      );
    }
  }

  #recordOutput(label: string, cap: Capability | undefined, output: unknown): void {
    if (cap?.output_schema === undefined || output === undefined) return;
    const validate = this.#validator(cap.output_schema);
    if (validate === null) this.#ledger.fail('manifest', `${cap.id}: output_schema does not compile`);
    else if (!validate(output)) this.#ledger.fail('manifest', `${label}: the output does not match the output_schema of ${cap.id}`);
  }

  async #cleanup(s: ScenarioBase | undefined, label: string): Promise<void> {
    try {
      await s?.cleanup?.();
    } catch (err) {
      this.#ledger.note('manifest', `${label} cleanup failed (${describeThrown(err)})`);
    }
  }

  async #effects(): Promise<number | undefined> {
    const f = this.#i.provider?.effects;
    if (f === undefined) return undefined;
    try {
      const n = await f.call(this.#i.provider);
      return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
    } catch {
      return undefined;
    }
  }

  /** Lets the provider finish what it holds, so an effect that would land later lands now. */
  async #settleProvider(): Promise<void> {
    await turn();
    try {
      await this.#i.provider?.settle?.();
    } catch (err) {
      this.#ledger.note('manifest', `provider.settle failed (${describeThrown(err)})`);
    }
    await turn();
  }

  /**
   * The provider's effects must not grow because of `label`, neither at once
   * nor once the provider settled. Returns the count after settling.
   */
  async #noNewEffect(rule: ConformanceRuleId, label: string, before: number | undefined): Promise<{ after: number | undefined; clean: boolean }> {
    if (before === undefined) return { after: undefined, clean: true };
    const now = (await this.#effects()) ?? before;
    if (now > before) this.#ledger.fail(rule, `${label} left ${plural(now - before, 'provider effect')}`);
    await this.#settleProvider();
    const later = (await this.#effects()) ?? now;
    if (later > now)
      this.#ledger.fail(
        rule,
        `${label} left ${plural(later - now, 'provider effect')} that landed after the call returned, once the provider settled (work the call had started)`,
      );
    return { after: later, clean: now === before && later === now };
  }

  // -- manifest and support records ---------------------------------------------

  async #discover(): Promise<boolean> {
    try {
      this.#manifest = await this.#c.discover({});
    } catch (err) {
      this.#ledger.fail('manifest', `discovery failed (${describeThrown(err)})`);
      this.#ledger.fail('support_record', 'no manifest: discovery failed');
      return false;
    }
    this.#env.evidence.add('the manifest', this.#manifest);
    try {
      this.#env.evidence.add('the health report', await this.#c.health({}));
    } catch (err) {
      this.#ledger.note('manifest', `health threw ${describeThrown(err)}`);
    }
    try {
      this.#env.evidence.add('a map_error result', this.#c.map_error(new Error('conformance probe'), 'invocation'));
    } catch {
      // map_error is exercised for evidence only
    }
    const report = admitManifest(this.#manifest, this.#c);
    const recordRules: string[] = [ADMISSION_RULES.support_record, ADMISSION_RULES.exact_record, ADMISSION_RULES.record_mismatch];
    // A capability whose record is missing or inexact fails support_record; its flag issues are consequences of that.
    const badRecord = new Set(
      report.issues.filter((i) => i.rule === ADMISSION_RULES.support_record || i.rule === ADMISSION_RULES.exact_record).map((i) => i.capability_id),
    );
    for (const issue of report.issues) {
      if (recordRules.includes(issue.rule)) continue; // reported by #supportRecords with more detail
      if (issue.flag !== undefined && badRecord.has(issue.capability_id)) continue;
      this.#ledger.fail('manifest', `admission: ${formatAdmissionIssue(issue)}`);
    }
    return true;
  }

  #supportRecords(): void {
    const m = this.#manifest as ConnectorManifest;
    const ids = new Set(m.capabilities.map((c) => c.id));
    for (const cap of m.capabilities) {
      let rec: unknown;
      try {
        rec = this.#c.implementation_support(cap.id);
      } catch (err) {
        this.#ledger.fail('support_record', `${cap.id}: implementation_support threw ${describeThrown(err)}`);
        continue;
      }
      if (rec === undefined || rec === null) {
        if (cap.kind !== 'resource') this.#ledger.fail('support_record', `${cap.id}: callable capability has no implementation support record`);
        continue;
      }
      const keys = typeof rec === 'object' ? Object.keys(rec) : [];
      const missing = IMPLEMENTATION_FLAGS.filter((f) => !keys.includes(f));
      const extra = keys.filter((k) => !(IMPLEMENTATION_FLAGS as readonly string[]).includes(k));
      const nonBoolean = keys.filter((k) => typeof (rec as Record<string, unknown>)[k] !== 'boolean');
      if (missing.length > 0) this.#ledger.fail('support_record', `${cap.id}: the support record lacks ${missing.join(', ')}`);
      if (extra.length > 0)
        this.#ledger.fail('support_record', `${cap.id}: the support record has keys beyond the nine flags (${extra.map((k) => k.slice(0, 40)).join(', ')})`);
      if (nonBoolean.length > 0) this.#ledger.fail('support_record', `${cap.id}: flags are not booleans (${nonBoolean.map((k) => k.slice(0, 40)).join(', ')})`);
      if (!ImplementationSupportSchema.safeParse(rec).success) continue;
      const inManifest = m.implementation_support[cap.id];
      if (inManifest === undefined || IMPLEMENTATION_FLAGS.some((f) => inManifest[f] !== (rec as Record<string, unknown>)[f])) {
        this.#ledger.fail('support_record', `${cap.id}: the manifest's support record differs from implementation_support`);
      }
    }
    for (const id of Object.keys(m.implementation_support)) {
      if (!ids.has(id)) this.#ledger.fail('support_record', `${id.slice(0, 100)}: a support record names no capability of the manifest`);
    }
    this.#ledger.note('support_record', `${plural(m.capabilities.length, 'capability', 'capabilities')} checked`);
  }

  // -- probes ----------------------------------------------------------------------

  #probeAction(cap: Capability, method: CapabilityMethod): Action {
    this.#probeCount += 1;
    const id = `conformance-probe-${this.#probeCount}`;
    const mode = PROBE_MODE[method];
    const input = this.#sample(cap.id, method) ?? {};
    return this.#decorate({
      id,
      capability_id: cap.id,
      input,
      ...(mode !== undefined
        ? {
            transaction: {
              mode,
              transaction_id: `conformance-tx-${id}`,
              ...(mode === 'commit' ? { plan_id: `plan:conformance-tx-${id}` } : {}),
              ...(mode === 'compensate' ? { compensation_for: 'conformance-original-action' } : {}),
            },
          }
        : {}),
    });
  }

  /** Calls `method` on `connector` with an already-cancelled context. */
  async #probe(
    connector: FrozenConnector,
    cap: Capability,
    method: CapabilityMethod,
    label: string,
    extra: Extra = {},
  ): Promise<Outcome<unknown> | typeof CALL_TIMED_OUT> {
    const action = this.#probeAction(cap, method);
    const open = this.#open(action, label, {
      cancelled: true,
      ...extra,
      ...(method === 'reconcile_typed' ? { provider_operation: { provider: 'conformance', operation_id: 'conformance-probe-operation' } } : {}),
    });
    const out = await this.#call(label, () => connector[method](action, open.attempt.context) as Promise<unknown>);
    await this.#close(open);
    this.#recordCheckpoints(open);
    return out;
  }

  async #probes(): Promise<void> {
    const m = this.#manifest as ConnectorManifest;
    let probed = 0;
    let effects = await this.#effects();
    let cleanCalls = 0;
    for (const cap of m.capabilities) {
      const support = this.#support(cap.id);
      for (const method of CAPABILITY_METHODS) {
        const { flag, claim } = claimOf(method, cap, support);
        const label = `${method}(${cap.id}) called with an already-cancelled context`;
        const out = await this.#probe(this.#c, cap, method, label);
        probed += 1;
        const effect = await this.#noNewEffect('cancelled_call_no_effect', label, effects);
        effects = effect.after;
        if (effect.clean) cleanCalls += 1;
        if (out === CALL_TIMED_OUT) {
          this.#probeClass.set(`${cap.id}:${method}`, 'no answer');
          this.#ledger.fail('explicit_unsupported', `${method}(${cap.id}) did not return within ${this.#env.call_timeout_ms} ms of a cancelled call`);
          continue;
        }
        const unsupported = !out.ok && codeOf(out.error) === UNSUPPORTED;
        this.#probeClass.set(`${cap.id}:${method}`, unsupported ? 'unsupported' : 'implemented');
        if (!unsupported) this.#implemented.add(`${cap.id}:${method}`);
        if (this.#deadContext(label, out)) continue;
        if (claim === 'required' && unsupported) {
          this.#ledger.fail('manifest', `${cap.id}: flag ${flag} is true but ${method} answers ${UNSUPPORTED}`);
          continue;
        }
        if (unsupported) {
          this.#checkTypedUnsupported(`${method}(${cap.id})`, method, out.error);
          continue;
        }
        if (!out.ok && !isConnectorFailure(out.error)) {
          if (claim === 'absent') {
            this.#ledger.fail(
              'explicit_unsupported',
              `${method}(${cap.id}): flag ${flag} is false, so it must reject with the typed ConnectorFailure ${UNSUPPORTED} (category permanent, retryable=false), but it threw an untyped ${describeThrown(out.error)}`,
            );
          } else {
            this.#typedFailure(label, out.error);
          }
          continue;
        }
        if (!out.ok) this.#typedFailure(label, out.error);
        if (claim === 'absent') {
          if (!out.ok && codeOf(out.error) === 'connector.input_invalid') {
            this.#ledger.fail(
              'manifest',
              `${cap.id}: cannot tell whether ${method} is implemented (flag ${flag} is false): the probe input was rejected; supply sampleInput('${cap.id}', '${method}')`,
            );
          } else {
            this.#ledger.fail(
              'manifest',
              `${cap.id}: ${method} is implemented (it ${out.ok ? 'returned a result' : `failed with ${codeOf(out.error)}`}) but flag ${flag} is false`,
            );
          }
        }
      }
    }
    // emit and ingest are connector-wide.
    const first = m.capabilities[0];
    if (first !== undefined) {
      for (const method of ['emit_typed', 'ingest_typed'] as const) {
        const action = this.#decorate({ id: `conformance-probe-${++this.#probeCount}`, capability_id: first.id, input: {} });
        const open = this.#open(action, `${method} called with an already-cancelled context`, { cancelled: true });
        const out = await this.#call<unknown>(`${method}`, () =>
          method === 'emit_typed'
            ? this.#c.emit_typed({ kind: 'event', event_type: 'conformance.probe', payload: {} }, open.attempt.context)
            : this.#c.ingest_typed(
                {
                  provider: 'conformance',
                  event_id: 'conformance-probe-event',
                  event_type: 'conformance.probe',
                  payload: {},
                  received_at: new Date().toISOString(),
                },
                open.attempt.context,
              ),
        );
        await this.#close(open);
        if (out === CALL_TIMED_OUT) {
          this.#ledger.fail('explicit_unsupported', `${method} did not return within ${this.#env.call_timeout_ms} ms of a cancelled call`);
        } else if (!out.ok && codeOf(out.error) === UNSUPPORTED) {
          this.#checkTypedUnsupported(method, method, out.error);
        } else if (!out.ok && !isConnectorFailure(out.error)) {
          this.#ledger.fail(
            'explicit_unsupported',
            `${method} threw an untyped ${describeThrown(out.error)}; an unsupported operation must reject with the typed ${UNSUPPORTED}`,
          );
        }
      }
    }
    this.#ledger.note('manifest', `${probed} capability methods probed`);
    this.#ledger.note('explicit_unsupported', `${probed + 2} typed methods probed`);

    // The same effect methods once more, as the runtime leaves them when the deadline is lost first.
    let deadlineCalls = 0;
    for (const cap of m.capabilities) {
      const support = this.#support(cap.id);
      for (const method of EFFECT_METHODS) {
        if (!this.#implemented.has(`${cap.id}:${method}`) || claimOf(method, cap, support).claim === 'absent') continue;
        const label = `${method}(${cap.id}) called after its deadline was lost`;
        const out = await this.#probe(this.#c, cap, method, label, { cancel_reason: deadlineCancellation(), deadline_at: new Date(Date.now() - 1) });
        deadlineCalls += 1;
        const effect = await this.#noNewEffect('cancelled_call_no_effect', label, effects);
        effects = effect.after;
        if (effect.clean) cleanCalls += 1;
        if (out !== CALL_TIMED_OUT && !out.ok && !this.#deadContext(label, out)) this.#typedFailure(label, out.error);
      }
    }
    if (effects === undefined) this.#ledger.skip('cancelled_call_no_effect', 'the subject’s provider does not report its effects (provider.effects)');
    else
      this.#ledger.note(
        'cancelled_call_no_effect',
        `${cleanCalls} of ${probed + deadlineCalls} cancelled or deadline-lost calls left no provider effect, also after the provider settled`,
      );
  }

  #checkTypedUnsupported(label: string, method: keyof typeof TYPED_METHOD_OPERATION, err: unknown): void {
    const problems: string[] = [];
    if (!isConnectorFailure(err)) problems.push('it is not a ConnectorFailure');
    else {
      if (err.category !== 'permanent') problems.push(`category is ${err.category}, not permanent`);
      if (err.retryable) problems.push('retryable is true');
      if (err.uncertain_outcome) problems.push('uncertain_outcome is true');
      if (err.operation !== TYPED_METHOD_OPERATION[method]) problems.push(`operation is ${err.operation}, not ${TYPED_METHOD_OPERATION[method]}`);
    }
    if (problems.length > 0) this.#ledger.fail('explicit_unsupported', `${label} answers ${UNSUPPORTED} without the typed shape (${problems.join(', ')})`);
  }

  /** The subject's sample input, if it is a plain JSON object (anything else is reported). */
  #sample(capability_id: string, method: CapabilityMethod): JsonObject | undefined {
    const raw = this.#i.sampleInput?.(capability_id, method);
    if (raw === undefined) return undefined;
    if (isJsonObject(raw)) return raw;
    this.#ledger.note('manifest', `the sample input for ${method}(${capability_id}) is not a JSON object and was ignored`);
    return undefined;
  }

  #sampleSchemas(): void {
    const m = this.#manifest as ConnectorManifest;
    if (this.#i.sampleInput === undefined) return;
    for (const cap of m.capabilities) {
      for (const method of CAPABILITY_METHODS) {
        const input = this.#sample(cap.id, method);
        if (input === undefined || method === 'cancel_typed' || method === 'reconcile_typed') continue;
        const target = method === 'compensate_typed' ? (this.#capability(cap.compensation?.compensation_capability_id ?? cap.id) ?? cap) : cap;
        const validate = this.#validator(target.input_schema);
        if (validate === null) this.#ledger.fail('manifest', `${target.id}: input_schema does not compile`);
        else if (!validate(input)) this.#ledger.fail('manifest', `${cap.id}: the sample input for ${method} does not satisfy the input_schema of ${target.id}`);
      }
    }
  }

  // -- plans -------------------------------------------------------------------------

  async #plans(): Promise<void> {
    const m = this.#manifest as ConnectorManifest;
    const canCount = this.#i.provider?.effects !== undefined;
    let runs = 0;
    for (const cap of m.capabilities) {
      if (!this.#implemented.has(`${cap.id}:plan_typed`)) continue;
      const declared = (cap.transaction?.modes ?? []).filter((mode): mode is 'plan' | 'dry_run' => mode === 'plan' || mode === 'dry_run');
      for (const mode of declared.length > 0 ? declared : (['plan'] as const)) {
        this.#probeCount += 1;
        const id = `conformance-${mode.replace('_', '-')}-${this.#probeCount}`;
        const action = this.#decorate({
          id,
          capability_id: cap.id,
          input: this.#sample(cap.id, 'plan_typed') ?? {},
          transaction: { mode, transaction_id: `conformance-tx-${id}` },
        });
        const label = `plan_typed(${cap.id}) in ${mode} mode`;
        const before = await this.#effects();
        const open = this.#open(action, label);
        const out = await this.#call(label, () => this.#c.plan_typed(action, open.attempt.context));
        await turn();
        await this.#close(open, true);
        this.#recordCheckpoints(open);
        runs += 1;
        if (open.recorder.effects.length > 0)
          this.#ledger.fail('plan_no_effect', `${label} published provider_effect_committed: a plan or dry run must not create a provider effect`);
        await this.#noNewEffect('plan_no_effect', label, before);
        if (out === CALL_TIMED_OUT) this.#ledger.note('plan_no_effect', `${label} did not return`);
        else if (!out.ok && !this.#deadContext(label, out) && this.#typedFailure(label, out.error))
          this.#ledger.note('plan_no_effect', `${label} failed (${out.error.code})`);
      }
    }
    if (runs === 0) this.#ledger.skip('plan_no_effect', 'no capability implements plan_typed');
    else if (!canCount) this.#ledger.skip('plan_no_effect', 'the subject’s provider does not report its effects (provider.effects)');
    else
      this.#ledger.note('plan_no_effect', `${plural(runs, 'plan or dry run', 'plans and dry runs')} left no provider effect, also after the provider settled`);
  }

  // -- scenarios ---------------------------------------------------------------------

  /** Returns what ran (undefined: no scenario). */
  async #uncertainCommit(): Promise<UncertainRun | undefined> {
    const make = this.#i.scenarios?.uncertainCommit;
    if (make === undefined) {
      if (this.#claims('transaction')) {
        this.#ledger.fail(
          'checkpoint_before_wait',
          'a capability claims transaction but the subject supplies no uncertainCommit scenario to drive an accepted-then-lost commit',
        );
      } else {
        this.#ledger.skip('checkpoint_before_wait', 'no capability claims transaction and no uncertainCommit scenario was supplied');
      }
      for (const id of ['reconcile_pending_not_terminal', 'cancel_verified'] as const) this.#ledger.skip(id, 'no uncertainCommit scenario was supplied');
      return undefined;
    }
    const s = await make();
    const action = this.#decorate(s.action);
    const method = selectMethod(action);
    const cap_id = action.capability_id;
    const label = `${method}(${cap_id}) in the uncertain-commit scenario`;
    const support = this.#support(cap_id);
    let held = false;
    const ran = (): UncertainRun => ({ capability_id: cap_id, mode: action.transaction?.mode, held });
    let open: OpenAttempt | undefined;
    try {
      const effectsAtStart = await this.#effects();
      open = this.#open(action, label);
      const lost = open;
      let p: Promise<unknown>;
      try {
        p = this.#c[method](action, lost.attempt.context) as Promise<unknown>;
      } catch (err) {
        p = Promise.reject(err);
      }
      const outcome = settle(p);
      const first = await bounded(Promise.race([s.waiting.then(() => 'waiting' as const), outcome.then(() => 'settled' as const)]), this.#env.call_timeout_ms);
      if (first === CALL_TIMED_OUT) {
        this.#ledger.fail('checkpoint_before_wait', `${label}: the provider never held a response and the call did not return`);
        lost.attempt.cancel(new Error('conformance: giving up'));
        return ran();
      }
      let atWait: ProviderOperationRef | undefined;
      if (first === 'settled') {
        const early = await outcome;
        if (this.#deadContext(label, early)) {
          if (!early.ok) this.#env.evidence.add(`the failure of ${label}`, early.error);
          return ran();
        }
        this.#ledger.fail(
          'checkpoint_before_wait',
          `${label}: the call returned before the provider held its response, so the connector never waited on a loseable response`,
        );
      } else {
        held = true;
        atWait = lost.recorder.checkpoints.at(-1)?.provider_operation;
        if (atWait === undefined) {
          this.#ledger.fail(
            'checkpoint_before_wait',
            `${label}: no provider operation was checkpointed before the connector waited on a response the provider held`,
          );
        } else {
          const problem = await s.verifyOperation?.(atWait);
          if (problem !== undefined)
            this.#ledger.fail('checkpoint_before_wait', `${label}: the checkpointed reference is not the provider's operation (${problem})`);
          else this.#ledger.note('checkpoint_before_wait', `${cap_id}: operation checkpointed before the uncertain wait`);
        }
        if (s.lose !== undefined) await s.lose();
        else lost.attempt.cancel(deadlineCancellation());
      }
      const out = await bounded(outcome, this.#env.call_timeout_ms);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('recovery_evidence', `${label}: the call did not return after its wait was lost`);
        return ran();
      }
      this.#env.evidence.add(out.ok ? `the result of ${label}` : `the failure of ${label}`, out.ok ? out.value : out.error);
      this.#recordCheckpoints(lost);
      if (this.#deadContext(label, out)) return ran();
      if (first === 'waiting') this.#checkResolvedDuring(lost, cap_id);
      if (out.ok) {
        if (first === 'waiting')
          this.#ledger.fail('recovery_evidence', `${label}: the call returned a result although its response was lost (a terminal result was invented)`);
        return ran();
      }
      if (!this.#typedFailure(label, out.error)) return ran();
      const f = out.error;
      this.#scanAuthority(`the failure of ${label}`, f.provider_operation);
      const last = lost.recorder.checkpoints.at(-1)?.provider_operation;
      const problems: string[] = [];
      if (!f.uncertain_outcome) problems.push(`uncertain_outcome is false (code ${f.code}) although the provider accepted the operation`);
      if (last !== undefined && !sameOperation(f.provider_operation, last))
        problems.push('provider_operation is missing or differs from the checkpointed operation');
      if (s.expect_provider_request_id === true && f.provider_request_id === undefined)
        problems.push('provider_request_id is missing although the provider returned one');
      if (problems.length > 0) this.#ledger.fail('recovery_evidence', `${label}: ${problems.join(', ')}`);
      else this.#ledger.note('recovery_evidence', `${cap_id}: a lost commit is uncertain and keeps its provider operation`);
      if (first === 'waiting') this.#checkTimeout(label, action, f, s.lose === undefined);

      // While the provider still holds the operation pending, a reconcile must not answer terminal.
      if (last !== undefined && support.reconciliation === true) {
        const pending = await this.#isPending(last);
        const r = await this.#reconcileAfter(action, last, label, 'recovery_evidence');
        if (pending === undefined)
          this.#ledger.skip('reconcile_pending_not_terminal', 'the subject’s provider cannot tell whether an operation is pending (provider.isPending)');
        else if (!pending) this.#ledger.skip('reconcile_pending_not_terminal', 'the provider no longer held the operation pending when the kit reconciled it');
        else if (r?.terminal === true) {
          this.#ledger.fail(
            'reconcile_pending_not_terminal',
            `reconcile_typed(${cap_id}) after ${label} answered terminal (original_commit_completed=${String(r.original_commit_completed)}) while the provider still held the operation pending`,
          );
        } else if (r !== undefined)
          this.#ledger.note('reconcile_pending_not_terminal', `${cap_id}: a reconcile while the provider holds the operation pending answers terminal=false`);
      } else {
        this.#ledger.skip(
          'reconcile_pending_not_terminal',
          last === undefined ? 'no provider operation was checkpointed to reconcile' : `${cap_id} does not claim reconciliation`,
        );
      }

      // The runtime calls cancel_typed with the lost attempt's context; an accepted cancel must hold.
      if (last !== undefined && support.cancellation === true) {
        await this.#cancelThenVerify(action, lost, last, label, effectsAtStart);
      } else {
        this.#ledger.skip('cancel_verified', last === undefined ? 'no provider operation was checkpointed to cancel' : `${cap_id} does not claim cancellation`);
      }
      return ran();
    } finally {
      if (open !== undefined) await this.#close(open);
      await this.#cleanup(s, 'uncertainCommit');
    }
  }

  async #isPending(ref: ProviderOperationRef): Promise<boolean | undefined> {
    const f = this.#i.provider?.isPending;
    if (f === undefined) return undefined;
    try {
      return (await f.call(this.#i.provider, ref)) === true;
    } catch {
      return undefined;
    }
  }

  async #cancelThenVerify(action: Action, lost: OpenAttempt, ref: ProviderOperationRef, label: string, effectsAtStart: number | undefined): Promise<void> {
    const cap_id = action.capability_id;
    const what = `cancel_typed(${cap_id}) after ${label}`;
    const cancel = await this.#call(what, () => this.#c.cancel_typed(action, lost.attempt.context));
    if (cancel === CALL_TIMED_OUT) {
      this.#ledger.fail('cancel_verified', `${what} did not return`);
      return;
    }
    if (this.#deadContext(what, cancel)) return;
    if (!cancel.ok) {
      if (this.#typedFailure(what, cancel.error))
        this.#ledger.skip('cancel_verified', `${what} failed (${cancel.error.code}), so there was no accepted cancel to verify`);
      return;
    }
    const parsed = CancelOutcomeSchema.safeParse(cancel.value);
    if (!parsed.success) {
      this.#ledger.fail('recovery_evidence', `cancel_typed(${cap_id}) returned an invalid CancelOutcome`);
      return;
    }
    this.#scanAuthority(`the outcome of ${what}`, parsed.data.provider_operation);
    if (!parsed.data.accepted) {
      this.#ledger.skip('cancel_verified', `${what} answered accepted=false, so there was no accepted cancel to verify`);
      return;
    }
    // The cancel was accepted: nothing of the operation may land, and a later reconcile must not say the commit completed.
    // The rule claims only what it observed; with nothing observed it is skipped with the reason, never passed.
    await this.#close(lost);
    await this.#settleProvider();
    const observed: string[] = [];
    const unobserved: string[] = [];
    const after = await this.#effects();
    if (effectsAtStart !== undefined && after !== undefined) {
      if (after > effectsAtStart)
        this.#ledger.fail(
          'cancel_verified',
          `${what} answered accepted, but the provider committed the operation afterwards (${plural(after - effectsAtStart, 'new effect')} once it settled)`,
        );
      else
        observed.push(
          this.#i.provider?.settle !== undefined
            ? 'the provider holds no new effect once it settled'
            : 'the provider holds no new effect one event-loop turn later (it cannot settle held work: provider.settle)',
        );
    } else unobserved.push('the provider does not report its effects (provider.effects)');
    if (this.#support(cap_id).reconciliation === true) {
      const r = await this.#reconcileAfter(action, ref, `the accepted ${what}`, 'cancel_verified');
      if (r !== undefined) {
        if (r.terminal && r.original_commit_completed)
          this.#ledger.fail('cancel_verified', `${what} answered accepted, but a later reconcile reports the commit completed`);
        else if (r.terminal) observed.push('a later reconcile reports the commit not completed');
        else unobserved.push('a later reconcile was not terminal yet');
      }
    } else unobserved.push(`${cap_id} does not claim reconciliation`);
    if (this.#ledger.failed('cancel_verified')) return;
    if (observed.length === 0) this.#ledger.skip('cancel_verified', `${what} answered accepted, but nothing confirmed it: ${unobserved.join('; ')}`);
    else
      this.#ledger.note(
        'cancel_verified',
        `${cap_id}: after the accepted cancel ${observed.join(', and ')}${unobserved.length > 0 ? ` (not observed: ${unobserved.join('; ')})` : ''}`,
      );
  }

  /**
   * The uncertain commit again, in the other of commit/execute, for the
   * timeout rule. Decided BEFORE the scenario is prepared: an arrangement the
   * kit never runs (a held outcome, a fault) could outlive a cleanup that only
   * releases what was held, and surface under an unrelated rule.
   */
  async #uncertainInOtherMode(primary: UncertainRun | undefined): Promise<void> {
    const make = this.#i.scenarios?.uncertainCommit;
    const other = primary?.mode === 'commit' ? 'execute' : primary?.mode === 'execute' ? 'commit' : undefined;
    if (make === undefined || primary === undefined || other === undefined) return;
    const method = other === 'commit' ? 'commit_typed' : 'invoke_typed';
    const runs = (id: string): boolean => this.#capability(id)?.transaction?.modes.includes(other) === true && this.#implemented.has(`${id}:${method}`);
    if (!runs(primary.capability_id)) return;
    const s = await make();
    const cap = this.#capability(s.action.capability_id);
    if (cap === undefined || !runs(cap.id)) {
      // The driver answered with another capability than the first time: prepared, so cleaned up.
      await this.#cleanup(s, 'uncertainCommit');
      return;
    }
    const tx = s.action.transaction ?? { mode: other };
    const transaction_id = tx.transaction_id ?? `conformance-tx-${s.action.id}`;
    const action = this.#decorate({
      ...s.action,
      transaction: { mode: other, transaction_id, ...(other === 'commit' ? { plan_id: tx.plan_id ?? `plan:${transaction_id}` } : {}) },
    });
    const label = `${method}(${cap.id}) in the uncertain-commit scenario (${other} mode)`;
    const open = this.#open(action, label);
    try {
      let p: Promise<unknown>;
      try {
        p = this.#c[method](action, open.attempt.context) as Promise<unknown>;
      } catch (err) {
        p = Promise.reject(err);
      }
      const outcome = settle(p);
      const first = await bounded(Promise.race([s.waiting.then(() => 'waiting' as const), outcome.then(() => 'settled' as const)]), this.#env.call_timeout_ms);
      if (first !== 'waiting') {
        if (first === CALL_TIMED_OUT) open.attempt.cancel(new Error('conformance: giving up'));
        return;
      }
      if (s.lose !== undefined) await s.lose();
      else open.attempt.cancel(deadlineCancellation());
      const out = await bounded(outcome, this.#env.call_timeout_ms);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('recovery_evidence', `${label}: the call did not return after its wait was lost`);
        return;
      }
      this.#env.evidence.add(out.ok ? `the result of ${label}` : `the failure of ${label}`, out.ok ? out.value : out.error);
      this.#recordCheckpoints(open);
      if (this.#deadContext(label, out)) return;
      if (!out.ok && this.#typedFailure(label, out.error)) this.#checkTimeout(label, action, out.error, s.lose === undefined);
    } finally {
      await this.#close(open);
      await this.#cleanup(s, 'uncertainCommit');
    }
  }

  async #reconcileAfter(original: Action, ref: ProviderOperationRef, after: string, rule: ConformanceRuleId): Promise<ReconciliationResult | undefined> {
    const action: Action = {
      ...original,
      id: `${original.id}-reconcile-${++this.#probeCount}`,
      transaction: { mode: 'reconcile', transaction_id: original.transaction?.transaction_id ?? `conformance-tx-${original.id}` },
    };
    const what = `reconcile_typed(${action.capability_id}) after ${after}`;
    const open = this.#open(action, what, { provider_operation: ref });
    const out = await this.#call(what, () => this.#c.reconcile_typed(action, open.attempt.context));
    await this.#close(open);
    this.#recordCheckpoints(open);
    if (out === CALL_TIMED_OUT) {
      this.#ledger.fail(rule, `${what} did not return`);
      return undefined;
    }
    if (this.#deadContext(what, out)) return undefined;
    if (!out.ok) {
      if (this.#typedFailure(what, out.error)) this.#ledger.fail(rule, `${what} could not reconcile the checkpointed operation (${out.error.code})`);
      return undefined;
    }
    const parsed = ReconciliationResultSchema.safeParse(out.value);
    if (!parsed.success) {
      this.#ledger.fail('recovery_evidence', `reconcile_typed(${action.capability_id}) returned an invalid ReconciliationResult`);
      return undefined;
    }
    if (parsed.data.cursor !== undefined) this.#env.evidence.add('a reconciliation cursor', parsed.data.cursor);
    this.#scanAuthority(`the result of ${what}`, { provider_operation: parsed.data.provider_operation, cursor: parsed.data.cursor });
    if (rule === 'recovery_evidence')
      this.#ledger.note(
        'recovery_evidence',
        `${action.capability_id}: the checkpointed operation reconciles (${parsed.data.terminal ? 'terminal' : 'non-terminal'})`,
      );
    return parsed.data as ReconciliationResult;
  }

  async #lostResponse(): Promise<void> {
    const make = this.#i.scenarios?.lostResponse;
    if (make === undefined) return;
    const s = await make();
    const action = this.#decorate(s.action);
    const label = `${selectMethod(action)}(${action.capability_id}) in the lost-response scenario`;
    const open = this.#open(action, label);
    try {
      const out = await this.#call(label, () => this.#c[selectMethod(action)](action, open.attempt.context) as Promise<unknown>);
      await this.#close(open);
      this.#recordCheckpoints(open);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('recovery_evidence', `${label}: the call did not return`);
        return;
      }
      if (this.#deadContext(label, out)) return;
      this.#checkResolvedDuring(open, action.capability_id);
      if (out.ok) {
        this.#ledger.fail('recovery_evidence', `${label}: the call returned a result although the provider's response was lost`);
        return;
      }
      if (!this.#typedFailure(label, out.error)) return;
      const f = out.error;
      this.#checkTimeout(label, action, f, false);
      const last = open.recorder.checkpoints.at(-1)?.provider_operation;
      if (!f.uncertain_outcome)
        this.#ledger.fail('recovery_evidence', `${label}: uncertain_outcome is false (code ${f.code}) although the provider may have applied the effect`);
      else if (last !== undefined && !sameOperation(f.provider_operation, last))
        this.#ledger.fail('recovery_evidence', `${label}: the failure does not carry the checkpointed provider_operation`);
      else this.#ledger.note('recovery_evidence', `${action.capability_id}: a lost response is uncertain`);
    } finally {
      await this.#close(open);
      await this.#cleanup(s, 'lostResponse');
    }
  }

  /**
   * Runs a committed-effect scenario. Returns the outcome, the attempt and
   * whether the provider held the effect (for the rotation run).
   */
  async #runEffect(
    s: { action: Action; effectRecorded(): boolean | Promise<boolean> },
    label: string,
  ): Promise<{ out: Outcome<unknown> | typeof CALL_TIMED_OUT; open: OpenAttempt }> {
    const open = this.#open(s.action, label);
    open.recorder.onEffect = () => s.effectRecorded();
    const out = await this.#call(label, () => this.#c[selectMethod(s.action)](s.action, open.attempt.context) as Promise<unknown>);
    // A publication after the method returned would show up now.
    await turn();
    await open.recorder.settled();
    await this.#close(open, true);
    this.#recordCheckpoints(open);
    return { out, open };
  }

  async #committedEffect(): Promise<void> {
    const make = this.#i.scenarios?.committedEffect;
    if (make === undefined) {
      if (this.#claims('transaction'))
        this.#ledger.fail('effect_checkpoint', 'a capability claims transaction but the subject supplies no committedEffect scenario');
      else this.#ledger.skip('effect_checkpoint', 'no committedEffect scenario was supplied');
      return;
    }
    const s = await make();
    const action = this.#decorate(s.action);
    const label = `${selectMethod(action)}(${action.capability_id}) in the committed-effect scenario`;
    try {
      const { out, open } = await this.#runEffect({ action, effectRecorded: () => s.effectRecorded() }, label);
      const recorder = open.recorder;
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('effect_checkpoint', `${label}: the call did not return`);
        return;
      }
      if (this.#deadContext(label, out)) return;
      if (!out.ok) {
        this.#typedFailure(label, out.error);
        this.#ledger.fail('effect_checkpoint', `${label}: the committed effect failed (${describeThrown(out.error)}), so its publication could not be checked`);
        return;
      }
      this.#checkResolvedDuring(open, action.capability_id);
      const result = out.value as { output?: unknown } | undefined;
      this.#recordOutput(label, this.#capability(action.capability_id), result?.output);
      const first = recorder.effects[0];
      if (first === undefined) this.#ledger.fail('effect_checkpoint', `${label}: provider_effect_committed was never published for a committed effect`);
      else {
        if (first.recorded === false)
          this.#ledger.fail('effect_checkpoint', `${label}: provider_effect_committed was published before the provider had durably recorded the effect`);
        if (recorder.effects.some((e) => e.seq > out.seq))
          this.#ledger.fail('effect_checkpoint', `${label}: provider_effect_committed was published after the method returned`);
        const cp = recorder.checkpoints.at(-1);
        if (cp !== undefined && cp.seq > first.seq)
          this.#ledger.note('effect_checkpoint', `${label}: the operation was checkpointed after the effect was published`);
        if (first.recorded !== false && !recorder.effects.some((e) => e.seq > out.seq))
          this.#ledger.note('effect_checkpoint', `${action.capability_id}: published once the provider held the effect, before returning`);
      }
      if (reconcileLookupOf(this.#c, action.capability_id).includes('idempotency_key')) {
        await this.#reconcileByKeyAfter(action, open.attempt, recorder.checkpoints.at(-1)?.provider_operation, label);
      }
    } finally {
      await this.#cleanup(s, 'committedEffect');
    }
  }

  /**
   * The capability declares the `idempotency_key` reconcile lookup: a
   * reconcile with NO provider operation ID, only the original request's
   * identity (as the runtime records it: action, capability, transaction,
   * reservation), must find the operation the committed effect created. The
   * reconcile action carries no idempotency key of its own, so only
   * `original_request` can lead the connector to the original key.
   */
  async #reconcileByKeyAfter(original: Action, effect: ExecutionAttempt, checkpointed: ProviderOperationRef | undefined, label: string): Promise<void> {
    const ctx = effect.context;
    const transaction_id = ctx.transaction?.transaction_id ?? original.transaction?.transaction_id ?? `conformance-tx-${original.id}`;
    const reservation_id = ctx.idempotency?.reservation_id;
    const original_request: OriginalRequestIdentity = {
      action_id: original.id,
      capability_id: original.capability_id,
      transaction_id,
      ...(reservation_id !== undefined ? { reservation_id } : {}),
    };
    const action = this.#decorate({
      id: `${original.id}-reconcile-by-key`,
      capability_id: original.capability_id,
      input: original.input,
      transaction: { mode: 'reconcile', transaction_id },
    });
    const what = `reconcile_typed(${action.capability_id}) without a provider operation ID after ${label}`;
    const open = this.#open(action, what, { original_request });
    const out = await this.#call(what, () => this.#c.reconcile_typed(action, open.attempt.context));
    await this.#close(open);
    this.#recordCheckpoints(open);
    if (out === CALL_TIMED_OUT) {
      this.#ledger.fail('recovery_evidence', `${what}: the call did not return`);
      return;
    }
    if (this.#deadContext(what, out)) return;
    if (!out.ok) {
      if (this.#typedFailure(what, out.error)) {
        this.#ledger.fail('recovery_evidence', `${what}: the capability declares the idempotency_key reconcile lookup but failed (${out.error.code})`);
      }
      return;
    }
    const parsed = ReconciliationResultSchema.safeParse(out.value);
    if (!parsed.success) {
      this.#ledger.fail('recovery_evidence', `${what} returned an invalid ReconciliationResult`);
      return;
    }
    const r = parsed.data;
    if (r.cursor !== undefined) this.#env.evidence.add('a reconciliation cursor', r.cursor);
    this.#scanAuthority(`the result of ${what}`, { provider_operation: r.provider_operation, cursor: r.cursor });
    const problems: string[] = [];
    if (r.provider_operation === undefined)
      problems.push('it reports no provider_operation, so the operation the effect created was not found by the original idempotency key');
    else if (checkpointed !== undefined && !sameOperation(r.provider_operation, checkpointed))
      problems.push('the provider_operation it found differs from the operation the effect checkpointed');
    if (r.terminal && !r.original_commit_completed) problems.push('it reports the original commit as not completed although the provider holds the effect');
    if (problems.length > 0) this.#ledger.fail('recovery_evidence', `${what}: ${problems.join(', ')}`);
    else
      this.#ledger.note(
        'recovery_evidence',
        `${action.capability_id}: a reconcile without an operation ID finds the effect's operation by the original idempotency key`,
      );
  }

  async #rejectedBeforeEffect(): Promise<void> {
    const make = this.#i.scenarios?.rejectedBeforeEffect;
    if (make === undefined) return;
    const s = await make();
    const action = this.#decorate(s.action);
    const label = `${selectMethod(action)}(${action.capability_id}) in the rejected-before-commit scenario`;
    const open = this.#open(action, label);
    try {
      const out = await this.#call(label, () => this.#c[selectMethod(action)](action, open.attempt.context) as Promise<unknown>);
      await turn();
      await this.#close(open);
      this.#recordCheckpoints(open);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('effect_checkpoint', `${label}: the call did not return`);
        return;
      }
      if (this.#deadContext(label, out)) return;
      if (open.recorder.effects.length > 0)
        this.#ledger.fail('effect_checkpoint', `${label}: provider_effect_committed was published for a request the provider rejected before commit`);
      if (out.ok) this.#ledger.fail('recovery_evidence', `${label}: the call returned a result although the provider rejected the request`);
      else if (this.#typedFailure(label, out.error) && out.error.uncertain_outcome)
        this.#ledger.note('recovery_evidence', `${label}: reported uncertain (conservative)`);
    } finally {
      await this.#close(open);
      await this.#cleanup(s, 'rejectedBeforeEffect');
    }
  }

  async #retry(): Promise<void> {
    const make = this.#i.scenarios?.retry;
    if (make === undefined) {
      this.#ledger.skip('retry_identity', 'no retry scenario was supplied');
      return;
    }
    const s = await make();
    const action = this.#decorate(s.action);
    const label = `${selectMethod(action)}(${action.capability_id}) in the retry scenario`;
    try {
      const run = async (n: number): Promise<Outcome<unknown> | typeof CALL_TIMED_OUT> => {
        const open = this.#open(action, `${label}, attempt ${n}`);
        const out = await this.#call(`${label}, attempt ${n}`, () => this.#c[selectMethod(action)](action, open.attempt.context) as Promise<unknown>);
        await this.#close(open);
        this.#recordCheckpoints(open);
        if (n === 2 && out !== CALL_TIMED_OUT && out.ok) this.#checkResolvedDuring(open, action.capability_id);
        return out;
      };
      const first = await run(1);
      if (this.#deadContext(`${label}, attempt 1`, first)) return;
      if (first !== CALL_TIMED_OUT && !first.ok && this.#typedFailure(`${label}, attempt 1`, first.error))
        this.#checkTimeout(`${label}, attempt 1`, action, first.error, false);
      await s.between?.();
      const second = await run(2);
      if (this.#deadContext(`${label}, attempt 2`, second)) return;
      if (second === CALL_TIMED_OUT) this.#ledger.fail('retry_identity', `${label}: the retry did not return`);
      else if (!second.ok) this.#ledger.fail('retry_identity', `${label}: the retry of the same action failed (${describeThrown(second.error)})`);
      else this.#recordOutput(label, this.#capability(action.capability_id), (second.value as { output?: unknown }).output);
      const problem = await s.verify();
      if (problem !== undefined) this.#ledger.fail('retry_identity', `${label}: ${problem}`);
      else this.#ledger.note('retry_identity', `${action.capability_id}: two attempts, one provider effect`);
    } finally {
      await this.#cleanup(s, 'retry');
    }
  }

  /** A streaming capability publishes through ctx.stream and still returns its terminal result. */
  async #streamed(): Promise<void> {
    const claimed = (this.#manifest?.capabilities ?? [])
      .filter((c) => c.execution?.supports_streaming === true && this.#support(c.id).streaming === true)
      .map((c) => c.id);
    const make = this.#i.scenarios?.streamed;
    if (claimed.length === 0) {
      this.#ledger.skip('streaming', 'no capability claims streaming');
      return;
    }
    if (make === undefined) {
      this.#ledger.skip('streaming', `no streamed scenario was supplied (${claimed.join(', ')} ${claimed.length === 1 ? 'claims' : 'claim'} streaming)`);
      return;
    }
    const s = await make();
    const action = this.#decorate(s.action);
    const label = `${selectMethod(action)}(${action.capability_id}) in the streamed scenario`;
    try {
      if (!claimed.includes(action.capability_id)) {
        this.#ledger.skip('streaming', `the streamed scenario calls ${action.capability_id}, which does not claim streaming`);
        return;
      }
      const open = this.#open(action, label);
      const out = await this.#call(label, () => this.#c[selectMethod(action)](action, open.attempt.context) as Promise<unknown>);
      await this.#close(open, true);
      this.#recordCheckpoints(open);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('streaming', `${label}: the call did not return`);
        return;
      }
      if (this.#deadContext(label, out)) return;
      if (!out.ok) {
        this.#typedFailure(label, out.error);
        this.#ledger.fail('streaming', `${label} failed (${describeThrown(out.error)})`);
        return;
      }
      const chunks = open.recorder.chunks.length;
      const output = (out.value as { output?: unknown } | undefined)?.output;
      if (chunks < s.min_chunks) {
        this.#ledger.fail(
          'streaming',
          `${label} published ${plural(chunks, 'chunk')} through ctx.stream where the provider's data makes ${s.min_chunks}: streamed output must go through the runtime-owned publisher`,
        );
      }
      if (output === undefined) this.#ledger.fail('streaming', `${label} returned no terminal output: streaming output does not replace the terminal result`);
      else this.#recordOutput(label, this.#capability(action.capability_id), output);
      if (chunks >= s.min_chunks && output !== undefined)
        this.#ledger.note('streaming', `${action.capability_id}: ${plural(chunks, 'chunk')} published through ctx.stream, then the terminal result`);
    } finally {
      await this.#cleanup(s, 'streamed');
    }
  }

  /**
   * Decoy tenant and account values in the input: every place the input
   * schema allows a string (and the usual authority names where it admits
   * extra fields), ONE place per call, with the sample input otherwise, in
   * every implemented method that takes the capability's input. A connector
   * that reads its tenant or account from any input field resolves a
   * credential for it or presents it to the provider (trusted_context).
   * Outcomes are not judged here beyond the typed failure: the effects these
   * calls make are expected.
   */
  async #inputDecoys(): Promise<void> {
    const m = this.#manifest as ConnectorManifest;
    let calls = 0;
    const places = new Set<string>();
    const refused = new Set<string>();
    for (const cap of m.capabilities) {
      const support = this.#support(cap.id);
      const slots = inputSlots(cap.input_schema);
      if (slots.length === 0) continue;
      for (const method of DECOY_METHODS) {
        if (!this.#implemented.has(`${cap.id}:${method}`) || claimOf(method, cap, support).claim === 'absent') continue;
        const base = this.#sample(cap.id, method) ?? {};
        for (const slot of slots) {
          const where = describePath(slot.path);
          for (const kind of slot.kinds) {
            const d = this.#decoys.next();
            const input = withValueAt(base, slot.path, d[kind]);
            const id = `conformance-decoy-${++this.#probeCount}`;
            const mode: TransactionMode | undefined =
              method === 'plan_typed'
                ? cap.transaction?.modes.includes('dry_run') === true && cap.transaction.modes.includes('plan') !== true
                  ? 'dry_run'
                  : 'plan'
                : method === 'commit_typed'
                  ? 'commit'
                  : cap.transaction?.modes.includes('execute') === true
                    ? 'execute'
                    : undefined;
            const bare: Action = {
              id,
              capability_id: cap.id,
              input: input ?? base,
              ...(mode !== undefined
                ? { transaction: { mode, transaction_id: `conformance-tx-${id}`, ...(mode === 'commit' ? { plan_id: `plan:conformance-tx-${id}` } : {}) } }
                : {}),
            };
            if (input === undefined || !this.#admitsInput(bare, input)) {
              refused.add(`${cap.id}.${where}`);
              continue;
            }
            places.add(`${cap.id}.${where}`);
            const action = this.#decoys.apply(bare, d);
            const label = `${method}(${cap.id}) with a decoy ${DECOY_KINDS[kind]} in the input field ${where}`;
            const open = this.#open(action, label);
            const out = await this.#call(label, () => this.#c[method](action, open.attempt.context) as Promise<unknown>);
            await this.#close(open, true);
            this.#recordCheckpoints(open);
            calls += 1;
            if (out === CALL_TIMED_OUT || this.#deadContext(label, out)) continue;
            if (!out.ok) this.#typedFailure(label, out.error);
          }
        }
      }
    }
    for (const p of places) refused.delete(p);
    if (calls > 0)
      this.#ledger.note(
        'trusted_context',
        `${plural(calls, 'call')} with a decoy tenant or account in one input field at a time (${plural(places.size, 'field')}${refused.size > 0 ? `; the input schema admits no decoy in ${[...refused].join(', ')}` : ''})`,
      );
  }

  /**
   * The uncertain commit once more, with the attempt's deadline already past
   * and the attempt NEVER aborted (the kit's other lost waits abort the
   * cancellation signal, which a connector that ignores its deadline would
   * still honour). The connector must return on its own: refuse to start, or
   * stop waiting at once. The kit waits `deadline_grace_ms` of wall clock at
   * most, a bound only a connector that ignores its deadline reaches; the
   * deadline itself is never waited for.
   */
  async #deadlineWithoutAbort(primary: UncertainRun | undefined): Promise<void> {
    const make = this.#i.scenarios?.uncertainCommit;
    if (make === undefined || primary === undefined) {
      this.#ledger.skip('deadline_bounds_wait', 'no uncertainCommit scenario was supplied');
      return;
    }
    if (!primary.held) {
      this.#ledger.skip('deadline_bounds_wait', 'the uncertain-commit scenario never held a response for the connector to wait on');
      return;
    }
    const s = await make();
    const action = this.#decorate(s.action);
    const method = selectMethod(action);
    const label = `${method}(${action.capability_id}) in the uncertain-commit scenario with its deadline passed and no abort`;
    const open = this.#open(action, label, { deadline_at: new Date(Date.now() - 1) });
    try {
      let waited = false;
      s.waiting.then(
        () => {
          waited = true;
        },
        () => undefined,
      );
      let p: Promise<unknown>;
      try {
        p = this.#c[method](action, open.attempt.context) as Promise<unknown>;
      } catch (err) {
        p = Promise.reject(err);
      }
      const outcome = settle(p);
      const grace = this.#env.deadline_grace_ms;
      let out = await bounded(outcome, grace);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail(
          'deadline_bounds_wait',
          `${label}: it had not returned ${grace} ms after the call started, its deadline already past${waited ? ', still waiting on the response the provider held' : ''}: bound every wait by ctx.deadline (call.withinDeadline), not only by ctx.cancellation`,
        );
        // Now abort, as the runtime would, so the call ends.
        open.attempt.cancel(deadlineCancellation());
        out = await bounded(outcome, this.#env.call_timeout_ms);
        if (out === CALL_TIMED_OUT) return;
      }
      this.#env.evidence.add(out.ok ? `the result of ${label}` : `the failure of ${label}`, out.ok ? out.value : out.error);
      this.#recordCheckpoints(open);
      if (this.#deadContext(label, out)) return;
      if (out.ok) {
        if (waited)
          this.#ledger.fail(
            'recovery_evidence',
            `${label}: the call returned a result although the provider held its response (a terminal result was invented)`,
          );
      } else if (this.#typedFailure(label, out.error)) this.#checkTimeout(label, action, out.error, waited);
      if (!this.#ledger.failed('deadline_bounds_wait'))
        this.#ledger.note(
          'deadline_bounds_wait',
          `${action.capability_id}: with its deadline passed and the attempt not aborted, ${method} returned on its own (${out.ok ? 'a result' : describeThrown(out.error)})`,
        );
    } finally {
      await this.#close(open);
      await this.#cleanup(s, 'uncertainCommit');
    }
  }

  /** Rotates the planted secret, then runs the committed-effect scenario again: only the new secret works now. */
  async #rotation(): Promise<void> {
    if (!this.claimsCredentials) {
      this.#ledger.skip('credentials_per_attempt', 'no capability claims credentials');
      return;
    }
    const rotate = this.#i.provider?.rotateSecret;
    const make = this.#i.scenarios?.committedEffect;
    if (rotate === undefined) {
      this.#ledger.skip('credentials_per_attempt', 'the secret was not rotated: the subject’s provider cannot rotate it (provider.rotateSecret)');
      return;
    }
    if (make === undefined) {
      this.#ledger.skip('credentials_per_attempt', 'the secret was not rotated: no committedEffect scenario to run after the rotation');
      return;
    }
    const next = `csk_${randomBytes(24).toString('hex')}`;
    this.#env.planted.rotate(next);
    try {
      await rotate.call(this.#i.provider, next);
    } catch (err) {
      this.#ledger.skip('credentials_per_attempt', `the secret was not rotated: provider.rotateSecret failed (${describeThrown(err)})`);
      return;
    }
    const s = await make();
    const action = this.#decorate(s.action);
    const label = `${selectMethod(action)}(${action.capability_id}) in the committed-effect scenario after the secret was rotated`;
    try {
      const { out, open } = await this.#runEffect({ action, effectRecorded: () => s.effectRecorded() }, label);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('credentials_per_attempt', `${label}: the call did not return`);
        return;
      }
      if (this.#deadContext(label, out)) return;
      if (!out.ok) {
        this.#ledger.fail('credentials_per_attempt', this.#afterRotationFailure(label, open, out.error));
        return;
      }
      if (!(await s.effectRecorded())) {
        this.#ledger.fail('credentials_per_attempt', `${label} returned, but the provider holds no new effect`);
        return;
      }
      this.#checkResolvedDuring(open, action.capability_id);
      this.#ledger.note('credentials_per_attempt', `after the secret was rotated between scenarios, ${action.capability_id} authenticated with the new one`);
    } finally {
      await this.#cleanup(s, 'committedEffect');
    }
  }

  /** What the run observed when the committed effect failed after the rotation (never a guess at the cause). */
  #afterRotationFailure(label: string, open: OpenAttempt, err: unknown): string {
    const typed = this.#typedFailure(label, err);
    const resolved = this.#resolvedDuring(open);
    const during =
      resolved === 0 ? 'no credential was resolved during the attempt' : `${plural(resolved, 'credential')} (the rotated secret) resolved during the attempt`;
    if (typed && isAuthRefusal(err)) {
      return resolved === 0
        ? `${label}: the provider refused the credential (${err.code}) and ${during}, so the connector presented a secret kept from before the rotation`
        : `${label}: the provider refused the credential (${err.code}) although ${during}: the connector presented something other than the secret it resolved`;
    }
    return `${label} failed with ${describeThrown(err)}${typed ? ` (category ${err.category})` : ''}; ${during}`;
  }

  async #placements(): Promise<void> {
    const placements = Object.entries(this.#i.placements ?? {});
    if (placements.length === 0) {
      this.#ledger.skip('placement', 'the subject declares no other placement of the connector (placements)');
      return;
    }
    const local = this.#manifest as ConnectorManifest;
    for (const [name, other] of placements) {
      let m: ConnectorManifest;
      try {
        m = await other.discover({});
      } catch (err) {
        this.#ledger.fail('placement', `${name}: discovery failed (${describeThrown(err)})`);
        continue;
      }
      this.#env.evidence.add(`the manifest of the ${name} placement`, m);
      const before = this.#ledger.failed('placement');
      const localIds = local.capabilities.map((c) => c.id).sort();
      const otherIds = m.capabilities.map((c) => c.id).sort();
      if (canonical(localIds) !== canonical(otherIds))
        this.#ledger.fail('placement', `${name}: the capabilities differ (${otherIds.join(', ')} instead of ${localIds.join(', ')})`);
      for (const cap of local.capabilities) {
        const there = m.capabilities.find((c) => c.id === cap.id);
        if (there === undefined) continue;
        const fields = [...new Set([...Object.keys(cap), ...Object.keys(there)])].filter(
          (k) => canonical((cap as Record<string, unknown>)[k]) !== canonical((there as Record<string, unknown>)[k]),
        );
        if (fields.length > 0) this.#ledger.fail('placement', `${name}: ${cap.id} advertises a different ${fields.join(', ')}`);
        let theirs: Readonly<Record<string, unknown>> = {};
        try {
          theirs = (other.implementation_support(cap.id) as Readonly<Record<string, unknown>> | undefined) ?? {};
        } catch {
          theirs = {};
        }
        const ours = this.#support(cap.id);
        const differ = IMPLEMENTATION_FLAGS.filter((f) => theirs[f] !== ours[f]);
        if (differ.length > 0) this.#ledger.fail('placement', `${name}: ${cap.id} declares different implementation flags (${differ.join(', ')})`);
        for (const method of CAPABILITY_METHODS) {
          const label = `${method}(${cap.id}) in the ${name} placement, called with an already-cancelled context`;
          const out = await this.#probe(other, cap, method, label);
          const theirClass = out === CALL_TIMED_OUT ? 'no answer' : !out.ok && codeOf(out.error) === UNSUPPORTED ? 'unsupported' : 'implemented';
          const ourClass = this.#probeClass.get(`${cap.id}:${method}`);
          if (ourClass !== undefined && theirClass !== ourClass)
            this.#ledger.fail('placement', `${name}: ${method}(${cap.id}) is ${theirClass} there but ${ourClass} in the local placement`);
        }
      }
      if (!before && !this.#ledger.failed('placement'))
        this.#ledger.note('placement', `${name}: the same manifest, support records and implemented methods as the local placement`);
    }
  }

  /** What the provider was presented with must not include authority taken from action bodies. */
  async #providerAuthority(): Promise<void> {
    const received = this.#i.provider?.received;
    if (received === undefined) {
      this.#ledger.skip('trusted_context', 'what the provider was presented with is not observable (provider.received)');
      this.#ledger.skip('no_raw_idempotency_key', 'what the provider was presented with is not observable (provider.received)');
    } else {
      let entries: readonly unknown[] = [];
      try {
        entries = await received.call(this.#i.provider);
      } catch (err) {
        this.#ledger.note('trusted_context', `provider.received failed (${describeThrown(err)})`);
      }
      let clean = 0;
      for (const entry of entries) {
        const kinds = this.#decoys.kindsIn(entry);
        if (kinds.length > 0) this.#ledger.fail('trusted_context', `the provider was presented with the ${describeKinds(kinds)} taken from an action body`);
        else clean += 1;
      }
      this.#ledger.note('trusted_context', `${plural(clean, 'provider request')} carried only trusted authority`);
      this.#rawKeys(entries);
    }
    const resolutions = this.#env.planted.resolutions.length;
    this.#ledger.note(
      'trusted_context',
      `${plural(this.#decoys.actions, 'action body', 'action bodies')} carried decoy tenant, account, credential, approval, transaction, operation and idempotency values; ${plural(resolutions, 'credential resolution')} used the verified tenant and account`,
    );
  }

  /** The caller's raw idempotency keys (the ones the kit planted) must not reach the provider; a derived key may. */
  #rawKeys(entries: readonly unknown[]): void {
    const keys = this.#decoys.plantedKeys;
    if (keys.length === 0) {
      this.#ledger.skip('no_raw_idempotency_key', 'no action the kit ran carried an idempotency key');
      return;
    }
    let raw = 0;
    for (const entry of entries) {
      const text = typeof entry === 'string' ? entry : (safeJsonText(entry) ?? '');
      if (keys.some((k) => text.includes(k))) raw += 1;
    }
    if (raw > 0)
      this.#ledger.fail(
        'no_raw_idempotency_key',
        `the provider was presented with the caller's raw idempotency key (action.idempotency_key, ctx.idempotency.key) in ${plural(raw, 'request')}: it is not unique across principals, so send a key derived from ctx.idempotency.reservation_id (downstreamIdempotencyKey)`,
      );
    else
      this.#ledger.note(
        'no_raw_idempotency_key',
        `${plural(keys.length, 'raw idempotency key')} planted in action bodies, none in the ${plural(entries.length, 'request')} the provider received`,
      );
  }

  #closingNotes(): void {
    this.#ledger.note('context_attempt_scoped', `${plural(this.#attemptsEnded, 'attempt')} ended and retired; no context was used after its attempt`);
    if (this.#typedFailures > 0)
      this.#ledger.note('recovery_evidence', `${plural(this.#typedFailures, 'failure')} observed, each a typed twelve-field ConnectorFailure`);
    if (!this.#timeoutChecked && this.#deadContexts === 0)
      this.#ledger.skip(
        'timeout_not_retryable',
        'no commit or execute lost its deadline (an uncertainCommit scenario on a commit or execute action, lost by the kit, exercises it)',
      );
    if (this.#deadContexts > 0) {
      for (const { id } of CONFORMANCE_RULES) {
        this.#ledger.skipIfSilent(
          id,
          `not judged: ${plural(this.#deadContexts, 'call')} ended early because the connector used a dead context (see context_attempt_scoped)`,
        );
      }
    }
  }
}

function checkSecrets(ledger: RuleLedger, evidence: Evidence, planted: PlantedCredentialProvider, claimsCredentials: boolean): void {
  const needles = planted.secrets.flatMap(secretNeedles);
  for (const where of evidence.find(needles)) ledger.fail('secrets', `secret material appears in ${where}`);
  if (claimsCredentials && planted.resolutions.length === 0) {
    ledger.fail('secrets', 'a capability claims credentials but no credential was resolved through the deployment credential provider during the run');
  }
  const undisposed = planted.issued.filter((s) => !s.disposed).length;
  if (undisposed > 0) ledger.fail('secrets', `${undisposed} of ${planted.issued.length} resolved secrets were never disposed (their bytes were not zeroed)`);
  ledger.note(
    'secrets',
    `${plural(planted.secrets.length, 'planted secret')}, ${plural(planted.resolutions.length, 'resolution')}; ${evidence.entries.length} outputs, failures, checkpoints, cursors and log lines scanned`,
  );
}

/** Runs the conformance kit against a subject. Never throws for connector behaviour. */
export async function runConformance(subject: ConformanceSubject, options: RunConformanceOptions = {}): Promise<ConformanceReport> {
  const ledger = new RuleLedger();
  const evidence = new Evidence();
  const secret = options.secret ?? `csk_${randomBytes(24).toString('hex')}`;
  const handle_id = subject.credential_handle ?? 'conformance/credential';
  const handle = CredentialHandle.of(handle_id);
  const planted = new PlantedCredentialProvider(handle, CONFORMANCE_TENANT_ID, secret);
  const restoreConsole = captureConsole((line) => evidence.add('a console log line', line));
  let instance: ConformanceInstance | undefined;
  let claimsCredentials = false;
  try {
    instance = await subject.setup({
      secret,
      credentials: planted,
      credential_handle: handle,
      tenant_id: CONFORMANCE_TENANT_ID,
      external_account_id: CONFORMANCE_ACCOUNT_ID,
      log: (line) => evidence.add('a connector log line', line),
    });
    const kit = new Kit(instance, {
      tenant_id: CONFORMANCE_TENANT_ID,
      account_id: CONFORMANCE_ACCOUNT_ID,
      handle_id,
      planted,
      ledger,
      evidence,
      call_timeout_ms: options.call_timeout_ms ?? 15_000,
      deadline_grace_ms: options.deadline_grace_ms ?? 1_000,
    });
    await kit.run();
    claimsCredentials = kit.claimsCredentials;
  } catch (err) {
    for (const { id } of CONFORMANCE_RULES) ledger.fail(id, `the kit run stopped early (${describeThrown(err)})`);
  } finally {
    restoreConsole();
    try {
      await instance?.dispose?.();
    } catch {
      // the subject's cleanup is not a conformance question
    }
  }
  checkSecrets(ledger, evidence, planted, claimsCredentials);
  return reportOf(subject.name, ledger.results());
}
