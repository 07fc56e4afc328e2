/**
 * DynamoDB adapter of the UnitOfWork port (lib/ports/unit-of-work.ts).
 *
 * Each intent is mapped ONCE, by the store adapter that owns its item
 * (`DynamoTransactionStore.map`, `DynamoActionStore.map`, ...), to a
 * `MappedWrite`: its conditional items, the classifier of a failed condition,
 * and what the committed intent answers. This module only sends them:
 *
 * - one intent of one item: a conditional PutItem or UpdateItem (ALL_NEW
 *   image back, ALL_OLD image on a failed condition; a TransactionConflict,
 *   the item being in another writer's TransactWriteItems, retried as below);
 * - anything else: one TransactWriteItems, every item asking for its ALL_OLD
 *   image on a failed condition. A cancellation is classified from
 *   CancellationReasons[i].Item, never by a second read. A TransactionConflict
 *   (another transaction on one of the items in flight) is retried with a short
 *   jittered backoff, then reported as the first intent's lost race.
 *
 * Refusals are classified here, in one place: each refused item is handed to
 * the classifier of the intent it belongs to. Limits: DynamoDB allows 100
 * items and 4 MB per TransactWriteItems, and one item only once; the largest
 * commit the runtime makes holds 5 items besides a terminal write's retention
 * stamps, which the transaction mapping caps (lib/aws/dynamo/transaction-store.ts).
 */
import { setTimeout as delay } from 'node:timers/promises';
import {
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type PutCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { CommitOutcome, IntentKind, Refusal, UnitOfWork, WriteIntent } from '../../ports/unit-of-work.js';
import { fromAttributeMap } from './attribute-values.js';
import { errorName, mapStoreError } from './store-errors.js';
import type { Item } from './store-support.js';

/** One item of a TransactWriteItems request (document client shape). */
export type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** What a refused item of an intent means. `already`: the item already is as the intent asks (a repeated write), valid when the intent was sent alone. */
export interface Verdict<W = unknown, C = unknown> {
  readonly error: AipError;
  readonly current?: C;
  readonly already?: W;
}

/** An intent mapped to its conditional items, built but not sent. */
export interface MappedWrite<W = unknown, C = unknown> {
  /** The items, the intent's own record first. Every Put/Update carries its condition. */
  readonly items: readonly TransactItem[];
  /** Classifies a failed condition of items[at] from its ALL_OLD image (undefined: the item is absent). */
  readonly refuse: (at: number, old: Item | undefined) => Verdict<W, C>;
  /** The error of a race lost to concurrent atomic writes on the same items. */
  readonly race: () => AipError;
  /** What the committed intent answers. `image`: the new image of its first item when it was sent alone as an UpdateItem. */
  readonly written: (image: Item | undefined) => W | Promise<W>;
  /** Work after a landed write that the atomic write could not hold (idempotent). */
  readonly after?: () => Promise<void>;
  /**
   * Work the atomic write could not hold that is safe whether or not the write then lands (idempotent): done before
   * it, so that a crash in between cannot leave it undone after a landed write.
   */
  readonly before?: () => Promise<void>;
}

/** A store adapter's mapping of the intents it owns. */
export interface IntentMapper {
  map(intent: WriteIntent): MappedWrite;
}

type Reason = { readonly code: string; readonly old: Item | undefined };
type Sent = { readonly ok: true; readonly image?: Item } | { readonly ok: false; readonly reasons: readonly Reason[] };

export interface DynamoUnitOfWorkOptions {
  readonly client: DynamoDBDocumentClient;
  /** The mapper of each intent kind's owner, by the kind's prefix (`transaction`, `action`, `idempotency`, `approval`, `stream`). */
  readonly mappers: { readonly [owner in OwnerOf<IntentKind>]: IntentMapper };
  /** Sends after a TransactionConflict before giving up. Default 6. */
  readonly conflictRetries?: number;
}

type OwnerOf<K extends string> = K extends `${infer O}.${string}` ? O : never;

export class DynamoUnitOfWork implements UnitOfWork {
  private readonly client: DynamoDBDocumentClient;
  private readonly mappers: DynamoUnitOfWorkOptions['mappers'];
  private readonly conflictRetries: number;

  constructor(options: DynamoUnitOfWorkOptions) {
    this.client = options.client;
    this.mappers = options.mappers;
    this.conflictRetries = options.conflictRetries ?? 6;
  }

  async commit<const I extends readonly WriteIntent[]>(intents: I): Promise<CommitOutcome<I>> {
    if (intents.length === 0) return { committed: true, written: [] } as unknown as CommitOutcome<I>;
    // Mapping validates every intent before anything is sent (invalid input throws here).
    const mapped = intents.map((intent) => this.mapperOf(intent.kind).map(intent));
    const items: TransactItem[] = [];
    const starts: number[] = [];
    for (const m of mapped) {
      starts.push(items.length);
      items.push(...m.items);
    }
    const first = mapped[0] as MappedWrite;
    for (const m of mapped) await m.before?.();
    const sent = await this.send(items, () => first.race());
    if (sent.ok) {
      const written: unknown[] = [];
      for (const m of mapped) written.push(await m.written(mapped.length === 1 ? sent.image : undefined));
      for (const m of mapped) await m.after?.();
      return { committed: true, written } as unknown as CommitOutcome<I>;
    }
    // Each refusing intent is classified by its own mapping, from its first refused item.
    const verdicts: { index: number; verdict: Verdict }[] = [];
    mapped.forEach((m, index) => {
      const start = starts[index] as number;
      for (let at = 0; at < m.items.length; at++) {
        const reason = sent.reasons[start + at];
        if (reason?.code !== 'ConditionalCheckFailed') continue;
        verdicts.push({ index, verdict: m.refuse(at, reason.old) });
        return;
      }
    });
    // A lone intent whose item already is as asked: a repeated write, answered with the stored record.
    const lone = mapped.length === 1 ? verdicts[0]?.verdict.already : undefined;
    if (lone !== undefined) return { committed: true, written: [lone] } as unknown as CommitOutcome<I>;
    // A condition failed on no item we can name (an image deleted in between): a lost race.
    if (verdicts.length === 0) throw first.race();
    const refused = verdicts.map(
      ({ index, verdict }) =>
        ({
          index,
          kind: (intents[index] as WriteIntent).kind,
          error: verdict.error,
          ...(verdict.current !== undefined ? { current: verdict.current } : {}),
        }) as Refusal,
    );
    return { committed: false, refused };
  }

  private mapperOf(kind: IntentKind): IntentMapper {
    const owner = kind.slice(0, kind.indexOf('.')) as OwnerOf<IntentKind>;
    const mapper = this.mappers[owner];
    if (mapper === undefined) throw new AipError('internal.unexpected', `no mapping for write intent ${kind}`);
    return mapper;
  }

  /** One conditional write, or one TransactWriteItems retried while its only failure is a TransactionConflict. */
  private async send(items: readonly TransactItem[], onRace: () => AipError): Promise<Sent> {
    const only = items.length === 1 ? items[0] : undefined;
    if (only?.Put !== undefined)
      return this.sendOne(() => this.client.send(new PutCommand({ ...(only.Put as PutCommandInput), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })), onRace);
    if (only?.Update !== undefined) {
      const update = only.Update;
      return this.sendOne(async () => {
        const out = await this.client.send(
          new UpdateCommand({ ...(update as UpdateCommandInput), ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
        );
        return out.Attributes;
      }, onRace);
    }
    const transactItems = items.map(withOldImage);
    for (let attempt = 0; ; attempt++) {
      try {
        await this.client.send(new TransactWriteCommand({ TransactItems: transactItems }));
        return { ok: true };
      } catch (err) {
        const name = errorName(err);
        const raw = (err as { CancellationReasons?: unknown }).CancellationReasons;
        const reasons: Reason[] = Array.isArray(raw)
          ? raw.map((r: { Code?: string; Item?: unknown }) => ({ code: r?.Code ?? 'None', old: fromAttributeMap(r?.Item) }))
          : [];
        const failedCondition = reasons.some((r) => r.code === 'ConditionalCheckFailed');
        const conflictOnly =
          name === 'TransactionConflictException' ||
          (name === 'TransactionCanceledException' && reasons.some((r) => r.code === 'TransactionConflict') && !failedCondition);
        if (conflictOnly) {
          if (attempt >= this.conflictRetries) throw onRace();
          await delay(5 * 2 ** attempt + Math.floor(Math.random() * 10));
          continue;
        }
        if (name === 'TransactionCanceledException' && failedCondition) return { ok: false, reasons };
        throw mapStoreError(err);
      }
    }
  }

  /**
   * One conditional write of one item. A TransactionConflict (the item is in a TransactWriteItems in flight, as a
   * record whose receipt is inside it may be while a concurrent writer's transaction holds it) is retried as the
   * TransactWriteItems path retries it, then reported as a lost race.
   */
  private async sendOne(write: () => Promise<unknown>, onRace: () => AipError): Promise<Sent> {
    for (let attempt = 0; ; attempt++) {
      try {
        const image = await write();
        return image !== undefined && image !== null && typeof image === 'object' ? { ok: true, image: image as Item } : { ok: true };
      } catch (err) {
        const name = errorName(err);
        if (name === 'ConditionalCheckFailedException')
          return { ok: false, reasons: [{ code: 'ConditionalCheckFailed', old: fromAttributeMap((err as { Item?: unknown }).Item) }] };
        if (name === 'TransactionConflictException') {
          if (attempt >= this.conflictRetries) throw onRace();
          await delay(5 * 2 ** attempt + Math.floor(Math.random() * 10));
          continue;
        }
        throw mapStoreError(err);
      }
    }
  }
}

function withOldImage(item: TransactItem): TransactItem {
  if (item.Put !== undefined && item.Put.ConditionExpression !== undefined) return { Put: { ...item.Put, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } };
  if (item.Update !== undefined && item.Update.ConditionExpression !== undefined)
    return { Update: { ...item.Update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } };
  if (item.ConditionCheck !== undefined) return { ConditionCheck: { ...item.ConditionCheck, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } };
  return item;
}
