/**
 * CDK entrypoint (cdk.json: `node --import tsx infra/app.ts`).
 * Configuration: `cdk synth -c config=path/to/config.json`; without it,
 * infra/config.local.json. See docs/infra.md.
 */
import { App } from 'aws-cdk-lib';
import { defineAipApp } from './aip-app.js';
import { InfraConfigError } from './config.js';

const app = new App();
try {
  defineAipApp(app);
} catch (error) {
  if (error instanceof InfraConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
app.synth();
