/**
 * "Deploys" one environment of the synthesized assembly on the local
 * emulators, from its templates alone, and runs it:
 *
 * - the stateful resources, from their template properties: each
 *   `AWS::DynamoDB::Table` in DynamoDB Local (key schema, attributes, GSIs),
 *   each `AWS::SQS::Queue` in fauxqs (visibility timeout, retention, redrive
 *   to its dead-letter queue), each `AWS::SecretsManager::Secret` (its
 *   generated string) and each ECC `AWS::KMS::Key` in the AWS gateway;
 *   secrets the configuration names but the stack does not create (the
 *   connector credentials) are created as an operator would;
 * - every `AWS::Lambda::Function`: its staged bundle (`asset.<hash>` of its
 *   `Code.S3Key`), handler, timeout, memory and environment with every
 *   intrinsic resolved, run by {@link LambdaFunction}, its AWS calls through
 *   its own listener of the {@link AwsGateway};
 * - the triggers: the REST API ({@link RestApi}), each SQS event source
 *   mapping (lib/aws/sqs/poller.ts, with the mapping's batch size, the
 *   function's timeout and partial batch responses; its SQS calls are the
 *   function role's, as Lambda's are), each EventBridge rule's target
 *   (invoked by {@link AssemblyEnvironment.fireRule}), each Function URL (an
 *   https listener on loopback), and the EventBridge Scheduler emulator
 *   (dev/scheduler-emulator) whose deliveries go through the gateway as the
 *   Scheduler's role.
 *
 * Values the configuration holds that point outside (the IdP's JWKS URL,
 * the provider's base URL) are rewritten to the local servers by
 * `externalUrls`: exact string replacements, listed by the caller.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startSchedulerEmulator, type SchedulerEmulator } from '../../dev/scheduler-emulator/emulator.js';
import { startSqsPoller } from '../../lib/aws/sqs/poller.js';
import { AwsGateway, type AwsCall } from './aws-gateway.js';
import { LambdaFunction } from './lambda-host.js';
import { RestApi } from './rest-api.js';
import { ACCOUNT_ID, type Physical, type PhysicalIds, REGION, Resolver, readStacks, resourcesOfType, type StackArtifact } from './template.js';

const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

export interface DeployOptions {
  /** The cloud assembly folder. */
  readonly dir: string;
  /** `assembly` → stacks `Aip-assembly-*`. */
  readonly envName: string;
  readonly dynamoEndpoint: string;
  readonly sqsEndpoint: string;
  /** Exact string replacements in the functions' resolved environment: configured external URL → local server. */
  readonly externalUrls: Readonly<Record<string, string>>;
  /** Secrets the operator creates before deploying (named in the configuration): name → value. */
  readonly externalSecrets: Readonly<Record<string, string>>;
  /** PEM certificate and key of the loopback https listeners (Function URLs); the functions trust the certificate. */
  readonly tls: { readonly cert: string; readonly key: string; readonly certFile: string };
  /** Where the functions' stdout/stderr go. */
  readonly output: (text: string) => void;
}

/** A service's invocation of a function, checked against the function's resource policy. */
export interface InvokeCheck {
  readonly functionId: string;
  readonly principal: string;
  readonly sourceArn: string;
  readonly allowed: boolean;
}

export interface AssemblyEnvironment {
  readonly envName: string;
  readonly stacks: readonly StackArtifact[];
  readonly resolver: Resolver;
  readonly gateway: AwsGateway;
  readonly functions: ReadonlyMap<string, LambdaFunction>;
  /** Function logical ID → its role's logical ID. */
  readonly roleOf: ReadonlyMap<string, string>;
  /** Principal (function or role logical ID) → role logical ID, for the calls the gateway recorded. */
  readonly principalRole: ReadonlyMap<string, string>;
  readonly api: RestApi;
  readonly scheduler: SchedulerEmulator;
  readonly invokeChecks: InvokeCheck[];
  /** Physical names: the table, the queues (by logical ID). */
  readonly tableName: (logicalId?: string) => string;
  readonly queueUrl: (logicalId: string) => string;
  /** Batches each event source mapping delivered, by function logical ID. */
  readonly batches: Map<string, number>;
  /** Fires an EventBridge rule once: its targets get a Scheduled Event. Resolves with their results. */
  fireRule(ruleLogicalId: string): Promise<unknown[]>;
  /** Function URL of a `AWS::Lambda::Url` (https on loopback). */
  functionUrl(logicalId: string): string;
  stop(): Promise<void>;
}

function physicalName(prefix: string, logicalId: string, max: number): string {
  return `${prefix}-${logicalId}`.slice(0, max);
}

export async function deployAssembly(options: DeployOptions): Promise<AssemblyEnvironment> {
  const stacks = readStacks(options.dir, `Aip-${options.envName}-`);
  if (stacks.length === 0) throw new Error(`no stacks Aip-${options.envName}-* in ${options.dir}`);
  const prefix = `asm${randomUUID().slice(0, 6)}`;
  const physical: PhysicalIds = new Map(stacks.map((s) => [s.name, new Map<string, Physical>()]));
  const set = (stack: StackArtifact, id: string, p: Physical) => physical.get(stack.name)?.set(id, p);
  const resolver = new Resolver(stacks, physical);
  const ddb = new DynamoDBClient({ endpoint: options.dynamoEndpoint, region: REGION, credentials: LOCAL_CREDENTIALS });
  const sqs = new SQSClient({ endpoint: options.sqsEndpoint, region: REGION, credentials: LOCAL_CREDENTIALS });
  const targets = { dynamodb: options.dynamoEndpoint, sqs: options.sqsEndpoint, scheduler: '' };
  const gateway = new AwsGateway(targets);
  const urlServers: HttpsServer[] = [];
  const urlHandlers = new Map<string, (event: unknown) => Promise<unknown>>();

  // --- names and attributes of everything but the queues (created below, their URLs come from the emulator) ---
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.template.Resources)) {
      const p = (r.Properties ?? {}) as Record<string, unknown>;
      const arn = (service: string, resource: string) => `arn:aws:${service}:${REGION}:${ACCOUNT_ID}:${resource}`;
      switch (r.Type) {
        case 'AWS::DynamoDB::Table': {
          const name = physicalName(prefix, id, 255);
          set(stack, id, { ref: name, attributes: { Arn: arn('dynamodb', `table/${name}`) } });
          break;
        }
        case 'AWS::SecretsManager::Secret': {
          const name = `${prefix}/${id}`;
          const secretArn = arn('secretsmanager', `secret:${name}-${randomBytes(3).toString('hex')}`);
          set(stack, id, { ref: secretArn, attributes: { Id: secretArn } });
          const g = p.GenerateSecretString as { PasswordLength?: number } | undefined;
          const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
          const value = Array.from(randomBytes(g?.PasswordLength ?? 32), (b) => alphabet[b % alphabet.length]).join('');
          gateway.addSecret(secretArn, value);
          break;
        }
        case 'AWS::KMS::Key': {
          const keyId = randomUUID();
          const keyArn = arn('kms', `key/${keyId}`);
          set(stack, id, { ref: keyId, attributes: { Arn: keyArn, KeyId: keyId } });
          if (p.KeySpec === 'ECC_NIST_P256') gateway.addSigningKey(keyArn);
          break;
        }
        case 'AWS::IAM::Role': {
          const name = physicalName(prefix, id, 64);
          set(stack, id, { ref: name, attributes: { Arn: `arn:aws:iam::${ACCOUNT_ID}:role/${name}`, RoleId: `AROA${id.toUpperCase().slice(0, 16)}` } });
          break;
        }
        case 'AWS::Lambda::Function': {
          const name = physicalName(prefix, id, 64);
          set(stack, id, { ref: name, attributes: { Arn: arn('lambda', `function:${name}`) } });
          break;
        }
        case 'AWS::Logs::LogGroup': {
          const name = typeof p.LogGroupName === 'string' ? p.LogGroupName : `/aws/lambda/${physicalName(prefix, id, 200)}`;
          set(stack, id, { ref: name, attributes: { Arn: arn('logs', `log-group:${name}:*`) } });
          break;
        }
        case 'AWS::Scheduler::ScheduleGroup': {
          const name = String(p.Name);
          set(stack, id, { ref: name, attributes: { Arn: arn('scheduler', `schedule-group/${name}`) } });
          break;
        }
        case 'AWS::Events::Rule': {
          const name = physicalName(prefix, id, 64);
          set(stack, id, { ref: name, attributes: { Arn: arn('events', `rule/${name}`) } });
          break;
        }
        case 'AWS::ApiGateway::RestApi':
          set(stack, id, { ref: randomBytes(5).toString('hex'), attributes: { RootResourceId: 'root' } });
          break;
        case 'AWS::ApiGateway::Stage':
          set(stack, id, { ref: String(p.StageName) });
          break;
        case 'AWS::Lambda::Url': {
          const server = createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, (req, res) => {
            const chunks: Buffer[] = [];
            req.on('data', (c: Buffer) => chunks.push(c));
            req.on('end', () => {
              const url = new URL(req.url ?? '/', 'https://url');
              const headers: Record<string, string> = {};
              for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
              const event = {
                version: '2.0',
                routeKey: '$default',
                rawPath: url.pathname,
                rawQueryString: url.search.slice(1),
                headers,
                ...(url.search !== '' ? { queryStringParameters: Object.fromEntries(url.searchParams) } : {}),
                requestContext: {
                  accountId: 'anonymous',
                  apiId: id,
                  domainName: req.headers.host ?? '127.0.0.1',
                  domainPrefix: id,
                  http: {
                    method: req.method ?? 'GET',
                    path: url.pathname,
                    protocol: `HTTP/${req.httpVersion}`,
                    sourceIp: '127.0.0.1',
                    userAgent: req.headers['user-agent'] ?? '',
                  },
                  requestId: randomUUID(),
                  routeKey: '$default',
                  stage: '$default',
                  time: new Date().toISOString(),
                  timeEpoch: Date.now(),
                },
                body: Buffer.concat(chunks).toString('utf8'),
                isBase64Encoded: false,
              };
              const handler = urlHandlers.get(id);
              if (handler === undefined) {
                res.writeHead(502).end();
                return;
              }
              handler(event).then(
                (result) => {
                  const r = result as { statusCode?: number; headers?: Record<string, string>; body?: string; isBase64Encoded?: boolean };
                  if (typeof r?.statusCode !== 'number') {
                    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
                    return;
                  }
                  res.writeHead(r.statusCode, r.headers ?? {});
                  res.end(r.isBase64Encoded ? Buffer.from(r.body ?? '', 'base64') : (r.body ?? ''));
                },
                (err: unknown) => {
                  options.output(`assembly Function URL ${id}: ${String(err)}\n`);
                  res.writeHead(502, { 'content-type': 'application/json' }).end('{"Message":"Internal Server Error"}');
                },
              );
            });
          });
          await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
          urlServers.push(server);
          const port = (server.address() as AddressInfo).port;
          set(stack, id, { ref: id, attributes: { FunctionUrl: `https://127.0.0.1:${port}/`, FunctionArn: '' } });
          break;
        }
        case 'AWS::SQS::Queue':
          break;
        default:
          set(stack, id, { ref: `${id}-${prefix}`, attributes: { Arn: arn('unknown', id) } });
      }
    }
  }

  // --- tables, from their template properties ---
  for (const [stack, id, r] of resourcesOfType(stacks, 'AWS::DynamoDB::Table')) {
    const p = r.Properties as Record<string, unknown>;
    await ddb.send(
      new CreateTableCommand({
        TableName: resolver.string(stack.name, { Ref: id }),
        AttributeDefinitions: p.AttributeDefinitions as never,
        KeySchema: p.KeySchema as never,
        ...(p.GlobalSecondaryIndexes !== undefined ? { GlobalSecondaryIndexes: p.GlobalSecondaryIndexes as never } : {}),
        BillingMode: (p.BillingMode as 'PAY_PER_REQUEST' | undefined) ?? 'PAY_PER_REQUEST',
      }),
    );
  }

  // --- queues: dead-letter queues first (a redrive policy names its target's ARN) ---
  const queues = resourcesOfType(stacks, 'AWS::SQS::Queue').sort(
    ([, , a], [, , b]) => Number(a.Properties?.RedrivePolicy !== undefined) - Number(b.Properties?.RedrivePolicy !== undefined),
  );
  const queueUrls = new Map<string, string>();
  const queueArns = new Map<string, string>();
  for (const [stack, id, r] of queues) {
    const p = (r.Properties ?? {}) as Record<string, unknown>;
    const name = physicalName(prefix, id, 80);
    const attributes: Record<string, string> = {};
    if (p.VisibilityTimeout !== undefined) attributes.VisibilityTimeout = String(p.VisibilityTimeout);
    if (p.MessageRetentionPeriod !== undefined) attributes.MessageRetentionPeriod = String(p.MessageRetentionPeriod);
    if (p.RedrivePolicy !== undefined) attributes.RedrivePolicy = JSON.stringify(resolver.resolve(stack.name, p.RedrivePolicy));
    const out = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    const url = out.QueueUrl as string;
    queueUrls.set(id, url);
    queueArns.set(id, `arn:aws:sqs:${REGION}:${ACCOUNT_ID}:${name}`);
    set(stack, id, { ref: url, attributes: { Arn: `arn:aws:sqs:${REGION}:${ACCOUNT_ID}:${name}`, QueueName: name, QueueUrl: url } });
  }

  // --- the operator's secrets (the configuration names them; the stacks only reference them) ---
  for (const [name, value] of Object.entries(options.externalSecrets)) {
    gateway.addSecret(`arn:aws:secretsmanager:${REGION}:${ACCOUNT_ID}:secret:${name}-${randomBytes(3).toString('hex')}`, value);
  }

  // --- the Scheduler (emulator), delivering as its role through the gateway ---
  const schedulerRoles = resourcesOfType(stacks, 'AWS::IAM::Role').filter(([, , r]) =>
    JSON.stringify(r.Properties?.AssumeRolePolicyDocument ?? {}).includes('scheduler.amazonaws.com'),
  );
  const principalRole = new Map<string, string>();
  const schedulerRole = schedulerRoles[0]?.[1] ?? 'SchedulerRole';
  principalRole.set(schedulerRole, schedulerRole);
  const scheduler = await startSchedulerEmulator({ sqsEndpoint: await gateway.endpointFor(schedulerRole), autoFire: true });
  targets.scheduler = scheduler.endpoint;

  // --- the functions ---
  const functions = new Map<string, LambdaFunction>();
  const roleOf = new Map<string, string>();
  for (const [stack, id, r] of resourcesOfType(stacks, 'AWS::Lambda::Function')) {
    const p = r.Properties as Record<string, unknown>;
    const code = p.Code as { S3Key?: string };
    if (code.S3Key === undefined) throw new Error(`${id}: no asset code (inline code is not run by the assembly test)`);
    const variables = resolver.resolve(stack.name, (p.Environment as { Variables?: unknown } | undefined)?.Variables ?? {}) as Record<string, unknown>;
    const environment: Record<string, string> = {};
    for (const [k, v] of Object.entries(variables)) {
      let value = String(v);
      for (const [from, to] of Object.entries(options.externalUrls)) value = value.replaceAll(from, to);
      environment[k] = value;
    }
    const role = JSON.stringify(p.Role).match(/"Fn::GetAtt":\["([^"]+)","Arn"\]/)?.[1];
    if (role === undefined) throw new Error(`${id}: its role is not a role of the stack`);
    roleOf.set(id, role);
    principalRole.set(id, role);
    const logging = p.LoggingConfig as { LogFormat?: string; ApplicationLogLevel?: string } | undefined;
    functions.set(
      id,
      new LambdaFunction(
        {
          logicalId: id,
          name: resolver.string(stack.name, { Ref: id }),
          arn: resolver.string(stack.name, { 'Fn::GetAtt': [id, 'Arn'] }),
          handler: String(p.Handler),
          codeDir: join(options.dir, `asset.${code.S3Key.replace(/\.zip$/, '')}`),
          timeoutSeconds: Number(p.Timeout ?? 3),
          memorySize: Number(p.MemorySize ?? 128),
          environment,
          ...(logging?.LogFormat !== undefined ? { logFormat: logging.LogFormat } : {}),
          ...(logging?.ApplicationLogLevel !== undefined ? { applicationLogLevel: logging.ApplicationLogLevel } : {}),
        },
        { awsEndpoint: await gateway.endpointFor(id), hostEnv: { NODE_EXTRA_CA_CERTS: options.tls.certFile }, output: options.output },
      ),
    );
  }
  const functionOfArn = (value: unknown, stack: StackArtifact): string => {
    const arn = resolver.string(stack.name, value);
    const id = [...functions.keys()].find((f) => functions.get(f)?.spec.arn === arn || functions.get(f)?.spec.name === arn);
    if (id === undefined) throw new Error(`no function ${arn}`);
    return id;
  };

  // --- resource policies: who may invoke which function ---
  const permissions = resourcesOfType(stacks, 'AWS::Lambda::Permission').map(([stack, , r]) => {
    const p = r.Properties as Record<string, unknown>;
    return {
      functionId: functionOfArn(p.FunctionName, stack),
      action: String(p.Action),
      principal: String(p.Principal),
      sourceArn: p.SourceArn !== undefined ? resolver.string(stack.name, p.SourceArn) : undefined,
      urlAuthType: p.FunctionUrlAuthType as string | undefined,
    };
  });
  const invokeChecks: InvokeCheck[] = [];
  const authorizeInvoke = (functionId: string, principal: string, sourceArn: string, action = 'lambda:InvokeFunction') => {
    const allowed = permissions.some(
      (p) =>
        p.functionId === functionId &&
        p.action === action &&
        p.principal === principal &&
        (p.sourceArn === undefined || new RegExp(`^${p.sourceArn.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`).test(sourceArn)),
    );
    invokeChecks.push({ functionId, principal, sourceArn, allowed });
  };

  // --- triggers ---
  const restStacks = stacks.filter((s) => resourcesOfType([s], 'AWS::ApiGateway::RestApi').length > 0);
  if (restStacks.length !== 1) throw new Error(`expected one REST API, found ${restStacks.length}`);
  const api = new RestApi({ stack: restStacks[0] as StackArtifact, resolver, functions, authorizeInvoke });
  await api.start();

  for (const [stack, id, r] of resourcesOfType(stacks, 'AWS::Lambda::Url')) {
    const fnId = functionOfArn((r.Properties as { TargetFunctionArn: unknown }).TargetFunctionArn, stack);
    urlHandlers.set(id, (event) => {
      authorizeInvoke(fnId, '*', '', 'lambda:InvokeFunctionUrl');
      return (functions.get(fnId) as LambdaFunction).invoke(event);
    });
  }

  const pollers: { stop(): Promise<void> }[] = [];
  const batches = new Map<string, number>();
  for (const [stack, , r] of resourcesOfType(stacks, 'AWS::Lambda::EventSourceMapping')) {
    const p = r.Properties as Record<string, unknown>;
    const fnId = functionOfArn(p.FunctionName, stack);
    const fn = functions.get(fnId) as LambdaFunction;
    const queueArn = resolver.string(stack.name, p.EventSourceArn);
    const queueId = [...queueArns].find(([, arn]) => arn === queueArn)?.[0];
    if (queueId === undefined) throw new Error(`${fnId}: its event source ${queueArn} is not a queue of the assembly`);
    if (!(p.FunctionResponseTypes as string[] | undefined)?.includes('ReportBatchItemFailures'))
      throw new Error(`${fnId}: the event source does not report batch item failures`);
    const client = new SQSClient({ endpoint: await gateway.endpointFor(fnId), region: REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
    pollers.push(
      startSqsPoller({
        client,
        queueUrl: queueUrls.get(queueId) as string,
        queueArn,
        batchSize: Number(p.BatchSize ?? 10),
        waitTimeSeconds: 1,
        functionTimeoutMs: fn.spec.timeoutSeconds * 1000,
        handler: async (event) => {
          batches.set(fnId, (batches.get(fnId) ?? 0) + 1);
          return (await fn.invoke(event)) as never;
        },
        onError: (err) => options.output(`assembly event source ${fnId}: ${String(err)}\n`),
      }),
    );
  }

  return {
    envName: options.envName,
    stacks,
    resolver,
    gateway,
    functions,
    roleOf,
    principalRole,
    api,
    scheduler,
    invokeChecks,
    batches,
    tableName: (logicalId) => {
      const [stack, id] = resourcesOfType(stacks, 'AWS::DynamoDB::Table').find(([, tid]) => logicalId === undefined || tid === logicalId) ?? [];
      if (stack === undefined || id === undefined) throw new Error(`no table ${logicalId ?? ''}`);
      return resolver.string(stack.name, { Ref: id });
    },
    queueUrl: (logicalId) => {
      const url = [...queueUrls].find(([q]) => q.startsWith(logicalId))?.[1];
      if (url === undefined) throw new Error(`no queue ${logicalId}`);
      return url;
    },
    functionUrl: (logicalId) => {
      for (const s of stacks) {
        const hit = [...(physical.get(s.name) ?? new Map<string, Physical>())].find(([id]) => id.startsWith(logicalId));
        if (hit?.[1].attributes?.FunctionUrl !== undefined) return hit[1].attributes.FunctionUrl;
      }
      throw new Error(`no Function URL ${logicalId}`);
    },
    async fireRule(ruleLogicalId) {
      const found = resourcesOfType(stacks, 'AWS::Events::Rule').find(([, id]) => id.startsWith(ruleLogicalId));
      if (found === undefined) throw new Error(`no rule ${ruleLogicalId}`);
      const [stack, id, r] = found;
      const ruleArn = resolver.string(stack.name, { 'Fn::GetAtt': [id, 'Arn'] });
      const results: unknown[] = [];
      for (const target of (r.Properties as { Targets: { Arn: unknown }[] }).Targets) {
        const fnId = functionOfArn(target.Arn, stack);
        authorizeInvoke(fnId, 'events.amazonaws.com', ruleArn);
        results.push(
          await (functions.get(fnId) as LambdaFunction).invoke({
            version: '0',
            id: randomUUID(),
            'detail-type': 'Scheduled Event',
            source: 'aws.events',
            account: ACCOUNT_ID,
            time: new Date().toISOString(),
            region: REGION,
            resources: [ruleArn],
            detail: {},
          }),
        );
      }
      return results;
    },
    async stop() {
      await Promise.all(pollers.map((p) => p.stop()));
      await api.stop();
      await Promise.all([...functions.values()].map((f) => f.stop()));
      await scheduler.stop();
      for (const s of urlServers) s.closeAllConnections();
      await Promise.all(urlServers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
      await gateway.stop();
      ddb.destroy();
      sqs.destroy();
    },
  };
}

/** The recorded calls, grouped by the role they were made under. */
export function callsByRole(env: AssemblyEnvironment): Map<string, AwsCall[]> {
  const out = new Map<string, AwsCall[]>();
  for (const call of env.gateway.calls) {
    const role = env.principalRole.get(call.principal) ?? call.principal;
    out.set(role, [...(out.get(role) ?? []), call]);
  }
  return out;
}
