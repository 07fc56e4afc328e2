/**
 * A function started with a bad environment says which variable is wrong:
 * the HTTP handlers (the runtime cannot be built: BootstrapConfigError), the
 * queue consumers, and the authorizer (its verifier cannot be built:
 * AuthConfigError) log the configuration error's message, which names the
 * variable and never echoes a value. Other errors are still logged by class
 * only. The output is captured from a real Powertools Logger.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAuthorizerHandler, verifierFromEnv } from '../../../functions/authorizer.js';
import { createGetActionHandler } from '../../../functions/http/actions.js';
import { FUNCTION_ENV } from '../../../lib/config/function-env.js';
import { uninstallRuntime } from '../../../functions/shared/bootstrap.js';
import { OPTIONAL_ENV, readBootstrapSettings } from '../../../functions/shared/settings.js';
import { productionRuntime } from '../../../functions/shared/production-runtime.js';
import { createInvokeHandler } from '../../../functions/worker/invoke.js';
import { encodeQueueMessage } from '../../../lib/ports/messages.js';
import { localLambdaContext } from '../../../lib/aws/sqs/poller.js';
import { lambdaContext, proxyEvent } from '../http/support.js';

/** Looks like a credential: it must never reach a log line. */
const SECRET = 'sk_live_DO_NOT_LOG_4242';

interface LogRecord {
  readonly level: string;
  readonly message: string;
  readonly [field: string]: unknown;
}

/** A real Powertools Logger whose JSON lines are captured (POWERTOOLS_DEV routes them through the global console). */
function capturingLogger(): { logger: Logger; records: LogRecord[] } {
  vi.stubEnv('POWERTOOLS_DEV', 'true');
  const records: LogRecord[] = [];
  const capture = (...args: unknown[]) => {
    records.push(JSON.parse(String(args[0])) as LogRecord);
  };
  for (const method of ['error', 'warn', 'info', 'debug', 'log'] as const) vi.spyOn(console, method).mockImplementation(capture);
  return { logger: new Logger({ serviceName: 'aip-runtime', logLevel: 'DEBUG' }), records };
}

const runtimeConfig = (auth: Record<string, unknown>, envName = 'prod') => JSON.stringify({ envName, auth, connectors: [], approvalPolicies: [] });
const GOOD_AUTH = { issuer: 'https://issuer.example.com/', audience: 'aip-runtime', jwksUrl: 'https://issuer.example.com/.well-known/jwks.json' };

/** The stack's variables with a malformed role ARN carrying a secret-looking value, and secret-looking inline cursor key material. */
function badFunctionEnv(): Record<string, string> {
  return {
    [FUNCTION_ENV.invokeQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/aip-prod-invoke',
    [FUNCTION_ENV.reconcileQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/aip-prod-reconcile',
    [FUNCTION_ENV.reconcileQueueArn]: 'arn:aws:sqs:eu-west-1:123456789012:aip-prod-reconcile',
    [FUNCTION_ENV.scheduleGroupName]: 'aip-prod-reconcile',
    [FUNCTION_ENV.schedulerRoleArn]: `arn:aws:iam::123456789012:user/${SECRET}`,
    [FUNCTION_ENV.runtimeConfig]: runtimeConfig(GOOD_AUTH),
    [OPTIONAL_ENV.cursorKey]: `${SECRET}-${'x'.repeat(40)}`,
  };
}

beforeEach(() => {
  uninstallRuntime();
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
  uninstallRuntime();
});

describe('HTTP functions with a bad environment', () => {
  it('answer a 500 problem and log the BootstrapConfigError message naming each bad variable, never a value', async () => {
    for (const [name, value] of Object.entries(badFunctionEnv())) vi.stubEnv(name, value);
    vi.stubEnv(FUNCTION_ENV.tableName, undefined as unknown as string);
    const { logger, records } = capturingLogger();
    // The deployed wiring: the container's Runtime, built from process.env on the first request.
    const handler = createGetActionHandler({ runtime: productionRuntime, observability: { logger } });

    const res = await handler(proxyEvent({ resource: '/v1/actions/{id}', path: '/v1/actions/act-1', pathParameters: { id: 'act-1' } }), lambdaContext());

    expect(res.statusCode).toBe(500);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'internal.unexpected' });
    expect(res.body).not.toMatch(/AIP_|BootstrapConfigError/);
    const line = records.find((r) => r.level === 'ERROR');
    expect(line).toMatchObject({ message: 'invalid function configuration', error_name: 'BootstrapConfigError' });
    const logged = String(line?.error_message);
    expect(logged).toContain(`${FUNCTION_ENV.tableName}: is required`);
    expect(logged).toContain(`${FUNCTION_ENV.schedulerRoleArn}: must be an IAM role ARN`);
    expect(JSON.stringify(records)).not.toContain(SECRET);
  });

  it('still log a foreign error by its class only (its message could hold input or secrets)', async () => {
    const { logger, records } = capturingLogger();
    const handler = createGetActionHandler({
      runtime: async () => {
        throw new Error(`connection string with ${SECRET}`);
      },
      observability: { logger },
    });
    const res = await handler(proxyEvent({ resource: '/v1/actions/{id}', path: '/v1/actions/act-1', pathParameters: { id: 'act-1' } }), lambdaContext());
    expect(res.statusCode).toBe(500);
    expect(records.find((r) => r.level === 'ERROR')).toMatchObject({ message: 'unhandled error', error_name: 'Error' });
    expect(records.find((r) => r.level === 'ERROR')?.error_message).toBeUndefined();
    expect(JSON.stringify(records)).not.toContain(SECRET);
  });
});

describe('queue consumers with a bad environment', () => {
  it('log the message naming the variable, then fail the batch (Lambda retries it)', async () => {
    const { logger, records } = capturingLogger();
    const handler = createInvokeHandler({
      runtime: async () => readBootstrapSettings({ ...badFunctionEnv(), [FUNCTION_ENV.tableName]: '' }) as never,
      observability: { logger },
    });
    const body = encodeQueueMessage({ kind: 'invoke', tenant_id: 't1', action_id: 'a1', fence: 1, attempt: 1 });
    const event = { Records: [{ messageId: 'm1', receiptHandle: 'r1', body, attributes: { ApproximateReceiveCount: '1' } }] } as never;

    await expect(handler(event, localLambdaContext('unit', 30_000, 'us-east-1'))).rejects.toThrow(/Invalid AIP function environment/);

    const line = records.find((r) => r.level === 'ERROR');
    expect(line).toMatchObject({ message: 'invoke-worker: the runtime could not be built; the batch will be retried', error_name: 'BootstrapConfigError' });
    expect(String(line?.error_message)).toContain(`${FUNCTION_ENV.tableName}: must not be empty`);
    expect(JSON.stringify(records)).not.toContain(SECRET);
  });
});

describe('the authorizer with a bad environment', () => {
  const tokenEvent: APIGatewayTokenAuthorizerEvent = {
    type: 'TOKEN',
    authorizationToken: 'Bearer aaa.bbb.ccc',
    methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc/prod/GET/v1/health',
  };

  it.each([
    ['AIP_RUNTIME_CONFIG unset', {}, /^auth configuration: AIP_RUNTIME_CONFIG is not set$/],
    ['no JWKS URL', { AIP_RUNTIME_CONFIG: runtimeConfig({ issuer: GOOD_AUTH.issuer, audience: 'aip-runtime' }) }, /AIP_RUNTIME_CONFIG: auth\.jwksUrl/],
    [
      'an http JWKS URL outside local/localstack',
      { AIP_RUNTIME_CONFIG: runtimeConfig({ ...GOOD_AUTH, jwksUrl: `http://idp.example.com/${SECRET}/jwks.json` }) },
      /AIP_RUNTIME_CONFIG: the JWKS URL must use https/,
    ],
    ['a bad claims override', { AIP_RUNTIME_CONFIG: runtimeConfig(GOOD_AUTH), AIP_AUTH_CLAIMS: '{"preset":"keycloak"}' }, /AIP_AUTH_CLAIMS: preset/],
  ])('%s: fails the request (5xx) and logs the AuthConfigError naming the variable', async (_case, env, expected) => {
    const { logger, records } = capturingLogger();
    const handler = createAuthorizerHandler({ verifier: () => verifierFromEnv(env as NodeJS.ProcessEnv), observability: { logger } });

    await expect(handler(tokenEvent, lambdaContext())).rejects.toThrow('Authorizer unavailable');

    const line = records.find((r) => r.level === 'ERROR');
    expect(line).toMatchObject({ message: 'authorizer: invalid configuration', error_name: 'AuthConfigError' });
    expect(String(line?.error_message)).toMatch(expected);
    expect(JSON.stringify(records)).not.toContain(SECRET);
    expect(JSON.stringify(records)).not.toContain('aaa.bbb.ccc');
  });
});
