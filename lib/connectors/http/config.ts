/**
 * The declarative HTTP connector's configuration: plain JSON, validated with
 * zod, so it can live in a deployment config file. See README.md next to
 * this file and docs/connector-authoring.md for a worked example.
 *
 * Conventions used throughout:
 * - Mappings are objects keyed by a TARGET JSON pointer; each value is a
 *   ValueSource. In a request mapping `from` / `{/pointer}` read the action
 *   input; in a response mapping they read the provider response body.
 * - `{$name}` / `{ "context": name }` read one of CONTEXT_VALUES, all taken
 *   from the trusted execution context (never from action input).
 * - No configuration value is secret: credentials are named by a handle and
 *   resolved at the edge by the deployment CredentialProvider.
 */
import * as z from 'zod/mini';
import {
  CAPABILITY_CONTRACT_SHAPE,
  CapabilityKindSchema,
  ErrorCategorySchema,
  ErrorCodeSchema,
  IdSchema,
  JsonObjectSchema,
  JsonPointerSchema,
  JsonValueSchema,
  TextSchema,
} from '@aip-runtime/connector-sdk/protocol';
import { ConnectorVersionSchema, ManifestResourceSchema } from '@aip-runtime/connector-sdk';
import { isSafePointer, parseTemplate } from './pointer.js';

/** Trusted context values a mapping may read (`{$name}` or `{"context": name}`). */
export const CONTEXT_VALUES = [
  /** The action ID. */
  'action_id',
  /** ctx.transaction.transaction_id. */
  'transaction_id',
  /** ctx.transaction.plan_id. */
  'plan_id',
  /** The DERIVED idempotency key sent in the idempotency header (see idempotency.ts), never the raw action key. */
  'idempotency_key',
  /**
   * Reconcile attempts: the derived key the ORIGINAL request sent (from
   * ctx.transaction.original_request, see originalIdempotencyKey in
   * idempotency.ts). Missing when the context has no original_request.
   */
  'original_idempotency_key',
  /** The provider operation ID: recovered from the durable record, or learned in this attempt. */
  'provider_operation_id',
  /** The opaque reconciliation cursor, when one was checkpointed. */
  'reconciliation_cursor',
  /** The verified tenant (ctx.tenant.tenant_id). */
  'tenant_id',
  /** The verified external account (ctx.tenant.external_account_id). */
  'external_account_id',
  /** ctx.trace.trace_id. */
  'trace_id',
] as const;
export type ContextValueName = (typeof CONTEXT_VALUES)[number];

const PointerSchema = JsonPointerSchema.check(z.refine(isSafePointer, { message: 'a pointer token must not be __proto__, constructor or prototype' }));

const TemplateSchema = z.string().check(
  z.maxLength(2048),
  z.superRefine((t, ctx) => {
    try {
      for (const part of parseTemplate(t)) {
        if ('context' in part && !(CONTEXT_VALUES as readonly string[]).includes(part.context)) {
          ctx.addIssue({ code: 'custom', message: `unknown context value {$${part.context}}` });
        }
        if ('pointer' in part && !isSafePointer(part.pointer)) ctx.addIssue({ code: 'custom', message: 'forbidden pointer token in template' });
      }
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : 'invalid template' });
    }
  }),
);

/** Where one mapped value comes from. */
export const ValueSourceSchema = z.union([
  /** A JSON pointer into the mapping's document. Missing and not optional: the mapping fails. */
  z.strictObject({ from: PointerSchema, optional: z.optional(z.boolean()), default: z.optional(JsonValueSchema) }),
  /** A trusted context value. */
  z.strictObject({ context: z.enum(CONTEXT_VALUES), optional: z.optional(z.boolean()) }),
  /** A literal JSON value. */
  z.strictObject({ value: JsonValueSchema }),
  /** A string template, e.g. `"order {/order_id} for {$tenant_id}"`. */
  z.strictObject({ template: TemplateSchema }),
]);
export type ValueSource = z.infer<typeof ValueSourceSchema>;

/** Target pointer → source. Insertion order is application order. */
export const MappingSchema = z
  .record(PointerSchema, ValueSourceSchema)
  .check(z.refine((m) => Object.keys(m).length <= 256, { message: 'at most 256 mapped values' }));
export type Mapping = z.infer<typeof MappingSchema>;

export const HeaderNameSchema = z
  .string()
  .check(z.minLength(1), z.maxLength(128), z.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, { message: 'invalid HTTP header name' }));

/** Headers that a mapping may never set (credentials, framing, cookies). */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'content-type',
]);

export const HttpStatusSchema = z.number().check(z.int(), z.gte(100), z.lte(599));
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** One HTTP request, built from the action input and trusted context. */
export const RequestSpecSchema = z
  .strictObject({
    method: z.enum(HTTP_METHODS),
    /** Path template below base_url, e.g. `/v1/operations/{$provider_operation_id}`. Placeholders are percent-encoded. */
    path: TemplateSchema.check(z.refine((p) => p.startsWith('/'), { message: 'the path starts with "/"' })),
    /** Query parameter name → source. A missing optional value omits the parameter. */
    query: z.optional(z.record(z.string().check(z.minLength(1), z.maxLength(128)), ValueSourceSchema)),
    /** Extra, non-secret request headers (RESERVED_HEADERS and the auth/idempotency headers are refused). */
    headers: z.optional(z.record(HeaderNameSchema, ValueSourceSchema)),
    /** JSON body mapping (target pointer in the body → source). Absent: no body. */
    body: z.optional(MappingSchema),
    /** Per-request bound (the context deadline always applies too). */
    timeout_ms: z.optional(z.number().check(z.int(), z.positive(), z.lte(86_400_000))),
  })
  .check(
    z.superRefine((r, ctx) => {
      if (r.method === 'GET' && r.body !== undefined) ctx.addIssue({ code: 'custom', path: ['body'], message: 'a GET request has no body' });
      for (const h of Object.keys(r.headers ?? {})) {
        if (RESERVED_HEADERS.has(h.toLowerCase())) ctx.addIssue({ code: 'custom', path: ['headers', h], message: 'this header is reserved' });
      }
    }),
  );
export type RequestSpec = z.infer<typeof RequestSpecSchema>;

/** Where the provider operation ID is: a JSON pointer into the response body, or a response header. */
export const OperationIdSourceSchema = z.union([z.strictObject({ pointer: PointerSchema }), z.strictObject({ header: HeaderNameSchema })]);
/** @public */
export type OperationIdSource = z.infer<typeof OperationIdSourceSchema>;

/** Status HTTP error → typed failure. The first matching rule wins. */
export const ErrorRuleSchema = z.strictObject({
  /** One status, several, or a class. */
  status: z.union([HttpStatusSchema, z.array(HttpStatusSchema).check(z.minLength(1), z.maxLength(100)), z.enum(['4xx', '5xx'])]),
  /** Optional narrowing on a string field of the error body. */
  match: z.optional(z.strictObject({ pointer: PointerSchema, equals: z.array(z.string().check(z.maxLength(256))).check(z.minLength(1), z.maxLength(100)) })),
  code: ErrorCodeSchema,
  category: ErrorCategorySchema,
  retryable: z.boolean(),
  /** True when the provider may have applied the effect despite the error (e.g. a 5xx after commit). */
  uncertain_outcome: z.optional(z.boolean()),
  /** Redacted summary (static text; provider messages are never copied). */
  message: z.optional(TextSchema(512)),
  /** Provider operation ID carried by the error body (e.g. a declined charge). */
  provider_operation: z.optional(z.strictObject({ pointer: PointerSchema })),
  /** Short scalar fields copied from the error body into redacted_details (name → pointer). Never map free text. */
  details: z.optional(z.record(z.string().check(z.minLength(1), z.maxLength(64), z.regex(/^[a-z][a-z0-9_]*$/)), PointerSchema)),
});
export type ErrorRule = z.infer<typeof ErrorRuleSchema>;

/** Upper bound of the default probe margin (see `probe_margin_ms`). */
export const DEFAULT_PROBE_MARGIN_MS = 2_000;

/**
 * A follow-up lookup that settles whether a mutation whose response was an
 * uncertain error or was lost created an operation (typically a lookup by
 * the idempotency key). `absent_statuses` must be answers by which the
 * provider PROVES that no operation exists and none is in progress. After a
 * request TIMEOUT they are never taken as proof (the provider may still be
 * processing the delayed request): the failure then stays uncertain.
 */
export const ProbeSpecSchema = z.strictObject({
  request: RequestSpecSchema,
  found_statuses: z._default(z.array(HttpStatusSchema).check(z.minLength(1), z.maxLength(20)), [200]),
  absent_statuses: z.array(HttpStatusSchema).check(z.minLength(1), z.maxLength(20)),
  provider_operation: z.strictObject({ pointer: PointerSchema }),
  /** Provider status of the found operation, kept as evidence. */
  status_pointer: z.optional(PointerSchema),
});
/** @public */
export type ProbeSpec = z.infer<typeof ProbeSpecSchema>;

/** invoke / commit / compensate: one provider request with an effect (or a read). */
export const EffectOperationSchema = z.strictObject({
  request: RequestSpecSchema,
  /** `mutation` (default for non-GET): idempotency header, checkpoint, effect publication, uncertainty. `read`: none of these. */
  effect: z.optional(z.enum(['mutation', 'read'])),
  /** Success statuses (default: any 2xx). */
  success_statuses: z.optional(z.array(HttpStatusSchema).check(z.minLength(1), z.maxLength(20))),
  /** Response body → output. Absent: the whole response body is the output. */
  output: z.optional(MappingSchema),
  /** Provider operation ID extraction. Checkpointed as soon as it is known. */
  provider_operation: z.optional(OperationIdSourceSchema),
  /**
   * The response is accepted-but-not-final when the string at `pointer` is
   * one of `values`: the connector then polls the capability's reconcile
   * lookup until a terminal status, the deadline or cancellation.
   */
  pending: z.optional(z.strictObject({ pointer: PointerSchema, values: z.array(z.string().check(z.maxLength(128))).check(z.minLength(1), z.maxLength(20)) })),
  /**
   * Output once a pending operation completed, mapped from the terminal
   * status-lookup response. Default: the reconcile lookup's `output` for
   * invoke/commit; for compensate, `output` applied to the accepted response.
   */
  completed_output: z.optional(MappingSchema),
  probe: z.optional(ProbeSpecSchema),
  /** Operation-specific error rules (checked before the capability's and the connector's). */
  errors: z.optional(z.array(ErrorRuleSchema).check(z.maxLength(100))),
});
export type EffectOperation = z.infer<typeof EffectOperationSchema>;

/**
 * reconcile_typed without a provider operation ID: look the ORIGINAL
 * request's operation up by the idempotency key it sent (e.g.
 * `GET /operations?idempotency_key={$original_idempotency_key}`). The probe's
 * shape (request, found / absent statuses, operation ID pointer), plus the
 * status lookup's response mappings, which default to the enclosing lookup's
 * (the found body is read as an operation status).
 *
 * A found operation is mapped like the operation lookup's answer (terminal
 * or not) and returned as `provider_operation` for the runtime to
 * checkpoint. `absent_statuses` are NEVER a proof that the original request
 * will not still land (it may be held or in flight): the result is
 * non-terminal. `pending_statuses` say the provider is still processing a
 * request with that key (non-terminal too). Anything else is a typed failure
 * through the error rules.
 */
export const KeyLookupSchema = z.strictObject({
  /** Must read `{$original_idempotency_key}` (or `{"context": "original_idempotency_key"}`). */
  request: RequestSpecSchema,
  found_statuses: z._default(z.array(HttpStatusSchema).check(z.minLength(1), z.maxLength(20)), [200]),
  absent_statuses: z._default(z.array(HttpStatusSchema).check(z.minLength(1), z.maxLength(20)), [404]),
  /** E.g. the simulator's `409 idempotency_key_in_use` while the original request is held. */
  pending_statuses: z._default(z.array(HttpStatusSchema).check(z.maxLength(20)), []),
  /** Operation ID in the found body. */
  provider_operation: z.strictObject({ pointer: PointerSchema }),
  /** Default: the enclosing lookup's status_pointer. */
  status_pointer: z.optional(PointerSchema),
  /** Default: the enclosing lookup's output. */
  output: z.optional(MappingSchema),
  /** Default: the enclosing lookup's cursor_pointer. */
  cursor_pointer: z.optional(PointerSchema),
  /** Default: the enclosing lookup's errors. */
  errors: z.optional(z.array(ErrorRuleSchema).check(z.maxLength(100))),
});
export type KeyLookup = z.infer<typeof KeyLookupSchema>;

/** The status lookup used by reconcile_typed (and by completion polling). */
export const StatusLookupSchema = z.strictObject({
  /** Usually `GET /…/{$provider_operation_id}`; `{$reconciliation_cursor}` is available too. */
  request: RequestSpecSchema,
  status_pointer: PointerSchema,
  /** Terminal: the original commit completed. */
  succeeded: z.array(z.string().check(z.maxLength(128))).check(z.minLength(1), z.maxLength(20)),
  /** Terminal: the original commit did not complete. */
  failed: z.array(z.string().check(z.maxLength(128))).check(z.minLength(1), z.maxLength(20)),
  /** Any other status is non-terminal (pending). */
  /** Output for a succeeded operation (response body → output). Absent: no output. */
  output: z.optional(MappingSchema),
  /** Next opaque cursor from the response (never credential material). */
  cursor_pointer: z.optional(PointerSchema),
  errors: z.optional(z.array(ErrorRuleSchema).check(z.maxLength(100))),
  /**
   * Reconcile without a provider operation ID: the lookup by the original
   * request's idempotency key. Configuring it declares the `idempotency_key`
   * reconcile lookup (FrozenConnector.reconcile_lookup).
   */
  by_idempotency_key: z.optional(KeyLookupSchema),
});
export type StatusLookup = z.infer<typeof StatusLookupSchema>;

/** cancel_typed: request cancellation of the retained provider operation. */
export const CancelSpecSchema = z.strictObject({
  request: RequestSpecSchema,
  accepted_statuses: z._default(z.array(HttpStatusSchema).check(z.minLength(1), z.maxLength(20)), [200, 202]),
  /** The provider refuses because the operation is already final: `{accepted: false}`. */
  rejected_statuses: z._default(z.array(HttpStatusSchema).check(z.maxLength(20)), [409]),
  /** A short provider status kept as evidence. */
  status_pointer: z.optional(PointerSchema),
  errors: z.optional(z.array(ErrorRuleSchema).check(z.maxLength(100))),
});
/** @public */
export type CancelSpec = z.infer<typeof CancelSpecSchema>;

/** plan_typed: a local preview of the request, or a downstream validation call. */
export const PlanSpecSchema = z.union([
  /** Returns the request that commit would send (no credentials, no network). */
  z.strictObject({ preview: z.literal(true) }),
  /** Calls a validation endpoint (downstream_validation). */
  z.strictObject({
    validate: z.strictObject({
      request: RequestSpecSchema,
      valid_statuses: z._default(z.array(HttpStatusSchema).check(z.minLength(1), z.maxLength(20)), [200]),
      output: z.optional(MappingSchema),
      errors: z.optional(z.array(ErrorRuleSchema).check(z.maxLength(100))),
    }),
  }),
]);
/** @public */
export type PlanSpec = z.infer<typeof PlanSpecSchema>;

/** The capability contract pieces the manifest advertises. */
export const ContractSchema = z.strictObject(CAPABILITY_CONTRACT_SHAPE);

export const HttpCapabilityConfigSchema = z.strictObject({
  id: IdSchema,
  kind: z.optional(CapabilityKindSchema),
  description: z.optional(TextSchema(4096)),
  /** JSON Schema of the action input (converted by json-schema-to-zod.ts; the supported subset is in README.md). */
  input_schema: JsonObjectSchema,
  /** JSON Schema of the output. */
  output_schema: z.optional(JsonObjectSchema),
  contract: z.optional(ContractSchema),
  /** Retry classification and downstream idempotency are implemented: sets the `retry` flag. */
  retry: z.optional(z.strictObject({ downstream_idempotency: z.literal(true) })),
  /** Verified approval evidence and resume behavior are implemented: sets the `approval` flag. */
  approval: z.optional(z.strictObject({ verified_evidence: z.literal(true) })),
  /** Only the operations listed here exist; the others are explicitly unsupported. */
  operations: z.strictObject({
    invoke: z.optional(EffectOperationSchema),
    plan: z.optional(PlanSpecSchema),
    /** `"invoke"` reuses the invoke operation. */
    commit: z.optional(z.union([EffectOperationSchema, z.literal('invoke')])),
    /**
     * The compensating request (e.g. a refund for a charge). Its input is
     * validated against the input schema of contract.compensation.compensation_capability_id
     * when that capability is in this connector, else against this capability's.
     */
    compensate: z.optional(EffectOperationSchema),
    cancel: z.optional(CancelSpecSchema),
    reconcile: z.optional(StatusLookupSchema),
  }),
  errors: z.optional(z.array(ErrorRuleSchema).check(z.maxLength(100))),
});
/** @public */
export type HttpCapabilityConfig = z.infer<typeof HttpCapabilityConfigSchema>;

export const AuthConfigSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  /** `Authorization: Bearer <secret>`. */
  z.strictObject({ type: z.literal('bearer'), credential_handle: IdSchema }),
  /** `<header>: <secret>` (e.g. `X-Api-Key`). */
  z.strictObject({ type: z.literal('header'), credential_handle: IdSchema, header: HeaderNameSchema }),
]);
/** @public */
export type AuthConfig = z.infer<typeof AuthConfigSchema>;

export const HttpConnectorConfigSchema = z
  .strictObject({
    connector_id: IdSchema,
    version: ConnectorVersionSchema,
    /** The provider name recorded in ProviderOperationRef.provider. */
    provider: z.string().check(z.minLength(1), z.maxLength(128), z.regex(/^[A-Za-z0-9._:-]+$/)),
    base_url: z.url({ protocol: /^https?$/ }).check(z.refine((u) => !/[?#]/.test(u), { message: 'base_url has no query or fragment' })),
    auth: AuthConfigSchema,
    idempotency: z._default(
      z.strictObject({
        header: z._default(HeaderNameSchema, 'Idempotency-Key'),
        /** Separates key spaces of connectors sharing one provider account (default: connector_id). */
        namespace: z.optional(IdSchema),
      }),
      { header: 'Idempotency-Key' },
    ),
    /** Response header carrying the provider request ID (e.g. `Request-Id`). */
    request_id_header: z.optional(HeaderNameSchema),
    /** Bound for every request besides the context deadline. */
    default_timeout_ms: z.optional(z.number().check(z.int(), z.positive(), z.lte(86_400_000))),
    /**
     * Time kept back from the attempt deadline for a mutation that has a
     * `probe`: its request times out that much earlier, so that the probe by
     * idempotency key still runs before the deadline. Default:
     * min(DEFAULT_PROBE_MARGIN_MS, a quarter of the remaining time); always at
     * most half of the remaining time. `0`: no margin (the request may use the
     * whole deadline, and a timeout at the deadline is never probed).
     */
    probe_margin_ms: z.optional(z.number().check(z.int(), z.gte(0), z.lte(600_000))),
    /** Bound for cancel requests (they run after the attempt's cancellation was signalled). */
    cancel_timeout_ms: z._default(z.number().check(z.int(), z.positive(), z.lte(600_000)), 5_000),
    /** Interval between completion polls of a pending operation. */
    poll_interval_ms: z._default(z.number().check(z.int(), z.gte(0), z.lte(600_000)), 500),
    /** Connector-wide error rules (after operation and capability rules). */
    errors: z._default(z.array(ErrorRuleSchema).check(z.maxLength(200)), []),
    /** Optional readiness probe: GET base_url + path, ready on 2xx (no credentials sent). */
    health: z.optional(z.strictObject({ path: z.string().check(z.startsWith('/'), z.maxLength(2048)) })),
    capabilities: z.array(HttpCapabilityConfigSchema).check(z.minLength(1), z.maxLength(500)),
    resources: z.optional(z.array(ManifestResourceSchema).check(z.maxLength(1000))),
  })
  .check(
    z.superRefine((c, ctx) => {
      const reserved = new Set([c.idempotency.header.toLowerCase()]);
      if (c.auth.type === 'header') reserved.add(c.auth.header.toLowerCase());
      c.capabilities.forEach((cap, i) => {
        const ops = cap.operations;
        const at = (...p: (string | number)[]) => ['capabilities', i, ...p];
        if (ops.commit === 'invoke' && ops.invoke === undefined)
          ctx.addIssue({ code: 'custom', path: at('operations', 'commit'), message: 'commit "invoke" needs an invoke operation' });
        for (const name of ['invoke', 'commit', 'compensate'] as const) {
          const op = ops[name];
          if (op === undefined || op === 'invoke') continue;
          if (op.pending !== undefined && ops.reconcile === undefined) {
            ctx.addIssue({
              code: 'custom',
              path: at('operations', name, 'pending'),
              message: 'a pending response needs the capability reconcile lookup (used for completion polling)',
            });
          }
          if (op.effect === 'read' && (op.provider_operation !== undefined || op.pending !== undefined || op.probe !== undefined)) {
            ctx.addIssue({ code: 'custom', path: at('operations', name), message: 'a read operation has no provider operation, pending state or probe' });
          }
        }
        const requests: [RequestSpec, (string | number)[]][] = [];
        for (const name of ['invoke', 'commit', 'compensate'] as const) {
          const op = ops[name];
          if (op !== undefined && op !== 'invoke') {
            requests.push([op.request, at('operations', name, 'request')]);
            if (op.probe) requests.push([op.probe.request, at('operations', name, 'probe', 'request')]);
          }
        }
        if (ops.cancel) requests.push([ops.cancel.request, at('operations', 'cancel', 'request')]);
        if (ops.reconcile) requests.push([ops.reconcile.request, at('operations', 'reconcile', 'request')]);
        const byKey = ops.reconcile?.by_idempotency_key;
        if (byKey !== undefined) {
          requests.push([byKey.request, at('operations', 'reconcile', 'by_idempotency_key', 'request')]);
          if (!readsContext(byKey.request, 'original_idempotency_key')) {
            ctx.addIssue({
              code: 'custom',
              path: at('operations', 'reconcile', 'by_idempotency_key', 'request'),
              message: 'the lookup by idempotency key must send {$original_idempotency_key} (the key of the original request, not of the reconcile action)',
            });
          }
        }
        if (ops.plan && 'validate' in ops.plan) requests.push([ops.plan.validate.request, at('operations', 'plan', 'validate', 'request')]);
        for (const [req, path] of requests) {
          for (const h of Object.keys(req.headers ?? {})) {
            if (reserved.has(h.toLowerCase())) ctx.addIssue({ code: 'custom', path: [...path, 'headers', h], message: 'this header is set by the connector' });
          }
        }
      });
    }),
  );
export type HttpConnectorConfig = z.input<typeof HttpConnectorConfigSchema>;

/** Whether a request reads the trusted context value `name` (path, query, headers or body). */
function readsContext(req: RequestSpec, name: ContextValueName): boolean {
  const inTemplate = (t: string): boolean => {
    try {
      return parseTemplate(t).some((p) => 'context' in p && p.context === name);
    } catch {
      return false;
    }
  };
  const inSource = (src: ValueSource): boolean => ('context' in src && src.context === name) || ('template' in src && inTemplate(src.template));
  return (
    inTemplate(req.path) ||
    Object.values(req.query ?? {}).some(inSource) ||
    Object.values(req.headers ?? {}).some(inSource) ||
    Object.values(req.body ?? {}).some(inSource)
  );
}
export type ParsedHttpConnectorConfig = z.output<typeof HttpConnectorConfigSchema>;

/** Authoring types (what a configuration file may contain, defaults not yet applied). */
export type RequestSpecConfig = z.input<typeof RequestSpecSchema>;
export type EffectOperationConfig = z.input<typeof EffectOperationSchema>;
export type StatusLookupConfig = z.input<typeof StatusLookupSchema>;
export type KeyLookupConfig = z.input<typeof KeyLookupSchema>;
export type CancelSpecConfig = z.input<typeof CancelSpecSchema>;
export type ProbeSpecConfig = z.input<typeof ProbeSpecSchema>;
/** @public */
export type PlanSpecConfig = z.input<typeof PlanSpecSchema>;
export type ErrorRuleConfig = z.input<typeof ErrorRuleSchema>;
/** @public */
export type HttpCapabilityConfigInput = z.input<typeof HttpCapabilityConfigSchema>;
