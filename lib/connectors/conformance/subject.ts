/**
 * What a connector author hands the conformance kit: a subject that builds
 * the connector against the kit's environment (a planted secret behind a
 * credential provider, a log sink) and scenario drivers that make the
 * provider behave in the ways the rules need (accept then lose a response,
 * reject before commit, ...).
 */
import type { Action, ProviderOperationRef } from '../../protocol/index.js';
import type { CredentialProvider } from '../../ports/credentials.js';
import type { TrustedAttemptState } from '../context.js';
import type { CredentialHandle } from '../credentials/handle.js';
import type { FrozenConnector } from '../interfaces.js';
import type { ConformanceRuleId } from './rules.js';

/** The typed methods the kit probes per capability. */
export const CAPABILITY_METHODS = ['invoke_typed', 'plan_typed', 'commit_typed', 'compensate_typed', 'cancel_typed', 'reconcile_typed'] as const;
export type CapabilityMethod = (typeof CAPABILITY_METHODS)[number];

/** What the kit gives the subject. */
export interface ConformanceEnvironment {
  /**
   * A unique secret planted for this run. Configure the PROVIDER side to
   * accept it (e.g. start the simulator with `apiKeys: [secret]`), and give
   * the connector `credentials` (never the secret itself).
   */
  readonly secret: string;
  /** Resolves `credential_handle` for the kit's tenant to the planted secret (and records every resolution). */
  readonly credentials: CredentialProvider;
  readonly credential_handle: CredentialHandle;
  readonly tenant_id: string;
  /** A log sink: wire the connector's logger here so the kit can scan every line. */
  readonly log: (line: unknown) => void;
}

/** Common to every scenario: the action the kit runs. */
export interface ScenarioBase {
  /** The action (with its transaction context, e.g. `{mode: 'commit', ...}`). */
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
   * with a `sla.timeout_exceeded` reason, as the runtime does on timeout.
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

export interface ConformanceScenarios {
  uncertainCommit?(): Promise<UncertainCommitScenario>;
  lostResponse?(): Promise<LostResponseScenario>;
  committedEffect?(): Promise<EffectScenario>;
  rejectedBeforeEffect?(): Promise<RejectedEffectScenario>;
  retry?(): Promise<RetryScenario>;
}

/** What the subject returns from setup. */
export interface ConformanceInstance {
  readonly connector: FrozenConnector;
  /**
   * A valid input for `method` of `capability_id` (for compensate: the
   * compensating input). The kit probes methods with an already-cancelled
   * context, so a well-behaved connector performs no effect. Without a
   * sample the kit sends `{}`.
   */
  sampleInput?(capability_id: string, method: CapabilityMethod): Readonly<Record<string, unknown>> | undefined;
  readonly scenarios?: ConformanceScenarios;
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

export interface ConformanceResult {
  readonly id: ConformanceRuleId;
  /** The rule, in the page's words. */
  readonly rule: string;
  readonly passed: boolean;
  /** Starts with `[<rule>]`; lists every violation (never secret values). */
  readonly message: string;
  /** True when the subject gave the kit no way to exercise the rule (not a failure). */
  readonly skipped?: boolean;
}

export interface ConformanceReport {
  readonly subject: string;
  readonly passed: boolean;
  readonly results: readonly ConformanceResult[];
}
