/** The names shared with the function code live in lib/config/function-env.ts; re-exported for the CDK app. */
export * from '../lib/config/function-env.js';
