/**
 * Minimal reader for raw DynamoDB AttributeValue maps.
 *
 * lib-dynamodb unmarshalls command outputs but not exceptions: the item
 * returned by ReturnValuesOnConditionCheckFailure (ConditionalCheckFailed
 * `Item`, TransactionCanceled `CancellationReasons[i].Item`) arrives raw.
 * Numbers become JS numbers (the store only keeps safe integers and JSON
 * numbers); binary values become Uint8Array.
 */

export function fromAttributeValue(av: unknown): unknown {
  if (av === null || typeof av !== 'object') return undefined;
  const v = av as Record<string, unknown>;
  if ('S' in v) return v.S;
  if ('N' in v) return Number(v.N);
  if ('BOOL' in v) return v.BOOL;
  if ('NULL' in v) return null;
  if ('M' in v) return fromAttributeMap(v.M);
  if ('L' in v) return Array.isArray(v.L) ? v.L.map(fromAttributeValue) : [];
  if ('SS' in v) return Array.isArray(v.SS) ? [...v.SS] : [];
  if ('NS' in v) return Array.isArray(v.NS) ? v.NS.map(Number) : [];
  if ('B' in v) return v.B;
  if ('BS' in v) return v.BS;
  return undefined;
}

export function fromAttributeMap(map: unknown): Record<string, unknown> | undefined {
  if (map === null || typeof map !== 'object') return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(map as Record<string, unknown>)) {
    // defineProperty: a key such as `__proto__` stays a plain own property.
    Object.defineProperty(out, k, { value: fromAttributeValue(v), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
