/**
 * Reference connector 2: a hand-written connector built with defineConnector
 * over the in-process TicketDesk (ticket-desk.ts). It is the second subject
 * of the conformance kit and the connector the local demo can run without
 * any network. See README.md next to this file.
 *
 * - `tickets.create`: invoke (execute), plan (local preview), commit, cancel
 *   and reconcile, retry with downstream idempotency. The desk accepts the
 *   creation and returns an operation ID; the connector checkpoints it and
 *   only then waits for the desk to process the operation. After processing
 *   it publishes provider_effect_committed, then returns.
 * - `tickets.search`: a streaming read (one `data` chunk per ticket).
 *
 * The desk token is resolved per call through the deployment
 * CredentialProvider; its bytes are handed to the desk (which authenticates
 * synchronously) and the secret is disposed before the answer is awaited.
 */
import * as z from 'zod/mini';
import type { ProviderOperationRef } from '@aip-runtime/connector-sdk/protocol';
import {
  type CredentialProvider,
  type ActionExecutionContext,
  timeoutRetryable,
  defineCapability,
  defineConnector,
  type DefinedConnector,
  type HandlerCall,
  ConnectorFailure,
  isConnectorFailure,
  implementationSupport,
  type CancelOutcome,
  type ReconciliationResult,
  downstreamIdempotencyKey,
} from '@aip-runtime/connector-sdk';
import { type TicketDesk, TicketDeskError, type DeskAnswer, type DeskOperation } from './ticket-desk.js';

export const TICKET_DESK_PROVIDER = 'ticket-desk';
/** How long before the attempt deadline the connector stops waiting for the desk and reports the lost wait itself. */
export const DESK_WAIT_MARGIN_MS = 250;
export const DEFAULT_TICKETS_CREDENTIAL_HANDLE = 'tickets/api_token';

/** One structured log line (identifiers only). */
export interface TicketsLogLine {
  readonly event: 'desk_request' | 'operation_checkpointed' | 'effect_committed';
  readonly capability_id: string;
  readonly action_id: string;
  readonly outcome?: string;
  readonly provider_request_id?: string;
  readonly provider_operation_id?: string;
}

export interface TicketsConnectorOptions {
  readonly desk: TicketDesk;
  readonly credentials: CredentialProvider;
  readonly connectorId?: string;
  readonly logger?: (line: TicketsLogLine) => void;
}

const CreateInput = z.strictObject({
  title: z.string().check(z.minLength(1), z.maxLength(200)),
  body: z.optional(z.string().check(z.maxLength(5000))),
  priority: z._default(z.enum(['low', 'normal', 'high']), 'normal'),
});
const CreateOutput = z.strictObject({
  ticket_id: z.string(),
  operation_id: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed', 'canceled']),
});
const CreatePreview = z.strictObject({
  fidelity: z.literal('preview'),
  would_create: z.strictObject({ title: z.string(), priority: z.enum(['low', 'normal', 'high']) }),
});
const SearchInput = z.strictObject({ query: z.string().check(z.maxLength(200)) });
const SearchOutput = z.strictObject({ count: z.int().check(z.gte(0)) });

function source(id: string): string {
  return `connector:${id}`;
}

/** Builds the tickets connector (a DefinedConnector). */
export function createTicketsConnector(options: TicketsConnectorOptions): DefinedConnector {
  const { desk, credentials } = options;
  const connector_id = options.connectorId ?? 'tickets';
  /** Operations learned per attempt context, for cancel_typed (never credentials). */
  const retained = new WeakMap<ActionExecutionContext, ProviderOperationRef>();

  const log = (line: TicketsLogLine): void => {
    try {
      options.logger?.(line);
    } catch {
      // a logger's failure is not the connector's
    }
  };

  /** Calls the desk with the token at the edge; the secret is disposed before the answer is awaited. */
  const withToken = async <T>(call: HandlerCall, fn: (token: Uint8Array) => Promise<T>): Promise<T> => {
    const boxed = await call.withSecret((secret) => secret.withBytes((bytes) => ({ pending: fn(bytes) })));
    return boxed.pending;
  };

  const deskFailure = (call: HandlerCall, err: unknown, extra: { mutation: boolean; ref?: ProviderOperationRef; retryAllowed: boolean }): ConnectorFailure => {
    if (isConnectorFailure(err)) return err;
    const refs = extra.ref ? { provider_operation: extra.ref } : {};
    if (!(err instanceof TicketDeskError)) throw err;
    const rid = { provider_request_id: err.request_id };
    switch (err.type) {
      case 'unauthorized':
        return call.failure({ code: 'connector.provider_auth_failed', ...rid, ...refs, redacted_details: { desk_error: err.type } });
      case 'unavailable':
        // The desk answers `unavailable` before it records anything.
        return call.failure({ code: 'connector.provider_unavailable', ...rid, ...refs, redacted_details: { desk_error: err.type } });
      case 'connection_lost':
        return call.failure({
          code: 'connector.provider_connection_lost',
          retryable: extra.retryAllowed,
          uncertain_outcome: extra.mutation,
          ...rid,
          ...refs,
          redacted_details: { desk_error: err.type },
        });
      case 'aborted':
        return call.failure({
          code: 'connector.attempt_cancelled',
          category: 'conflict',
          retryable: false,
          uncertain_outcome: extra.mutation && extra.ref !== undefined,
          ...rid,
          ...refs,
          redacted_details: { desk_error: err.type },
        });
      case 'not_found':
        return call.failure({ code: 'connector.provider_rejected', category: 'not_found', ...rid, ...refs, redacted_details: { desk_error: err.type } });
      case 'conflict':
        return call.failure({ code: 'connector.provider_rejected', category: 'conflict', ...rid, ...refs, redacted_details: { desk_error: err.type } });
      case 'invalid':
        return call.failure({ code: 'connector.provider_rejected', category: 'validation', ...rid, ...refs, redacted_details: { desk_error: err.type } });
    }
  };

  const cancelledBeforeStart = (call: HandlerCall): ConnectorFailure =>
    call.failure({ code: 'connector.attempt_cancelled', category: 'conflict', retryable: false, redacted_details: { request_sent: 'no' } });

  /** The shared body of invoke (execute) and commit. */
  const create = async (input: z.output<typeof CreateInput>, ctx: ActionExecutionContext, call: HandlerCall): Promise<z.input<typeof CreateOutput>> => {
    if (ctx.cancellation.aborted) throw cancelledBeforeStart(call);
    const retryAllowed = timeoutRetryable(createSpec.capability, implementationSupport({ retry: true }), call.action);
    // Derived from the runtime's scope-unique reservation (ctx.idempotency.reservation_id: tenant, principal,
    // key), never from the caller's raw key: two principals reusing one key are two creations, not one.
    const idempotency_key = downstreamIdempotencyKey(call.action, ctx, connector_id, 'effect');
    let accepted: DeskAnswer<DeskOperation>;
    try {
      accepted = await withToken(call, (token) =>
        desk.submit(token, { idempotency_key, title: input.title, ...(input.body !== undefined ? { body: input.body } : {}), priority: input.priority }),
      );
    } catch (err) {
      log({
        event: 'desk_request',
        capability_id: call.capability_id,
        action_id: call.action.id,
        outcome: err instanceof TicketDeskError ? err.type : 'error',
      });
      throw deskFailure(call, err, { mutation: true, retryAllowed });
    }
    log({ event: 'desk_request', capability_id: call.capability_id, action_id: call.action.id, outcome: 'accepted', provider_request_id: accepted.request_id });
    const ref: ProviderOperationRef = { provider: TICKET_DESK_PROVIDER, operation_id: accepted.value.operation_id, request_id: accepted.request_id };
    retained.set(ctx, ref);
    // The operation ID exists: checkpoint it BEFORE waiting for the desk to process it
    // (possible exactly in a transactional mode with an attempt status: execute, commit).
    if (ctx.can_checkpoint) {
      try {
        await ctx.transaction_checkpoint.checkpoint(ref);
      } catch {
        throw call.failure({
          code: 'connector.unexpected_error',
          message: 'the provider operation could not be checkpointed',
          uncertain_outcome: true,
          provider_operation: ref,
          provider_request_id: accepted.request_id,
          redacted_details: { reason: 'checkpoint_failed' },
        });
      }
      log({ event: 'operation_checkpointed', capability_id: call.capability_id, action_id: call.action.id, provider_operation_id: ref.operation_id });
    }
    // Wait for processing, bounded by the deadline minus a margin and by cancellation: a lost wait is this
    // connector's typed failure (`sla.timeout_exceeded` / `connector.attempt_cancelled`), uncertain, with the operation.
    let done: DeskAnswer<DeskOperation>;
    try {
      done = await call.withinDeadline((signal) => withToken(call, (token) => desk.wait(token, ref.operation_id, signal)), {
        margin_ms: DESK_WAIT_MARGIN_MS,
        failure: {
          retryable: retryAllowed,
          uncertain_outcome: true,
          provider_operation: ref,
          provider_request_id: accepted.request_id,
          redacted_details: { waiting_for: 'desk_processing' },
        },
      });
    } catch (err) {
      throw deskFailure(call, err, { mutation: true, ref, retryAllowed });
    }
    const op = done.value;
    if (op.status === 'succeeded' && op.ticket_id !== null) {
      ctx.execution_checkpoints.provider_effect_committed();
      log({ event: 'effect_committed', capability_id: call.capability_id, action_id: call.action.id, provider_operation_id: ref.operation_id });
      return { ticket_id: op.ticket_id, operation_id: op.operation_id, status: op.status };
    }
    throw call.failure({
      code: 'connector.provider_operation_failed',
      provider_operation: ref,
      provider_request_id: done.request_id,
      redacted_details: { provider_status: op.status },
    });
  };

  const knownOperation = (ctx: ActionExecutionContext): ProviderOperationRef | undefined => {
    const tx = ctx.transaction;
    if (tx?.provider_operation !== undefined) return tx.provider_operation;
    if (tx?.provider_operation_id !== undefined) return { provider: TICKET_DESK_PROVIDER, operation_id: tx.provider_operation_id };
    return retained.get(ctx);
  };

  const createSpec = defineCapability({
    id: 'tickets.create',
    description: 'Open a ticket on the in-process ticket desk.',
    input: CreateInput,
    output: CreateOutput,
    preview: CreatePreview,
    contract: {
      transaction: { modes: ['dry_run', 'plan', 'execute', 'commit', 'reconcile'], dry_run_fidelity: 'policy_and_schema', requires_plan_before_commit: false },
      execution: { supports_cancel: true, supports_streaming: false, supports_retry: true, timeout_ms: 5_000 },
      credentials: { required: true, kind: 'api_key' },
      idempotency: { required: false, downstream_idempotent: true },
      data: { redaction_required: false, redact_pointers: ['/body'] },
    },
    retry: { downstream_idempotency: true },
  });
  const createCapability = createSpec.implement({
    invoke: create,
    commit: create,
    plan: (input, ctx, call) => {
      if (ctx.cancellation.aborted) throw cancelledBeforeStart(call);
      return { fidelity: 'preview', would_create: { title: input.title, priority: input.priority } };
    },
    cancel: async (_input, ctx, call): Promise<CancelOutcome> => {
      const ref = knownOperation(ctx);
      if (ref === undefined) throw call.failure({ code: 'connector.provider_operation_unknown', redacted_details: { reason: 'no_provider_operation' } });
      try {
        const answer = await withToken(call, (token) => desk.cancel(token, ref.operation_id));
        return { accepted: true, provider_operation: ref, redacted_details: { provider_status: answer.value.status } };
      } catch (err) {
        if (err instanceof TicketDeskError && err.type === 'conflict')
          return { accepted: false, provider_operation: ref, redacted_details: { reason: 'operation_final' } };
        throw deskFailure(call, err, { mutation: true, ref, retryAllowed: false });
      }
    },
    reconcile: async (_input, ctx, call): Promise<ReconciliationResult<z.input<typeof CreateOutput>>> => {
      if (ctx.cancellation.aborted) throw cancelledBeforeStart(call);
      const ref = knownOperation(ctx);
      if (ref === undefined) throw call.failure({ code: 'connector.reconcile_requires_provider_operation' });
      let answer: DeskAnswer<DeskOperation>;
      try {
        answer = await withToken(call, (token) => desk.operation(token, ref.operation_id));
      } catch (err) {
        throw deskFailure(call, err, { mutation: false, ref, retryAllowed: false });
      }
      const op = answer.value;
      const evidence = { provider_status: op.status, provider_request_id: answer.request_id };
      if (op.status === 'succeeded' && op.ticket_id !== null) {
        return {
          terminal: true,
          original_commit_completed: true,
          output: { ticket_id: op.ticket_id, operation_id: op.operation_id, status: op.status },
          evidence,
        };
      }
      if (op.status === 'failed' || op.status === 'canceled') return { terminal: true, original_commit_completed: false, evidence };
      return { terminal: false, cursor: op.updated_at, evidence };
    },
  });

  const searchCapability = defineCapability({
    id: 'tickets.search',
    description: 'Stream the tickets whose title contains the query.',
    input: SearchInput,
    output: SearchOutput,
    contract: {
      execution: { supports_cancel: false, supports_streaming: true, supports_retry: true, timeout_ms: 5_000 },
      credentials: { required: true, kind: 'api_key' },
    },
    retry: { downstream_idempotency: true },
  }).implement({
    stream: async function* (input, ctx, call) {
      if (ctx.cancellation.aborted) throw cancelledBeforeStart(call);
      let found: DeskAnswer<readonly { ticket_id: string; title: string; priority: string; status: string }[]>;
      try {
        found = await withToken(call, (token) => desk.search(token, input.query));
      } catch (err) {
        throw deskFailure(call, err, { mutation: false, retryAllowed: false });
      }
      for (const t of found.value) {
        yield { type: 'data', data: { ticket_id: t.ticket_id, title: t.title, priority: t.priority, status: t.status } };
      }
      return { count: found.value.length };
    },
  });

  return defineConnector({
    id: connector_id,
    version: '1.0.0',
    capabilities: [createCapability, searchCapability],
    credentials,
    map_error: (err, operation) =>
      err instanceof TicketDeskError
        ? new ConnectorFailure({
            code: 'connector.provider_rejected',
            operation,
            source: source(connector_id),
            provider_request_id: err.request_id,
            redacted_details: { desk_error: err.type },
          })
        : undefined,
  });
}
