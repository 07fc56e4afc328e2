/** The deployment configuration lives in lib/config/deployment.ts (no aws-cdk-lib); re-exported for the CDK app. */
export * from '../lib/config/deployment.js';
