/**
 * Building blocks of the conformance kit, usable in an author's own tests:
 * recorded execution contexts ("makeContext" helpers), a credential
 * provider that plants one secret and records its use, and an evidence
 * store that keeps every output, failure, checkpoint, cursor and log line in
 * all the forms in which they could leak a secret.
 */
import { format, inspect } from 'node:util';
import type { Action, Capability, ProviderOperationRef } from '../../protocol/index.js';
import type { CredentialProvider, CredentialResolutionScope } from '../../ports/credentials.js';
import { reservationIdentity } from '../../ports/idempotency-store.js';
import { createExecutionContext, type ExecutionAttempt, type ExecutionFacilities, type OriginalRequestIdentity, type TrustedAttemptState } from '../context.js';
import type { CredentialHandle } from '../credentials/handle.js';
import { credentialsUnavailable } from '../credentials/references.js';
import { ConnectorSecret } from '../credentials/secret.js';
import { isConnectorFailure, toProtocolError } from '../failure.js';
import type { SequencedStreamChunk } from '../stream-chunk.js';

let seq = 0;
/** A global sequence number: orders checkpoints, effects and call settlements across the run. */
export function nextSequence(): number {
  seq += 1;
  return seq;
}

/** Records what a connector published during one attempt. */
export class AttemptRecorder {
  readonly checkpoints: { readonly seq: number; readonly provider_operation: ProviderOperationRef; readonly cursor?: string }[] = [];
  readonly effects: { readonly seq: number; recorded?: boolean }[] = [];
  readonly chunks: SequencedStreamChunk[] = [];
  /** Evaluated synchronously when the connector publishes provider_effect_committed. */
  onEffect: (() => boolean | Promise<boolean>) | undefined;
  readonly #pending: Promise<void>[] = [];

  facilities(): ExecutionFacilities {
    return {
      transaction_checkpoints: {
        checkpoint: async (input) => {
          this.checkpoints.push({
            seq: nextSequence(),
            provider_operation: { ...input.provider_operation },
            ...(input.reconciliation_cursor !== undefined ? { cursor: input.reconciliation_cursor } : {}),
          });
        },
      },
      provider_effect_observer: {
        provider_effect_committed: () => {
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
  readonly credential_handle: CredentialHandle;
  readonly recorder: AttemptRecorder;
  /** Deadline from now (default 10 000 ms). */
  readonly attempt_timeout_ms?: number;
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
    tenant: { tenant_id: opts.tenant_id },
    credential: opts.credential_handle,
    deadline_at: new Date(now + (opts.attempt_timeout_ms ?? 10_000)),
    // As the runtime does: the reservation's scope-unique identity (tenant, principal, key).
    ...(action.idempotency_key !== undefined
      ? {
          idempotency: {
            key: action.idempotency_key,
            reservation_id: reservationIdentity({ tenant_id: opts.tenant_id, principal_kind: principal.kind, principal_id: principal.id, key: action.idempotency_key }),
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
            ...(opts.provider_operation !== undefined ? { provider_operation: opts.provider_operation, provider_operation_id: opts.provider_operation.operation_id } : {}),
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
  if (opts.cancelled === true) attempt.cancel(new Error('conformance probe: cancelled before the call'));
  return attempt;
}

/**
 * A credential provider holding ONE planted secret for one handle and one
 * tenant. It records every resolution and every secret it hands out, so the
 * kit can check that resolution happened at the edge, for the verified
 * tenant, and that every secret was disposed.
 */
export class PlantedCredentialProvider implements CredentialProvider {
  readonly resolutions: { readonly handle: string; readonly scope: CredentialResolutionScope }[] = [];
  readonly issued: ConnectorSecret[] = [];
  readonly #handle: CredentialHandle;
  readonly #tenant: string;
  readonly #secret: string;

  constructor(handle: CredentialHandle, tenant_id: string, secret: string) {
    this.#handle = handle;
    this.#tenant = tenant_id;
    this.#secret = secret;
  }

  async resolve(handle: CredentialHandle, scope: CredentialResolutionScope): Promise<ConnectorSecret> {
    this.resolutions.push({ handle: handle.id, scope: { ...scope } });
    if (handle.id !== this.#handle.id || scope.tenant_id !== this.#tenant) throw credentialsUnavailable(handle, scope, 'credentials:conformance', 'no_reference');
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
