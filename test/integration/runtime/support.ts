/**
 * The runtime test harness: every store on one DynamoDB Local table, the
 * invoke and reconcile queues on fauxqs (the real SqsMessageQueue), the
 * worker driven with the messages actually received from the queue, and a
 * recording ReconcileScheduler used ONLY to assert scheduling calls.
 */
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import { createSqsClient } from '../../../lib/aws/clients.js';
import { SqsMessageQueue, changeVisibility, deleteMessages, receiveMessages } from '../../../lib/aws/sqs/queue.js';
import type { FrozenConnector } from '../../../packages/connector-sdk/src/interfaces.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { OPERATOR_SCOPE } from '../../../lib/auth/scopes.js';
import { decodeQueueMessage, type InvokeMessage, type ReconcileMessage } from '../../../lib/ports/messages.js';
import type {
  CancelReconcileResult,
  ReconcileScheduleRef,
  ReconcileScheduler,
  ScheduleReconcileRequest,
  ScheduleReconcileResult,
} from '../../../lib/ports/scheduler.js';
import { ArmedCrashPoints } from '../../../lib/runtime/crash-points.js';
import { parseRuntimeSettingsInput, type RuntimeSettingsInput } from '../../../lib/runtime/config.js';
import { staticConnectorHost, type ConnectorHost, type HostedConnector, type ReadDeps, type RuntimeLogger } from '../../../lib/runtime/deps.js';
import { CapabilityRegistry, type ManifestSource } from '../../../lib/runtime/registry.js';
import { verifyReceiptChain } from '../../../lib/runtime/receipts.js';
import { Runtime } from '../../../lib/runtime/runtime.js';
import type { AttemptOutcome } from '../../../lib/runtime/types.js';
import { writableStores, type WritableStores } from '../../support/store-writes.js';
import { createTestTable, type TestTable } from '../../support/dynamo.js';
import { manualClock } from '../../support/transaction-fixtures.js';
import type { DefinedConnector } from '../../../packages/connector-sdk/src/define.js';

export const TENANT = 'tenant-a';
export const OTHER_TENANT = 'tenant-b';

/** The external accounts the fixtures' identities name: a caller must hold an account it names (resolveAccount). */
export const ACCOUNTS = ['acct-1', 'acct-2', 'acct-9'];

export function caller(id = 'agent-1', overrides: Partial<CallerIdentity> = {}): CallerIdentity {
  return { principal: { id, kind: 'agent' }, tenants: [TENANT], scopes: ['pay:write', 'pay:approve', 'aip:approve'], accounts: [...ACCOUNTS], ...overrides };
}
export const operator: CallerIdentity = {
  principal: { id: 'ops-1', kind: 'user' },
  tenants: [TENANT],
  scopes: [OPERATOR_SCOPE, 'aip:approve', 'pay:approve'],
  accounts: [...ACCOUNTS],
};

/** Records scheduler calls (assertions only; no behaviour is faked beyond recording). */
export class RecordingScheduler implements ReconcileScheduler {
  readonly scheduled: ScheduleReconcileRequest[] = [];
  readonly cancelled: ReconcileScheduleRef[] = [];
  async scheduleReconcile(request: ScheduleReconcileRequest): Promise<ScheduleReconcileResult> {
    this.scheduled.push(request);
    return { name: `rc-${request.transaction_id}`, created: true, at: request.at };
  }
  async cancelReconcile(ref: ReconcileScheduleRef): Promise<CancelReconcileResult> {
    this.cancelled.push(ref);
    return { name: `rc-${ref.transaction_id}`, deleted: true };
  }
  for(transaction_id: string): ScheduleReconcileRequest[] {
    return this.scheduled.filter((s) => s.transaction_id === transaction_id);
  }
}

let sqsClient: SQSClient | undefined;
function sqs(): SQSClient {
  sqsClient ??= createSqsClient({ endpoint: inject('sqsEndpoint') });
  return sqsClient;
}

async function createQueue(name: string, redrive?: { readonly deadLetterTargetArn: string; readonly maxReceiveCount: number }): Promise<string> {
  const out = await sqs().send(
    new CreateQueueCommand({
      QueueName: `${name}-${randomUUID().slice(0, 8)}`,
      Attributes: { VisibilityTimeout: '60', ...(redrive !== undefined ? { RedrivePolicy: JSON.stringify(redrive) } : {}) },
    }),
  );
  return out.QueueUrl as string;
}

/** An invoke queue whose redrive policy moves a message to its own DLQ after `maxReceiveCount` receives, as the stack's does. */
async function createInvokeQueueWithDlq(maxReceiveCount: number): Promise<{ url: string; deadLetterUrl: string }> {
  const deadLetterUrl = await createQueue('rt-invoke-dlq');
  const attributes = await sqs().send(new GetQueueAttributesCommand({ QueueUrl: deadLetterUrl, AttributeNames: ['QueueArn'] }));
  const url = await createQueue('rt-invoke', { deadLetterTargetArn: attributes.Attributes?.QueueArn as string, maxReceiveCount });
  return { url, deadLetterUrl };
}

export interface HarnessOptions {
  readonly connectors: readonly (FrozenConnector | HostedConnector)[];
  readonly config?: RuntimeSettingsInput;
  readonly prefix?: string;
  /** Register these manifests instead of the connectors' own (e.g. to test registry rejection). */
  readonly manifests?: readonly DefinedConnector[];
  /** Register these discovered manifests (e.g. what a remote connector host publishes) instead of the connectors' own. */
  readonly discovered?: readonly ManifestSource[];
  /** The runtime's logger (tests that inspect what it logs). */
  readonly logger?: RuntimeLogger;
  /**
   * Give the invoke queue a DLQ after this many receives, and the runtime the same count
   * (`capacity_deferral.queue_max_receive_count`), as the stack and the composition do. Absent: no redrive policy.
   */
  readonly invokeMaxReceiveCount?: number;
}

export interface Harness {
  readonly runtime: Runtime;
  readonly table: TestTable;
  readonly clock: ReturnType<typeof manualClock>;
  readonly crash: ArmedCrashPoints;
  readonly scheduler: RecordingScheduler;
  /** The stores with their writes (test/support/store-writes.ts), for tests that arrange or tamper with records. */
  readonly stores: Omit<WritableStores, 'transactions'>;
  readonly invokeQueueUrl: string;
  /** The invoke queue's DLQ, with `invokeMaxReceiveCount`. */
  readonly invokeDeadLetterQueueUrl?: string;
  readonly reconcileQueueUrl: string;
  readonly registry: CapabilityRegistry;
  readonly connectors: ConnectorHost;
  /** The runtime's dependencies but the registry and the connectors (a Runtime whose connectors load on first need). */
  readonly readDeps: ReadDeps;
  /** Receives the visible invoke messages (without running them). */
  /** The visible invoke messages, each with its receipt handle and its SQS receive count (ApproximateReceiveCount). */
  receiveInvokes(): Promise<{ message: InvokeMessage; receipt: string; receive_count: number }[]>;
  /**
   * Receives every visible invoke message and runs runAttempt on it with its receive count, as the worker's queue
   * consumer does (a first delivery may start from the admission's images; a redelivery reads); crashed or deferred
   * messages become visible again. `as.receive_count` overrides the queue's count (2: run them as redeliveries, which read).
   */
  drain(as?: { receive_count: number }): Promise<AttemptOutcome[]>;
  receiveReconciles(): Promise<ReconcileMessage[]>;
  /** The receipt chain of a transaction, verified against the record's anchor. */
  verifyChain(transaction_id: string): Promise<ReturnType<typeof verifyReceiptChain>>;
  destroy(): Promise<void>;
}

export async function createHarness(options: HarnessOptions): Promise<Harness> {
  const clock = manualClock();
  const table = await createTestTable({ prefix: options.prefix ?? 'rt', now: clock.now });
  const { transactions: _writableTransactions, ...stores } = writableStores(table.stores);
  const maxReceiveCount = options.invokeMaxReceiveCount;
  const [invoke, reconcileQueueUrl] = await Promise.all([
    maxReceiveCount !== undefined ? createInvokeQueueWithDlq(maxReceiveCount) : createQueue('rt-invoke').then((url) => ({ url, deadLetterUrl: undefined })),
    createQueue('rt-reconcile'),
  ]);
  const invokeQueueUrl = invoke.url;
  const invokeQueue = new SqsMessageQueue({ client: sqs(), queueUrl: invokeQueueUrl, accepts: ['invoke'] });
  const reconcileQueue = new SqsMessageQueue({ client: sqs(), queueUrl: reconcileQueueUrl, accepts: ['reconcile'] });
  const scheduler = new RecordingScheduler();
  const crash = new ArmedCrashPoints();
  const hosted = options.connectors.map((c) => ('connector' in c ? c : { connector: c }));
  const manifests: ManifestSource[] =
    options.discovered !== undefined
      ? [...options.discovered]
      : (options.manifests ?? hosted.map((h) => h.connector as DefinedConnector)).map((c) => c.manifest());
  const registry = CapabilityRegistry.fromManifests(manifests);
  const readDeps: ReadDeps = {
    ...table.stores,
    invokeQueue,
    reconcileQueue,
    scheduler,
    clock: { now: clock.now },
    config: parseRuntimeSettingsInput(
      {
        ...(options.config ?? {}),
        ...(maxReceiveCount !== undefined ? { capacity_deferral: { ...options.config?.capacity_deferral, queue_max_receive_count: maxReceiveCount } } : {}),
        test_mode: true,
      },
      'test',
    ),
    crashPoints: crash,
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
  };
  const connectors = staticConnectorHost(hosted);
  const runtime = new Runtime({ ...readDeps, registry, connectors });

  async function receiveRaw(url: string) {
    const out: { body: string; receipt: string; receive_count: number }[] = [];
    for (;;) {
      const batch = await receiveMessages(sqs(), url, { waitTimeSeconds: 0, maxMessages: 10 });
      if (batch.length === 0) return out;
      for (const m of batch)
        out.push({ body: m.Body ?? '', receipt: m.ReceiptHandle ?? '', receive_count: Number(m.Attributes?.ApproximateReceiveCount ?? '1') });
    }
  }

  async function receiveInvokes() {
    const raw = await receiveRaw(invokeQueueUrl);
    return raw.map((r) => ({ message: decodeQueueMessage(r.body) as InvokeMessage, receipt: r.receipt, receive_count: r.receive_count }));
  }

  return {
    runtime,
    table,
    clock,
    crash,
    scheduler,
    stores,
    invokeQueueUrl,
    ...(invoke.deadLetterUrl !== undefined ? { invokeDeadLetterQueueUrl: invoke.deadLetterUrl } : {}),
    reconcileQueueUrl,
    registry,
    connectors,
    readDeps,
    receiveInvokes,
    async drain(as?: { receive_count: number }) {
      const outcomes: AttemptOutcome[] = [];
      const received = await receiveInvokes();
      for (const { message, receipt, receive_count } of received) {
        try {
          const o = await runtime.runAttempt(message, { receive_count: as?.receive_count ?? receive_count });
          outcomes.push(o);
          if (o.retry) await changeVisibility(sqs(), invokeQueueUrl, receipt, 0);
          else await deleteMessages(sqs(), invokeQueueUrl, [receipt]);
        } catch (err) {
          // A crash: the message is not acknowledged and comes back.
          await changeVisibility(sqs(), invokeQueueUrl, receipt, 0);
          if (!isAipError(err, 'runtime.crash_injected')) throw err;
        }
      }
      return outcomes;
    },
    async receiveReconciles() {
      const raw = await receiveRaw(reconcileQueueUrl);
      await deleteMessages(
        sqs(),
        reconcileQueueUrl,
        raw.map((r) => r.receipt),
      );
      return raw.map((r) => decodeQueueMessage(r.body) as ReconcileMessage);
    },
    async verifyChain(transaction_id: string) {
      const record = await table.store.get({ tenant_id: TENANT, transaction_id });
      const receipts = (await table.store.listReceipts({ tenant_id: TENANT, transaction_id, limit: 100 })).items.map((r) => r.receipt);
      return verifyReceiptChain(receipts, {
        transaction_id,
        ...(record ? { expected_count: record.receipt_count, ...(record.receipt_head ? { expected_head: record.receipt_head } : {}) } : {}),
      });
    },
    async destroy() {
      await table.destroy();
    },
  };
}

// --- common flows ---------------------------------------------------------------------------

/** The AipError code a promise rejects with. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isAipError(err)) return err.code;
    throw err;
  }
  throw new Error('expected a rejection');
}

/** The AipError a promise rejects with. */
export async function errorOf(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    if (isAipError(err)) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

/**
 * Whether `outcome` is a correct answer for a delivery of one message that
 * lost a race of concurrent deliveries to `winner`, the attempt that settled:
 * deferred (the winner's lease was live: redeliver later) or, for a delivery
 * that read the action after the winner settled it, already_settled with the
 * winner's result (acknowledged, nothing retried). Which one a loser gets
 * depends only on timing, so a race test accepts both.
 */
export function lostTheRace(winner: AttemptOutcome | undefined): (outcome: AttemptOutcome) => boolean {
  return (outcome) => {
    if (outcome.disposition === 'deferred') return outcome.retry;
    if (outcome.disposition !== 'already_settled' || outcome.retry) return false;
    return outcome.action_result !== undefined && outcome.action_result.status === (winner?.action_result?.status ?? outcome.action_result.status);
  };
}
