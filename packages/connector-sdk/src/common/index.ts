/**
 * `@aip-runtime/connector-sdk/common`: small helpers with no domain
 * knowledge (freezing, naming a zod issue without quoting the input, clocks).
 * zod itself is not re-exported: import it from `zod` (the SDK installs
 * zod's English messages when it loads, see ./zod.ts).
 */
export * from './deep-freeze.js';
export * from './issues.js';
export * from '../ports/clock.js';
