/**
 * Items as a search of what was written must see them. Opaque attributes are stored packed
 * (lib/aws/dynamo/packed-attributes.ts: compressed JSON or raw digest bytes), so a search of the raw bytes for
 * a planted secret would pass without looking. Every test that searches stored items (secrets never written,
 * redaction, evidence kept) reads them through `readableItem`: each packed value decoded, recursively, in a raw
 * AttributeValue map (`{B: bytes}`) or a document item (bytes). A Binary value of no known format throws, so
 * nothing undecodable is ever searched vacuously.
 */
import { ScanCommand, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { unpack } from '../../lib/aws/dynamo/packed-attributes.js';

function readable(value: unknown): unknown {
  if (value instanceof Uint8Array) return unpack(value);
  if (Array.isArray(value)) return value.map(readable);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  // A marshalled Binary attribute value: its decoded JSON in place of the bytes.
  if (entries.length === 1 && entries[0]?.[0] === 'B' && entries[0][1] instanceof Uint8Array) return { PACKED: unpack(entries[0][1]) };
  return Object.fromEntries(entries.map(([k, v]) => [k, readable(v)]));
}

/** An item (raw AttributeValue map or document item) with every packed value decoded. */
export function readableItem<T extends Record<string, unknown>>(item: T): Record<string, unknown> {
  return readable(item) as Record<string, unknown>;
}

/** Every item of a table (paged, strongly consistent Scan), each readable as `readableItem` makes it. */
export async function scanReadable(client: { send(command: ScanCommand): Promise<ScanCommandOutput> }, table: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: ScanCommandOutput['LastEvaluatedKey'];
  do {
    const page = await client.send(new ScanCommand({ TableName: table, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start } : {}) }));
    items.push(...(page.Items ?? []).map((i) => readableItem(i)));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}
