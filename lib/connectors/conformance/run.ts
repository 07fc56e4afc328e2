/**
 * runConformance: checks a connector against the page's "Review an
 * implementation" list and reports one result per rule. See README.md.
 *
 * How each rule is exercised
 * - manifest: discovery, admission (flags vs. contract), every typed method
 *   probed with an already-cancelled context: a method whose flag is claimed
 *   must not answer `connector.operation_unsupported`, and a method that
 *   answers anything else must be claimed; sample inputs must satisfy the
 *   manifest input schemas and scenario outputs the output schemas.
 * - support_record: implementation_support(id) is exactly the nine boolean
 *   flags for every callable capability, and equals the manifest's record.
 * - explicit_unsupported: unclaimed methods (and emit/ingest) reject with the
 *   typed ConnectorFailure `connector.operation_unsupported`, category
 *   `permanent`, retryable=false, naming the method's operation.
 * - checkpoint_before_wait: the uncertain-commit scenario; when the provider
 *   holds the response, a provider operation must already be checkpointed.
 * - effect_checkpoint: provider_effect_committed is published for a
 *   committed effect while the provider holds it and before the method
 *   returns, and never for a request rejected before commit.
 * - recovery_evidence: every failure is a ConnectorFailure with the twelve
 *   fields; a lost commit fails with uncertain_outcome=true, the checkpointed
 *   provider_operation and (when one was returned) the provider request ID;
 *   the checkpointed operation can be reconciled; when a capability declares
 *   the `idempotency_key` reconcile lookup, a reconcile with no operation ID
 *   but `transaction.original_request` finds the committed effect's operation.
 * - secrets: a unique secret is planted in the credential provider; it must
 *   be resolved through it for the verified tenant, every resolved secret
 *   disposed, and it must appear in no output, failure (any serialized
 *   form), checkpoint, cursor, manifest, health report or log line.
 * - retry_identity: the retry scenario's second attempt completes and the
 *   provider holds one effect.
 */
import { randomBytes } from 'node:crypto';
import Ajv2020Module from 'ajv/dist/2020.js';
import { fidelityInvokesHandler, isJsonObject, type Action, type Capability, type JsonObject, type ProviderOperationRef, type TransactionMode } from '../../protocol/index.js';
import { ADMISSION_RULES, admitManifest, formatAdmissionIssue } from '../admission.js';
import type { ExecutionAttempt, OriginalRequestIdentity } from '../context.js';
import { CredentialHandle } from '../credentials/handle.js';
import { selectMethod } from '../dispatch.js';
import { ConnectorFailure, ConnectorFailureRecordSchema, isConnectorFailure } from '../failure.js';
import { CancelOutcomeSchema, ReconciliationResultSchema, reconcileLookupOf, type FrozenConnector } from '../interfaces.js';
import type { ConnectorManifest } from '../manifest.js';
import { TYPED_METHOD_OPERATION } from '../operations.js';
import { IMPLEMENTATION_FLAGS, ImplementationSupportSchema } from '../support.js';
import {
  AttemptRecorder,
  CALL_TIMED_OUT,
  Evidence,
  PlantedCredentialProvider,
  bounded,
  captureConsole,
  conformanceAttempt,
  describeThrown,
  secretNeedles,
  settle,
  type Outcome,
} from './harness.js';
import { CONFORMANCE_RULES, type ConformanceRuleId } from './rules.js';
import { CAPABILITY_METHODS, type CapabilityMethod, type ConformanceInstance, type ConformanceReport, type ConformanceResult, type ConformanceSubject, type ScenarioBase } from './subject.js';

export interface RunConformanceOptions {
  /** Plant this secret instead of a fresh random one. */
  readonly secret?: string;
  /** Safety bound for each connector call the kit makes (default 15 000 ms). */
  readonly call_timeout_ms?: number;
}

type AjvValidate = ((data: unknown) => boolean) & { errors?: unknown[] | null };
type AjvCtor = new (opts: Record<string, unknown>) => { compile(schema: unknown): AjvValidate };
const Ajv2020 = ((Ajv2020Module as unknown as { default?: AjvCtor }).default ?? Ajv2020Module) as unknown as AjvCtor;

/** Which flag makes a method a claim, and whether the claim is required or optional for this capability. */
function claimOf(method: CapabilityMethod, cap: Capability, support: Readonly<Record<string, unknown>>): { flag: string; claim: 'required' | 'optional' | 'absent' } {
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

const UNSUPPORTED = 'connector.operation_unsupported';

function codeOf(err: unknown): string | undefined {
  const c = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof c === 'string' ? c : undefined;
}

function sameOperation(a: ProviderOperationRef | undefined, b: ProviderOperationRef | undefined): boolean {
  return a !== undefined && b !== undefined && a.provider === b.provider && a.operation_id === b.operation_id;
}

class Ledger {
  readonly #violations = new Map<ConformanceRuleId, string[]>();
  readonly #notes = new Map<ConformanceRuleId, string[]>();
  readonly #skipped = new Map<ConformanceRuleId, string>();

  fail(id: ConformanceRuleId, message: string): void {
    const list = this.#violations.get(id) ?? [];
    if (!list.includes(message)) list.push(message);
    this.#violations.set(id, list);
  }
  note(id: ConformanceRuleId, message: string): void {
    const list = this.#notes.get(id) ?? [];
    if (!list.includes(message)) list.push(message);
    this.#notes.set(id, list);
  }
  skip(id: ConformanceRuleId, why: string): void {
    this.#skipped.set(id, why);
  }

  results(): ConformanceResult[] {
    return CONFORMANCE_RULES.map(({ id, rule }) => {
      const violations = this.#violations.get(id) ?? [];
      if (violations.length > 0) return { id, rule, passed: false, message: `[${rule}] violated: ${violations.join('; ')}` };
      const skipped = this.#skipped.get(id);
      const notes = this.#notes.get(id) ?? [];
      if (skipped !== undefined && notes.length === 0) return { id, rule, passed: true, skipped: true, message: `[${rule}] not exercised: ${skipped}` };
      return { id, rule, passed: true, message: `[${rule}] satisfied${notes.length > 0 ? `: ${notes.join('; ')}` : ''}` };
    });
  }
}

interface KitEnv {
  readonly tenant_id: string;
  readonly handle: CredentialHandle;
  readonly ledger: Ledger;
  readonly evidence: Evidence;
  readonly call_timeout_ms: number;
}

class Kit {
  readonly #i: ConformanceInstance;
  readonly #c: FrozenConnector;
  readonly #env: KitEnv;
  readonly #ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
  #manifest: ConnectorManifest | undefined;
  #probeCount = 0;

  constructor(instance: ConformanceInstance, env: KitEnv) {
    this.#i = instance;
    this.#c = instance.connector;
    this.#env = env;
  }

  get #ledger(): Ledger {
    return this.#env.ledger;
  }

  async run(): Promise<void> {
    if (!(await this.#discover())) return;
    this.#supportRecords();
    await this.#probes();
    this.#sampleSchemas();
    await this.#uncertainCommit();
    await this.#lostResponse();
    await this.#committedEffect();
    await this.#rejectedBeforeEffect();
    await this.#retry();
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

  #attempt(
    action: Action,
    recorder: AttemptRecorder,
    extra: { cancelled?: boolean; provider_operation?: ProviderOperationRef; original_request?: OriginalRequestIdentity } = {},
  ): ExecutionAttempt {
    const cap = this.#capability(action.capability_id);
    const support = this.#support(action.capability_id);
    return conformanceAttempt(action, {
      tenant_id: this.#env.tenant_id,
      credential_handle: this.#env.handle,
      recorder,
      ...(this.#i.attempt_timeout_ms !== undefined ? { attempt_timeout_ms: this.#i.attempt_timeout_ms } : {}),
      ...(cap !== undefined ? { capability: cap } : {}),
      streaming: cap?.execution?.supports_streaming === true && support.streaming === true,
      ...(extra.provider_operation !== undefined ? { provider_operation: extra.provider_operation } : {}),
      ...(extra.original_request !== undefined ? { original_request: extra.original_request } : {}),
      ...(extra.cancelled === true ? { cancelled: true } : {}),
      ...(this.#i.trusted !== undefined ? { adjust: (base, a) => (this.#i.trusted as NonNullable<ConformanceInstance['trusted']>)(base, a) } : {}),
    });
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
    return out;
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
    return true;
  }

  #recordOutput(label: string, cap: Capability | undefined, output: unknown): void {
    if (cap?.output_schema === undefined || output === undefined) return;
    try {
      const validate = this.#ajv.compile(cap.output_schema);
      if (!validate(output)) this.#ledger.fail('manifest', `${label}: the output does not match the output_schema of ${cap.id}`);
    } catch {
      this.#ledger.fail('manifest', `${cap.id}: output_schema does not compile`);
    }
  }

  async #cleanup(s: ScenarioBase | undefined, label: string): Promise<void> {
    try {
      await s?.cleanup?.();
    } catch (err) {
      this.#ledger.note('manifest', `${label} cleanup failed (${describeThrown(err)})`);
    }
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
    for (const issue of report.issues) {
      if (recordRules.includes(issue.rule)) continue; // reported by #supportRecords with more detail
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
      if (extra.length > 0) this.#ledger.fail('support_record', `${cap.id}: the support record has keys beyond the nine flags (${extra.map((k) => k.slice(0, 40)).join(', ')})`);
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
    this.#ledger.note('support_record', `${m.capabilities.length} capabilities checked`);
  }

  // -- probes ----------------------------------------------------------------------

  #probeAction(cap: Capability, method: CapabilityMethod): Action {
    this.#probeCount += 1;
    const id = `conformance-probe-${this.#probeCount}`;
    const mode = PROBE_MODE[method];
    const input = this.#sample(cap.id, method) ?? {};
    return {
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
    };
  }

  async #probes(): Promise<void> {
    const m = this.#manifest as ConnectorManifest;
    let probed = 0;
    for (const cap of m.capabilities) {
      const support = this.#support(cap.id);
      for (const method of CAPABILITY_METHODS) {
        const { flag, claim } = claimOf(method, cap, support);
        const action = this.#probeAction(cap, method);
        const recorder = new AttemptRecorder();
        const attempt = this.#attempt(action, recorder, {
          cancelled: true,
          ...(method === 'reconcile_typed' ? { provider_operation: { provider: 'conformance', operation_id: 'conformance-probe-operation' } } : {}),
        });
        const label = `${method}(${cap.id})`;
        const out = await this.#call(label, () => this.#c[method](action, attempt.context) as Promise<unknown>);
        await attempt.end({ drain: false });
        probed += 1;
        if (out === CALL_TIMED_OUT) {
          this.#ledger.fail('explicit_unsupported', `${label} did not return within ${this.#env.call_timeout_ms} ms of a cancelled call`);
          continue;
        }
        const unsupported = !out.ok && codeOf(out.error) === UNSUPPORTED;
        if (claim === 'required' && unsupported) {
          this.#ledger.fail('manifest', `${cap.id}: flag ${flag} is true but ${method} answers ${UNSUPPORTED}`);
          continue;
        }
        if (unsupported) {
          this.#checkTypedUnsupported(label, method, out.error);
          continue;
        }
        if (!out.ok && !isConnectorFailure(out.error)) {
          if (claim === 'absent') {
            this.#ledger.fail(
              'explicit_unsupported',
              `${label}: flag ${flag} is false, so it must reject with the typed ConnectorFailure ${UNSUPPORTED} (category permanent, retryable=false), but it threw an untyped ${describeThrown(out.error)}`,
            );
          } else {
            this.#typedFailure(label, out.error);
          }
          continue;
        }
        if (!out.ok) this.#typedFailure(label, out.error);
        if (claim === 'absent') {
          if (!out.ok && codeOf(out.error) === 'connector.input_invalid') {
            this.#ledger.fail('manifest', `${cap.id}: cannot tell whether ${method} is implemented (flag ${flag} is false): the probe input was rejected; supply sampleInput('${cap.id}', '${method}')`);
          } else {
            this.#ledger.fail('manifest', `${cap.id}: ${method} is implemented (it ${out.ok ? 'returned a result' : `failed with ${codeOf(out.error)}`}) but flag ${flag} is false`);
          }
        }
      }
    }
    // emit and ingest are connector-wide.
    const first = m.capabilities[0];
    if (first !== undefined) {
      for (const method of ['emit_typed', 'ingest_typed'] as const) {
        const action: Action = { id: `conformance-probe-${++this.#probeCount}`, capability_id: first.id, input: {} };
        const attempt = this.#attempt(action, new AttemptRecorder(), { cancelled: true });
        const out = await this.#call<unknown>(`${method}`, () =>
          method === 'emit_typed'
            ? this.#c.emit_typed({ kind: 'event', event_type: 'conformance.probe', payload: {} }, attempt.context)
            : this.#c.ingest_typed({ provider: 'conformance', event_id: 'conformance-probe-event', event_type: 'conformance.probe', payload: {}, received_at: new Date().toISOString() }, attempt.context),
        );
        await attempt.end({ drain: false });
        if (out === CALL_TIMED_OUT) {
          this.#ledger.fail('explicit_unsupported', `${method} did not return within ${this.#env.call_timeout_ms} ms of a cancelled call`);
        } else if (!out.ok && codeOf(out.error) === UNSUPPORTED) {
          this.#checkTypedUnsupported(method, method, out.error);
        } else if (!out.ok && !isConnectorFailure(out.error)) {
          this.#ledger.fail('explicit_unsupported', `${method} threw an untyped ${describeThrown(out.error)}; an unsupported operation must reject with the typed ${UNSUPPORTED}`);
        }
      }
    }
    this.#ledger.note('manifest', `${probed} capability methods probed`);
    this.#ledger.note('explicit_unsupported', `${probed + 2} typed methods probed`);
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
        try {
          const validate = this.#ajv.compile(target.input_schema);
          if (!validate(input)) this.#ledger.fail('manifest', `${cap.id}: the sample input for ${method} does not satisfy the input_schema of ${target.id}`);
        } catch {
          this.#ledger.fail('manifest', `${target.id}: input_schema does not compile`);
        }
      }
    }
  }

  // -- scenarios ---------------------------------------------------------------------

  async #uncertainCommit(): Promise<void> {
    const make = this.#i.scenarios?.uncertainCommit;
    if (make === undefined) {
      if (this.#claims('transaction')) {
        this.#ledger.fail('checkpoint_before_wait', 'a capability claims transaction but the subject supplies no uncertainCommit scenario to drive an accepted-then-lost commit');
      } else {
        this.#ledger.skip('checkpoint_before_wait', 'no capability claims transaction and no uncertainCommit scenario was supplied');
      }
      return;
    }
    const s = await make();
    const label = `${selectMethod(s.action)}(${s.action.capability_id}) in the uncertain-commit scenario`;
    try {
      const method = selectMethod(s.action);
      const recorder = new AttemptRecorder();
      const attempt = this.#attempt(s.action, recorder);
      let p: Promise<unknown>;
      try {
        p = this.#c[method](s.action, attempt.context) as Promise<unknown>;
      } catch (err) {
        p = Promise.reject(err);
      }
      const outcome = settle(p);
      const first = await bounded(Promise.race([s.waiting.then(() => 'waiting' as const), outcome.then(() => 'settled' as const)]), this.#env.call_timeout_ms);
      if (first === CALL_TIMED_OUT) {
        this.#ledger.fail('checkpoint_before_wait', `${label}: the provider never held a response and the call did not return`);
        attempt.cancel(new Error('conformance: giving up'));
        return;
      }
      let atWait: ProviderOperationRef | undefined;
      if (first === 'settled') {
        this.#ledger.fail('checkpoint_before_wait', `${label}: the call returned before the provider held its response, so the connector never waited on a loseable response`);
      } else {
        atWait = recorder.checkpoints.at(-1)?.provider_operation;
        if (atWait === undefined) {
          this.#ledger.fail('checkpoint_before_wait', `${label}: no provider operation was checkpointed before the connector waited on a response the provider held`);
        } else {
          const problem = await s.verifyOperation?.(atWait);
          if (problem !== undefined) this.#ledger.fail('checkpoint_before_wait', `${label}: the checkpointed reference is not the provider's operation (${problem})`);
          else this.#ledger.note('checkpoint_before_wait', `${s.action.capability_id}: operation checkpointed before the uncertain wait`);
        }
        if (s.lose !== undefined) await s.lose();
        else attempt.cancel(new ConnectorFailure({ code: 'sla.timeout_exceeded', operation: 'invocation', source: 'conformance:kit' }));
      }
      const out = await bounded(outcome, this.#env.call_timeout_ms);
      await attempt.end({ drain: false });
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('recovery_evidence', `${label}: the call did not return after its wait was lost`);
        return;
      }
      this.#env.evidence.add(out.ok ? `the result of ${label}` : `the failure of ${label}`, out.ok ? out.value : out.error);
      for (const c of recorder.checkpoints) this.#env.evidence.add(`a checkpoint of ${label}`, c);
      if (out.ok) {
        if (first === 'waiting') this.#ledger.fail('recovery_evidence', `${label}: the call returned a result although its response was lost (a terminal result was invented)`);
        return;
      }
      if (!this.#typedFailure(label, out.error)) return;
      const f = out.error;
      const last = recorder.checkpoints.at(-1)?.provider_operation;
      const problems: string[] = [];
      if (!f.uncertain_outcome) problems.push(`uncertain_outcome is false (code ${f.code}) although the provider accepted the operation`);
      if (last !== undefined && !sameOperation(f.provider_operation, last)) problems.push('provider_operation is missing or differs from the checkpointed operation');
      if (s.expect_provider_request_id === true && f.provider_request_id === undefined) problems.push('provider_request_id is missing although the provider returned one');
      if (problems.length > 0) this.#ledger.fail('recovery_evidence', `${label}: ${problems.join(', ')}`);
      else this.#ledger.note('recovery_evidence', `${s.action.capability_id}: a lost commit is uncertain and keeps its provider operation`);

      // The checkpointed operation must be reconcilable and cancellable when claimed.
      const support = this.#support(s.action.capability_id);
      if (last !== undefined && support.reconciliation === true) await this.#reconcileAfter(s.action, last, label);
      if (last !== undefined && support.cancellation === true) {
        const cancel = await this.#call(`cancel_typed after ${label}`, () => this.#c.cancel_typed(s.action, attempt.context));
        if (cancel !== CALL_TIMED_OUT) {
          if (cancel.ok && !CancelOutcomeSchema.safeParse(cancel.value).success) this.#ledger.fail('recovery_evidence', `cancel_typed(${s.action.capability_id}) returned an invalid CancelOutcome`);
          if (!cancel.ok) this.#typedFailure(`cancel_typed(${s.action.capability_id})`, cancel.error);
        }
      }
    } finally {
      await this.#cleanup(s, 'uncertainCommit');
    }
  }

  async #reconcileAfter(original: Action, ref: ProviderOperationRef, label: string): Promise<void> {
    const action: Action = {
      id: `${original.id}-reconcile`,
      capability_id: original.capability_id,
      input: original.input,
      ...(original.idempotency_key !== undefined ? { idempotency_key: original.idempotency_key } : {}),
      transaction: { mode: 'reconcile', transaction_id: original.transaction?.transaction_id ?? `conformance-tx-${original.id}` },
    };
    const recorder = new AttemptRecorder();
    const attempt = this.#attempt(action, recorder, { provider_operation: ref });
    const out = await this.#call(`reconcile_typed after ${label}`, () => this.#c.reconcile_typed(action, attempt.context));
    await attempt.end({ drain: false });
    if (out === CALL_TIMED_OUT) {
      this.#ledger.fail('recovery_evidence', `reconcile_typed(${action.capability_id}) of the checkpointed operation did not return`);
      return;
    }
    for (const c of recorder.checkpoints) this.#env.evidence.add('a reconcile checkpoint', c);
    if (!out.ok) {
      if (this.#typedFailure(`reconcile_typed(${action.capability_id})`, out.error)) {
        this.#ledger.fail('recovery_evidence', `reconcile_typed(${action.capability_id}) could not reconcile the checkpointed operation (${out.error.code})`);
      }
      return;
    }
    const parsed = ReconciliationResultSchema.safeParse(out.value);
    if (!parsed.success) this.#ledger.fail('recovery_evidence', `reconcile_typed(${action.capability_id}) returned an invalid ReconciliationResult`);
    else {
      if (parsed.data.cursor !== undefined) this.#env.evidence.add('a reconciliation cursor', parsed.data.cursor);
      this.#ledger.note('recovery_evidence', `${action.capability_id}: the checkpointed operation reconciles (${parsed.data.terminal ? 'terminal' : 'non-terminal'})`);
    }
  }

  async #lostResponse(): Promise<void> {
    const make = this.#i.scenarios?.lostResponse;
    if (make === undefined) return;
    const s = await make();
    const label = `${selectMethod(s.action)}(${s.action.capability_id}) in the lost-response scenario`;
    try {
      const recorder = new AttemptRecorder();
      const attempt = this.#attempt(s.action, recorder);
      const out = await this.#call(label, () => this.#c[selectMethod(s.action)](s.action, attempt.context) as Promise<unknown>);
      await attempt.end({ drain: false });
      for (const c of recorder.checkpoints) this.#env.evidence.add(`a checkpoint of ${label}`, c);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('recovery_evidence', `${label}: the call did not return`);
        return;
      }
      if (out.ok) {
        this.#ledger.fail('recovery_evidence', `${label}: the call returned a result although the provider's response was lost`);
        return;
      }
      if (!this.#typedFailure(label, out.error)) return;
      const f = out.error;
      const last = recorder.checkpoints.at(-1)?.provider_operation;
      if (!f.uncertain_outcome) this.#ledger.fail('recovery_evidence', `${label}: uncertain_outcome is false (code ${f.code}) although the provider may have applied the effect`);
      else if (last !== undefined && !sameOperation(f.provider_operation, last)) this.#ledger.fail('recovery_evidence', `${label}: the failure does not carry the checkpointed provider_operation`);
      else this.#ledger.note('recovery_evidence', `${s.action.capability_id}: a lost response is uncertain`);
    } finally {
      await this.#cleanup(s, 'lostResponse');
    }
  }

  async #committedEffect(): Promise<void> {
    const make = this.#i.scenarios?.committedEffect;
    if (make === undefined) {
      if (this.#claims('transaction')) this.#ledger.fail('effect_checkpoint', 'a capability claims transaction but the subject supplies no committedEffect scenario');
      else this.#ledger.skip('effect_checkpoint', 'no committedEffect scenario was supplied');
      return;
    }
    const s = await make();
    const label = `${selectMethod(s.action)}(${s.action.capability_id}) in the committed-effect scenario`;
    try {
      const recorder = new AttemptRecorder();
      recorder.onEffect = () => s.effectRecorded();
      const attempt = this.#attempt(s.action, recorder);
      const out = await this.#call(label, () => this.#c[selectMethod(s.action)](s.action, attempt.context) as Promise<unknown>);
      // A publication after the method returned would show up now.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await recorder.settled();
      await attempt.end({ drain: true });
      for (const c of recorder.checkpoints) this.#env.evidence.add(`a checkpoint of ${label}`, c);
      for (const c of recorder.chunks) this.#env.evidence.add(`a stream chunk of ${label}`, c);
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('effect_checkpoint', `${label}: the call did not return`);
        return;
      }
      if (!out.ok) {
        this.#typedFailure(label, out.error);
        this.#ledger.fail('effect_checkpoint', `${label}: the committed effect failed (${describeThrown(out.error)}), so its publication could not be checked`);
        return;
      }
      const result = out.value as { output?: unknown } | undefined;
      this.#recordOutput(label, this.#capability(s.action.capability_id), result?.output);
      const first = recorder.effects[0];
      if (first === undefined) this.#ledger.fail('effect_checkpoint', `${label}: provider_effect_committed was never published for a committed effect`);
      else {
        if (first.recorded === false) this.#ledger.fail('effect_checkpoint', `${label}: provider_effect_committed was published before the provider had durably recorded the effect`);
        if (recorder.effects.some((e) => e.seq > out.seq)) this.#ledger.fail('effect_checkpoint', `${label}: provider_effect_committed was published after the method returned`);
        const cp = recorder.checkpoints.at(-1);
        if (cp !== undefined && cp.seq > first.seq) this.#ledger.note('effect_checkpoint', `${label}: the operation was checkpointed after the effect was published`);
        if (first.recorded !== false && !recorder.effects.some((e) => e.seq > out.seq)) this.#ledger.note('effect_checkpoint', `${s.action.capability_id}: published once the provider held the effect, before returning`);
      }
      if (reconcileLookupOf(this.#c, s.action.capability_id).includes('idempotency_key')) {
        await this.#reconcileByKeyAfter(s.action, attempt, recorder.checkpoints.at(-1)?.provider_operation, label);
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
    const action: Action = { id: `${original.id}-reconcile-by-key`, capability_id: original.capability_id, input: original.input, transaction: { mode: 'reconcile', transaction_id } };
    const what = `reconcile_typed(${action.capability_id}) without a provider operation ID after ${label}`;
    const recorder = new AttemptRecorder();
    const attempt = this.#attempt(action, recorder, { original_request });
    const out = await this.#call(what, () => this.#c.reconcile_typed(action, attempt.context));
    await attempt.end({ drain: false });
    for (const c of recorder.checkpoints) this.#env.evidence.add('a reconcile checkpoint', c);
    if (out === CALL_TIMED_OUT) {
      this.#ledger.fail('recovery_evidence', `${what}: the call did not return`);
      return;
    }
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
    const problems: string[] = [];
    if (r.provider_operation === undefined) problems.push('it reports no provider_operation, so the operation the effect created was not found by the original idempotency key');
    else if (checkpointed !== undefined && !sameOperation(r.provider_operation, checkpointed)) problems.push('the provider_operation it found differs from the operation the effect checkpointed');
    if (r.terminal && !r.original_commit_completed) problems.push('it reports the original commit as not completed although the provider holds the effect');
    if (problems.length > 0) this.#ledger.fail('recovery_evidence', `${what}: ${problems.join(', ')}`);
    else this.#ledger.note('recovery_evidence', `${action.capability_id}: a reconcile without an operation ID finds the effect's operation by the original idempotency key`);
  }

  async #rejectedBeforeEffect(): Promise<void> {
    const make = this.#i.scenarios?.rejectedBeforeEffect;
    if (make === undefined) return;
    const s = await make();
    const label = `${selectMethod(s.action)}(${s.action.capability_id}) in the rejected-before-commit scenario`;
    try {
      const recorder = new AttemptRecorder();
      const attempt = this.#attempt(s.action, recorder);
      const out = await this.#call(label, () => this.#c[selectMethod(s.action)](s.action, attempt.context) as Promise<unknown>);
      await new Promise<void>((resolve) => setImmediate(resolve));
      await attempt.end({ drain: false });
      if (out === CALL_TIMED_OUT) {
        this.#ledger.fail('effect_checkpoint', `${label}: the call did not return`);
        return;
      }
      if (recorder.effects.length > 0) this.#ledger.fail('effect_checkpoint', `${label}: provider_effect_committed was published for a request the provider rejected before commit`);
      if (out.ok) this.#ledger.fail('recovery_evidence', `${label}: the call returned a result although the provider rejected the request`);
      else if (this.#typedFailure(label, out.error) && out.error.uncertain_outcome) this.#ledger.note('recovery_evidence', `${label}: reported uncertain (conservative)`);
    } finally {
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
    const label = `${selectMethod(s.action)}(${s.action.capability_id}) in the retry scenario`;
    try {
      const run = async (n: number): Promise<Outcome<unknown> | typeof CALL_TIMED_OUT> => {
        const recorder = new AttemptRecorder();
        const attempt = this.#attempt(s.action, recorder);
        const out = await this.#call(`${label}, attempt ${n}`, () => this.#c[selectMethod(s.action)](s.action, attempt.context) as Promise<unknown>);
        await attempt.end({ drain: false });
        for (const c of recorder.checkpoints) this.#env.evidence.add(`a checkpoint of ${label}`, c);
        return out;
      };
      const first = await run(1);
      if (first !== CALL_TIMED_OUT && !first.ok) this.#typedFailure(`${label}, attempt 1`, first.error);
      await s.between?.();
      const second = await run(2);
      if (second === CALL_TIMED_OUT) this.#ledger.fail('retry_identity', `${label}: the retry did not return`);
      else if (!second.ok) this.#ledger.fail('retry_identity', `${label}: the retry of the same action failed (${describeThrown(second.error)})`);
      else this.#recordOutput(label, this.#capability(s.action.capability_id), (second.value as { output?: unknown }).output);
      const problem = await s.verify();
      if (problem !== undefined) this.#ledger.fail('retry_identity', `${label}: ${problem}`);
      else this.#ledger.note('retry_identity', `${s.action.capability_id}: two attempts, one provider effect`);
    } finally {
      await this.#cleanup(s, 'retry');
    }
  }
}

function checkSecrets(ledger: Ledger, evidence: Evidence, planted: PlantedCredentialProvider, secret: string, claimsCredentials: boolean, tenant_id: string): void {
  for (const where of evidence.find(secretNeedles(secret))) ledger.fail('secrets', `secret material appears in ${where}`);
  if (claimsCredentials && planted.resolutions.length === 0) {
    ledger.fail('secrets', 'a capability claims credentials but no credential was resolved through the deployment credential provider during the run');
  }
  const foreign = planted.resolutions.filter((r) => r.scope.tenant_id !== tenant_id);
  if (foreign.length > 0) ledger.fail('secrets', `${foreign.length} credential resolutions named a tenant other than the verified one`);
  const undisposed = planted.issued.filter((s) => !s.disposed).length;
  if (undisposed > 0) ledger.fail('secrets', `${undisposed} of ${planted.issued.length} resolved secrets were never disposed (their bytes were not zeroed)`);
  ledger.note('secrets', `${planted.resolutions.length} resolutions; ${evidence.entries.length} outputs, failures, checkpoints, cursors and log lines scanned`);
}

/** Runs the conformance kit against a subject. Never throws for connector behaviour. */
export async function runConformance(subject: ConformanceSubject, options: RunConformanceOptions = {}): Promise<ConformanceReport> {
  const ledger = new Ledger();
  const evidence = new Evidence();
  const secret = options.secret ?? `csk_${randomBytes(24).toString('hex')}`;
  const tenant_id = 'conformance-tenant';
  const handle = CredentialHandle.of(subject.credential_handle ?? 'conformance/credential');
  const planted = new PlantedCredentialProvider(handle, tenant_id, secret);
  const restoreConsole = captureConsole((line) => evidence.add('a console log line', line));
  let instance: ConformanceInstance | undefined;
  let claimsCredentials = false;
  try {
    instance = await subject.setup({ secret, credentials: planted, credential_handle: handle, tenant_id, log: (line) => evidence.add('a connector log line', line) });
    const kit = new Kit(instance, { tenant_id, handle, ledger, evidence, call_timeout_ms: options.call_timeout_ms ?? 15_000 });
    await kit.run();
    const connector = instance.connector;
    try {
      const manifest = await connector.discover({});
      claimsCredentials = manifest.capabilities.some((c) => connector.implementation_support(c.id)?.credentials === true);
    } catch {
      claimsCredentials = false;
    }
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
  checkSecrets(ledger, evidence, planted, secret, claimsCredentials, tenant_id);
  const results = ledger.results();
  return { subject: subject.name, passed: results.every((r) => r.passed), results };
}

