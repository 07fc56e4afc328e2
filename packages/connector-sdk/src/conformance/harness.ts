/**
 * Building blocks of the conformance kit, usable in an author's own tests:
 * recorded execution contexts ("makeContext" helpers), a credential
 * provider that plants one secret and records its use, and an evidence
 * store that keeps every output, failure, checkpoint, cursor and log line in
 * all the forms in which they could leak a secret.
 */
import { format, inspect } from 'node:util';
import type { Action, Capability, ProviderOperationRef } from '../protocol/index.js';
import type { CredentialProvider, CredentialResolutionScope } from '../ports/credentials.js';
import { reservationIdentity } from '../idempotency.js';
import { createExecutionContext, type ExecutionAttempt, type ExecutionFacilities, type OriginalRequestIdentity, type TrustedAttemptState } from '../context.js';
import { CredentialHandle } from '../credentials/handle.js';
import { credentialsUnavailable } from '../credentials/references.js';
import { ConnectorSecret } from '../credentials/secret.js';
import { ConnectorFailure, isConnectorFailure, toProtocolError } from '../failure.js';
import type { SequencedStreamChunk } from '../protocol/stream-chunk.js';

let seq = 0;
/** A global sequence number: orders checkpoints, effects and call settlements across the run. */
export function nextSequence(): number {
  seq += 1;
  return seq;
}

/** What a context was used for after its attempt ended. */
export type LateUse = 'transaction checkpoint' | 'provider_effect_committed' | 'stream chunk';

/** Records what a connector published during one attempt. */
export class AttemptRecorder {
  readonly checkpoints: { readonly seq: number; readonly provider_operation: ProviderOperationRef; readonly cursor?: string }[] = [];
  readonly effects: { readonly seq: number; recorded?: boolean }[] = [];
  readonly chunks: SequencedStreamChunk[] = [];
  /** Publications that arrived after the kit ended the attempt (a kept context). */
  readonly late: LateUse[] = [];
  /** Evaluated synchronously when the connector publishes provider_effect_committed. */
  onEffect: (() => boolean | Promise<boolean>) | undefined;
  /** Called for every use of the context after `ended` was set. */
  onLate: ((use: LateUse) => void) | undefined;
  /** Set by the kit when the attempt is over. */
  ended = false;
  readonly #pending: Promise<void>[] = [];

  #lateUse(use: LateUse): boolean {
    if (!this.ended) return false;
    this.late.push(use);
    try {
      this.onLate?.(use);
    } catch {
      // reporting must never break the caller
    }
    return true;
  }

  facilities(): ExecutionFacilities {
    return {
      transaction_checkpoints: {
        checkpoint: async (input) => {
          if (this.#lateUse('transaction checkpoint')) return;
          this.checkpoints.push({
            seq: nextSequence(),
            provider_operation: { ...input.provider_operation },
            ...(input.reconciliation_cursor !== undefined ? { cursor: input.reconciliation_cursor } : {}),
          });
        },
      },
      provider_effect_observer: {
        provider_effect_committed: () => {
          if (this.#lateUse('provider_effect_committed')) return;
          const entry: { seq: number; recorded?: boolean } = { seq: nextSequence() };
          this.effects.push(entry);
          const check = this.onEffect;
          if (check === undefined) return;
          try {
            const r = check();
            if (typeof r === 'boolean') entry.recorded = r;
            else
              this.#pending.push(
                r.then(
                  (v) => {
                    entry.recorded = v;
                  },
                  () => {
                    entry.recorded = false;
                  },
                ),
              );
          } catch {
            entry.recorded = false;
          }
        },
      },
      stream_sink: {
        write: async (chunk) => {
          if (this.#lateUse('stream chunk')) return;
          this.chunks.push(chunk);
        },
      },
    };
  }

  /** Waits for asynchronous effectRecorded checks. */
  async settled(): Promise<void> {
    await Promise.all(this.#pending);
  }
}

export interface ConformanceContextOptions {
  readonly tenant_id: string;
  /** The verified external account (absent: the attempt has none). */
  readonly external_account_id?: string;
  readonly credential_handle: CredentialHandle;
  readonly recorder: AttemptRecorder;
  /** Deadline from now (default 10 000 ms). */
  readonly attempt_timeout_ms?: number;
  /** An absolute deadline (wins over attempt_timeout_ms), e.g. one already past. */
  readonly deadline_at?: Date;
  /** The capability (for its data redaction policy and streaming contract). */
  readonly capability?: Capability;
  /** Streaming was admitted for the capability (contract and flag). */
  readonly streaming?: boolean;
  /** A provider operation recovered from a previous attempt (reconcile, cancel). */
  readonly provider_operation?: ProviderOperationRef;
  /** Reconcile: the original effect request being reconciled (transaction.original_request). */
  readonly original_request?: OriginalRequestIdentity;
  /** Start the attempt already cancelled (probes). */
  readonly cancelled?: boolean;
  /** The abort reason when `cancelled` (default: a client cancellation). */
  readonly cancel_reason?: unknown;
  /** The subject's hook to adjust the trusted state. */
  readonly adjust?: (base: TrustedAttemptState, action: Action) => TrustedAttemptState;
}

let attempts = 0;

/** The trusted state the kit builds for an action (the runtime's job in production). */
export function conformanceTrustedState(action: Action, opts: ConformanceContextOptions): TrustedAttemptState {
  attempts += 1;
  const attempt_id = `conformance-attempt-${attempts}`;
  const now = Date.now();
  const tx = action.transaction;
  const data = opts.capability?.data;
  const principal = { id: 'conformance-kit', kind: 'service' } as const;
  const base: TrustedAttemptState = {
    action_id: action.id,
    attempt_id,
    capability_id: action.capability_id,
    actor: {
      principal,
      issuer: 'urn:aip:conformance',
      scheme: 'conformance',
      scopes: [],
      lifetime: { issued_at: new Date(now - 60_000), expires_at: new Date(now + 3_600_000) },
    },
    tenant: { tenant_id: opts.tenant_id, ...(opts.external_account_id !== undefined ? { external_account_id: opts.external_account_id } : {}) },
    credential: opts.credential_handle,
    deadline_at: opts.deadline_at ?? new Date(now + (opts.attempt_timeout_ms ?? 10_000)),
    // As the runtime does: the reservation's scope-unique identity (tenant, principal, key).
    ...(action.idempotency_key !== undefined
      ? {
          idempotency: {
            key: action.idempotency_key,
            reservation_id: reservationIdentity({
              tenant_id: opts.tenant_id,
              principal_kind: principal.kind,
              principal_id: principal.id,
              key: action.idempotency_key,
            }),
            attempt_id,
          },
        }
      : {}),
    ...(opts.capability?.approval?.required === true
      ? {
          approval: {
            approval_ids: ['conformance-approval'],
            decision_ids: ['conformance-decision'],
            policy_hashes: ['0'.repeat(64)],
            authorization: { decision: 'allow' as const, scopes: [] },
          },
        }
      : {}),
    ...(tx !== undefined
      ? {
          transaction: {
            transaction_id: tx.transaction_id ?? `conformance-tx-${action.id}`,
            mode: tx.mode,
            ...(tx.plan_id !== undefined ? { plan_id: tx.plan_id } : {}),
            ...(opts.provider_operation !== undefined
              ? { provider_operation: opts.provider_operation, provider_operation_id: opts.provider_operation.operation_id }
              : {}),
            ...(opts.original_request !== undefined ? { original_request: opts.original_request } : {}),
          },
        }
      : {}),
    trace: { trace_id: `conformance-trace-${attempts}`, span_id: `conformance-span-${attempts}` },
    redaction: { redaction_required: data?.redaction_required ?? false, input_pointers: [...(data?.redact_pointers ?? [])], output_pointers: [] },
    streaming: opts.streaming ?? false,
  };
  return opts.adjust ? opts.adjust(base, action) : base;
}

/** Builds a recorded execution context for an action. */
export function conformanceAttempt(action: Action, opts: ConformanceContextOptions): ExecutionAttempt {
  const attempt = createExecutionContext(conformanceTrustedState(action, opts), opts.recorder.facilities());
  if (opts.cancelled === true) attempt.cancel(opts.cancel_reason ?? clientCancellation());
  return attempt;
}

/** The reason of a client's cancellation (`kind` names it for ctx.cancellation_reason). */
export function clientCancellation(): Error {
  return Object.assign(new Error('conformance: the client cancelled the action'), { kind: 'client_cancelled' });
}

/** The reason the runtime aborts an attempt with at its deadline. */
export function deadlineCancellation(): ConnectorFailure {
  return new ConnectorFailure({ code: 'sla.timeout_exceeded', operation: 'invocation', source: 'conformance:deadline' });
}

/** One credential resolution the planted provider answered (or refused). */
export interface PlantedResolution {
  readonly seq: number;
  /** The handle's ID. */
  readonly handle: string;
  /** The handle object itself: the kit gives every attempt its own, so a resolution names its attempt. */
  readonly handle_ref: CredentialHandle;
  readonly scope: CredentialResolutionScope;
  readonly answered: boolean;
}

/**
 * The kit's deployment credential provider: ONE planted secret (rotated by
 * the kit) for one handle ID. It answers a resolution for any scope with the
 * current secret (so that a connector resolving for the wrong tenant or
 * account is reported by `trusted_context` instead of failing every scenario),
 * records every resolution and every secret it hands out (the kit checks
 * scope, attempt and disposal), and refuses other handle IDs with a typed
 * `connector.credentials_unavailable`.
 */
export class PlantedCredentialProvider implements CredentialProvider {
  readonly resolutions: PlantedResolution[] = [];
  readonly issued: ConnectorSecret[] = [];
  /** Every secret planted so far (the first and each rotation). */
  readonly secrets: string[] = [];
  /** Called synchronously for every resolution, before it is answered. */
  observer: ((resolution: PlantedResolution) => void) | undefined;
  readonly #handle: CredentialHandle;
  readonly #tenant: string;
  #secret: string;

  constructor(handle: CredentialHandle, tenant_id: string, secret: string) {
    this.#handle = handle;
    this.#tenant = tenant_id;
    this.#secret = secret;
    this.secrets.push(secret);
  }

  /** The verified tenant the kit plants for. */
  get tenant_id(): string {
    return this.#tenant;
  }

  /** From now on resolutions answer `next`. */
  rotate(next: string): void {
    this.#secret = next;
    this.secrets.push(next);
  }

  async resolve(handle: CredentialHandle, scope: CredentialResolutionScope): Promise<ConnectorSecret> {
    const answered = CredentialHandle.is(handle) && handle.id === this.#handle.id;
    const resolution: PlantedResolution = { seq: nextSequence(), handle: String(handle?.id ?? ''), handle_ref: handle, scope: { ...scope }, answered };
    this.resolutions.push(resolution);
    try {
      this.observer?.(resolution);
    } catch {
      // observation must never change the answer
    }
    if (!answered) throw credentialsUnavailable(handle, scope, 'credentials:conformance', 'no_reference');
    const secret = ConnectorSecret.fromUtf8(this.#secret, { ...(scope.operation ? { operation: scope.operation } : {}), source: 'credentials:conformance' });
    this.issued.push(secret);
    return secret;
  }
}

/** The forms in which a secret can show up in text. */
export function secretNeedles(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const hex = bytes.toString('hex');
  const needles = new Set([
    secret,
    bytes.toString('base64').replace(/=+$/, ''),
    bytes.toString('base64url'),
    hex,
    // util.inspect of a Buffer / Uint8Array: `<Buffer 63 6f ...>` / `[ 99, 111, ... ]`
    (hex.match(/../g) ?? []).slice(0, 16).join(' '),
    [...bytes.subarray(0, 16)].join(', '),
    encodeURIComponent(secret),
  ]);
  return [...needles].filter((n) => n.length >= 8);
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return '';
  }
}

/** Every output, failure, checkpoint, cursor and log line of a run, in every serialized form. */
export class Evidence {
  readonly entries: { readonly where: string; readonly texts: readonly string[] }[] = [];

  add(where: string, value: unknown): void {
    const texts: string[] = [];
    if (typeof value === 'string') texts.push(value);
    else if (value instanceof Error) {
      texts.push(String(value), value.message, value.stack ?? '', inspect(value, { depth: 8 }), safeJson(value));
      if (isConnectorFailure(value)) texts.push(safeJson(value.toJSON()), safeJson(toProtocolError(value)));
    } else {
      texts.push(safeJson(value), inspect(value, { depth: 8 }));
    }
    this.entries.push({ where, texts });
  }

  /** The places where any needle occurs (deduplicated, in order). */
  find(needles: readonly string[]): string[] {
    const where = new Set<string>();
    for (const e of this.entries) if (e.texts.some((t) => needles.some((n) => t.includes(n)))) where.add(e.where);
    return [...where];
  }
}

/** Captures console output for the duration of a run (lines still reach the console). */
export function captureConsole(sink: (line: string) => void): () => void {
  const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;
  const originals = methods.map((m) => console[m]);
  methods.forEach((m, i) => {
    const original = originals[i] as (...args: unknown[]) => void;
    console[m] = (...args: unknown[]): void => {
      try {
        sink(format(...args));
      } catch {
        // capture must never break the caller
      }
      original.apply(console, args);
    };
  });
  return () => {
    methods.forEach((m, i) => {
      console[m] = originals[i] as (typeof console)[typeof m];
    });
  };
}

/** The outcome of a call. */
export type Outcome<T> = { readonly ok: true; readonly value: T; readonly seq: number } | { readonly ok: false; readonly error: unknown; readonly seq: number };

/** Settles a promise into an Outcome, stamped with a sequence number. */
export async function settle<T>(p: Promise<T>): Promise<Outcome<T>> {
  try {
    const value = await p;
    return { ok: true, value, seq: nextSequence() };
  } catch (error) {
    return { ok: false, error, seq: nextSequence() };
  }
}

export const CALL_TIMED_OUT: unique symbol = Symbol('conformance call timed out');

/** A safety net against a connector that never returns (not a synchronisation device). */
export async function bounded<T>(p: Promise<T>, ms: number): Promise<T | typeof CALL_TIMED_OUT> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<typeof CALL_TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(CALL_TIMED_OUT), ms);
  });
  try {
    return await Promise.race([p, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** A short, secret-free description of a thrown value: its type and code, never its message. */
export function describeThrown(err: unknown): string {
  if (isConnectorFailure(err)) return `ConnectorFailure ${err.code}`;
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return `${/^[A-Za-z0-9_$]{1,64}$/.test(err.name) ? err.name : 'Error'}${typeof code === 'string' && /^[a-z][a-z0-9_.]{0,127}$/.test(code) ? ` ${code}` : ''}`;
  }
  return typeof err;
}
