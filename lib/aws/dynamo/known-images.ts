/**
 * Known images: transaction items as the adapter last read or wrote them,
 * keyed by PK, with the (process) time they were learned, most recent last.
 *
 * An image is only ever used as the pre-image of a write conditioned on its
 * revision and created_at; every write raises the revision, so one
 * (created_at, revision) pair is one item state. A write carrying a receipt
 * (a TransactWriteItems, which returns no item image) then computes the record
 * after the write from the image instead of reading it back.
 * See docs/bench/analysis.md (4.1).
 */
import { keys } from './table-design.js';

type Item = Record<string, unknown>;

/** How long a known image may be used (the same container usually writes within milliseconds of its read). */
const KNOWN_IMAGE_TTL_MS = 60_000;

export const DEFAULT_KNOWN_IMAGES = 256;

export class KnownImages {
  private readonly images = new Map<string, { readonly item: Item; readonly learned: number }>();

  /** `limit`: how many items are kept (the oldest learned is dropped first); 0 keeps none. */
  constructor(private readonly limit: number) {}

  /** Keeps a copy of a transaction item (ignored when it has no PK). */
  remember(item: Item | undefined): void {
    if (this.limit === 0 || item === undefined || typeof item.PK !== 'string') return;
    this.images.delete(item.PK);
    this.images.set(item.PK, { item: structuredClone(item), learned: performance.now() });
    if (this.images.size > this.limit) {
      const oldest = this.images.keys().next().value;
      if (oldest !== undefined) this.images.delete(oldest);
    }
  }

  forget(tenant: string, txn: string): void {
    this.images.delete(keys.transaction(tenant, txn).PK);
  }

  /** The known image of the item at `revision`, if any (and still fresh). */
  recall(tenant: string, txn: string, revision: number): Item | undefined {
    const pk = keys.transaction(tenant, txn).PK;
    const known = this.images.get(pk);
    if (known === undefined) return undefined;
    if (performance.now() - known.learned > KNOWN_IMAGE_TTL_MS) {
      this.images.delete(pk);
      return undefined;
    }
    return known.item.revision === revision && typeof known.item.created_at === 'string' ? known.item : undefined;
  }
}
