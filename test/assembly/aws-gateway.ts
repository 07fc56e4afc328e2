/**
 * The AWS endpoint of the functions in the assembly test: every AWS SDK call a
 * function makes goes here (AWS_ENDPOINT_URL), and is recorded as the IAM
 * action and resource it needs before it is answered.
 *
 * - One loopback listener per principal (a function's role, the Scheduler's
 *   role): who calls is known from the port, not from the request.
 * - The service comes from the SigV4 credential scope; the action from
 *   `X-Amz-Target` (DynamoDB, SQS, Secrets Manager, KMS: JSON protocols),
 *   the REST path (EventBridge Scheduler) or `Action=` (SQS query protocol);
 *   the resource from the request (table and index, queue URL, secret ID,
 *   key ID, schedule group and name) as the ARN IAM evaluates. A transaction
 *   or batch is recorded per item (IAM authorizes TransactWriteItems per item
 *   action); a CreateSchedule also records `iam:PassRole` of its target role.
 * - DynamoDB, SQS and Scheduler requests are forwarded unchanged to DynamoDB
 *   Local, fauxqs and the Scheduler emulator. Secrets Manager
 *   (`GetSecretValue`) and KMS (`GetPublicKey`, `Sign` of ECC_NIST_P256 keys)
 *   have no emulator here and are answered by this module, from the secrets
 *   and keys the deployment put in.
 */
import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ACCOUNT_ID, REGION } from './template.js';

/** One authorization an AWS call needed. */
export interface AwsCall {
  /** Who called: a function's logical ID, or a role's. */
  readonly principal: string;
  readonly action: string;
  readonly resource: string;
  /** Request context keys IAM conditions may test (`iam:PassedToService`). */
  readonly context?: Readonly<Record<string, string>>;
}

export interface GatewayTargets {
  readonly dynamodb: string;
  readonly sqs: string;
  readonly scheduler: string;
}

interface SigningKey {
  readonly arn: string;
  readonly privateKey: KeyObject;
  readonly publicDer: Buffer;
}

const tableArn = (name: string) => (name.startsWith('arn:') ? name : `arn:aws:dynamodb:${REGION}:${ACCOUNT_ID}:table/${name}`);
export const queueArnOfUrl = (url: string) => `arn:aws:sqs:${REGION}:${ACCOUNT_ID}:${url.split('/').pop() ?? ''}`;

const SQS_BATCH_ACTIONS: Record<string, string> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};

const DYNAMO_ITEM_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
};

/** The (action, resource) pairs one DynamoDB request needs. */
export function dynamoCalls(operation: string, body: Record<string, unknown>): [string, string][] {
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    return ((body.TransactItems as Record<string, { TableName: string }>[] | undefined) ?? []).map((item) => {
      const [kind, spec] = Object.entries(item)[0] as [string, { TableName: string }];
      return [`dynamodb:${DYNAMO_ITEM_ACTIONS[kind] ?? kind}`, tableArn(spec.TableName)];
    });
  }
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') {
    return Object.keys((body.RequestItems as Record<string, unknown> | undefined) ?? {}).map((t) => [`dynamodb:${operation}`, tableArn(t)]);
  }
  const table = tableArn(String(body.TableName ?? ''));
  return [[`dynamodb:${operation}`, typeof body.IndexName === 'string' ? `${table}/index/${body.IndexName}` : table]];
}

// --- ECDSA P-256 over a digest (KMS `Sign` with MessageType DIGEST): Node's crypto signs messages, not digests. ---
const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const A = P - 3n;
const G: [bigint, bigint] = [
  0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296n,
  0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5n,
];
const mod = (a: bigint, m: bigint) => ((a % m) + m) % m;
function inv(a: bigint, m: bigint): bigint {
  let [r0, r1, s0, s1] = [mod(a, m), m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1, s0, s1] = [r1, r0 - q * r1, s1, s0 - q * s1];
  }
  return mod(s0, m);
}
type Pt = [bigint, bigint] | null;
function add(p: Pt, q: Pt): Pt {
  if (p === null) return q;
  if (q === null) return p;
  if (p[0] === q[0] && mod(p[1] + q[1], P) === 0n) return null;
  const l = p[0] === q[0] && p[1] === q[1] ? mod((3n * p[0] * p[0] + A) * inv(2n * p[1], P), P) : mod((q[1] - p[1]) * inv(q[0] - p[0], P), P);
  const x = mod(l * l - p[0] - q[0], P);
  return [x, mod(l * (p[0] - x) - p[1], P)];
}
function mul(k: bigint, p: Pt): Pt {
  let out: Pt = null;
  let acc = p;
  for (let e = k; e > 0n; e >>= 1n) {
    if (e & 1n) out = add(out, acc);
    acc = add(acc, acc);
  }
  return out;
}
const big = (b: Buffer) => BigInt(`0x${b.toString('hex') || '0'}`);
function derInt(v: bigint): Buffer {
  let hex = v.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let b = Buffer.from(hex, 'hex');
  if ((b[0] as number) & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return Buffer.concat([Buffer.from([0x02, b.length]), b]);
}
/** DER ECDSA signature of a SHA-256 digest with a P-256 private key. */
export function signDigest(privateKey: KeyObject, digest: Buffer): Buffer {
  const d = big(Buffer.from(privateKey.export({ format: 'jwk' }).d as string, 'base64url'));
  const z = big(digest);
  for (;;) {
    const k = mod(big(randomBytes(40)), N - 1n) + 1n;
    const r = mod((mul(k, G) as [bigint, bigint])[0], N);
    const s = mod(inv(k, N) * (z + r * d), N);
    if (r === 0n || s === 0n) continue;
    const body = Buffer.concat([derInt(r), derInt(s)]);
    return Buffer.concat([Buffer.from([0x30, body.length]), body]);
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, errorType?: string): void {
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', ...(errorType !== undefined ? { 'x-amzn-errortype': errorType } : {}) });
  res.end(JSON.stringify(errorType !== undefined ? { __type: errorType, message: String((body as { message?: string }).message ?? '') } : body));
}

export class AwsGateway {
  readonly calls: AwsCall[] = [];
  readonly #servers: Server[] = [];
  readonly #secrets = new Map<string, string>();
  readonly #keys = new Map<string, SigningKey>();

  constructor(private readonly targets: GatewayTargets) {}

  /** A secret (its complete ARN, name-XXXXXX) and its string. */
  addSecret(arn: string, value: string): void {
    this.#secrets.set(arn, value);
  }

  /** A new ECC_NIST_P256 SIGN_VERIFY key under this ARN. */
  addSigningKey(arn: string): void {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#keys.set(arn, {
      arn,
      privateKey: createPrivateKey(privateKey.export({ format: 'pem', type: 'pkcs8' })),
      publicDer: publicKey.export({ format: 'der', type: 'spki' }),
    });
  }

  /** The endpoint (AWS_ENDPOINT_URL) of a principal: its calls are recorded under its name. */
  async endpointFor(principal: string): Promise<string> {
    const server = createServer((req, res) => {
      this.#handle(principal, req, res).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { message: String(err) }, 'InternalFailure');
        else res.destroy();
      });
    });
    server.keepAliveTimeout = 1_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.#servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.closeAllConnections();
            s.close(() => resolve());
          }),
      ),
    );
  }

  #record(principal: string, action: string, resource: string, context?: Record<string, string>): void {
    this.calls.push({ principal, action, resource, ...(context !== undefined ? { context } : {}) });
  }

  async #handle(principal: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const scope = /Credential=[^/]+\/\d{8}\/[^/]+\/([^/]+)\//.exec(req.headers.authorization ?? '');
    const service = scope?.[1] ?? 'unknown';
    const target = String(req.headers['x-amz-target'] ?? '');
    const operation = target.split('.').pop() ?? '';
    const json = (): Record<string, unknown> => (body.length > 0 && target !== '' ? (JSON.parse(body.toString('utf8')) as Record<string, unknown>) : {});
    switch (service) {
      case 'dynamodb':
        for (const [action, resource] of dynamoCalls(operation, json())) this.#record(principal, action, resource);
        return this.#forward(this.targets.dynamodb, req, body, res);
      case 'sqs': {
        let action = operation;
        let input = json();
        if (target === '') {
          const form = new URLSearchParams(body.toString('utf8'));
          action = form.get('Action') ?? '';
          input = Object.fromEntries(form);
        }
        const resource =
          typeof input.QueueUrl === 'string' ? queueArnOfUrl(input.QueueUrl) : `arn:aws:sqs:${REGION}:${ACCOUNT_ID}:${String(input.QueueName ?? '*')}`;
        // A batch call is authorized as its single-message action (sqs:DeleteMessageBatch is sqs:DeleteMessage).
        this.#record(principal, `sqs:${SQS_BATCH_ACTIONS[action] ?? action}`, resource);
        return this.#forward(this.targets.sqs, req, body, res);
      }
      case 'scheduler': {
        const url = new URL(req.url ?? '/', 'http://scheduler');
        const name = decodeURIComponent(/^\/schedules\/([^/]+)$/.exec(url.pathname)?.[1] ?? '*');
        const input = req.method === 'POST' || req.method === 'PUT' ? (JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>) : {};
        const group = String(input.GroupName ?? url.searchParams.get('groupName') ?? 'default');
        const action = { POST: 'CreateSchedule', PUT: 'UpdateSchedule', GET: 'GetSchedule', DELETE: 'DeleteSchedule' }[req.method ?? ''] ?? `${req.method}`;
        this.#record(principal, `scheduler:${action}`, `arn:aws:scheduler:${REGION}:${ACCOUNT_ID}:schedule/${group}/${name}`);
        const role = (input.Target as { RoleArn?: string } | undefined)?.RoleArn;
        if (role !== undefined) this.#record(principal, 'iam:PassRole', role, { 'iam:PassedToService': 'scheduler.amazonaws.com' });
        return this.#forward(this.targets.scheduler, req, body, res);
      }
      case 'secretsmanager': {
        const input = json();
        const id = String(input.SecretId ?? '');
        const arn = [...this.#secrets.keys()].find((a) => a === id || a.replace(/-[A-Za-z0-9]{6}$/, '').endsWith(`:secret:${id}`)) ?? id;
        this.#record(principal, `secretsmanager:${operation}`, arn);
        const value = this.#secrets.get(arn);
        if (operation !== 'GetSecretValue') return sendJson(res, 400, { message: `${operation} is not emulated` }, 'InvalidRequestException');
        if (value === undefined) return sendJson(res, 400, { message: "Secrets Manager can't find the specified secret." }, 'ResourceNotFoundException');
        const name = arn.split(':secret:')[1]?.replace(/-[A-Za-z0-9]{6}$/, '');
        return sendJson(res, 200, {
          ARN: arn,
          Name: name,
          SecretString: value,
          VersionId: createHash('sha256').update(arn).digest('hex').slice(0, 32),
          VersionStages: ['AWSCURRENT'],
          CreatedDate: 1_700_000_000,
        });
      }
      case 'kms': {
        const input = json();
        const id = String(input.KeyId ?? '');
        const key = [...this.#keys.values()].find((k) => k.arn === id || k.arn.endsWith(`/${id}`));
        this.#record(principal, `kms:${operation}`, key?.arn ?? id);
        if (key === undefined) return sendJson(res, 400, { message: `Key '${id}' does not exist` }, 'NotFoundException');
        if (operation === 'GetPublicKey') {
          return sendJson(res, 200, {
            KeyId: key.arn,
            PublicKey: key.publicDer.toString('base64'),
            KeySpec: 'ECC_NIST_P256',
            KeyUsage: 'SIGN_VERIFY',
            SigningAlgorithms: ['ECDSA_SHA_256'],
          });
        }
        if (operation === 'Sign' && input.MessageType === 'DIGEST' && input.SigningAlgorithm === 'ECDSA_SHA_256') {
          const signature = signDigest(key.privateKey, Buffer.from(String(input.Message), 'base64'));
          return sendJson(res, 200, { KeyId: key.arn, Signature: signature.toString('base64'), SigningAlgorithm: 'ECDSA_SHA_256' });
        }
        return sendJson(res, 400, { message: `${operation} (${String(input.MessageType)}) is not emulated` }, 'UnsupportedOperationException');
      }
      default:
        this.#record(principal, `${service}:${operation || req.method}`, '*');
        return sendJson(res, 400, { message: `no emulator for ${service}` }, 'UnknownOperationException');
    }
  }

  #forward(base: string, req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', base);
    return new Promise((resolve, reject) => {
      const out = request(url, { method: req.method, headers: { ...req.headers, host: url.host } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on('end', () => resolve());
        answer.on('error', reject);
      });
      out.on('error', reject);
      out.end(body);
    });
  }
}
