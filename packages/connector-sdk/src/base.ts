import type { Action, ActionResult, ProtocolError } from './protocol/index.js';
import type { ActionExecutionContext } from './context.js';
import { ConnectorFailure, toConnectorFailure, toProtocolError } from './failure.js';
import type {
  CancelOutcome,
  Connector,
  ConnectorContext,
  ConnectorEmission,
  EmitReceipt,
  FrozenConnector,
  ConnectorHealth,
  IngestResult,
  ProviderEvent,
  ReconciliationResult,
} from './interfaces.js';
import type { ConnectorManifest } from './manifest.js';
import type { ConnectorOperation } from './operations.js';
import type { ImplementationSupport } from './support.js';

/**
 * The default health check: ready when discovery succeeds. The detail is
 * operator-safe: on failure it names only the failure code, never the raw
 * error message.
 */
export async function defaultHealth(connector: Pick<Connector, 'id' | 'discover'>, ctx: ConnectorContext): Promise<ConnectorHealth> {
  try {
    await connector.discover(ctx);
    return { ready: true };
  } catch (err) {
    const failure = toConnectorFailure(err, 'discovery', `connector:${connector.id}`);
    return { ready: false, detail: `discovery failed: ${failure.code}` };
  }
}

/** The source string the SDK uses for failures raised by a connector. */
export function connectorSource(id: string): string {
  return `connector:${id}`;
}

/**
 * A base class for hand-written frozen connectors. Subclasses implement
 * `id`, `discover`, `implementation_support` and `invoke_typed`, and override
 * only the operations they support. The other seven reject with
 * `connector.operation_unsupported` (category `permanent`, retryable=false);
 * `health` defaults to "ready when discovery succeeds"; `map_error` defaults
 * to the SDK normalization (see toConnectorFailure).
 *
 * Most authors should prefer defineConnector, which derives the nine flags
 * from the handlers they write.
 */
export abstract class FrozenConnectorBase implements FrozenConnector {
  abstract readonly id: string;
  abstract discover(ctx: ConnectorContext): Promise<ConnectorManifest>;
  abstract implementation_support(capability_id: string): ImplementationSupport | undefined;
  abstract invoke_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult>;

  /** Failure source reported by this connector. */
  protected get source(): string {
    return connectorSource(this.id);
  }

  /** The typed "not supported" failure for an operation. */
  protected unsupported(operation: ConnectorOperation, action?: Action): ConnectorFailure {
    return ConnectorFailure.unsupported(operation, this.source, action ? { capability_id: action.capability_id } : undefined);
  }

  health(ctx: ConnectorContext): Promise<ConnectorHealth> {
    return defaultHealth(this, ctx);
  }

  map_error(err: unknown, operation: ConnectorOperation = 'invocation'): ProtocolError {
    return toProtocolError(toConnectorFailure(err, operation, this.source));
  }

  async plan_typed(action: Action, _ctx: ActionExecutionContext): Promise<ActionResult> {
    throw this.unsupported('transaction_plan', action);
  }
  async commit_typed(action: Action, _ctx: ActionExecutionContext): Promise<ActionResult> {
    throw this.unsupported('transaction_commit', action);
  }
  async compensate_typed(action: Action, _ctx: ActionExecutionContext): Promise<ActionResult> {
    throw this.unsupported('compensation', action);
  }
  async cancel_typed(action: Action, _ctx: ActionExecutionContext): Promise<CancelOutcome> {
    throw this.unsupported('cancellation', action);
  }
  async reconcile_typed(action: Action, _ctx: ActionExecutionContext): Promise<ReconciliationResult> {
    throw this.unsupported('reconciliation', action);
  }
  async emit_typed(_emission: ConnectorEmission, _ctx: ActionExecutionContext): Promise<EmitReceipt> {
    throw this.unsupported('emission');
  }
  async ingest_typed(_event: ProviderEvent, _ctx: ActionExecutionContext): Promise<IngestResult> {
    throw this.unsupported('ingestion');
  }
}
