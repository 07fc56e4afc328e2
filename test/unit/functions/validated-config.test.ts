/**
 * The configuration validated at build (functions/shared/validated-config.ts,
 * ./validated-config-source.ts): the settings reader takes the build's values
 * only for the exact AIP_RUNTIME_CONFIG string the build validated, and what
 * the functions then run with is what run-time validation gives them.
 */
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRuntimeSettings } from '../../../functions/shared/compose-runtime.js';
import { BootstrapConfigError, OPTIONAL_ENV, readBootstrapSettings, type BootstrapSettings } from '../../../functions/shared/settings.js';
import { validatedConfigSource, validateRuntimeConfig } from '../../../functions/shared/validated-config-source.js';
import type { ValidatedConfig } from '../../../functions/shared/validated-config.js';
import { CLAIM_PRESET_NAMES } from '../../../lib/auth/claims.js';
import { InfraConfigError } from '../../../lib/config/deployment.js';
import { FUNCTION_ENV } from '../../../lib/config/function-env.js';
import { functionEnv } from '../../support/function-env.js';

const id = fc.stringMatching(/^[a-z][a-z0-9_.-]{0,11}$/);

/** Deployment runtime configurations as the stack writes them: envNames local, test and deployed ones, every optional part on or off. */
const runtimeConfigs = fc.record(
  {
    envName: fc.constantFrom('local', 'test', 'production', 'staging'),
    auth: fc.record(
      {
        issuer: fc.constant('https://issuer.example.com/'),
        audience: fc.oneof(fc.constant('aip-runtime'), fc.constant(['aip-runtime', 'aip-console'])),
        jwksUrl: fc.constant('https://issuer.example.com/.well-known/jwks.json'),
        algorithms: fc.subarray(['RS256', 'ES256', 'PS256'], { minLength: 1 }),
        claims: fc.record({ preset: fc.constantFrom(...CLAIM_PRESET_NAMES) }),
        clockToleranceSeconds: fc.integer({ min: 0, max: 60 }),
      },
      { requiredKeys: ['issuer', 'audience', 'jwksUrl', 'algorithms'] },
    ),
    connectors: fc.uniqueArray(
      fc.record({
        id,
        credentials: fc.array(fc.record({ handle: id, tenantId: id, secret: id.map((s) => `aip/test/${s}`) }), { maxLength: 3 }),
      }),
      { maxLength: 3, selector: (c) => c.id },
    ),
    approvalPolicies: fc.uniqueArray(
      fc.record(
        {
          id,
          connector: id,
          modes: fc.subarray(['execute', 'commit', 'compensate'], { minLength: 1 }),
          approverScopes: fc.constant(['aip:approve']),
          minApprovals: fc.integer({ min: 1, max: 3 }),
          expiresAfterSeconds: fc.integer({ min: 60, max: 86_400 }),
        },
        { requiredKeys: ['id', 'connector', 'approverScopes'] },
      ),
      { maxLength: 3, selector: (p) => p.id },
    ),
    attemptWhenWaited: fc.constantFrom('inline', 'queue'),
  },
  { requiredKeys: ['envName', 'auth', 'connectors', 'approvalPolicies'] },
);

/** What the stack puts in AIP_RUNTIME_CONFIG: the configuration as validated, as JSON. */
const asDeployed = (config: unknown): string => JSON.stringify(validateRuntimeConfig(JSON.stringify(config)).runtimeConfig);

/** The smallest configuration of an environment, as deployed. */
const minimal = (envName: string): string =>
  asDeployed({ envName, auth: { issuer: 'https://i.example/', audience: 'a', jwksUrl: 'https://i.example/jwks' }, connectors: [], approvalPolicies: [] });

function read(json: string, validated?: ValidatedConfig, extra: NodeJS.ProcessEnv = {}): BootstrapSettings {
  return readBootstrapSettings(functionEnv(json, extra), validated !== undefined ? { validated } : {});
}

const withoutResolved = ({ resolvedRuntimeSettings: _, ...settings }: BootstrapSettings) => settings;

describe('the configuration validated at build', () => {
  it('gives the functions the settings run-time validation gives them, for every configuration', () => {
    fc.assert(
      fc.property(runtimeConfigs, (config) => {
        const json = asDeployed(config);
        const validated = validateRuntimeConfig(json);
        const atRunTime = read(json);
        const fromBuild = read(json, validated);
        expect(fromBuild.runtimeConfig).toBe(validated.runtimeConfig);
        expect(fromBuild.resolvedRuntimeSettings).toBe(validated.runtimeSettings);
        expect(atRunTime.resolvedRuntimeSettings).toBeUndefined();
        expect(withoutResolved(fromBuild)).toStrictEqual(atRunTime);
        expect(parseRuntimeSettings(fromBuild)).toStrictEqual(parseRuntimeSettings(atRunTime));
      }),
      { numRuns: 60 },
    );
  });

  it('is taken for that exact string only: any other value of AIP_RUNTIME_CONFIG is validated at run time', () => {
    fc.assert(
      fc.property(runtimeConfigs, runtimeConfigs, (built, running) => {
        const validated = validateRuntimeConfig(asDeployed(built));
        const json = asDeployed(running);
        fc.pre(json !== validated.runtimeConfigJson);
        const settings = read(json, validated);
        expect(settings.resolvedRuntimeSettings).toBeUndefined();
        expect(settings).toStrictEqual(read(json));
      }),
      { numRuns: 40 },
    );
  });

  it('never lets an invalid configuration through, even one that differs from the validated one by a character', () => {
    const json = minimal('production');
    const validated = validateRuntimeConfig(json);
    for (const bad of [
      json.replace('"production"', '"production "').replace('"envName"', '"envNam"'),
      json.replace('https://i.example/jwks', 'http://i.example/jwks'),
      json.replace('"connectors":[]', '"connectors":{}'),
    ]) {
      expect(() => read(bad, validated), bad).toThrow(BootstrapConfigError);
    }
  });

  it("takes the build's Runtime settings only with AIP_RUNTIME_SETTINGS unset: given settings are validated, and a deployed environment still refuses test mode", () => {
    const json = minimal('production');
    const validated = validateRuntimeConfig(json);
    const tuned = read(json, validated, { [OPTIONAL_ENV.runtimeSettings]: JSON.stringify({ stall_after_ms: 1234 }) });
    expect(tuned.runtimeConfig).toBe(validated.runtimeConfig);
    expect(tuned.resolvedRuntimeSettings).toBeUndefined();
    expect(parseRuntimeSettings(tuned).stall_after_ms).toBe(1234);
    expect(() => parseRuntimeSettings(read(json, validated, { [OPTIONAL_ENV.runtimeSettings]: JSON.stringify({ test_mode: true }) }))).toThrow(
      BootstrapConfigError,
    );
    // Unset: the deployed defaults, as run-time validation gives them.
    expect(parseRuntimeSettings(read(json, validated))).toMatchObject({ transaction_retention_days: 400, resolution: { four_eyes: true } });
  });

  it('the queue-derived setting still applies on top of the build’s settings', () => {
    const json = minimal('staging');
    const settings = read(json, validateRuntimeConfig(json), { [FUNCTION_ENV.invokeQueueMaxReceiveCount]: '7' });
    expect(parseRuntimeSettings(settings).capacity_deferral.queue_max_receive_count).toBe(7);
  });

  it('fails the build on an invalid configuration, naming the field, as a cold start would fail', () => {
    const bad = JSON.stringify({
      envName: 'test',
      auth: { issuer: 'https://i.example/', audience: 'a', jwksUrl: 'https://i.example/jwks' },
      connectors: [{ id: 'Bad ID' }],
      approvalPolicies: [],
    });
    expect(() => validateRuntimeConfig(bad)).toThrow(InfraConfigError);
    expect(() => validateRuntimeConfig(bad)).toThrow(/connectors\[0\]\.id/);
    expect(() => read(bad)).toThrow(BootstrapConfigError);
    expect(() => validateRuntimeConfig('{not json')).toThrow(InfraConfigError);
  });

  it('the generated module evaluates to the validated values', async () => {
    const json = minimal('local');
    const source = validatedConfigSource(json);
    const generated = (await import(`data:text/javascript,${encodeURIComponent(source)}`)) as { VALIDATED_CONFIG: ValidatedConfig };
    expect(generated.VALIDATED_CONFIG).toStrictEqual(validateRuntimeConfig(json));
  });
});
