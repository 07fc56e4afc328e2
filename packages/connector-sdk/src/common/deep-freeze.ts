/**
 * Freezes a value and everything reachable from it, in place, and returns it.
 * Already-frozen objects are not descended into (a frozen object's children are
 * taken to be frozen too), which also stops at cycles through frozen objects.
 * Callers that must not freeze what they were given pass a `structuredClone`.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as object)) deepFreeze(child);
  }
  return value;
}
