/**
 * What the Runtime is built from: ports only (no AWS SDK in the domain).
 */
import { randomUUID } from 'node:crypto';
import type { FrozenConnector } from '../../packages/connector-sdk/src/interfaces.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import type { ActionStore } from '../ports/action-store.js';
import type { ApprovalStore } from '../ports/approval-store.js';
import type { AttemptReads } from '../ports/attempt-reads.js';
import type { IdempotencyStore } from '../ports/idempotency-store.js';
import type { MessageQueue } from '../ports/queue.js';
import type { RouteStore } from '../ports/route-store.js';
import type { ReconcileScheduler } from '../ports/scheduler.js';
import type { StreamStore } from '../ports/stream-store.js';
import type { TransactionStore } from '../ports/transaction-store.js';
import type { UnitOfWork } from '../ports/unit-of-work.js';
import type { RuntimeSettings } from './config.js';
import type { CrashPoints } from './crash-points.js';
import type { CursorSealer } from './cursor.js';
import type { CapabilityRegistry } from './registry.js';

/** One hosted connector: the frozen connector plus its placement and credential facts. */
export interface HostedConnector {
  readonly connector: FrozenConnector;
  /** Connector instance and replica (route pinning). Default `local` / `local-0`. */
  readonly instance_id?: string;
  readonly replica?: string;
  /** Endpoint recorded in route assignments. Default `in-process`. */
  readonly endpoint?: string;
  /**
   * Remote placement (lib/connectors/remote): the connector host's key ID and
   * DID, pinned by route assignments as `peer_identity` / `peer_did`. Absent
   * for a trusted local module.
   */
  readonly peer_identity?: string;
  readonly peer_did?: string;
  /** The credential handle ID handed to attempts of a capability (never material). */
  credential_handle?(capability_id: string): string | undefined;
  /** Revision of the deployment credentials (pinned by route assignments). Default `0`. */
  readonly credential_revision?: string;
  readonly health_revision?: string;
}

/** connector_id -> hosted connector (its own credential provider lives inside the connector). */
export interface ConnectorHost {
  /** The hosted connector, once {@link ConnectorHost.load} has readied it (always, for a host without `load`). Callers use {@link loadConnector}. */
  get(connector_id: string): HostedConnector | undefined;
  /** The IDs of every hosted connector (readiness checks them all). */
  ids(): string[];
  /**
   * Readies connector `connector_id` for `get`: a host that builds its
   * connectors on first use loads and builds it here
   * (functions/shared/compose-connectors.ts). Absent: every connector is ready.
   */
  load?(connector_id: string): Promise<void>;
}

/** The hosted connector `connector_id`, readied first by a host that builds connectors on first use. */
export async function loadConnector(host: ConnectorHost, connector_id: string): Promise<HostedConnector | undefined> {
  await host.load?.(connector_id);
  return host.get(connector_id);
}

/** A ConnectorHost over a fixed map. */
export function staticConnectorHost(connectors: readonly (FrozenConnector | HostedConnector)[]): ConnectorHost {
  const map = new Map<string, HostedConnector>();
  for (const c of connectors) {
    const hosted: HostedConnector = 'connector' in c ? c : { connector: c };
    map.set(hosted.connector.id, hosted);
  }
  return { get: (id) => map.get(id), ids: () => [...map.keys()].sort() };
}

/** Structured logger (Powertools-compatible subset). Messages and fields never carry secrets or raw input. */
export interface RuntimeLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const SILENT_LOGGER: RuntimeLogger = Object.freeze({ info: () => undefined, warn: () => undefined, error: () => undefined });

export interface RuntimeDeps {
  readonly transactions: TransactionStore;
  readonly actions: ActionStore;
  readonly idempotency: IdempotencyStore;
  readonly approvals: ApprovalStore;
  readonly routes: RouteStore;
  readonly streams: StreamStore;
  /**
   * Every durable write, as typed intents committed together (lib/ports/unit-of-work.ts). The stores above are
   * read-only ports.
   */
  readonly uow: UnitOfWork;
  /** The read an attempt starts from (action and transaction in one request). */
  readonly attempts: AttemptReads;
  readonly invokeQueue: MessageQueue;
  readonly reconcileQueue: MessageQueue;
  readonly scheduler: ReconcileScheduler;
  readonly registry: CapabilityRegistry;
  readonly connectors: ConnectorHost;
  readonly clock: Clock;
  /** ID generator (approval, decision and attempt IDs). Default randomUUID. */
  readonly ids?: () => string;
  readonly config: RuntimeSettings;
  /** Test-only crash hook; refused unless config.test_mode. */
  readonly crashPoints?: CrashPoints;
  /**
   * Seals the listings' pagination cursors (lib/runtime/cursor.ts) with the
   * deployment's key. The production composition always passes one
   * (functions/shared/compose-runtime.ts, key from Secrets Manager). Absent:
   * a random key per dependency bundle, so cursors open only in this process
   * (tests, a single local process).
   */
  readonly cursors?: CursorSealer;
  readonly logger?: RuntimeLogger;
}

/**
 * Everything a Runtime is built from but its connectors: what the reads
 * (getAction, getActionResult, pollAction, getTransaction, listOperator, readStream,
 * operatorOverview) use. See {@link ConnectorParts}.
 */
export type ReadDeps = Omit<RuntimeDeps, 'registry' | 'connectors'>;

/**
 * The parts a Runtime may build on first need rather than at construction
 * (per-route composition, docs/runtime.md): the hosted connectors, their
 * capability registry, and the configuration, whose approval policies may
 * name every capability a connector registers. A function that only reads
 * never builds them, so it never loads, discovers or validates a connector.
 */
export interface ConnectorParts {
  readonly registry: CapabilityRegistry;
  readonly connectors: ConnectorHost;
  readonly config: RuntimeSettings;
}

export const defaultIds = (): string => randomUUID();
