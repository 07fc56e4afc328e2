export * from './catalogue.js';
export * from './aip-error.js';
export * from './wire.js';
