/**
 * Builds the AIP app the way `cdk synth` does (cdk.json context, cdk-nag), but
 * fast: asset bundling and the built-in CloudFormation validation are off.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { type AipApp, type AipAppOptions, defineAipApp } from '../../infra/aip-app.js';
import { type InfraConfigInput, parseInfraConfig } from '../../infra/config.js';
import { PROJECT_ROOT } from '../../infra/functions.js';

const cdkJsonContext = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> }).context ?? {};

export const BASE_CONFIG: InfraConfigInput = {
  envName: 'test',
  auth: {
    issuer: 'https://issuer.example.com/',
    audience: 'aip-runtime',
    jwksUrl: 'https://issuer.example.com/.well-known/jwks.json',
  },
  connectors: [{ id: 'payments', credentials: [{ handle: 'api_key', tenantId: 'acme', secret: 'aip/test/payments/api-key' }] }],
  approvalPolicies: [{ id: 'payments-commit', connector: 'payments', modes: ['commit'], approverScopes: ['aip:approve'] }],
};

export function newApp(context: Record<string, unknown> = {}): App {
  return new App({
    outdir: mkdtempSync(join(tmpdir(), 'aip-cdk-')),
    builtinCloudFormationValidation: false,
    context: { ...cdkJsonContext, 'aws:cdk:bundling-stacks': [], ...context },
  });
}

export function buildAip(config: InfraConfigInput = BASE_CONFIG, options: Omit<AipAppOptions, 'config'> = {}): { app: App; aip: AipApp } {
  const app = newApp();
  const aip = defineAipApp(app, { ...options, config: parseInfraConfig(config) });
  return { app, aip };
}

/** cdk-nag's findings over an app, each as `rule @ construct paths` (what a failing assertion should show). */
export function nagViolations(aip: AipApp, app: Parameters<AipApp['nag']['validateScope']>[0]): string[] {
  return aip.nag.validateScope(app).violations.map((v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);
}
