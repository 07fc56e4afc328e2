/**
 * The operator console in the CDK app (infra/console.ts): served through the
 * REST API at `<ApiUrl>console/` by one function with no data access, only
 * when `auth.console` is configured, and cdk-nag clean.
 */
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnElement } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_ASSETS_FOLDER, CONSOLE_CONFIG_ENV } from '../../functions/console/serve.js';
import { consoleFunctionDefinition, deployedConsoleConfig } from '../../infra/console.js';
import { DEFAULT_CONSOLE_SCOPES, InfraConfigError, parseInfraConfig, type InfraConfigInput } from '../../infra/config.js';
import { BASE_CONFIG, buildAip, nagViolations } from './support.js';

type Json = Record<string, any>;

const WITH_CONSOLE: InfraConfigInput = {
  ...BASE_CONFIG,
  auth: { ...BASE_CONFIG.auth, console: { clientId: 'aip-console', audience: 'aip-runtime', defaultTenant: 'acme' } },
};

describe('operator console (auth.console set)', () => {
  let built: ReturnType<typeof buildAip>;
  let template: Template;
  let fnId: string;
  beforeAll(() => {
    built = buildAip(WITH_CONSOLE);
    template = Template.fromStack(built.aip.stateless);
    const fn = built.aip.stateless.console?.function;
    expect(fn).toBeDefined();
    fnId = built.aip.stateless.getLogicalId(fn?.node.defaultChild as CfnElement);
  });

  it('serves GET /console and GET /console/{proxy+} from the console function, without the authorizer', () => {
    const resources = template.findResources('AWS::ApiGateway::Resource');
    const consoleRes = Object.entries(resources).find(([, r]) => r.Properties.PathPart === 'console');
    const proxyRes = Object.entries(resources).find(([, r]) => r.Properties.PathPart === '{proxy+}');
    expect(consoleRes).toBeDefined();
    expect(proxyRes?.[1].Properties.ParentId).toEqual({ Ref: consoleRes?.[0] });
    const methods = Object.values(template.findResources('AWS::ApiGateway::Method')).filter((m: Json) =>
      [consoleRes?.[0], proxyRes?.[0]].includes(m.Properties.ResourceId?.Ref),
    );
    expect(methods).toHaveLength(2);
    for (const m of methods) {
      expect(m.Properties).toMatchObject({ HttpMethod: 'GET', AuthorizationType: 'NONE', Integration: { Type: 'AWS_PROXY' } });
      expect(JSON.stringify(m.Properties.Integration.Uri)).toContain(`"${fnId}"`);
    }
  });

  it('gives the function its config.json (OIDC, public client) and no access to data', () => {
    const fn = template.toJSON().Resources[fnId] as Json;
    expect(fn.Properties.Handler).toBe('index.handler');
    const config = JSON.parse(fn.Properties.Environment.Variables[CONSOLE_CONFIG_ENV] as string);
    expect(config).toEqual({
      mode: 'oidc',
      environment: 'test',
      tenant: 'acme',
      oidc: { issuer: 'https://issuer.example.com/', client_id: 'aip-console', scopes: [...DEFAULT_CONSOLE_SCOPES], audience: 'aip-runtime' },
    });
    expect(JSON.stringify(config)).not.toMatch(/secret/i);
    const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p: Json) => (p.Properties.Roles as Json[]).some((r) => r.Ref === roleId))
      .flatMap((p: Json) => p.Properties.PolicyDocument.Statement as Json[]);
    const actions = statements.flatMap((s) => [s.Action].flat() as string[]);
    expect(actions.filter((a) => !a.startsWith('logs:') && !a.startsWith('xray:'))).toEqual([]);
  });

  it('ships the console build beside the bundled handler', () => {
    const def = consoleFunctionDefinition(parseInfraConfig(WITH_CONSOLE));
    expect(def.afterBundling?.('/repo', '/asset-output')).toEqual([
      `cd "/repo" && node --import tsx console/build.ts "/asset-output/${CONSOLE_ASSETS_FOLDER}"`,
    ]);
  });

  it('outputs the console URL (the OIDC redirect URI)', () => {
    const outputs = template.toJSON().Outputs as Json;
    expect(JSON.stringify(outputs.ConsoleUrl.Value)).toContain('console/');
  });

  it('reports no cdk-nag findings and no CDK errors', () => {
    expect(nagViolations(built.aip, built.app)).toEqual([]);
    const annotations = Annotations.fromStack(built.aip.stateless);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
  });
});

describe('operator console configuration', () => {
  it('is not deployed without auth.console', () => {
    const { aip } = buildAip(BASE_CONFIG, { functions: [] });
    expect(aip.stateless.console).toBeUndefined();
    expect(() => deployedConsoleConfig(aip.config)).toThrow(/auth.console/);
  });

  it('refuses scopes without openid and a non-https discovery issuer, naming the field', () => {
    const bad = {
      ...BASE_CONFIG,
      auth: { ...BASE_CONFIG.auth, console: { clientId: 'c', scopes: ['aip:operator'], discoveryIssuer: 'http://idp.example.com' } },
    };
    let caught: unknown;
    try {
      parseInfraConfig(bad);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InfraConfigError);
    const paths = (caught as InfraConfigError).issues.map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['auth.console.scopes', 'auth.console.discoveryIssuer']));
  });
});
