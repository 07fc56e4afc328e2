/**
 * An in-process "ticketing system": the provider behind the hand-written
 * tickets reference connector (tickets.ts). It behaves like a small remote
 * service with an asynchronous job API, so the connector faces the same hard
 * cases as over HTTP:
 *
 * - `submit` accepts a ticket creation under an idempotency key and returns
 *   an operation (pending until processed; processed at once unless held);
 *   a repeated key with the same request returns the same operation;
 * - `wait` resolves when the operation is terminal (it can be aborted);
 * - `operation`, `cancel`, `ticket`, `search` as usual;
 * - test hooks: `hold()` keeps the next submitted operation pending until
 *   `release()`; `setApiTokens()` rotates the accepted tokens;
 *   `failNext('unavailable')` rejects the next submit before
 *   anything is recorded; `failNext('drop_after_accept')` records (and
 *   commits) the next submit, then loses the answer; events (`accepted`,
 *   `waiting`, `committed`) let tests synchronise without sleeping.
 *
 * Every API method authenticates its token SYNCHRONOUSLY (SHA-256 digests
 * compared in constant time) before returning its promise, so a caller can
 * hand over the token bytes from ConnectorSecret.withBytes and dispose the
 * secret before awaiting the answer.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export type DeskOperationStatus = 'pending' | 'succeeded' | 'failed' | 'canceled';
export type TicketPriority = 'low' | 'normal' | 'high';

export interface Ticket {
  readonly ticket_id: string;
  readonly title: string;
  readonly body: string | null;
  readonly priority: TicketPriority;
  readonly status: 'open';
  readonly created_at: string;
}

export interface DeskOperation {
  readonly operation_id: string;
  readonly status: DeskOperationStatus;
  readonly ticket_id: string | null;
  readonly idempotency_key: string;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface DeskAnswer<T> {
  readonly request_id: string;
  readonly value: T;
}

export type DeskErrorType = 'unauthorized' | 'unavailable' | 'connection_lost' | 'not_found' | 'conflict' | 'aborted' | 'invalid';

/** A provider error. `request_id` identifies the failed request (never credential material). */
export class TicketDeskError extends Error {
  constructor(
    readonly type: DeskErrorType,
    readonly request_id: string,
  ) {
    super(`ticket desk: ${type}`);
    this.name = 'TicketDeskError';
  }
}

export type DeskFault = 'unavailable' | 'drop_after_accept';

export type DeskEvent =
  | { readonly type: 'accepted'; readonly operation_id: string; readonly idempotency_key: string }
  | { readonly type: 'waiting'; readonly operation_id: string }
  | { readonly type: 'committed'; readonly operation_id: string; readonly ticket_id: string };

export interface TicketDeskOptions {
  /** Accepted API tokens (at least one, none empty). */
  readonly api_tokens: readonly (string | Uint8Array)[];
  readonly now?: () => Date;
}

interface OpRecord {
  op: DeskOperation;
  fingerprint: string;
  request: { title: string; body: string | null; priority: TicketPriority };
}

const digest = (b: Uint8Array | string): Buffer => createHash('sha256').update(b).digest();

export class TicketDesk {
  #tokens: Buffer[];
  readonly #now: () => Date;
  readonly #ops = new Map<string, OpRecord>();
  readonly #byKey = new Map<string, string>();
  readonly #tickets = new Map<string, Ticket>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #listeners = new Set<(e: DeskEvent) => void>();
  #faults: DeskFault[] = [];
  #holdNext = 0;

  constructor(options: TicketDeskOptions) {
    if (options.api_tokens.length === 0 || options.api_tokens.some((t) => t.length === 0))
      throw new TypeError('TicketDesk: api_tokens must list non-empty tokens');
    this.#tokens = options.api_tokens.map(digest);
    this.#now = options.now ?? (() => new Date());
  }

  // --- provider API ------------------------------------------------------------

  /** Accepts a ticket creation. Rejects with TicketDeskError. */
  submit(token: Uint8Array, request: { idempotency_key: string; title: string; body?: string; priority: TicketPriority }): Promise<DeskAnswer<DeskOperation>> {
    const rid = this.#auth(token);
    if (rid instanceof TicketDeskError) return Promise.reject(rid);
    const fault = this.#faults.shift();
    if (fault === 'unavailable') return Promise.reject(new TicketDeskError('unavailable', rid));
    if (!/^[\x21-\x7e]{1,255}$/.test(request.idempotency_key) || request.title.length === 0) return Promise.reject(new TicketDeskError('invalid', rid));
    const normalized = { title: request.title, body: request.body ?? null, priority: request.priority };
    const fingerprint = JSON.stringify(normalized);
    const existing = this.#byKey.get(request.idempotency_key);
    let record: OpRecord;
    if (existing !== undefined) {
      record = this.#ops.get(existing) as OpRecord;
      if (record.fingerprint !== fingerprint) return Promise.reject(new TicketDeskError('conflict', rid));
    } else {
      const at = this.#now().toISOString();
      const op: DeskOperation = {
        operation_id: `op_${randomBytes(8).toString('hex')}`,
        status: 'pending',
        ticket_id: null,
        idempotency_key: request.idempotency_key,
        created_at: at,
        updated_at: at,
      };
      record = { op, fingerprint, request: normalized };
      this.#ops.set(op.operation_id, record);
      this.#byKey.set(request.idempotency_key, op.operation_id);
      this.#emit({ type: 'accepted', operation_id: op.operation_id, idempotency_key: request.idempotency_key });
      if (this.#holdNext > 0) this.#holdNext -= 1;
      else this.#commit(op.operation_id);
    }
    if (fault === 'drop_after_accept') return Promise.reject(new TicketDeskError('connection_lost', rid));
    return Promise.resolve({ request_id: rid, value: record.op });
  }

  /** Resolves when the operation is terminal; rejects with `aborted` when the signal fires first. */
  wait(token: Uint8Array, operation_id: string, signal?: AbortSignal): Promise<DeskAnswer<DeskOperation>> {
    const rid = this.#auth(token);
    if (rid instanceof TicketDeskError) return Promise.reject(rid);
    const record = this.#ops.get(operation_id);
    if (record === undefined) return Promise.reject(new TicketDeskError('not_found', rid));
    if (record.op.status !== 'pending') return Promise.resolve({ request_id: rid, value: record.op });
    if (signal?.aborted) return Promise.reject(new TicketDeskError('aborted', rid));
    return new Promise((resolve, reject) => {
      const set = this.#waiters.get(operation_id) ?? new Set();
      const done = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve({ request_id: rid, value: (this.#ops.get(operation_id) as OpRecord).op });
      };
      const onAbort = (): void => {
        set.delete(done);
        reject(new TicketDeskError('aborted', rid));
      };
      set.add(done);
      this.#waiters.set(operation_id, set);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#emit({ type: 'waiting', operation_id });
    });
  }

  operation(token: Uint8Array, operation_id: string): Promise<DeskAnswer<DeskOperation>> {
    const rid = this.#auth(token);
    if (rid instanceof TicketDeskError) return Promise.reject(rid);
    const record = this.#ops.get(operation_id);
    return record ? Promise.resolve({ request_id: rid, value: record.op }) : Promise.reject(new TicketDeskError('not_found', rid));
  }

  /** Cancels a pending operation; a final one is a `conflict`. */
  cancel(token: Uint8Array, operation_id: string): Promise<DeskAnswer<DeskOperation>> {
    const rid = this.#auth(token);
    if (rid instanceof TicketDeskError) return Promise.reject(rid);
    const record = this.#ops.get(operation_id);
    if (record === undefined) return Promise.reject(new TicketDeskError('not_found', rid));
    if (record.op.status !== 'pending') return Promise.reject(new TicketDeskError('conflict', rid));
    this.#settle(operation_id, 'canceled');
    return Promise.resolve({ request_id: rid, value: record.op });
  }

  ticket(token: Uint8Array, ticket_id: string): Promise<DeskAnswer<Ticket>> {
    const rid = this.#auth(token);
    if (rid instanceof TicketDeskError) return Promise.reject(rid);
    const t = this.#tickets.get(ticket_id);
    return t ? Promise.resolve({ request_id: rid, value: t }) : Promise.reject(new TicketDeskError('not_found', rid));
  }

  /** Tickets whose title contains `query` (case-insensitive), in creation order. */
  search(token: Uint8Array, query: string): Promise<DeskAnswer<Ticket[]>> {
    const rid = this.#auth(token);
    if (rid instanceof TicketDeskError) return Promise.reject(rid);
    const q = query.toLowerCase();
    return Promise.resolve({ request_id: rid, value: [...this.#tickets.values()].filter((t) => t.title.toLowerCase().includes(q)) });
  }

  // --- test hooks ----------------------------------------------------------------

  /** Replaces the accepted API tokens (a rotation: the old ones are refused from now on). */
  setApiTokens(tokens: readonly (string | Uint8Array)[]): void {
    if (tokens.length === 0 || tokens.some((t) => t.length === 0)) throw new TypeError('TicketDesk: api_tokens must list non-empty tokens');
    this.#tokens = tokens.map(digest);
  }

  /** Keeps the next `n` submitted operations pending until release(). */
  hold(n = 1): void {
    this.#holdNext += n;
  }

  /** Commits every held (pending) operation; returns how many. */
  release(): number {
    let n = 0;
    for (const r of this.#ops.values()) {
      if (r.op.status === 'pending') {
        this.#commit(r.op.operation_id);
        n += 1;
      }
    }
    return n;
  }

  /** Settles a pending operation as failed. */
  fail(operation_id: string): void {
    if (this.#ops.get(operation_id)?.op.status === 'pending') this.#settle(operation_id, 'failed');
  }

  failNext(fault: DeskFault): void {
    this.#faults.push(fault);
  }

  tickets(): Ticket[] {
    return [...this.#tickets.values()];
  }

  operations(): DeskOperation[] {
    return [...this.#ops.values()].map((r) => r.op);
  }

  findOperation(operation_id: string): DeskOperation | undefined {
    return this.#ops.get(operation_id)?.op;
  }

  onEvent(listener: (e: DeskEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  waitForEvent(predicate: (e: DeskEvent) => boolean): Promise<DeskEvent> {
    return new Promise((resolve) => {
      const off = this.onEvent((e) => {
        if (predicate(e)) {
          off();
          resolve(e);
        }
      });
    });
  }

  // --- internals -----------------------------------------------------------------

  #auth(token: Uint8Array): string | TicketDeskError {
    const rid = `req_${randomBytes(6).toString('hex')}`;
    const presented = digest(token);
    let ok = false;
    for (const d of this.#tokens) ok = timingSafeEqual(presented, d) || ok;
    return ok ? rid : new TicketDeskError('unauthorized', rid);
  }

  #commit(operation_id: string): void {
    const record = this.#ops.get(operation_id) as OpRecord;
    const ticket: Ticket = { ticket_id: `tk_${randomBytes(6).toString('hex')}`, ...record.request, status: 'open', created_at: this.#now().toISOString() };
    this.#tickets.set(ticket.ticket_id, ticket);
    record.op = { ...record.op, status: 'succeeded', ticket_id: ticket.ticket_id, updated_at: this.#now().toISOString() };
    this.#emit({ type: 'committed', operation_id, ticket_id: ticket.ticket_id });
    this.#wake(operation_id);
  }

  #settle(operation_id: string, status: 'failed' | 'canceled'): void {
    const record = this.#ops.get(operation_id) as OpRecord;
    record.op = { ...record.op, status, updated_at: this.#now().toISOString() };
    this.#wake(operation_id);
  }

  #wake(operation_id: string): void {
    const set = this.#waiters.get(operation_id);
    this.#waiters.delete(operation_id);
    for (const w of set ?? []) w();
  }

  #emit(e: DeskEvent): void {
    for (const l of [...this.#listeners]) {
      try {
        l(e);
      } catch {
        // a listener's failure is not the desk's
      }
    }
  }
}
