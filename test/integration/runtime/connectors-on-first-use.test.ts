/**
 * The submit's first execute composes no connector (functions/shared/compose-connectors.ts, "Connectors on first
 * use"; docs/runtime.md): a Runtime whose connector parts come from the production composition with a precompiled
 * registry built for the connector, against DynamoDB Local and fauxqs. An execute's admission without an approval
 * validates against the precompiled registry and enqueues its invoke message without building the connector; the
 * first use that needs it (a preview that calls the handler, the attempt) builds it once, shared by concurrent first
 * uses, and a build that failed is not kept.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeConnectors } from '../../../functions/shared/compose-connectors.js';
import { connectorRegistrySource, type ConnectorFactory } from '../../../functions/shared/connector-factories.js';
import { readBootstrapSettings } from '../../../functions/shared/settings.js';
import type { ConnectorParts } from '../../../lib/runtime/deps.js';
import { Runtime } from '../../../lib/runtime/runtime.js';
import { precompiledRegistrySource } from '../../../lib/runtime/schema-precompile.js';
import type { PrecompiledRegistry } from '../../../lib/runtime/schema-precompiled.js';
import { systemClock } from '../../../packages/connector-sdk/src/ports/clock.js';
import { functionEnv } from '../../support/function-env.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
const testpay: ConnectorFactory = () => ({ connector: testConnector(provider) });
const DIR = join(process.cwd(), '.vitest-tmp', `connectors-on-first-use-${process.pid}`);
let precompiled: PrecompiledRegistry;

const settings = () =>
  readBootstrapSettings(
    functionEnv({
      envName: 'local',
      auth: { issuer: 'https://aip.local/dev', audience: 'aip-local', jwksUrl: 'https://aip.local/dev/.well-known/jwks.json', algorithms: ['ES256'] },
      connectors: [{ id: 'testpay', credentials: [] }],
      approvalPolicies: [],
    }),
  );

/**
 * The connector parts as the deployed composition builds them (composeConnectors with the bundle's precompiled
 * registry), their testpay factory counting its builds and failing the first `failFirst`.
 */
function parts(failFirst = 0) {
  let builds = 0;
  const load = async (): Promise<ConnectorParts> => {
    const { registry, connectors } = await composeConnectors(settings(), {
      documents: h.table.client,
      secrets: () => Promise.reject(new Error('no credential is resolved here')),
      clock: systemClock,
      connectorFactories: {
        testpay: (options) => {
          builds += 1;
          if (builds <= failFirst) throw new Error(`connector build failed (build ${builds})`);
          return testpay(options);
        },
      },
      precompiled,
    });
    return { registry, connectors, config: h.readDeps.config };
  };
  return { load, builds: () => builds };
}

const execute = () => transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: uid('tx') }, idempotency_key: uid('key') });
/** A dry run of pay.quote (full_simulation): its preview calls the connector's handler, inline. */
const quote = () => ({ ...transfer(uid('a'), { transaction: { mode: 'dry_run' } }), capability_id: 'pay.quote' });

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-first-use' });
  // The generated module of a bundle built for testpay, loaded the way a bundle runs it.
  mkdirSync(DIR, { recursive: true });
  const file = join(DIR, 'precompiled-registry.mjs');
  const source = precompiledRegistrySource([await connectorRegistrySource('testpay', { factories: { testpay } })]);
  writeFileSync(file, `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);\n${source}`);
  precompiled = ((await import(pathToFileURL(file).href)) as { PRECOMPILED_REGISTRY: PrecompiledRegistry }).PRECOMPILED_REGISTRY;
});
afterAll(async () => {
  rmSync(DIR, { recursive: true, force: true });
  await h.destroy();
});

describe('the connector of a Runtime composed with a precompiled registry', () => {
  it('is not built by an execute’s admission without an approval, and is built by its attempt', async () => {
    const p = parts();
    const runtime = new Runtime(h.readDeps, p.load);
    const action = execute();
    expect(await runtime.submit(caller(), action)).toMatchObject({ http_status: 202, disposition: 'accepted' });
    expect(await runtime.submit(caller(), execute())).toMatchObject({ http_status: 202 });
    expect(p.builds()).toBe(0);
    // The admission's invoke messages are on the queue; the attempt reaches the connector, which is built then, once.
    const messages = await h.receiveInvokes();
    const mine = messages.filter((m) => m.message.action_id === action.id);
    expect(mine).toHaveLength(1);
    expect(await runtime.runAttempt((mine[0] as (typeof mine)[number]).message)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    expect(p.builds()).toBe(1);
    expect(await runtime.getAction(caller(), TENANT, action.id)).toMatchObject({ action_result: { status: 'completed' } });
  });

  it('is built once for concurrent first uses (previews that call the handler), and then serves every use', async () => {
    const p = parts();
    const runtime = new Runtime(h.readDeps, p.load);
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => runtime.submit(caller(), quote())));
    for (const o of outcomes) expect(o).toMatchObject({ http_status: 200, action_result: { status: 'completed' } });
    expect(p.builds()).toBe(1);
    expect(await runtime.submit(caller(), quote())).toMatchObject({ http_status: 200 });
    expect(p.builds()).toBe(1);
  });

  it('is built again after a build that failed', async () => {
    const p = parts(1);
    const runtime = new Runtime(h.readDeps, p.load);
    // The admission needs no connector: the failing build is not reached.
    expect(await runtime.submit(caller(), execute())).toMatchObject({ http_status: 202 });
    expect(p.builds()).toBe(0);
    await expect(runtime.submit(caller(), quote())).rejects.toThrow('connector build failed (build 1)');
    expect(await runtime.submit(caller(), quote())).toMatchObject({ http_status: 200, action_result: { status: 'completed' } });
    expect(p.builds()).toBe(2);
  });
});
