/**
 * Connectors from outside this repository, deployed with the CDK app
 * (infra/deployment-connectors.ts, docs/deploying-your-connectors.md): a
 * platform team's own folder, created in the OS temp directory (outside the
 * repository), depends on this project (node_modules/aip-runtime) and holds a
 * configuration with one declarative HTTP connector (a JSON document, no
 * code) and one code connector module written in TypeScript with the SDK.
 *
 * - synth from that folder's configuration file builds both connectors and
 *   runs their manifest check (the module in a child process), feeds their
 *   capabilities to the attempt-timeout check, grants their secrets, and
 *   keeps their documents and module paths out of the functions' environment;
 * - the bundles carry them: a bundle of the connector factories, imported,
 *   builds both at "cold start" from bundled code, and a synth with bundling
 *   on puts the code connector into the worker and the remote host bundles;
 * - synth fails on an invalid declarative document naming the field, on a
 *   module that exports no factory, on a connector whose ID differs, and on
 *   an unknown connector without a source.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAipApp } from '../../infra/aip-app.js';
import { capabilityAttemptTimeouts } from '../../infra/attempt-timeouts.js';
import { BUNDLE_ROOT, bundleFunction, generatePrecompiledRegistry } from '../../infra/bundling.js';
import { InfraConfigError, loadInfraConfig, type InfraConfigInput } from '../../infra/config.js';
import { checkDeploymentConnectors, deploymentConnectorSources } from '../../infra/deployment-connectors.js';
import type { FunctionDefinition } from '../../infra/functions.js';
import { newApp } from './support.js';
import { CRM_DOCUMENT } from '../fixtures/team-crm-connector.js';
import { ORDERS_MODULE } from '../fixtures/team-orders-connector.js';

type Json = Record<string, any>;

/** The team's own CDK app: this project's app, plus a code connector handed over in code. */
const TEAM_APP = `
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { defineAipApp } from 'aip-runtime/infra';

const app = new App();
defineAipApp(app, { connectorModules: { tracking: fileURLToPath(new URL('../connectors/tracking.ts', import.meta.url)) } });
app.synth();
`;

const AUTH = { issuer: 'https://issuer.example.com/', audience: 'aip-runtime', jwksUrl: 'https://issuer.example.com/.well-known/jwks.json' };

let team: string;
let configFile: string;

function teamConfig(over: Partial<InfraConfigInput> = {}): InfraConfigInput {
  return {
    envName: 'team',
    auth: AUTH,
    connectors: [
      { id: 'crm', http: CRM_DOCUMENT, credentials: [{ handle: 'crm/token', tenantId: 'acme', secret: 'team/crm/token' }] },
      { id: 'orders', module: './connectors/orders.ts', credentials: [{ handle: 'orders/api_key', tenantId: 'acme', secret: 'team/orders/api-key' }] },
    ],
    remoteConnectorHost: { connectors: ['orders'], maxConcurrentAttempts: { orders: 5 } },
    ...over,
  };
}

function writeConfig(name: string, config: InfraConfigInput): string {
  const file = join(team, name);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

beforeAll(() => {
  // The team's repository: outside this one, depending on it.
  team = mkdtempSync(join(tmpdir(), 'aip-team-'));
  expect(relative(BUNDLE_ROOT, team).startsWith('..')).toBe(true);
  mkdirSync(join(team, 'node_modules'));
  symlinkSync(BUNDLE_ROOT, join(team, 'node_modules', 'aip-runtime'), 'dir');
  // What the team installs beside this project (docs/deploying-your-connectors.md), the same copies.
  for (const dep of ['zod', 'aws-cdk-lib', 'constructs', 'tsx']) symlinkSync(join(BUNDLE_ROOT, 'node_modules', dep), join(team, 'node_modules', dep), 'dir');
  // The bin npm links for the dependency (package.json "bin"): cdk.json's `npx aip-synth` runs it.
  mkdirSync(join(team, 'node_modules', '.bin'));
  symlinkSync(join('..', 'aip-runtime', 'bin', 'aip-synth.mjs'), join(team, 'node_modules', '.bin', 'aip-synth'));
  writeFileSync(join(team, 'package.json'), JSON.stringify({ name: 'team-connectors', private: true, type: 'module' }));
  mkdirSync(join(team, 'connectors'));
  writeFileSync(join(team, 'connectors', 'orders.ts'), ORDERS_MODULE);
  writeFileSync(join(team, 'connectors', 'no-factory.ts'), 'export const nothing = 1;\n');
  writeFileSync(
    join(team, 'connectors', 'tracking.ts'),
    ORDERS_MODULE.replace("id: 'orders', version", "id: 'tracking', version").replace("id: 'orders.status'", "id: 'tracking.status'"),
  );
  writeFileSync(join(team, 'connectors', 'misnamed.ts'), ORDERS_MODULE.replace("id: 'orders', version", "id: 'shop', version"));
  configFile = writeConfig('aip.config.json', teamConfig());
  mkdirSync(join(team, 'infra'));
  writeFileSync(join(team, 'infra', 'app.ts'), TEAM_APP);
});

afterAll(() => {
  rmSync(team, { recursive: true, force: true });
});

const issuesOf = (fn: () => unknown): { path: string; message: string }[] => {
  try {
    fn();
  } catch (err) {
    if (err instanceof InfraConfigError) return [...err.issues];
    throw err;
  }
  throw new Error('accepted');
};

describe("synth of a team's own connectors, from a folder outside the repository", () => {
  let template: Template;
  let manifests: ReturnType<typeof checkDeploymentConnectors>;

  beforeAll(() => {
    // As `cdk synth -c config=<the team's file>` does.
    const app = newApp({ config: configFile });
    const aip = defineAipApp(app);
    template = Template.fromStack(aip.stateless);
    manifests = checkDeploymentConnectors(aip.config);
  });

  it("builds both connectors and checks their manifests: the document's and the module's capabilities", () => {
    expect(manifests.get('crm')).toMatchObject({ connector_id: 'crm', version: '1.0.0', capabilities: [{ id: 'crm.contact_lookup' }] });
    expect(manifests.get('orders')).toMatchObject({ connector_id: 'orders', version: '2.1.0', capabilities: [{ id: 'orders.status' }] });
    // Their declared attempt timeouts are what the worker-timeout check weighs.
    const config = loadInfraConfig(configFile);
    expect(capabilityAttemptTimeouts(config, manifests).map((c) => [c.capability_id, c.attempt_timeout_ms])).toEqual([
      ['crm.contact_lookup', 8_000],
      ['orders.status', 12_000],
    ]);
  });

  it('resolves the module against the configuration file, and keeps documents and paths out of the functions’ environment', () => {
    expect(deploymentConnectorSources(loadInfraConfig(configFile))).toEqual([
      { id: 'crm', http: CRM_DOCUMENT },
      { id: 'orders', module: join(team, 'connectors', 'orders.ts') },
    ]);
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Json[];
    const withConfig = functions.filter((f) => f.Properties.Environment?.Variables?.AIP_RUNTIME_CONFIG !== undefined);
    expect(withConfig.length).toBeGreaterThan(0);
    for (const f of withConfig) {
      const runtime = JSON.parse(f.Properties.Environment.Variables.AIP_RUNTIME_CONFIG as string) as { connectors: Json[] };
      expect(runtime.connectors.map((c) => c.id)).toEqual(['crm', 'orders']);
      for (const c of runtime.connectors) expect(Object.keys(c).sort()).toEqual(['credentials', 'id']);
    }
  });

  it('grants the connectors’ secrets by reference, never their values', () => {
    const secretsStatements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((p) =>
      ((p as Json).Properties.PolicyDocument.Statement as Json[]).filter((s) => JSON.stringify(s.Action).includes('secretsmanager:GetSecretValue')),
    );
    const granted = JSON.stringify(secretsStatements);
    expect(granted).toContain('team/crm/token');
    expect(granted).toContain('team/orders/api-key');
  });
});

describe("the team's CDK app, run from its folder by aip-synth (cdk.json), with no environment variable of its own", () => {
  /**
   * Runs the team's cdk.json `app` command as the CDK CLI does (the `config` context and the output folder in the
   * variables the CLI sets; bundling skipped: the bundles are the next tests' subject), through the `aip-synth` bin
   * that npm links into the team's node_modules/.bin. No TSX_TSCONFIG_PATH, no --import: the launcher registers tsx
   * with this project's tsconfig itself.
   */
  const synth = (cdkJsonApp: string, outdir: string) => {
    // `npx <bin> ...` runs the bin npm linked locally.
    const [npx, bin, ...args] = cdkJsonApp.split(' ');
    expect([npx, bin]).toEqual(['npx', 'aip-synth']);
    const { TSX_TSCONFIG_PATH: _unset, ...env } = process.env;
    execFileSync(process.execPath, [join('node_modules', '.bin', 'aip-synth'), ...args], {
      cwd: team,
      env: { ...env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify({ config: 'aip.config.json', 'aws:cdk:bundling-stacks': [] }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stateless = JSON.parse(readFileSync(join(outdir, 'Aip-team-Stateless.template.json'), 'utf8')) as Json;
    const functions = Object.values(stateless.Resources as Json).filter((r) => (r as Json).Type === 'AWS::Lambda::Function') as Json[];
    const runtime = functions.map((f) => f.Properties.Environment?.Variables?.AIP_RUNTIME_CONFIG).find((v) => typeof v === 'string') as string;
    expect(existsSync(join(outdir, 'Aip-team-Stateful.template.json'))).toBe(true);
    return (JSON.parse(runtime) as { connectors: { id: string }[] }).connectors.map((c) => c.id);
  };

  it('cdk.json `npx aip-synth infra/app.ts`: its own app synthesizes both stacks with the configured connectors and the one handed over in code', () => {
    expect(synth('npx aip-synth infra/app.ts', join(team, 'cdk.out'))).toEqual(['crm', 'orders', 'tracking']);
  });

  it("cdk.json `npx aip-synth`: this project's app as it is, with the team's configuration, after the manifest check of its module", () => {
    expect(synth('npx aip-synth', join(team, 'cdk.out.default'))).toEqual(['crm', 'orders']);
  });

  it('names a missing app module instead of failing inside the CDK', () => {
    const run = () =>
      execFileSync(process.execPath, [join('node_modules', '.bin', 'aip-synth'), 'infra/nope.ts'], { cwd: team, stdio: ['ignore', 'pipe', 'pipe'] });
    expect(run).toThrow(/no such CDK app module: .*infra\/nope\.ts/);
  });
});

describe('the bundles carry the deployment connectors', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('a bundle builds both connectors at cold start from bundled code (no configuration file, no module on disk needed)', async () => {
    const outdir = mkdtempSync(join(tmpdir(), 'aip-bundle-deployment-'));
    dirs.push(outdir);
    const config = loadInfraConfig(configFile);
    await bundleFunction({
      entry: 'test/infra/fixtures/connector-factories-entry.ts',
      outdir,
      connectors: config.connectors.map(({ id }) => ({ id })),
      deploymentConnectors: deploymentConnectorSources(config),
    });
    const bundled = (await import(pathToFileURL(join(outdir, 'index.mjs')).href)) as typeof import('./fixtures/connector-factories-entry.js');
    expect(Object.keys(bundled.CONNECTOR_FACTORIES).sort()).toEqual(['crm', 'orders', 'payments']);
    expect(bundled.connectorManifest('crm').capabilities.map((c) => c.id)).toEqual(['crm.contact_lookup']);
    expect(bundled.connectorManifest('orders').capabilities.map((c) => c.id)).toEqual(['orders.status']);
    const resolve = () => Promise.reject(new Error('unused'));
    expect(bundled.CONNECTOR_FACTORIES.orders?.({ credentials: { resolve } }).credential_handle?.('orders.status')).toBe('orders/api_key');
    expect(bundled.CONNECTOR_FACTORIES.crm?.({ credentials: { resolve } }).credential_handle?.('crm.contact_lookup')).toBe('crm/token');
    // A configured base URL override reaches the declarative connector.
    const overridden = bundled.CONNECTOR_FACTORIES.crm?.({ credentials: { resolve }, baseUrl: 'https://crm.internal.example' }).connector as unknown as {
      config: { base_url: string };
    };
    expect(overridden.config.base_url).toBe('https://crm.internal.example');
  });

  it('their capability registry is precompiled with the built-in ones (no ajv compile at cold start)', async () => {
    const config = loadInfraConfig(configFile);
    const source = await generatePrecompiledRegistry(
      config.connectors.map(({ id }) => ({ id })),
      deploymentConnectorSources(config),
    );
    expect(source).toContain('crm.contact_lookup');
    expect(source).toContain('orders.status');
  });

  it('synth with bundling on puts the code connector into the worker and the remote host bundles', () => {
    const worker: FunctionDefinition = {
      id: 'InvokeWorker',
      entry: 'functions/worker/invoke.ts',
      description: 'worker',
      timeout: Duration.seconds(60),
      consumes: { queue: 'invoke', batchSize: 5 },
      access: { table: 'readWrite', connectorSecrets: true },
    };
    const app = newApp({ config: configFile, 'aws:cdk:bundling-stacks': ['**'] });
    const aip = defineAipApp(app, { functions: [worker] });
    const template = Template.fromStack(aip.stateless);
    const assetOf = (fn: { node: { defaultChild?: unknown } } | undefined) => {
      const id = aip.stateless.getLogicalId(fn?.node.defaultChild as never);
      const key = ((template.findResources('AWS::Lambda::Function')[id] as Json).Properties.Code.S3Key as string).replace(/\.zip$/, '');
      const dir = join(app.outdir, `asset.${key}`);
      expect(existsSync(join(dir, 'index.mjs'))).toBe(true);
      const chunks = existsSync(join(dir, 'chunks')) ? readdirSync(join(dir, 'chunks')).map((f) => join('chunks', f)) : [];
      return ['index.mjs', ...chunks]
        .filter((f) => f.endsWith('.mjs'))
        .map((f) => readFileSync(join(dir, f), 'utf8'))
        .join('\n');
    };
    const workerCode = assetOf(aip.stateless.functions.InvokeWorker);
    const hostCode = assetOf(aip.stateless.remoteHost?.hostFunction);
    for (const code of [workerCode, hostCode]) {
      // The module's own code (its request path, not only its manifest) and the declarative document travel in the bundle.
      expect(code).toContain('/orders/');
      expect(code).toContain('crm-api');
    }
  });
});

describe('synth refuses what it cannot deploy, naming the field', () => {
  it('an invalid declarative document', () => {
    const bad = structuredClone(CRM_DOCUMENT) as Json;
    bad.capabilities[0].operations.invoke.request.method = 'FETCH';
    const file = writeConfig('bad-http.json', teamConfig({ connectors: [{ id: 'crm', http: bad }], remoteConnectorHost: undefined }));
    const issues = issuesOf(() => defineAipApp(newApp({ config: file })));
    expect(issues.map((i) => i.path)).toEqual(['connectors[0].http.capabilities[0].operations.invoke.request.method']);
    expect(issues[0]?.message).toMatch(/GET/);
  });

  it('a document that fails its own manifest admission, and one whose connector_id is not the configured ID', () => {
    const unimplemented = structuredClone(CRM_DOCUMENT) as Json;
    // Advertises cancellation, which no operation implements.
    unimplemented.capabilities[0].contract.execution.supports_cancel = true;
    const renamed = { ...CRM_DOCUMENT, connector_id: 'contacts' };
    const file = writeConfig(
      'bad-manifest.json',
      teamConfig({
        connectors: [
          { id: 'crm', http: unimplemented },
          { id: 'contacts2', http: renamed },
        ],
        remoteConnectorHost: undefined,
      }),
    );
    const issues = issuesOf(() => defineAipApp(newApp({ config: file })));
    expect(issues.map((i) => i.path)).toEqual(['connectors[0].http', 'connectors[1].http.connector_id']);
    expect(issues[0]?.message).toMatch(/cancel/i);
  });

  it('a module that exports no factory, a module building another connector ID, a missing module, an unknown connector', () => {
    const file = writeConfig(
      'bad-modules.json',
      teamConfig({
        connectors: [
          { id: 'orders', module: './connectors/no-factory.ts' },
          { id: 'orders2', module: './connectors/misnamed.ts' },
          { id: 'gone', module: './connectors/gone.ts' },
          { id: 'mystery' },
        ],
        remoteConnectorHost: undefined,
      }),
    );
    const issues = issuesOf(() => defineAipApp(newApp({ config: file })));
    expect(issues.map((i) => i.path).sort()).toEqual(['connectors[0].module', 'connectors[1].module', 'connectors[2].module', 'connectors[3].id']);
    const byPath = Object.fromEntries(issues.map((i) => [i.path, i.message]));
    expect(byPath['connectors[0].module']).toMatch(/exports no connector factory/);
    expect(byPath['connectors[1].module']).toMatch(/"shop"/);
    expect(byPath['connectors[2].module']).toMatch(/no such file/);
    expect(byPath['connectors[3].id']).toMatch(/not built into this project/);
  });

  it('a connector module handed to the CDK app in code is enabled and checked like a configured one', () => {
    const file = writeConfig('in-code.json', teamConfig({ connectors: [], remoteConnectorHost: undefined }));
    const aip = defineAipApp(newApp({ config: file }), { connectorModules: { orders: join(team, 'connectors', 'orders.ts') } });
    expect(aip.config.connectors.map((c) => [c.id, c.module])).toEqual([['orders', join(team, 'connectors', 'orders.ts')]]);
    const issues = issuesOf(() => defineAipApp(newApp({ config: file }), { connectorModules: { orders: join(team, 'connectors', 'no-factory.ts') } }));
    expect(issues.map((i) => i.path)).toEqual(['connectors[0].module']);
  });
});
