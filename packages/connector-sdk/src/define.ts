/**
 * defineCapability / defineConnector: the authoring helper.
 *
 * An author declares each capability with input and output schemas (any
 * Standard Schema: zod 4, valibot, arktype, ...; see ConnectorSchema) and
 * writes only the handlers it supports. Handler `input` is typed from the
 * input schema; return values are typed to (and validated against) the
 * output schema. The manifest carries JSON Schemas (zod's toJSONSchema for a
 * zod schema, Standard JSON Schema otherwise), and the nine implementation
 * flags are DERIVED from the handlers that exist (plus two explicit
 * declarations, retry and approval), so a manifest cannot claim an operation
 * that is not implemented.
 * defineConnector also runs manifest admission at definition time and
 * refuses a contract that advertises more than the handlers implement.
 */
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import * as z from './common/zod.js';
import { deepFreeze } from './common/deep-freeze.js';
import { joinIssuePath } from './common/issues.js';
import { AipError, isAipError } from './errors/aip-error.js';
import {
  CapabilitySchema,
  fidelityInvokesHandler,
  isJsonValue,
  type DryRunFidelity,
  type TransactionMode,
  type Action,
  type ActionResult,
  type Capability,
  type JsonObject,
  type JsonValue,
  type ProtocolError,
} from './protocol/index.js';
import type { CredentialProvider } from './ports/credentials.js';
import { admitManifest, formatAdmissionIssue } from './admission.js';
import { FrozenConnectorBase, connectorSource, defaultHealth } from './base.js';
import { contextAttemptEvidence, type ActionExecutionContext } from './context.js';
import { withCredentialRefresh } from './credentials/resolve.js';
import type { ConnectorSecret } from './credentials/secret.js';
import {
  ConnectorFailure,
  escalateAfterEffect,
  isConnectorFailure,
  isSdkFailure,
  isTimeoutFailure,
  markSdkFailure,
  timeoutNeverRetryable,
  toConnectorFailure,
  toProtocolError,
  withFailureFields,
  type ConnectorFailureInit,
} from './failure.js';
import {
  CancelOutcomeSchema,
  type CancelOutcome,
  type ConnectorContext,
  type ConnectorEmission,
  type EmitReceipt,
  type ConnectorHealth,
  type IngestResult,
  type ProviderEvent,
  type ReconcileLookup,
  type ReconciliationResult,
  DEFAULT_RECONCILE_LOOKUP,
  RECONCILE_LOOKUPS,
} from './interfaces.js';
import type { ConnectorManifest, ManifestResource } from './manifest.js';
import { SIDE_EFFECTING_OPERATIONS, type ConnectorOperation } from './operations.js';
import type { StreamChunk } from './protocol/stream-chunk.js';
import { implementationSupport, type ImplementationSupport } from './support.js';
import { withinDeadline, type BoundedWork, type WithinDeadlineOptions } from './within-deadline.js';

// ---------------------------------------------------------------------------
// Handler types
// ---------------------------------------------------------------------------

export type MaybePromise<T> = T | Promise<T>;

/**
 * A capability's schema: any Standard Schema (standardschema.dev), so the
 * SDK's types and validation depend on no particular zod: zod 4 (classic or
 * `zod/mini`), valibot, arktype, ... Handlers are typed from its inferred
 * types, and values are validated with its own `~standard.validate`. The
 * manifest needs its JSON Schema: the SDK converts a zod 4 schema itself;
 * another library's schema must implement Standard JSON Schema
 * (`~standard.jsonSchema`), or defineCapability refuses it.
 */
export type ConnectorSchema<Input = unknown, Output = Input> = StandardSchemaV1<Input, Output>;
/*
 * SchemaInput / SchemaOutput read `~standard.types` with a conditional type (not StandardSchemaV1.InferInput): a
 * conditional leaves the schema parameters' variance unmeasured, so a capability of any schemas stays assignable to
 * the type-erased DefinedCapability a connector holds (as with zod's own z.input / z.output).
 */
/** What a schema accepts (a handler returns this for an output schema). */
export type SchemaInput<S> = S extends { readonly '~standard': { readonly types?: { readonly input: infer T } | undefined } } ? T : unknown;
/** What a schema produces (a handler receives this for the input schema). */
export type SchemaOutput<S> = S extends { readonly '~standard': { readonly types?: { readonly output: infer T } | undefined } } ? T : unknown;

/** Per-call helpers handed to every handler as its third argument. */
export interface HandlerCall {
  /** The action being executed (already validated by the runtime). */
  readonly action: Action;
  readonly capability_id: string;
  /** The typed operation this call serves (used in failures). */
  readonly operation: ConnectorOperation;
  /**
   * Resolves ctx.credential through the connector's credential provider for
   * the verified tenant and account, runs `fn`, and disposes the secret.
   * When the handler then fails because the provider refused the credential
   * (`connector.provider_auth_failed`, a `remote_status` of 401 or 403, or a
   * code in ConnectorDefinition.credential_refusal_codes) before any effect
   * was checkpointed, and a refetch finds the credential rotated, the whole
   * handler runs once more with the fresh one: keep the downstream request
   * identical (the attempt's idempotency key) so that the resend is safe.
   */
  withSecret<T>(fn: (secret: ConnectorSecret) => MaybePromise<T>): Promise<T>;
  /** Builds a ConnectorFailure with this call's operation and the connector's source. */
  failure(init: Omit<ConnectorFailureInit, 'operation' | 'source'> & { readonly source?: string }): ConnectorFailure;
  /**
   * `withinDeadline(ctx, work, options)` with this call's operation and the
   * connector's source: waits for `work` no longer than the attempt deadline
   * minus `margin_ms` (default 250) and not past cancellation, failing with a
   * typed `sla.timeout_exceeded` / `connector.attempt_cancelled`.
   */
  withinDeadline<T>(work: BoundedWork<T>, options?: Omit<WithinDeadlineOptions, 'operation' | 'source'>): Promise<T>;
}

/** A handler: validated input, the trusted context, per-call helpers. */
export type Handler<I extends ConnectorSchema, R> = (input: SchemaOutput<I>, ctx: ActionExecutionContext, call: HandlerCall) => MaybePromise<R>;

/**
 * A streaming handler: yield chunks (published through ctx.stream.emit in
 * order) and return the terminal output. When the capability was not
 * admitted with streaming, the chunks are not published and only the
 * terminal output counts.
 */
export type StreamHandler<I extends ConnectorSchema, O extends ConnectorSchema> = (
  input: SchemaOutput<I>,
  ctx: ActionExecutionContext,
  call: HandlerCall,
) => AsyncGenerator<StreamChunk, SchemaInput<O>, void>;

/** The default preview schema: any JSON value. */
export type JsonSchemaType = ConnectorSchema<JsonValue, JsonValue>;

export interface CapabilityHandlers<I extends ConnectorSchema, O extends ConnectorSchema, P extends ConnectorSchema> {
  /** invoke_typed (modes: none, execute, rollback_not_supported). Sets `invocation`. */
  readonly invoke?: Handler<I, SchemaInput<O>>;
  /** Streaming invoke_typed. Sets `invocation` and `streaming`. */
  readonly stream?: StreamHandler<I, O>;
  /** plan_typed (modes dry_run, plan). With `commit`, sets `transaction`. */
  readonly plan?: Handler<I, SchemaInput<P>>;
  /** commit_typed. With `plan`, sets `transaction`. Checkpoint the provider operation before awaiting the response. */
  readonly commit?: Handler<I, SchemaInput<O>>;
  /** compensate_typed. Sets `compensation`. */
  readonly compensate?: Handler<I, SchemaInput<O>>;
  /** cancel_typed: request cancellation of the submitted downstream operation. Sets `cancellation`. */
  readonly cancel?: Handler<I, CancelOutcome>;
  /**
   * reconcile_typed: ask the provider what happened to
   * ctx.transaction.provider_operation_id. Sets `reconciliation`. A plain
   * handler finds the operation by its ID only; the object form
   * `{ lookup: ['provider_operation', 'idempotency_key'], handler }` also
   * declares that it can find it by the original request's idempotency key
   * (`originalIdempotencyKey(ctx, namespace)`), so dispatch runs it without an
   * operation ID when the context carries `transaction.original_request`.
   */
  readonly reconcile?: ReconcileHandler<I, O> | ReconcileDeclaration<I, O>;
}

/** A reconcile handler (see CapabilityHandlers.reconcile). */
export type ReconcileHandler<I extends ConnectorSchema, O extends ConnectorSchema> = Handler<I, ReconciliationResult<SchemaInput<O>>>;

/**
 * A reconcile handler with its lookup declaration. `lookup` lists how the
 * handler can find the provider operation (ReconcileLookup, non-empty): with
 * `'idempotency_key'`, the handler must cope with a context that has no
 * `provider_operation_id` but has `transaction.original_request`, and return
 * the operation it found as `provider_operation`.
 */
export interface ReconcileDeclaration<I extends ConnectorSchema, O extends ConnectorSchema> {
  readonly lookup: readonly ReconcileLookup[];
  readonly handler: ReconcileHandler<I, O>;
}

/** The contract parts of a protocol Capability (everything but identity and schemas). */
export type CapabilityContract = Omit<Capability, 'id' | 'kind' | 'description' | 'input_schema' | 'output_schema'>;

/** What a capability declares: identity, schemas, contract and two explicit flags. */
export interface CapabilitySpec<I extends ConnectorSchema, O extends ConnectorSchema, P extends ConnectorSchema> {
  readonly id: string;
  /** Default `tool`. A `resource` needs no invocation handler. */
  readonly kind?: 'tool' | 'resource';
  readonly description?: string;
  readonly input: I;
  readonly output: O;
  /** Schema of plan/dry-run previews (default: any JSON value). */
  readonly preview?: P;
  /** What the capability advertises: execution, transaction, compensation, approval, credentials, ... */
  readonly contract?: CapabilityContract;
  /** Explicit: retry classification and downstream idempotency are implemented. Sets `retry`. */
  readonly retry?: { readonly downstream_idempotency: true };
  /** Explicit: verified approval evidence and resume behavior are implemented. Sets `approval`. */
  readonly approval?: { readonly verified_evidence: true };
}

/** A spec plus the handlers that implement it. */
export interface CapabilityDefinition<I extends ConnectorSchema, O extends ConnectorSchema, P extends ConnectorSchema> extends CapabilitySpec<I, O, P> {
  readonly handlers: CapabilityHandlers<I, O, P>;
}

/**
 * Step two of defineCapability. The schemas are fixed by step one, so the
 * handlers written here are fully typed: `input` from the input schema, the
 * return value against the output schema (literal unions included).
 */
export interface CapabilityBuilder<I extends ConnectorSchema, O extends ConnectorSchema, P extends ConnectorSchema> {
  readonly spec: CapabilitySpec<I, O, P>;
  /** The protocol Capability this spec advertises. */
  readonly capability: Capability;
  implement(handlers: CapabilityHandlers<I, O, P>): DefinedCapability<I, O, P>;
}

/** A capability ready to be placed in a connector. */
export interface DefinedCapability<
  I extends ConnectorSchema = ConnectorSchema,
  O extends ConnectorSchema = ConnectorSchema,
  P extends ConnectorSchema = JsonSchemaType,
> {
  readonly id: string;
  readonly definition: CapabilityDefinition<I, O, P>;
  /** The protocol Capability advertised in the manifest (JSON Schemas included). */
  readonly capability: Capability;
  /** Flags derived from the handlers (credentials is set by defineConnector). */
  readonly derived_support: ImplementationSupport;
}

/** The handler input type of a defined capability. */
export type CapabilityInput<C> = C extends DefinedCapability<infer I, ConnectorSchema, ConnectorSchema> ? SchemaOutput<I> : never;
/** The output type a defined capability's handlers return. */
export type CapabilityOutput<C> = C extends DefinedCapability<ConnectorSchema, infer O, ConnectorSchema> ? SchemaInput<O> : never;

// ---------------------------------------------------------------------------
// defineCapability
// ---------------------------------------------------------------------------

function definitionError(message: string, details: Record<string, unknown> = {}): AipError {
  return new AipError('connector.definition_invalid', message, { details });
}

/** A zod 4 schema (classic or mini): the SDK converts it with its own zod, as the repository always has. */
function asZodSchema(schema: ConnectorSchema): z.core.$ZodType | undefined {
  return schema['~standard'].vendor === 'zod' && typeof (schema as { _zod?: unknown })._zod === 'object' ? (schema as unknown as z.core.$ZodType) : undefined;
}

function toJsonSchema(schema: ConnectorSchema, io: 'input' | 'output', where: string): JsonObject {
  const std = schema?.['~standard'] as (StandardSchemaV1.Props & Partial<StandardJSONSchemaV1.Props>) | undefined;
  if (std === undefined || typeof std.validate !== 'function') {
    throw definitionError(`the ${where} schema is not a Standard Schema (zod 4, valibot, arktype, ...)`, { schema: where });
  }
  const zod = asZodSchema(schema);
  if (zod === undefined && std.jsonSchema === undefined) {
    throw definitionError(
      `the ${where} schema (${String(std.vendor)}) has no JSON Schema converter: use zod 4, or a library that implements Standard JSON Schema`,
      {
        schema: where,
      },
    );
  }
  let out: unknown;
  try {
    out = zod !== undefined ? z.toJSONSchema(zod, { io, target: 'draft-2020-12' }) : std.jsonSchema?.[io]({ target: 'draft-2020-12' });
  } catch {
    throw definitionError(`the ${where} schema cannot be represented as JSON Schema`, { schema: where });
  }
  if (typeof out !== 'object' || out === null || Array.isArray(out) || !isJsonValue(out)) {
    throw definitionError(`the ${where} schema did not produce a JSON Schema object`, { schema: where });
  }
  return out as JsonObject;
}

/** Validates with the schema's own `~standard.validate`: synchronously when the schema answers synchronously (zod does, without async refinements). */
function validateWith<T>(schema: ConnectorSchema, value: unknown, then: (result: StandardSchemaV1.Result<unknown>) => T): T | Promise<T> {
  const result = schema['~standard'].validate(value);
  return result instanceof Promise ? result.then(then) : then(result);
}

/** Where the issues are (JSON Pointer-like paths), never what the value was. */
function issuePaths(issues: readonly StandardSchemaV1.Issue[]): string[] {
  return issues
    .map((i) =>
      joinIssuePath(
        (i.path ?? []).map((seg) => (typeof seg === 'object' ? seg.key : seg)),
        '/',
      ),
    )
    .slice(0, 20);
}

/**
 * Which handler a transaction mode needs. dry_run and plan need `plan` only
 * at downstream_validation / full_simulation fidelity (for schema_only and
 * policy_and_schema the runtime builds the preview itself).
 */
function modeImplemented(mode: TransactionMode, h: CapabilityHandlers<ConnectorSchema, ConnectorSchema, ConnectorSchema>, fidelity: DryRunFidelity): boolean {
  switch (mode) {
    case 'dry_run':
    case 'plan':
      return !fidelityInvokesHandler(fidelity) || h.plan !== undefined;
    case 'execute':
    case 'rollback_not_supported':
      return h.invoke !== undefined || h.stream !== undefined;
    case 'commit':
      return h.commit !== undefined;
    case 'compensate':
      return h.compensate !== undefined;
    case 'reconcile':
      return h.reconcile !== undefined;
  }
}

/**
 * Derives the flags a capability's handlers implement (credentials is set by
 * defineConnector from the credential provider).
 *
 * `transaction`: with a transaction contract, true when a handler exists for
 * every declared mode; without one, true when both `plan` and `commit` exist.
 */
export function deriveSupport(
  def: Pick<CapabilityDefinition<ConnectorSchema, ConnectorSchema, ConnectorSchema>, 'handlers' | 'retry' | 'approval' | 'contract'>,
  credentials = false,
): ImplementationSupport {
  const h = def.handlers;
  const invocation = h.invoke !== undefined || h.stream !== undefined;
  const tx = def.contract?.transaction;
  const transaction = tx !== undefined ? tx.modes.every((m) => modeImplemented(m, h, tx.dry_run_fidelity)) : h.plan !== undefined && h.commit !== undefined;
  return implementationSupport({
    invocation,
    cancellation: h.cancel !== undefined,
    streaming: h.stream !== undefined,
    retry: def.retry?.downstream_idempotency === true && (invocation || h.commit !== undefined),
    transaction,
    reconciliation: h.reconcile !== undefined,
    compensation: h.compensate !== undefined,
    approval: def.approval?.verified_evidence === true,
    credentials,
  });
}

/**
 * Declares one capability in two steps:
 *
 *     const charge = defineCapability({ id, input, output, contract })
 *       .implement({ invoke: async (input, ctx, call) => ..., reconcile: ... });
 *
 * Step one infers the schema types and builds the advertised Capability
 * (JSON Schemas, see toJsonSchema); step two types the handlers from them.
 * (A single call cannot do both: TypeScript would type the handlers before
 * the output schema is known and widen literal results.)
 */
export function defineCapability<I extends ConnectorSchema, O extends ConnectorSchema, P extends ConnectorSchema = JsonSchemaType>(
  spec: CapabilitySpec<I, O, P>,
): CapabilityBuilder<I, O, P> {
  const kind = spec.kind ?? 'tool';
  const candidate = {
    id: spec.id,
    kind,
    ...(spec.description !== undefined ? { description: spec.description } : {}),
    input_schema: toJsonSchema(spec.input, 'input', `${String(spec.id)} input`),
    output_schema: toJsonSchema(spec.output, 'output', `${String(spec.id)} output`),
    ...(spec.contract ?? {}),
  };
  const parsed = CapabilitySchema.safeParse(candidate);
  if (!parsed.success) {
    throw definitionError(`capability ${String(spec.id)} is not a valid Capability`, {
      issues: parsed.error.issues.map((i) => `${joinIssuePath(i.path, '.')}: ${i.message}`).slice(0, 20),
    });
  }
  const capability = deepFreeze(parsed.data);
  return Object.freeze({
    spec,
    capability,
    implement(handlers: CapabilityHandlers<I, O, P>): DefinedCapability<I, O, P> {
      if (spec.retry !== undefined && handlers.invoke === undefined && handlers.stream === undefined && handlers.commit === undefined) {
        throw definitionError(`capability ${spec.id} declares retry without an invoke, stream or commit handler`);
      }
      const reconcile: unknown = handlers.reconcile;
      if (reconcile !== undefined && typeof reconcile !== 'function') {
        const r = reconcile as { lookup?: unknown; handler?: unknown };
        const lookup = r.lookup;
        if (typeof r.handler !== 'function') throw definitionError(`capability ${spec.id}: reconcile needs a handler function`);
        if (!Array.isArray(lookup) || lookup.length === 0 || lookup.some((l) => !(RECONCILE_LOOKUPS as readonly unknown[]).includes(l))) {
          throw definitionError(`capability ${spec.id}: reconcile.lookup must list one or more of ${RECONCILE_LOOKUPS.join(', ')}`);
        }
      }
      const definition: CapabilityDefinition<I, O, P> = Object.freeze({ ...spec, handlers: Object.freeze({ ...handlers }) });
      return Object.freeze({ id: spec.id, definition, capability, derived_support: deriveSupport(definition) });
    },
  });
}

// ---------------------------------------------------------------------------
// defineConnector
// ---------------------------------------------------------------------------

// The connector stores capabilities type-erased; handlers were checked at defineCapability.
type AnyCapability = DefinedCapability<ConnectorSchema, ConnectorSchema, ConnectorSchema>;
type ErasedHandler = (input: unknown, ctx: ActionExecutionContext, call: HandlerCall) => unknown;
type ErasedHandlers = {
  readonly [K in Exclude<keyof CapabilityHandlers<ConnectorSchema, ConnectorSchema, ConnectorSchema>, 'reconcile'>]?: ErasedHandler;
} & { readonly reconcile?: ErasedHandler | { readonly lookup: readonly ReconcileLookup[]; readonly handler: ErasedHandler } };

export interface ConnectorDefinition {
  readonly id: string;
  readonly version: string;
  /** Type-erased: each capability keeps its own input and output types, which a list of them cannot name. */
  readonly capabilities: readonly AnyCapability[];
  readonly resources?: readonly ManifestResource[];
  /** The deployment credential provider. Its presence sets `credentials` on every capability. */
  readonly credentials?: CredentialProvider;
  /**
   * Maps a provider error into a ConnectorFailure (return undefined to use the
   * SDK default: `connector.unexpected_error`, uncertain for side-effecting operations).
   * It receives the failing call's action and context (undefined for
   * emission and ingestion, which have no action); a two-argument function
   * still fits.
   */
  readonly map_error?: MapError;
  /**
   * The failure codes (after map_error) by which a handler reports that the
   * provider refused the credential, besides `connector.provider_auth_failed`
   * and any failure whose `remote_status` is 401 or 403. Such a failure of a
   * handler that resolved the credential (`call.withSecret`), with no provider
   * effect checkpointed in the attempt and no chunk streamed, makes the
   * connector ask the credential provider to fetch the credential afresh; if
   * it was rotated, the handler runs once more (see withCredentialRefresh).
   */
  readonly credential_refusal_codes?: readonly string[];
  /** Stronger readiness than "discovery succeeds"; return operator-safe detail. */
  readonly health?: (ctx: ConnectorContext) => Promise<ConnectorHealth>;
  /** emit_typed. */
  readonly emit?: (emission: ConnectorEmission, ctx: ActionExecutionContext) => Promise<EmitReceipt>;
  /** ingest_typed. */
  readonly ingest?: (event: ProviderEvent, ctx: ActionExecutionContext) => Promise<IngestResult>;
  /**
   * `enforce` (default): refuse, at definition time, a contract that
   * advertises behaviour the handlers do not implement. `defer`: leave that
   * to the runtime's admission (e.g. to test admission itself).
   */
  readonly admission?: 'enforce' | 'defer';
}

/** A connector's own error mapping (see ConnectorDefinition.map_error). */
export type MapError = (
  err: unknown,
  operation: ConnectorOperation,
  action: Action | undefined,
  ctx: ActionExecutionContext | undefined,
) => ConnectorFailure | undefined;

/** Operations whose failure can follow a provider effect of the same attempt. */
const EFFECT_OPERATIONS: ReadonlySet<ConnectorOperation> = new Set<ConnectorOperation>(['invocation', 'transaction_commit', 'compensation']);

/** A FrozenConnector built by defineConnector. */
export class DefinedConnector extends FrozenConnectorBase {
  readonly id: string;
  readonly version: string;
  readonly #caps: ReadonlyMap<string, AnyCapability>;
  readonly #support: ReadonlyMap<string, ImplementationSupport>;
  readonly #manifest: ConnectorManifest;
  readonly #def: ConnectorDefinition;
  /** Handler runs that published a stream chunk (never run again after a credential refusal). */
  readonly #streamed = new WeakSet<HandlerCall>();

  /** @internal use defineConnector */
  constructor(def: ConnectorDefinition) {
    super();
    this.id = def.id;
    this.version = def.version;
    this.#def = def;
    const caps = new Map<string, AnyCapability>();
    const support = new Map<string, ImplementationSupport>();
    for (const c of def.capabilities) {
      if (caps.has(c.id)) throw definitionError(`duplicate capability ${c.id}`, { capability_id: c.id });
      caps.set(c.id, c);
      support.set(c.id, implementationSupport({ ...c.derived_support, credentials: def.credentials !== undefined }));
    }
    this.#caps = caps;
    this.#support = support;
    const manifest: ConnectorManifest = {
      connector_id: def.id,
      version: def.version,
      capabilities: [...caps.values()].map((c) => c.capability),
      ...(def.resources !== undefined ? { resources: [...def.resources] } : {}),
      implementation_support: Object.fromEntries(support),
    };
    const report = admitManifest(manifest);
    const schemaProblem = report.issues.find((i) => i.rule === 'manifest matches the ConnectorManifest schema');
    if (schemaProblem !== undefined) throw definitionError('the connector manifest is invalid', { issues: report.issues.map(formatAdmissionIssue) });
    if ((def.admission ?? 'enforce') === 'enforce' && !report.admitted) {
      throw new AipError('connector.admission_rejected', `connector ${def.id} advertises behaviour it does not implement`, {
        details: { issues: report.issues.map(formatAdmissionIssue) },
      });
    }
    this.#manifest = deepFreeze(structuredClone(manifest));
  }

  /** The manifest (the same for every connector context). */
  manifest(): ConnectorManifest {
    return this.#manifest;
  }

  async discover(_ctx: ConnectorContext): Promise<ConnectorManifest> {
    return this.#manifest;
  }

  override health(ctx: ConnectorContext): Promise<ConnectorHealth> {
    return this.#def.health ? this.#def.health(ctx) : defaultHealth(this, ctx);
  }

  implementation_support(capability_id: string): ImplementationSupport | undefined {
    return this.#support.get(capability_id);
  }

  /**
   * How the capability's reconcile handler finds the provider operation: its
   * declared `lookup`, `['provider_operation']` for a plain handler, `[]`
   * without one (or for an unknown capability).
   */
  reconcile_lookup(capability_id: string): readonly ReconcileLookup[] {
    const r = (this.#caps.get(capability_id)?.definition.handlers as ErasedHandlers | undefined)?.reconcile;
    if (r === undefined) return Object.freeze([]);
    if (typeof r === 'function') return DEFAULT_RECONCILE_LOOKUP;
    return Object.freeze(RECONCILE_LOOKUPS.filter((l) => r.lookup.includes(l)));
  }

  override map_error(err: unknown, operation: ConnectorOperation = 'invocation', action?: Action, ctx?: ActionExecutionContext): ProtocolError {
    return toProtocolError(this.#normalize(err, operation, action, ctx).failure);
  }

  async invoke_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#run(
      action,
      ctx,
      'invocation',
      async (cap, input, call) => {
        const h = cap.definition.handlers as ErasedHandlers;
        if (h.stream !== undefined && (h.invoke === undefined || ctx.stream.enabled)) {
          return this.#completed(action, cap.definition.output, await this.#drainStream(h.stream, input, ctx, call), 'invocation');
        }
        if (h.invoke === undefined) throw this.unsupported('invocation', action);
        return this.#completed(action, cap.definition.output, await h.invoke(input, ctx, call), 'invocation');
      },
      (h) => h.invoke !== undefined || h.stream !== undefined,
    );
  }

  override async plan_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#run(
      action,
      ctx,
      'transaction_plan',
      async (cap, input, call) => {
        const h = cap.definition.handlers as ErasedHandlers;
        if (h.plan === undefined) throw this.unsupported('transaction_plan', action);
        const preview = await h.plan(input, ctx, call);
        return this.#completed(action, cap.definition.preview, preview, 'transaction_plan');
      },
      (h) => h.plan !== undefined,
    );
  }

  override async commit_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#run(
      action,
      ctx,
      'transaction_commit',
      async (cap, input, call) => {
        const h = cap.definition.handlers as ErasedHandlers;
        if (h.commit === undefined) throw this.unsupported('transaction_commit', action);
        return this.#completed(action, cap.definition.output, await h.commit(input, ctx, call), 'transaction_commit');
      },
      (h) => h.commit !== undefined,
    );
  }

  override async compensate_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#run(
      action,
      ctx,
      'compensation',
      async (cap, input, call) => {
        const h = cap.definition.handlers as ErasedHandlers;
        if (h.compensate === undefined) throw this.unsupported('compensation', action);
        return this.#completed(action, cap.definition.output, await h.compensate(input, ctx, call), 'compensation');
      },
      (h) => h.compensate !== undefined,
    );
  }

  override async cancel_typed(action: Action, ctx: ActionExecutionContext): Promise<CancelOutcome> {
    return this.#run(
      action,
      ctx,
      'cancellation',
      async (cap, input, call) => {
        const h = cap.definition.handlers as ErasedHandlers;
        if (h.cancel === undefined) throw this.unsupported('cancellation', action);
        const out = CancelOutcomeSchema.safeParse(await h.cancel(input, ctx, call));
        if (!out.success) throw this.#invalidOutput('cancellation', out.error.issues);
        return out.data;
      },
      (h) => h.cancel !== undefined,
    );
  }

  override async reconcile_typed(action: Action, ctx: ActionExecutionContext): Promise<ReconciliationResult> {
    return this.#run(
      action,
      ctx,
      'reconciliation',
      async (cap, input, call) => {
        const h = cap.definition.handlers as ErasedHandlers;
        if (h.reconcile === undefined) throw this.unsupported('reconciliation', action);
        const handler = typeof h.reconcile === 'function' ? h.reconcile : h.reconcile.handler;
        const r = (await handler(input, ctx, call)) as ReconciliationResult<unknown>;
        if (r?.terminal === true && r.output !== undefined) {
          const output = await validateWith(cap.definition.output, r.output, (out) => {
            if (out.issues !== undefined) throw this.#invalidOutput('reconciliation', out.issues);
            if (!isJsonValue(out.value)) throw this.#invalidOutput('reconciliation');
            return out.value;
          });
          return { ...r, output };
        }
        return r as ReconciliationResult;
      },
      (h) => h.reconcile !== undefined,
    );
  }

  override async emit_typed(emission: ConnectorEmission, ctx: ActionExecutionContext): Promise<EmitReceipt> {
    if (this.#def.emit === undefined) throw this.unsupported('emission');
    try {
      return await this.#def.emit(emission, ctx);
    } catch (err) {
      throw this.#normalize(err, 'emission', undefined, ctx).failure;
    }
  }

  override async ingest_typed(event: ProviderEvent, ctx: ActionExecutionContext): Promise<IngestResult> {
    if (this.#def.ingest === undefined) throw this.unsupported('ingestion');
    try {
      return await this.#def.ingest(event, ctx);
    } catch (err) {
      throw this.#normalize(err, 'ingestion', undefined, ctx).failure;
    }
  }

  // -- internals --------------------------------------------------------------

  async #run<T>(
    action: Action,
    ctx: ActionExecutionContext,
    operation: ConnectorOperation,
    body: (cap: AnyCapability, input: unknown, call: HandlerCall) => Promise<T>,
    implemented: (h: ErasedHandlers) => boolean,
  ): Promise<T> {
    const cap = this.#caps.get(action.capability_id);
    if (cap === undefined) throw this.unsupported(operation, action);
    // An operation without a handler is unsupported whatever its input (the page's default).
    if (!implemented(cap.definition.handlers as ErasedHandlers)) throw this.unsupported(operation, action);
    const validated = cap.definition.input['~standard'].validate(action.input);
    const parsed = validated instanceof Promise ? await validated : validated;
    if (parsed.issues !== undefined) {
      throw new ConnectorFailure({ code: 'connector.input_invalid', operation, source: this.source, redacted_details: { paths: issuePaths(parsed.issues) } });
    }
    const provider = this.#def.credentials;
    try {
      if (provider === undefined) return await body(cap, parsed.value, this.#call(action, ctx, operation));
      // The handler runs once more, with a fresh credential, when the provider refused a rotated one (the rule the
      // declarative HTTP connector follows per request): a refusal means the provider did not act, and the attempt's
      // idempotency key is the same.
      let current: HandlerCall | undefined;
      return await withCredentialRefresh(
        provider,
        ctx,
        (credential) => {
          current = this.#call(action, ctx, operation, credential);
          return body(cap, parsed.value, current);
        },
        {
          operation,
          source: this.source,
          refused: (o) => !o.ok && !(current !== undefined && this.#streamed.has(current)) && this.#credentialRefused(o.error, operation, action, ctx),
        },
      );
    } catch (err) {
      const { failure, classified } = this.#normalize(err, operation, action, ctx);
      throw settleFailure(failure, classified, operation, action, ctx);
    }
  }

  /** Whether a failure says the provider refused the credential, after which nothing of the attempt took effect. */
  #credentialRefused(err: unknown, operation: ConnectorOperation, action: Action, ctx: ActionExecutionContext): boolean {
    const evidence = contextAttemptEvidence(ctx);
    if (evidence.provider_operation_checkpointed || evidence.provider_effect_committed) return false;
    const { failure } = this.#normalize(err, operation, action, ctx);
    return (
      failure.code === 'connector.provider_auth_failed' ||
      failure.remote_status === 401 ||
      failure.remote_status === 403 ||
      (this.#def.credential_refusal_codes?.includes(failure.code) ?? false)
    );
  }

  /** `credential`: resolves the context's credential (withCredentialRefresh's); absent without a credential provider. */
  #call(action: Action, ctx: ActionExecutionContext, operation: ConnectorOperation, credential?: () => Promise<ConnectorSecret>): HandlerCall {
    const source = this.source;
    return Object.freeze({
      action,
      capability_id: action.capability_id,
      operation,
      async withSecret<T>(fn: (secret: ConnectorSecret) => MaybePromise<T>): Promise<T> {
        if (credential === undefined) {
          throw markSdkFailure(
            new ConnectorFailure({ code: 'connector.credentials_unavailable', operation, source, redacted_details: { reason: 'no_credential_provider' } }),
          );
        }
        const secret = await credential();
        try {
          return await fn(secret);
        } finally {
          secret.dispose();
        }
      },
      failure(init: Omit<ConnectorFailureInit, 'operation' | 'source'> & { readonly source?: string }): ConnectorFailure {
        return new ConnectorFailure({ ...init, operation, source: init.source ?? source });
      },
      withinDeadline<T>(work: BoundedWork<T>, options: Omit<WithinDeadlineOptions, 'operation' | 'source'> = {}): Promise<T> {
        return withinDeadline(ctx, work, { ...options, operation, source });
      },
    });
  }

  async #drainStream(stream: NonNullable<ErasedHandlers['stream']>, input: unknown, ctx: ActionExecutionContext, call: HandlerCall): Promise<unknown> {
    const gen = stream(input, ctx, call) as AsyncGenerator<StreamChunk, unknown, void>;
    let done = false;
    try {
      for (;;) {
        const next = await gen.next();
        if (next.done === true) {
          done = true;
          return next.value;
        }
        // Yielded after cancellation: the handler was running (an effect may have happened, and
        // settleFailure adds what the attempt checkpointed); never rethrow the canceller's reason as is.
        if (ctx.cancellation.aborted) throw this.#cancelledWhileStreaming(ctx);
        if (ctx.stream.enabled) {
          this.#streamed.add(call);
          await ctx.stream.emit(next.value);
        }
      }
    } finally {
      if (!done) await gen.return(undefined).catch(() => undefined);
    }
  }

  #completed(action: Action, schema: ConnectorSchema | undefined, value: unknown, operation: ConnectorOperation): ActionResult | Promise<ActionResult> {
    const finish = (output: unknown): ActionResult => {
      if (output !== undefined && !isJsonValue(output)) throw this.#invalidOutput(operation);
      return { action_id: action.id, status: 'completed', ...(output !== undefined ? { output: output as JsonValue } : {}) };
    };
    if (schema === undefined) return finish(value);
    return validateWith(schema, value, (parsed) => {
      if (parsed.issues !== undefined) throw this.#invalidOutput(operation, parsed.issues);
      return finish(parsed.value);
    });
  }

  #cancelledWhileStreaming(ctx: ActionExecutionContext): ConnectorFailure {
    const reason = ctx.cancellation_reason;
    return markSdkFailure(
      new ConnectorFailure({
        code: 'connector.attempt_cancelled',
        category: 'conflict',
        retryable: false,
        operation: 'invocation',
        source: this.source,
        uncertain_outcome: true,
        redacted_details: {
          cancelled_while: 'streaming',
          cancellation_reason: reason?.kind ?? 'unspecified',
          ...(reason?.code !== undefined ? { cancellation_code: reason.code } : {}),
        },
      }),
    );
  }

  #invalidOutput(operation: ConnectorOperation, issues?: readonly StandardSchemaV1.Issue[]): ConnectorFailure {
    return markSdkFailure(
      new ConnectorFailure({
        code: 'connector.output_invalid',
        operation,
        source: this.source,
        // The handler ran: for side-effecting operations an effect may have happened.
        uncertain_outcome: SIDE_EFFECTING_OPERATIONS.has(operation),
        redacted_details: issues ? { paths: issuePaths(issues) } : { reason: 'not_json' },
      }),
    );
  }

  /**
   * A ConnectorFailure, and whether the connector classified it itself: a
   * typed failure it threw, or its map_error's mapping of a provider error.
   * SDK and runtime errors (AipErrors such as a checkpoint conflict, failures
   * marked with markSdkFailure) and the SDK default for unclassified errors
   * are not.
   */
  #normalize(
    err: unknown,
    operation: ConnectorOperation,
    action: Action | undefined,
    ctx: ActionExecutionContext | undefined,
  ): { failure: ConnectorFailure; classified: boolean } {
    if (isConnectorFailure(err)) return { failure: err, classified: !isSdkFailure(err) };
    const mapper = this.#def.map_error;
    if (mapper !== undefined) {
      try {
        const mapped = mapper(err, operation, action, ctx);
        if (mapped !== undefined) return { failure: mapped, classified: !isAipError(err) };
      } catch {
        // fall through to the SDK default
      }
    }
    return { failure: toConnectorFailure(err, operation, connectorSource(this.id)), classified: false };
  }
}

/**
 * The last word on a failure of an effect operation: once an effect may have
 * happened in the attempt it is uncertain with the known provider operation
 * (escalateAfterEffect), and a timeout of a `commit` or `execute` is never
 * retryable (the page's rule), whoever reported it.
 */
function settleFailure(
  failure: ConnectorFailure,
  classified: boolean,
  operation: ConnectorOperation,
  action: Action,
  ctx: ActionExecutionContext,
): ConnectorFailure {
  if (!EFFECT_OPERATIONS.has(operation)) return failure;
  let out = escalateAfterEffect(failure, contextAttemptEvidence(ctx), classified);
  if (out.retryable && isTimeoutFailure(out) && timeoutNeverRetryable(action.transaction?.mode)) out = withFailureFields(out, { retryable: false });
  return out;
}

/** Builds a FrozenConnector from capability definitions. */
export function defineConnector(definition: ConnectorDefinition): DefinedConnector {
  return new DefinedConnector(definition);
}
