export * from './catalogue.js';
export * from './aip-error.js';
/** The wire shapes, re-exported from lib/protocol/problem.ts for importers not yet moved there. */
export * from './wire.js';
