/**
 * The declarative HTTP connector pointed at a small REST API of our own
 * (node:http on loopback): header-carried operation IDs, API-key header
 * auth, downstream validation for plans, and error mapping with details.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConnectorFailure, EnvCredentialProvider, credentialHandle, type TrustedAttemptState } from '../../../packages/connector-sdk/src/index.js';
import { createExecutionContext } from '../../../packages/connector-sdk/src/host.js';
import { createHttpConnector, type HttpConnectorConfig } from '../../../lib/connectors/http/index.js';
import type { Action } from '../../../packages/connector-sdk/src/protocol/index.js';

const KEY = 'orders_key_9Hh2kLq0';

interface Held {
  req: IncomingMessage;
  res: ServerResponse;
  body: string;
}

let server: Server;
let base: string;
/** Requests the server received, in order. */
let received: Held[];
/** How the server answers: `hold` keeps the response body open until the test ends it. */
let answer: (h: Held) => void;

beforeEach(async () => {
  received = [];
  answer = (h) => {
    h.res.writeHead(200, { 'content-type': 'application/json' });
    h.res.end('{}');
  };
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const held = { req, res, body: Buffer.concat(chunks).toString('utf8') };
      received.push(held);
      answer(held);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function config(): HttpConnectorConfig {
  return {
    connector_id: 'orders',
    version: '1.0.0',
    provider: 'orders-api',
    base_url: `${base}/api`,
    auth: { type: 'header', credential_handle: 'orders/key', header: 'X-Api-Key' },
    idempotency: { header: 'X-Request-Key' },
    request_id_header: 'X-Trace',
    capabilities: [
      {
        id: 'orders.create',
        input_schema: {
          type: 'object',
          required: ['sku', 'quantity'],
          additionalProperties: false,
          properties: { sku: { type: 'string' }, quantity: { type: 'integer', minimum: 1 }, note: { type: 'string' } },
        },
        output_schema: { type: 'object', required: ['order_id'], properties: { order_id: { type: 'string' }, state: { type: 'string' } } },
        contract: {
          transaction: { modes: ['plan', 'commit'], dry_run_fidelity: 'downstream_validation', requires_plan_before_commit: true },
          execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 5_000 },
          credentials: { required: true, kind: 'api_key' },
        },
        operations: {
          invoke: {
            request: {
              method: 'POST',
              path: '/tenants/{$tenant_id}/orders',
              query: { source: { value: 'aip' }, note: { from: '/note', optional: true } },
              headers: { 'X-Action': { context: 'action_id' } },
              body: { '/item/sku': { from: '/sku' }, '/item/qty': { from: '/quantity' }, '/label': { template: 'order of {/quantity} × {/sku}' } },
            },
            provider_operation: { header: 'Operation-Id' },
            output: { '/order_id': { from: '/data/id' }, '/state': { from: '/data/state', default: 'unknown' } },
          },
          commit: 'invoke',
          plan: {
            validate: {
              request: { method: 'POST', path: '/orders/validate', body: { '/sku': { from: '/sku' }, '/quantity': { from: '/quantity' } } },
              output: { '/available': { from: '/available' } },
            },
          },
        },
        errors: [
          {
            status: 422,
            code: 'orders.invalid',
            category: 'validation',
            retryable: false,
            message: 'The order is invalid',
            details: { field: '/error/field' },
          },
        ],
      },
    ],
  };
}

const credentials = new EnvCredentialProvider({
  connector_id: 'orders',
  references: [{ connector_id: 'orders', handle: 'orders/key', tenant_id: 'tenant-a', env: 'ORDERS_KEY' }],
  env: { ORDERS_KEY: KEY },
});

function attempt(action: Action, checkpoints: string[], onCheckpoint?: () => void) {
  const trusted: TrustedAttemptState = {
    action_id: action.id,
    attempt_id: 'att-1',
    capability_id: action.capability_id,
    actor: {
      principal: { id: 'svc', kind: 'service' },
      issuer: 'i',
      scheme: 'mtls',
      scopes: [],
      lifetime: { issued_at: new Date(Date.now() - 1000), expires_at: new Date(Date.now() + 60_000) },
    },
    tenant: { tenant_id: 'tenant-a' },
    credential: credentialHandle('orders/key'),
    deadline_at: new Date(Date.now() + 10_000),
    ...(action.transaction ? { transaction: { transaction_id: 'tx-1', mode: action.transaction.mode } } : {}),
    trace: { trace_id: 't', span_id: 's' },
    redaction: { redaction_required: false, input_pointers: [], output_pointers: [] },
    streaming: false,
  };
  return createExecutionContext(trusted, {
    transaction_checkpoints: {
      checkpoint: async (x) => {
        checkpoints.push(x.provider_operation.operation_id);
        onCheckpoint?.();
      },
    },
  });
}

const commit: Action = {
  id: 'order-act-1',
  capability_id: 'orders.create',
  input: { sku: 'A/1', quantity: 2, note: 'gift' },
  transaction: { mode: 'commit', transaction_id: 'tx-1', plan_id: 'plan:tx-1' },
};

describe('a REST API of our own', () => {
  it('builds the request from the mappings and checkpoints a header operation ID before reading the body', async () => {
    const connector = createHttpConnector(config(), { credentials });
    const checkpoints: string[] = [];
    let release: (() => void) | undefined;
    answer = (h) => {
      h.res.writeHead(201, { 'content-type': 'application/json', 'operation-id': 'opr-77', 'x-trace': 'trace-abc' });
      h.res.flushHeaders();
      release = () => h.res.end(JSON.stringify({ data: { id: 'ord-1' } }));
    };
    let checkpointed!: () => void;
    const seen = new Promise<void>((resolve) => (checkpointed = resolve));
    const ctx = attempt(commit, checkpoints, () => checkpointed());
    const call = connector.commit_typed(commit, ctx.context);
    // The head has arrived but the body is held by the server: the checkpoint happens anyway.
    await seen;
    expect(checkpoints).toEqual(['opr-77']);
    expect(received[0]?.res.writableEnded).toBe(false);
    release?.();
    const result = await call;
    expect(result.output).toEqual({ order_id: 'ord-1', state: 'unknown' });

    const req = received[0] as Held;
    expect(req.req.method).toBe('POST');
    expect(req.req.url).toBe('/api/tenants/tenant-a/orders?source=aip&note=gift');
    expect(req.req.headers['x-api-key']).toBe(KEY);
    expect(req.req.headers.authorization).toBeUndefined();
    expect(req.req.headers['x-action']).toBe('order-act-1');
    expect(req.req.headers['x-request-key']).toMatch(/^aip1-/);
    expect(JSON.parse(req.body)).toEqual({ item: { sku: 'A/1', qty: 2 }, label: 'order of 2 × A/1' });
    expect(ctx.provider_operation).toEqual({ provider: 'orders-api', operation_id: 'opr-77', request_id: 'trace-abc' });
  });

  it('plans with downstream validation and maps a validation error with its details', async () => {
    const connector = createHttpConnector(config(), { credentials });
    answer = (h) => {
      h.res.writeHead(200, { 'content-type': 'application/json' });
      h.res.end(JSON.stringify({ available: true, internal: 'x' }));
    };
    const plan: Action = { ...commit, id: 'order-plan-1', transaction: { mode: 'plan', transaction_id: 'tx-1' } };
    const planned = await connector.plan_typed(plan, attempt(plan, []).context);
    expect(planned.output).toEqual({ fidelity: 'downstream_validation', validation: { available: true } });
    expect(received[0]?.req.url).toBe('/api/orders/validate');
    expect(received[0]?.req.headers['x-request-key']).toBeUndefined();

    answer = (h) => {
      h.res.writeHead(422, { 'content-type': 'application/json', 'x-trace': 'trace-422' });
      h.res.end(JSON.stringify({ error: { field: 'quantity', message: 'quantity exceeds stock of customer Alice' } }));
    };
    const err = await connector.plan_typed(plan, attempt(plan, []).context).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorFailure);
    expect((err as ConnectorFailure).toJSON()).toEqual({
      code: 'orders.invalid',
      message: 'The order is invalid',
      category: 'validation',
      retryable: false,
      provider_request_id: 'trace-422',
      remote_status: 422,
      uncertain_outcome: false,
      redacted_details: { http_method: 'POST', route: '/orders/validate', field: 'quantity' },
      source: 'connector:orders',
      operation: 'transaction_plan',
    });
  });

  it('an unmapped 5xx after a mutation is uncertain; a 2xx that is not JSON is an invalid, uncertain response', async () => {
    const connector = createHttpConnector(config(), { credentials });
    answer = (h) => {
      h.res.writeHead(500, { 'content-type': 'text/plain' });
      h.res.end('boom');
    };
    const e1 = (await connector.commit_typed(commit, attempt(commit, []).context).catch((e: unknown) => e)) as ConnectorFailure;
    expect(e1).toMatchObject({ code: 'connector.provider_unavailable', uncertain_outcome: true, remote_status: 500, retryable: false });
    answer = (h) => {
      h.res.writeHead(201, { 'content-type': 'text/html' });
      h.res.end('<html>');
    };
    const e2 = (await connector.commit_typed(commit, attempt(commit, []).context).catch((e: unknown) => e)) as ConnectorFailure;
    expect(e2).toMatchObject({ code: 'connector.provider_response_invalid', uncertain_outcome: true, redacted_details: { reason: 'response_not_json' } });
  });

  it('a missing mapped input value fails before anything is sent', async () => {
    const connector = createHttpConnector({ ...config(), capabilities: [{ ...config().capabilities[0]!, input_schema: { type: 'object' } }] }, { credentials });
    const bad: Action = { ...commit, input: { quantity: 1 } };
    const err = (await connector.commit_typed(bad, attempt(bad, []).context).catch((e: unknown) => e)) as ConnectorFailure;
    expect(err).toMatchObject({ code: 'connector.input_invalid', redacted_details: { target: '/item/sku', reason: 'missing' } });
    expect(received).toHaveLength(0);
  });
});
