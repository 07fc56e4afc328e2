/** The one warning fauxqs's start drops: Node's "SQLite is experimental". Every other warning is kept. */
import { describe, expect, it } from 'vitest';
import { isSqliteExperimentalWarning } from '../../../dev/emulators/fauxqs.js';

describe('the SQLite warning filter', () => {
  const sqlite = 'SQLite is an experimental feature and might change at any time';

  it('matches Node’s SQLite experimental warning, however it is emitted', () => {
    expect(isSqliteExperimentalWarning(sqlite, 'ExperimentalWarning')).toBe(true);
    expect(isSqliteExperimentalWarning(sqlite, { type: 'ExperimentalWarning' })).toBe(true);
    expect(isSqliteExperimentalWarning(Object.assign(new Error(sqlite), { name: 'ExperimentalWarning' }))).toBe(true);
  });

  it('keeps every other warning', () => {
    expect(isSqliteExperimentalWarning('The Fetch API is an experimental feature', 'ExperimentalWarning')).toBe(false);
    expect(isSqliteExperimentalWarning(sqlite, 'DeprecationWarning')).toBe(false);
    expect(isSqliteExperimentalWarning(sqlite)).toBe(false);
  });
});
