/**
 * The settings' optional parsers (functions/shared/settings-core.ts,
 * ./settings.ts): the deployed functions' bootstrap reads the environment
 * without them unless `needsOptionalParsers` says it may need them, and then
 * reads exactly what `readBootstrapSettings` (every parser) reads.
 */
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { settingsOf } from '../../../functions/shared/bootstrap.js';
import { BootstrapConfigError, OPTIONAL_ENV, readBootstrapSettings } from '../../../functions/shared/settings.js';
import { needsOptionalParsers, readSettings } from '../../../functions/shared/settings-core.js';
import { validateRuntimeConfig } from '../../../functions/shared/validated-config-source.js';
import { FUNCTION_ENV } from '../../../lib/config/function-env.js';
import { functionEnv } from '../../support/function-env.js';

const config = (envName: string, connectors: string[] = []) =>
  JSON.stringify(
    validateRuntimeConfig(
      JSON.stringify({
        envName,
        auth: { issuer: 'https://i.example/', audience: 'a', jwksUrl: 'https://i.example/jwks' },
        connectors: connectors.map((id) => ({ id, credentials: [] })),
        approvalPolicies: [],
      }),
    ).runtimeConfig,
  );

const LOCAL_CREDENTIALS = JSON.stringify({ references: [{ connector_id: 'payments', handle: 'h1', tenant_id: 't1', env: 'AIP_BENCH_KEY' }] });
const REMOTE = JSON.stringify({ connectors: [{ id: 'payments', endpoint: 'https://host.example/', hostKey: { source: 'inline', publicKeyPem: 'x' } }] });

/** What is read, or the error it throws (its class and message), so two readers can be compared on bad input too. */
function outcome(read: () => unknown): unknown {
  try {
    return { ok: read() };
  } catch (err) {
    return { threw: (err as Error).constructor.name, message: (err as Error).message };
  }
}

describe('needsOptionalParsers', () => {
  const built = config('production', ['payments']);
  const validated = validateRuntimeConfig(built);

  it('is false only for the validated configuration without the two optional variables', () => {
    expect(needsOptionalParsers(functionEnv(built), { validated })).toBe(false);
    // The reader trims the variable (its schema does): so does the check.
    expect(needsOptionalParsers(functionEnv(`  ${built}\n`), { validated })).toBe(false);
    expect(needsOptionalParsers(functionEnv(built))).toBe(true);
    expect(needsOptionalParsers(functionEnv(config('staging', ['payments'])), { validated })).toBe(true);
    const { [FUNCTION_ENV.runtimeConfig]: _, ...withoutConfig } = functionEnv(built);
    expect(needsOptionalParsers(withoutConfig, { validated })).toBe(true);
    expect(needsOptionalParsers(functionEnv(built, { [OPTIONAL_ENV.localCredentials]: LOCAL_CREDENTIALS }), { validated })).toBe(true);
    expect(needsOptionalParsers(functionEnv(built, { [OPTIONAL_ENV.remoteConnectors]: REMOTE }), { validated })).toBe(true);
    expect(needsOptionalParsers(functionEnv(built, { [OPTIONAL_ENV.remoteConnectors]: '  ' }), { validated })).toBe(false);
  });

  it("the deployed bootstrap's reader (settingsOf) reads what readBootstrapSettings reads, good environments and bad", async () => {
    const environments = fc.record({
      running: fc.constantFrom(built, `${built} `, config('staging', ['payments']), config('production'), '{"envName":"production"}', 'not json', ''),
      local: fc.constantFrom(undefined, LOCAL_CREDENTIALS, '{"references":[{}]}', '   '),
      remote: fc.constantFrom(undefined, REMOTE, '{"connectors":[]}', '[]'),
      table: fc.constantFrom(undefined, ''),
    });
    await fc.assert(
      fc.asyncProperty(environments, async ({ running, local, remote, table }) => {
        const env = functionEnv(running, {
          ...(local !== undefined ? { [OPTIONAL_ENV.localCredentials]: local } : {}),
          ...(remote !== undefined ? { [OPTIONAL_ENV.remoteConnectors]: remote } : {}),
          ...(table !== undefined ? { [FUNCTION_ENV.tableName]: table } : {}),
        });
        const full = outcome(() => readBootstrapSettings(env, { validated }));
        let lazy: unknown;
        try {
          lazy = { ok: await settingsOf(env, validated) };
        } catch (err) {
          lazy = { threw: (err as Error).constructor.name, message: (err as Error).message };
        }
        expect(lazy).toStrictEqual(full);
      }),
      { numRuns: 200 },
    );
  });

  it('a reader asked without the parsers where a variable needs them fails as a bug, naming the variable, not as bad input', () => {
    const env = functionEnv(built, { [OPTIONAL_ENV.localCredentials]: LOCAL_CREDENTIALS });
    expect(() => readSettings(env, { validated })).toThrow(new RegExp(`${OPTIONAL_ENV.localCredentials} needs the optional settings parsers`));
    expect(() => readSettings(env, { validated })).not.toThrow(BootstrapConfigError);
    expect(() => readSettings(functionEnv(config('staging')), { validated })).toThrow(
      new RegExp(`${FUNCTION_ENV.runtimeConfig} needs the optional settings parsers`),
    );
  });
});
