/**
 * What a connector author hands the conformance kit: a subject that builds
 * the connector against the kit's environment (a planted secret behind a
 * credential provider, a log sink), says what its provider fake can observe
 * (effects, pending operations, rotation of its secret, the authority it was
 * presented with), and gives scenario drivers that make the provider behave
 * in the ways the rules need (accept then hold a response, lose a response,
 * reject before commit, ...).
 */
import type { Action, ProviderOperationRef } from '../protocol/index.js';
import type { CredentialProvider } from '../ports/credentials.js';
import type { TrustedAttemptState } from '../context.js';
import type { CredentialHandle } from '../credentials/handle.js';
import type { FrozenConnector } from '../interfaces.js';
import type { ConformanceRuleId, ReviewItem } from './rules.js';

/** The typed methods the kit probes per capability. */
export const CAPABILITY_METHODS = ['invoke_typed', 'plan_typed', 'commit_typed', 'compensate_typed', 'cancel_typed', 'reconcile_typed'] as const;
export type CapabilityMethod = (typeof CAPABILITY_METHODS)[number];

/** What the kit gives the subject. */
export interface ConformanceEnvironment {
  /**
   * A unique secret planted for this run. Configure the PROVIDER side to
   * accept it (e.g. start the simulator with `apiKeys: [secret]`), and give
   * the connector `credentials` (never the secret itself). The kit may rotate
   * it later through `provider.rotateSecret`.
   */
  readonly secret: string;
  /** Resolves `credential_handle` to the current planted secret (and records every resolution, its scope and its attempt). */
  readonly credentials: CredentialProvider;
  readonly credential_handle: CredentialHandle;
  /** The verified tenant of every attempt. */
  readonly tenant_id: string;
  /** The verified external account of every attempt. */
  readonly external_account_id: string;
  /** A log sink: wire the connector's logger here so the kit can scan every line. */
  readonly log: (line: unknown) => void;
}

/**
 * What the subject's provider (fake, simulator, sandbox) can tell the kit.
 * Every member is optional: a rule that needs a missing one is reported
 * `skipped` with the reason, never `passed`.
 */
export interface ConformanceProvider {
  /**
   * How many durable effects the provider's system of record holds now (a
   * ledger length, a ticket count). Needed by `plan_no_effect`,
   * `cancelled_call_no_effect` and part of `cancel_verified`.
   */
  effects?(): number | Promise<number>;
  /**
   * Lets the provider finish whatever it holds or has in flight (release
   * held operations, end delays, wait until idle), so an effect that would
   * land later lands now. Without it "later" means after one event-loop turn.
   */
  settle?(): Promise<void>;
  /** Whether the provider still holds this operation pending (not final). Needed by `reconcile_pending_not_terminal`. */
  isPending?(ref: ProviderOperationRef): boolean | Promise<boolean>;
  /**
   * From now on accept `next` as the only valid secret (the old one is
   * refused). The kit rotates between scenarios; needed by the rotation part
   * of `credentials_per_attempt`.
   */
  rotateSecret?(next: string): void | Promise<void>;
  /**
   * The authority the provider was presented with so far: idempotency keys,
   * account or tenant headers, approval references, on-behalf-of fields (not
   * payload data the caller legitimately sends, and the kit does not scan it
   * for the secret). The kit searches it for the decoy values it put in
   * action bodies (`trusted_context`).
   */
  received?(): readonly unknown[] | Promise<readonly unknown[]>;
}

/** Common to every scenario: the action the kit runs. */
export interface ScenarioBase {
  /**
   * The action (with its transaction context, e.g. `{mode: 'commit', ...}`).
   * The kit adds decoys to its body (identity, metadata labels and, where the
   * input schema admits them, input fields) before running it.
   */
  readonly action: Action;
  /** Undoes the arrangement (faults, held responses). Awaited by the kit. */
  cleanup?(): Promise<void>;
}

/**
 * The provider accepts the mutation (an operation ID exists) and then holds
 * the response the connector is waiting for; the kit loses that wait.
 */
export interface UncertainCommitScenario extends ScenarioBase {
  /**
   * Resolves once the provider has accepted the operation and is holding the
   * response the connector now waits for. Subscribe BEFORE returning the
   * scenario (e.g. `sim.waitForEvent(...)`): the kit starts the call after.
   */
  readonly waiting: Promise<void>;
  /**
   * Breaks the wait. Default: the kit signals cancellation on the attempt
   * with a `sla.timeout_exceeded` reason, as the runtime does at the deadline.
   */
  lose?(): Promise<void>;
  /** Returns a problem when `ref` is not the provider's operation (or undefined when it is). */
  verifyOperation?(ref: ProviderOperationRef): Promise<string | undefined> | string | undefined;
  /** The provider answered with a request ID before the wait: the failure must carry one. */
  readonly expect_provider_request_id?: boolean;
}

/** The provider applies the mutation and the response is lost (e.g. the connection drops). */
export interface LostResponseScenario extends ScenarioBase {}

/** A mutation the provider durably accepts. */
export interface EffectScenario extends ScenarioBase {
  /** Whether the provider's system of record holds the effect now (evaluated when the connector publishes). */
  effectRecorded(): boolean | Promise<boolean>;
}

/** A mutation the provider rejects before committing anything. */
export interface RejectedEffectScenario extends ScenarioBase {}

/**
 * The same action run twice (two attempts). The first attempt may be
 * arranged to lose its response; the second must complete, and `verify`
 * checks the provider holds one effect under one identity.
 */
export interface RetryScenario extends ScenarioBase {
  /** Called between the two attempts (e.g. to remove a fault). */
  between?(): Promise<void>;
  verify(): Promise<string | undefined> | string | undefined;
}

/**
 * A call of a streaming capability (streaming admitted: contract and flag).
 * The kit runs it and counts the chunks that reach the runtime-owned
 * publisher (`ctx.stream`).
 */
export interface StreamScenario extends ScenarioBase {
  /** How many chunks the provider's data makes (e.g. the number of matching records now). */
  readonly min_chunks: number;
}

/**
 * Scenario drivers. Each is called once per run (a new arrangement each
 * call); `uncertainCommit` is called a second time for the other of
 * commit/execute when the capability implements both, and
 * `committedEffect` a second time after the secret rotation.
 */
export interface ConformanceScenarios {
  uncertainCommit?(): Promise<UncertainCommitScenario>;
  lostResponse?(): Promise<LostResponseScenario>;
  committedEffect?(): Promise<EffectScenario>;
  rejectedBeforeEffect?(): Promise<RejectedEffectScenario>;
  retry?(): Promise<RetryScenario>;
  streamed?(): Promise<StreamScenario>;
}

/** What the subject returns from setup. */
export interface ConformanceInstance {
  readonly connector: FrozenConnector;
  /**
   * A valid input for `method` of `capability_id` (for compensate: the
   * compensating input). The kit probes methods with an already-cancelled
   * context, so a well-behaved connector performs no effect, and runs
   * plan_typed with it. Without a sample the kit sends `{}`.
   */
  sampleInput?(capability_id: string, method: CapabilityMethod): Readonly<Record<string, unknown>> | undefined;
  readonly scenarios?: ConformanceScenarios;
  /** What the provider can observe (see ConformanceProvider). */
  readonly provider?: ConformanceProvider;
  /**
   * The same connector in other placements (e.g. `{ remote: connectorBehindTheRemoteHost }`):
   * the `placement` rule compares them with `connector`.
   */
  readonly placements?: Readonly<Record<string, FrozenConnector>>;
  /** The "makeContext" hook: adjust the trusted state the kit builds for an action. */
  trusted?(base: TrustedAttemptState, action: Action): TrustedAttemptState;
  /** Deadline the kit gives each attempt (default 10 000 ms). */
  readonly attempt_timeout_ms?: number;
  dispose?(): Promise<void>;
}

export interface ConformanceSubject {
  readonly name: string;
  /** The credential handle ID the connector expects in the context (default `conformance/credential`). */
  readonly credential_handle?: string;
  setup(env: ConformanceEnvironment): Promise<ConformanceInstance>;
}

export type ConformanceStatus = 'passed' | 'failed' | 'skipped';

export interface ConformanceResult {
  /** The rule's stable name. */
  readonly id: ConformanceRuleId;
  /** What the rule observes (one line). */
  readonly checks: string;
  /** The page's review item it enforces, quoted. */
  readonly review_item: ReviewItem;
  readonly status: ConformanceStatus;
  /** True only when status is `passed` (a skipped rule is not a passed one). */
  readonly passed: boolean;
  /** True when status is `skipped`. */
  readonly skipped: boolean;
  /**
   * failed: every violation (capability, method, scenario); skipped: why the
   * rule could not run against this subject; passed: what was exercised.
   * Never secret values.
   */
  readonly reason: string;
  /** `[<id>] <status>: <reason>`. */
  readonly message: string;
}

export interface ConformanceReport {
  readonly subject: string;
  /** No rule failed (skipped rules do not fail a run). */
  readonly passed: boolean;
  readonly counts: Readonly<Record<ConformanceStatus, number>>;
  readonly results: readonly ConformanceResult[];
}
