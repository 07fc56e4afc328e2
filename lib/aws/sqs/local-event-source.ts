/**
 * The local stack's stand-in for Lambda's SQS event source mapping on a work
 * queue, including the delivery order of an SQS fair queue. Used by `npm
 * start`, the end-to-end tests and the bench; never deployed.
 *
 * What it emulates:
 * - **Concurrency.** `instances` batches run at once, as Lambda runs up to the
 *   event source's maximum concurrency: each instance takes a batch of up to
 *   `batchSize` messages, invokes the handler, and takes the next batch only
 *   when the whole batch is done (a Lambda invocation holds its slot until its
 *   slowest record finishes). Each batch runs like ./poller.ts `runSqsBatch`:
 *   partial batch responses, deletes, `retryDelaySeconds`.
 * - **Fair queues** (`fairness: 'tenant'`). On AWS, a standard queue whose
 *   messages carry a `MessageGroupId` is a fair queue: when one group (tenant)
 *   holds a disproportionate share of the consumers, SQS returns the other
 *   groups' messages first (docs/queue-and-scheduler.md, "Fairness between
 *   tenants"). fauxqs keeps no `MessageGroupId` on standard queues and serves
 *   them oldest first, so the emulation happens here: a receiver reads the
 *   queue ahead into a local backlog (up to `lookAhead` messages, held
 *   invisible in fauxqs), and {@link FairBacklog} decides which messages the
 *   next free instance gets, by the rules AWS documents (below).
 *   `fairness: 'none'` serves the backlog oldest first, like a standard queue
 *   without groups.
 *
 * SQS's rules, as documented ("How Amazon SQS fair queues work"), and what
 * the emulation does with them:
 * - a tenant is noisy when it holds more than 10% of the in-flight messages
 *   (AWS also asks for at least 30 of them in flight, more than a laptop runs
 *   at once: the emulation drops that minimum) or more than 10% of the recent
 *   processing time (here: the durations of the last {@link RECENT_COMPLETIONS}
 *   completed messages);
 * - while a quiet tenant has a message waiting, consumers get it first (oldest
 *   quiet message first); otherwise they get the noisy tenant's messages, the
 *   noisy tenant with the fewest in-flight messages first;
 * - a tenant stops being noisy when its backlog is drained (AWS also after 5
 *   idle minutes; a drained backlog comes first here);
 * - a message without a group is a tenant of its own.
 *
 * Differences from AWS that remain: the receiver holds up to `lookAhead`
 * messages in flight in fauxqs before any instance takes them (another
 * consumer of the same queue would not see them; the local stack has none);
 * the visibility timeout is restarted when an instance takes a message, as it
 * starts when Lambda receives one; there is no batching window.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ChangeMessageVisibilityBatchCommand, GetQueueAttributesCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { decodeQueueMessage } from '../../ports/messages.js';
import type { QueueFairness } from '../../ports/queue.js';
import { runSqsBatch, toSqsRecord, type SqsBatchHandler } from './poller.js';
import { fairMessageGroupId, receiveMessages, SQS_BATCH_MAX } from './queue.js';

/** A tenant above this share of in-flight messages or of recent processing time is noisy. */
export const NOISY_SHARE = 0.1;
/** How many completed messages make up "recent processing time". */
export const RECENT_COMPLETIONS = 100;
/** Default of `lookAhead`: messages read ahead into the local backlog. */
export const DEFAULT_LOOK_AHEAD = 100;
/**
 * Visibility timeout of a message while it waits in the local backlog. It is
 * restarted with the queue's own timeout when an instance takes the message;
 * one that waits longer reappears in fauxqs and is received again, keeping its
 * place in the backlog.
 */
export const BACKLOG_HOLD_SECONDS = 900;

/** A message in the backlog. `token` tells two deliveries of one message apart. */
export interface BacklogEntry<T> {
  readonly id: string;
  /** The group key: the message group, or a key of its own for a message without one. */
  readonly group: string;
  readonly item: T;
  readonly token: number;
}

/**
 * The waiting messages of a queue and the order a fair queue delivers them in.
 * Pure: no I/O and no clock (durations are given to {@link done}), so the order
 * is tested directly.
 */
export class FairBacklog<T> {
  private nextToken = 0;
  /** Waiting entries in arrival order. */
  private waiting: BacklogEntry<T>[] = [];
  private readonly inFlight = new Map<string, number>();
  private readonly taken = new Map<number, string>();
  /** The last completions, oldest first, and each group's sum of their durations. */
  private recent: Array<{ group: string; ms: number }> = [];
  private readonly recentMs = new Map<string, number>();

  constructor(readonly fairness: QueueFairness = 'tenant') {}

  /** Messages waiting for an instance. */
  get size(): number {
    return this.waiting.length;
  }

  /** Messages taken and not yet done. */
  get inFlightCount(): number {
    return this.taken.size;
  }

  /**
   * Adds a received message. A message already waiting (received again after
   * its hold expired) keeps its place and takes the new item (receipt handle).
   */
  add(id: string, group: string | undefined, item: T): 'added' | 'replaced' {
    const index = this.waiting.findIndex((e) => e.id === id);
    if (index >= 0) {
      const old = this.waiting[index] as BacklogEntry<T>;
      this.waiting[index] = { ...old, item };
      return 'replaced';
    }
    this.waiting.push({ id, group: group ?? `\u0000message:${id}`, item, token: this.nextToken++ });
    return 'added';
  }

  /**
   * Takes up to `max` messages for one batch (one ReceiveMessage), in delivery
   * order. Which tenants are noisy is decided once, from the state before the
   * batch: quiet tenants' messages first, oldest first; then noisy tenants',
   * each next one from the noisy tenant with the fewest messages in flight
   * (this batch's included), oldest tenant first on a tie. With `fairness:
   * 'none'`, oldest first. The batch counts as in flight until {@link done}.
   */
  take(max: number): BacklogEntry<T>[] {
    const picked = new Set<number>();
    const batch: BacklogEntry<T>[] = [];
    const pick = (entry: BacklogEntry<T>) => {
      picked.add(entry.token);
      batch.push(entry);
    };
    if (this.fairness === 'none') {
      for (const entry of this.waiting.slice(0, max)) pick(entry);
    } else {
      const noisy = new Map<string, boolean>();
      const isNoisy = (group: string) => {
        const known = noisy.get(group);
        if (known !== undefined) return known;
        const n = this.isNoisy(group);
        noisy.set(group, n);
        return n;
      };
      for (const entry of this.waiting) {
        if (batch.length >= max) break;
        if (!isNoisy(entry.group)) pick(entry);
      }
      const counts = new Map<string, number>();
      while (batch.length < max) {
        // The oldest waiting message of each noisy tenant, in arrival order of those messages.
        const heads = new Map<string, BacklogEntry<T>>();
        for (const entry of this.waiting) if (!picked.has(entry.token) && !heads.has(entry.group)) heads.set(entry.group, entry);
        let next: { entry: BacklogEntry<T>; inFlight: number } | undefined;
        for (const [group, entry] of heads) {
          const n = (this.inFlight.get(group) ?? 0) + (counts.get(group) ?? 0);
          if (next === undefined || n < next.inFlight) next = { entry, inFlight: n };
        }
        if (next === undefined) break;
        counts.set(next.entry.group, (counts.get(next.entry.group) ?? 0) + 1);
        pick(next.entry);
      }
    }
    this.waiting = this.waiting.filter((e) => !picked.has(e.token));
    for (const entry of batch) {
      this.inFlight.set(entry.group, (this.inFlight.get(entry.group) ?? 0) + 1);
      this.taken.set(entry.token, entry.group);
    }
    return batch;
  }

  /** The batch's messages are done (deleted or left for redelivery); `ms` is how long they were processed. */
  done(entries: ReadonlyArray<BacklogEntry<T>>, ms: number): void {
    for (const entry of entries) {
      const group = this.taken.get(entry.token);
      if (group === undefined) continue;
      this.taken.delete(entry.token);
      const left = (this.inFlight.get(group) ?? 1) - 1;
      if (left > 0) this.inFlight.set(group, left);
      else this.inFlight.delete(group);
      this.recent.push({ group, ms: Math.max(0, ms) });
      this.recentMs.set(group, (this.recentMs.get(group) ?? 0) + Math.max(0, ms));
    }
    while (this.recent.length > RECENT_COMPLETIONS) {
      const old = this.recent.shift() as { group: string; ms: number };
      this.recentMs.set(old.group, (this.recentMs.get(old.group) ?? 0) - old.ms);
    }
    // A tenant whose backlog is drained is quiet again.
    for (const entry of entries) {
      if (!this.inFlight.has(entry.group) && !this.waiting.some((e) => e.group === entry.group)) this.forget(entry.group);
    }
  }

  /** Removes and returns every waiting entry (the source stops and gives them back to the queue). */
  drain(): BacklogEntry<T>[] {
    const out = this.waiting;
    this.waiting = [];
    return out;
  }

  /** Whether a group is noisy now (exposed for tests and logs). */
  isNoisy(group: string): boolean {
    const inFlightTotal = this.taken.size;
    const recentTotal = [...this.recentMs.values()].reduce((a, b) => a + b, 0);
    const inFlightShare = inFlightTotal > 0 ? (this.inFlight.get(group) ?? 0) / inFlightTotal : 0;
    const timeShare = recentTotal > 0 ? (this.recentMs.get(group) ?? 0) / recentTotal : 0;
    return inFlightShare > NOISY_SHARE || timeShare > NOISY_SHARE;
  }

  private forget(group: string): void {
    if (!this.recentMs.has(group)) return;
    this.recentMs.delete(group);
    this.recent = this.recent.filter((r) => r.group !== group);
  }
}

/**
 * The group of a received message for the local stack: `MessageGroupId` when
 * the emulator kept it (FIFO queues), else the group the producer sent,
 * derived again from the body with the producer's own function
 * (lib/aws/sqs/queue.ts `fairMessageGroupId`), because fauxqs drops
 * `MessageGroupId` on standard queues. A body that is not a queue message has
 * no group (a tenant of its own).
 */
export function messageGroupOf(message: Message): string | undefined {
  const kept = message.Attributes?.MessageGroupId;
  if (kept) return kept;
  try {
    return fairMessageGroupId(decodeQueueMessage(message.Body ?? ''));
  } catch {
    return undefined;
  }
}

export interface LocalEventSourceOptions {
  readonly client: SQSClient;
  readonly queueUrl: string;
  readonly handler: SqsBatchHandler;
  /** Messages per batch, 1..10. Default 10. */
  readonly batchSize?: number;
  /** Batches handled at once (Lambda's concurrency). Default 1. */
  readonly instances?: number;
  /** Default `tenant` (fair queue); `none`: oldest first. */
  readonly fairness?: QueueFairness;
  /** A received message's group. Default: its `MessageGroupId` attribute ({@link messageGroupOf} for the local stack). */
  readonly groupOf?: (message: Message) => string | undefined;
  /** Messages read ahead into the local backlog, at least `batchSize`. Default {@link DEFAULT_LOOK_AHEAD}. */
  readonly lookAhead?: number;
  /** Long-poll wait of the receiver, 0..20 s. Default 20. */
  readonly waitTimeSeconds?: number;
  /** Visibility timeout from the moment an instance takes a message. Default: the queue's. */
  readonly visibilityTimeoutSeconds?: number;
  /** As in ./poller.ts: failed messages become visible again after this many seconds. Default: left alone. */
  readonly retryDelaySeconds?: number;
  /** Queue ARN for the records' eventSourceARN. Default: read with GetQueueAttributes. */
  readonly queueArn?: string;
  /** Name in the local Context; instance `i` > 0 gets `-<i>` appended. Default `local-<queue name>`. */
  readonly functionName?: string;
  /** Reported by `context.getRemainingTimeInMillis()`. Default 30 000 ms. */
  readonly functionTimeoutMs?: number;
  /** Receive, visibility and handler errors (the loops keep going). */
  readonly onError?: (error: unknown) => void;
  /** Pause after a receive error. Default 1 000 ms. */
  readonly errorBackoffMs?: number;
  /** Called when an instance takes a batch, before the handler runs (tests observe the delivery order). */
  readonly onDispatch?: (records: ReadonlyArray<SQSRecord>, instance: number) => void;
  /** Called after the receiver added messages to the backlog, with the backlog's size. */
  readonly onReceived?: (messageIds: ReadonlyArray<string>, backlogSize: number) => void;
}

export interface LocalEventSource {
  /** Resolves once every loop has ended (after `stop()`). */
  readonly stopped: Promise<void>;
  /**
   * Makes the messages read ahead visible again at once, stops receiving (a
   * long poll still waiting takes back what it can and hands it back; with
   * nothing to hand back it is aborted), and finishes the batches in hand.
   */
  stop(): Promise<void>;
}

/** Resolves waiters when fired; a waiter also resolves when the signal aborts. */
class Pulse {
  private waiters: Array<() => void> = [];
  wait(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.push(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
  fire(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

async function setVisibility(client: SQSClient, queueUrl: string, handles: ReadonlyArray<string>, seconds: number): Promise<void> {
  for (let i = 0; i < handles.length; i += SQS_BATCH_MAX) {
    const chunk = handles.slice(i, i + SQS_BATCH_MAX);
    await client.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((handle, j) => ({ Id: `m${j}`, ReceiptHandle: handle, VisibilityTimeout: seconds })),
      }),
    );
  }
}

/** Starts the receiver and the instances; `stop()` ends them. */
export function startLocalEventSource(options: LocalEventSourceOptions): LocalEventSource {
  const { client, queueUrl, handler } = options;
  const batchSize = Math.min(SQS_BATCH_MAX, Math.max(1, Math.floor(options.batchSize ?? SQS_BATCH_MAX)));
  const instances = Math.max(1, Math.floor(options.instances ?? 1));
  const lookAhead = Math.max(batchSize, Math.floor(options.lookAhead ?? DEFAULT_LOOK_AHEAD));
  const groupOf = options.groupOf ?? ((m: Message) => m.Attributes?.MessageGroupId);
  const baseName = options.functionName ?? `local-${queueUrl.slice(queueUrl.lastIndexOf('/') + 1)}`;
  const backlog = new FairBacklog<Message>(options.fairness ?? 'tenant');
  /** Aborted by stop(): ends the waits (instances, a full backlog, error pauses). */
  const controller = new AbortController();
  const { signal } = controller;
  /**
   * Aborts the receiver's pending long poll. Only when nothing was handed back
   * on stop: an aborted long poll can still take messages server-side (fauxqs
   * does not notice the client going away, nor would SQS), and their receipt
   * handles would be lost, hiding them for BACKLOG_HOLD_SECONDS.
   */
  const receiveController = new AbortController();
  let stopping = false;
  const work = new Pulse();
  const space = new Pulse();
  const onError = (err: unknown) => options.onError?.(err);

  const pause = async () => {
    try {
      await delay(options.errorBackoffMs ?? 1_000, undefined, { signal });
    } catch {
      // aborted
    }
  };

  const setup = (async () => {
    const region = await client.config.region();
    const wanted = [
      ...(options.queueArn === undefined ? ['QueueArn' as const] : []),
      ...(options.visibilityTimeoutSeconds === undefined ? ['VisibilityTimeout' as const] : []),
    ];
    const attributes =
      wanted.length > 0 ? ((await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: wanted }))).Attributes ?? {}) : {};
    return {
      region,
      arn: options.queueArn ?? attributes.QueueArn ?? '',
      visibility: options.visibilityTimeoutSeconds ?? Number(attributes.VisibilityTimeout ?? 30),
    };
  })();

  async function receiver(): Promise<void> {
    while (!stopping) {
      if (backlog.size >= lookAhead) {
        await space.wait(signal);
        continue;
      }
      try {
        const messages = await receiveMessages(client, queueUrl, {
          maxMessages: Math.min(SQS_BATCH_MAX, lookAhead - backlog.size),
          waitTimeSeconds: options.waitTimeSeconds ?? 20,
          visibilityTimeoutSeconds: BACKLOG_HOLD_SECONDS,
          abortSignal: receiveController.signal,
        });
        if (stopping) {
          // Received while stopping (typically the messages stop() just handed back): give them back too.
          const handles = messages.flatMap((m) => (m.ReceiptHandle ? [m.ReceiptHandle] : []));
          if (handles.length > 0) await setVisibility(client, queueUrl, handles, 0).catch(onError);
          break;
        }
        const ids: string[] = [];
        for (const m of messages) {
          if (!m.MessageId || !m.ReceiptHandle) continue;
          backlog.add(m.MessageId, groupOf(m), m);
          ids.push(m.MessageId);
        }
        if (ids.length > 0) {
          options.onReceived?.(ids, backlog.size);
          work.fire();
        }
      } catch (err) {
        if (stopping) break;
        onError(err);
        await pause();
      }
    }
  }

  async function instance(i: number): Promise<void> {
    const { region, arn, visibility } = await setup;
    const functionName = i === 0 ? baseName : `${baseName}-${i}`;
    while (!stopping) {
      const entries = backlog.take(batchSize);
      if (entries.length === 0) {
        await work.wait(signal);
        continue;
      }
      space.fire();
      const started = performance.now();
      try {
        // Lambda's receive starts the visibility timeout; here the instance taking the batch does.
        await setVisibility(
          client,
          queueUrl,
          entries.map((e) => e.item.ReceiptHandle as string),
          visibility,
        ).catch(onError);
        const records = entries.map((e) => toSqsRecord(e.item, arn, region));
        options.onDispatch?.(records, i);
        await runSqsBatch(
          {
            client,
            queueUrl,
            handler,
            functionName,
            region,
            ...(options.functionTimeoutMs !== undefined ? { functionTimeoutMs: options.functionTimeoutMs } : {}),
            ...(options.retryDelaySeconds !== undefined ? { retryDelaySeconds: options.retryDelaySeconds } : {}),
            onError,
          },
          records,
        );
      } catch (err) {
        onError(err);
      } finally {
        backlog.done(entries, performance.now() - started);
      }
    }
  }

  const stopped = (async () => {
    try {
      await setup;
    } catch (err) {
      onError(err);
      return;
    }
    await Promise.all([receiver(), ...Array.from({ length: instances }, (_, i) => instance(i))]);
    // Normally empty (stop() drained it); anything left goes back to the queue too.
    const left = backlog.drain();
    if (left.length > 0) {
      await setVisibility(
        client,
        queueUrl,
        left.map((e) => e.item.ReceiptHandle as string),
        0,
      ).catch(onError);
    }
  })();

  return {
    stopped,
    stop: async () => {
      if (!stopping) {
        stopping = true;
        // Messages read ahead but never handled go back to the queue at once. A long poll of the
        // receiver still waiting may take them again: it hands them back and ends (receiver()).
        const left = backlog.drain();
        if (left.length > 0) {
          await setVisibility(
            client,
            queueUrl,
            left.map((e) => e.item.ReceiptHandle as string),
            0,
          ).catch(onError);
        } else {
          receiveController.abort();
        }
        controller.abort();
      }
      await stopped;
    },
  };
}
