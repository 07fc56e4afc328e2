/**
 * Fixtures of the remote placement tests: a small hand-written connector
 * (a streaming echo and a transactional payment that checkpoints its
 * provider operation), keys, and a helper that runs an attempt the way the
 * runtime does (lib/runtime/attempts/deadline.ts runAttempt with the pinned route
 * bound to the context).
 */
import type { Action, ActionResult, Capability, ProviderOperationRef } from '../../packages/connector-sdk/src/protocol/index.js';
import { hashJson } from '../../packages/connector-sdk/src/protocol/index.js';
import {
  FrozenConnectorBase,
  type ActionExecutionContext,
  type CancelOutcome,
  type ConnectorManifest,
  type ImplementationSupport,
  type ReconciliationResult,
  type TransactionCheckpointWriter,
} from '../../packages/connector-sdk/src/index.js';
import { runAttempt, type AttemptOutcome } from '../../lib/runtime/attempts/deadline.js';
import type { SequencedStreamChunk } from '../../packages/connector-sdk/src/protocol/stream-chunk.js';
import { bindAttemptPlacement } from '../../lib/runtime/attempts/placement.js';
import type { RouteAssignment } from '../../lib/ports/route-store.js';
import type { RemoteConnector } from '../../lib/runtime/remote/proxy.js';

const ECHO: Capability = {
  id: 'demo.echo',
  kind: 'tool',
  input_schema: { type: 'object' },
  execution: { supports_cancel: false, supports_streaming: true, supports_retry: false, timeout_ms: 20_000 },
};

const PAY: Capability = {
  id: 'demo.pay',
  kind: 'tool',
  input_schema: { type: 'object' },
  transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
  execution: { supports_cancel: true, supports_streaming: false, supports_retry: false, timeout_ms: 20_000 },
  credentials: { required: false },
};

const FLAGS = {
  invocation: true,
  cancellation: false,
  streaming: false,
  retry: false,
  transaction: false,
  reconciliation: false,
  compensation: false,
  approval: false,
  credentials: false,
};
const SUPPORT: Record<string, ImplementationSupport> = {
  'demo.echo': { ...FLAGS, streaming: true },
  'demo.pay': { ...FLAGS, cancellation: true, transaction: true, reconciliation: true },
};

/** What the demo connector saw (tests read it). */
/** A promise with its resolve, to hold a call until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** One gate per key: `passed(key)` resolves once the test has called `open(key)`, in either order. */
export class Gates {
  readonly #gates = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  #gate(key: string) {
    let g = this.#gates.get(key);
    if (g === undefined) {
      g = deferred();
      this.#gates.set(key, g);
    }
    return g;
  }
  open(key: string): void {
    this.#gate(key).resolve();
  }
  passed(key: string): Promise<void> {
    return this.#gate(key).promise;
  }
}

export interface DemoEvents {
  /** Called right after a checkpoint resolved (a test checks durability there). */
  afterCheckpoint?: (ref: ProviderOperationRef) => Promise<void>;
  readonly seen: { op: string; tenant?: string; credential?: string; attempt_trace?: string }[];
  readonly cancelled: string[];
}

export class DemoConnector extends FrozenConnectorBase {
  readonly id: string = 'demo';
  constructor(readonly events: DemoEvents = { seen: [], cancelled: [] }) {
    super();
  }
  async discover(): Promise<ConnectorManifest> {
    return { connector_id: 'demo', version: '1.2.3', capabilities: [ECHO, PAY], implementation_support: SUPPORT };
  }
  implementation_support(capability_id: string): ImplementationSupport | undefined {
    return SUPPORT[capability_id];
  }
  /** demo.pay can also be reconciled without an operation ID (the proxy then looks in the checkpoint inbox). */
  reconcile_lookup(capability_id: string): readonly ('provider_operation' | 'idempotency_key')[] {
    return capability_id === 'demo.pay' ? ['provider_operation', 'idempotency_key'] : [];
  }
  #see(op: string, ctx: ActionExecutionContext): void {
    this.events.seen.push({
      op,
      ...(ctx.tenant ? { tenant: ctx.tenant.tenant_id } : {}),
      ...(ctx.credential ? { credential: ctx.credential.id } : {}),
      attempt_trace: ctx.trace.trace_id,
    });
  }
  async invoke_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    this.#see('invoke', ctx);
    if (action.capability_id === 'demo.echo') {
      await ctx.stream.emit({ type: 'text', text: 'one' });
      await ctx.stream.emit({ type: 'text', text: 'two' });
      return { action_id: action.id, status: 'completed', output: { echo: action.input } };
    }
    const ref: ProviderOperationRef = { provider: 'demo-provider', operation_id: `op-${action.id}` };
    await ctx.transaction_checkpoint.checkpoint(ref);
    await this.events.afterCheckpoint?.(ref);
    ctx.execution_checkpoints.provider_effect_committed();
    return { action_id: action.id, status: 'completed', output: { paid: true, operation_id: ref.operation_id } };
  }
  override async reconcile_typed(_action: Action, ctx: ActionExecutionContext): Promise<ReconciliationResult> {
    this.#see('reconcile', ctx);
    const id = ctx.transaction?.provider_operation_id;
    return { terminal: true, original_commit_completed: id !== undefined, output: { paid: true, operation_id: id ?? 'none' } };
  }
  override async cancel_typed(action: Action, ctx: ActionExecutionContext): Promise<CancelOutcome> {
    this.#see('cancel', ctx);
    this.events.cancelled.push(action.id);
    return { accepted: true };
  }
}

export async function demoManifestHash(): Promise<string> {
  return hashJson(JSON.parse(JSON.stringify(await new DemoConnector().discover())));
}

export function demoAction(capability_id: 'demo.echo' | 'demo.pay', id: string, mode?: 'execute' | 'reconcile'): Action {
  return {
    id,
    capability_id,
    input: { amount: 100 },
    ...(mode !== undefined ? { transaction: { mode, transaction_id: `txn-${id}` } } : {}),
  } as Action;
}

export interface RouteOptions {
  readonly endpoint: string;
  readonly peer_identity: string;
  readonly peer_did?: string;
  readonly manifest_hash: string;
  readonly action_id: string;
  readonly capability_id: string;
  readonly tenant?: string;
}

export function demoRoute(o: RouteOptions): RouteAssignment {
  const tenant = o.tenant ?? 'tenant-a';
  return {
    tenant_id: tenant,
    action_id: o.action_id,
    capability_id: o.capability_id,
    verified_tenant: tenant,
    connector_id: 'demo',
    connector_instance: 'host-1',
    replica: 'host-1-a',
    endpoint: o.endpoint,
    peer_identity: o.peer_identity,
    ...(o.peer_did !== undefined ? { peer_did: o.peer_did } : {}),
    version: '1.2.3',
    manifest_hash: o.manifest_hash,
    policy_revision: '0',
    credential_revision: '0',
    health_revision: '0',
    admission_reservation: 'att-1',
    fence_token: 1,
    created_at: new Date().toISOString(),
  };
}

export interface RunOptions {
  readonly route: RouteAssignment;
  readonly tenant?: string;
  readonly transaction?: {
    transaction_id: string;
    mode: 'execute' | 'reconcile';
    provider_operation?: ProviderOperationRef;
    original_request?: { action_id: string; capability_id: string; transaction_id: string };
  };
  readonly checkpoints?: TransactionCheckpointWriter;
  readonly chunks?: SequencedStreamChunk[];
  readonly attempt_id?: string;
}

/** Runs one attempt through the proxy exactly as the runtime would (runtime-side SDK, pinned route bound). */
export async function runThroughProxy(proxy: RemoteConnector, action: Action, o: RunOptions): Promise<AttemptOutcome> {
  const manifest = await proxy.discover({});
  const capability = manifest.capabilities.find((c) => c.id === action.capability_id) as Capability;
  const support = proxy.implementation_support(action.capability_id) as ImplementationSupport;
  const attempt_id = o.attempt_id ?? `att-${action.id}`;
  const now = new Date();
  return runAttempt({
    connector: proxy,
    capability,
    support,
    action,
    trusted: {
      attempt_id,
      actor: {
        principal: { id: 'alice', kind: 'user' },
        issuer: 'https://issuer.test',
        scheme: 'bearer_jwt',
        scopes: ['demo:write'],
        lifetime: { issued_at: now, expires_at: new Date(now.getTime() + 600_000) },
      },
      tenant: { tenant_id: o.tenant ?? 'tenant-a' },
      ...(o.transaction !== undefined ? { transaction: o.transaction } : {}),
      trace: { trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) },
      redaction: { redaction_required: false, input_pointers: [], output_pointers: [] },
    },
    facilities: {
      ...(o.checkpoints !== undefined ? { transaction_checkpoints: o.checkpoints } : {}),
      stream_sink: { write: async (c) => void o.chunks?.push(c) },
    },
    on_attempt: (a) => bindAttemptPlacement(a.context, { route: o.route, lease: { attempt_id, fence: 1, expires_at: new Date(now.getTime() + 600_000) } }),
  });
}
