import { inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { ERROR_CATEGORIES } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { ProtocolErrorSchema } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  CONNECTOR_FAILURE_FIELDS,
  CONNECTOR_OPERATIONS,
  ConnectorFailure,
  ConnectorSecret,
  clampProtocolErrorRetry,
  connectorFailureCause,
  safeRetryable,
  toConnectorFailure,
  toProtocolError,
  type ConnectorFailureInit,
} from '../../../packages/connector-sdk/src/index.js';

const fullInit: ConnectorFailureInit = {
  code: 'payments.gateway_timeout',
  message: 'gateway timed out after the charge was sent',
  category: 'timeout',
  retryable: true,
  retry_after_ms: 1500,
  provider_request_id: 'req-42',
  provider_operation: { provider: 'payments-sim', operation_id: 'op-7', request_id: 'req-42' },
  remote_status: 504,
  uncertain_outcome: true,
  redacted_details: { attempt: 2, side_effects_committed: false },
  source: 'provider:payments-sim',
  operation: 'transaction_commit',
};

describe('ConnectorFailure', () => {
  it('has exactly the twelve fields of the page', () => {
    expect([...CONNECTOR_FAILURE_FIELDS]).toEqual([
      'code',
      'message',
      'category',
      'retryable',
      'retry_after_ms',
      'provider_request_id',
      'provider_operation',
      'remote_status',
      'uncertain_outcome',
      'redacted_details',
      'source',
      'operation',
    ]);
    const f = new ConnectorFailure(fullInit);
    expect(Object.keys(f.toJSON())).toEqual([...CONNECTOR_FAILURE_FIELDS]);
    expect(JSON.parse(JSON.stringify(f))).toEqual({ ...fullInit });
    for (const field of CONNECTOR_FAILURE_FIELDS) expect(field in f).toBe(true);
  });

  it('is an Error that can be thrown and recognised', () => {
    const f = new ConnectorFailure(fullInit);
    expect(f).toBeInstanceOf(Error);
    expect(f.name).toBe('ConnectorFailure');
    expect(f.message).toBe(fullInit.message);
  });

  it('defaults a catalogued code from the catalogue and is never retryable by default otherwise', () => {
    const pending = new ConnectorFailure({ code: 'transaction.reconciliation_pending', operation: 'reconciliation', source: 'x' });
    expect([pending.category, pending.retryable, pending.retry_after_ms]).toEqual(['temporary', true, 5000]);
    const custom = new ConnectorFailure({ code: 'payments.card_declined', operation: 'invocation', source: 'x' });
    expect(custom.retryable).toBe(false);
    expect(custom.uncertain_outcome).toBe(false);
    expect(custom.redacted_details).toEqual({});
  });

  it('builds the unsupported default: connector.operation_unsupported, permanent, retryable=false', () => {
    const f = ConnectorFailure.unsupported('cancellation', 'connector:demo');
    expect(f.toJSON()).toMatchObject({
      code: 'connector.operation_unsupported',
      category: 'permanent',
      retryable: false,
      operation: 'cancellation',
      source: 'connector:demo',
    });
  });

  it('refuses redacted_details that are not plain JSON, without echoing them', () => {
    const secret = ConnectorSecret.fromUtf8('sk_live_do_not_leak');
    let caught: unknown;
    try {
      new ConnectorFailure({ ...fullInit, redacted_details: { key: secret as never } });
    } catch (err) {
      caught = err;
    }
    expect(isAipError(caught, 'connector.failure_invalid')).toBe(true);
    expect(JSON.stringify((caught as Error & { details: unknown }).details)).not.toContain('sk_live');
    expect(String((caught as Error).message)).not.toContain('sk_live');
  });

  it('rejects a code that is not namespaced and an unknown operation', () => {
    expect(() => new ConnectorFailure({ ...fullInit, code: 'BadCode' })).toThrow();
    expect(() => new ConnectorFailure({ ...fullInit, operation: 'invoke' as never })).toThrow();
  });

  it('keeps the raw cause out of JSON and util.inspect', () => {
    const raw = new Error('HTTP 401 Authorization: Bearer sk_live_hidden');
    const f = toConnectorFailure(raw, 'invocation', 'connector:demo');
    expect(connectorFailureCause(f)).toBe(raw);
    expect(JSON.stringify(f)).not.toContain('sk_live');
    expect(inspect(f, { depth: 10 })).not.toContain('sk_live');
    expect(f.message).not.toContain('sk_live');
  });
});

describe('toConnectorFailure', () => {
  it('marks an unclassified error in a side-effecting operation as uncertain and not retryable', () => {
    const f = toConnectorFailure(new TypeError('socket hang up'), 'transaction_commit', 'connector:demo');
    expect(f.toJSON()).toMatchObject({ code: 'connector.unexpected_error', uncertain_outcome: true, retryable: false, operation: 'transaction_commit' });
    expect(f.redacted_details).toEqual({ error_type: 'TypeError' });
  });

  it('does not mark read-only operations as uncertain', () => {
    expect(toConnectorFailure(new Error('x'), 'transaction_plan', 's').uncertain_outcome).toBe(false);
    expect(toConnectorFailure(new Error('x'), 'reconciliation', 's').uncertain_outcome).toBe(false);
  });
});

describe('toProtocolError', () => {
  it('keeps retry, provider, remote-status, uncertain-outcome, redacted-detail and source information', () => {
    const e = toProtocolError(new ConnectorFailure(fullInit), { capabilityRetryable: true });
    expect(ProtocolErrorSchema.parse(e)).toEqual(e);
    expect(e).toEqual({
      code: 'payments.gateway_timeout',
      message: fullInit.message,
      category: 'timeout',
      retryable: true,
      retry_after_ms: 1500,
      provider_request_id: 'req-42',
      provider_operation: { provider: 'payments-sim', operation_id: 'op-7', request_id: 'req-42' },
      remote_status: 504,
      uncertain_outcome: true,
      details: { attempt: 2, side_effects_committed: false, connector_operation: 'transaction_commit', uncertain_outcome: true },
      source: 'provider:payments-sim',
    });
  });

  it('forces an uncertain outcome to non-retryable unless the capability declares downstream idempotency', () => {
    const f = new ConnectorFailure(fullInit);
    expect(toProtocolError(f).retryable).toBe(false);
    expect(toProtocolError(f, { capabilityRetryable: false }).retryable).toBe(false);
    expect(toProtocolError(f, { capabilityRetryable: true }).retryable).toBe(true);
  });

  it('never turns an unsafe retry into a safe one (property)', () => {
    const arbFailure = fc.record({
      code: fc.constantFrom('payments.declined', 'connector.unexpected_error', 'sla.timeout_exceeded', 'x.y'),
      category: fc.constantFrom(...ERROR_CATEGORIES),
      retryable: fc.boolean(),
      retry_after_ms: fc.option(fc.integer({ min: 0, max: 86_400_000 }), { nil: undefined }),
      provider_request_id: fc.option(fc.stringMatching(/^[a-z0-9-]{1,20}$/), { nil: undefined }),
      provider_operation: fc.option(fc.record({ provider: fc.constantFrom('p1', 'p2'), operation_id: fc.stringMatching(/^[a-z0-9]{1,10}$/) }), {
        nil: undefined,
      }),
      remote_status: fc.option(fc.integer({ min: 100, max: 599 }), { nil: undefined }),
      uncertain_outcome: fc.boolean(),
      redacted_details: fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), fc.oneof(fc.integer(), fc.boolean(), fc.string({ maxLength: 10 }))),
      source: fc.constantFrom('connector:a', 'provider:b'),
      operation: fc.constantFrom(...CONNECTOR_OPERATIONS),
    });
    fc.assert(
      fc.property(arbFailure, fc.option(fc.boolean(), { nil: undefined }), (init, capabilityRetryable) => {
        const f = new ConnectorFailure(init);
        const e = toProtocolError(f, capabilityRetryable === undefined ? {} : { capabilityRetryable });
        ProtocolErrorSchema.parse(e);
        // never more permissive than the failure
        if (!f.retryable) expect(e.retryable).toBe(false);
        // an uncertain outcome is retryable only with downstream idempotency
        if (f.uncertain_outcome && capabilityRetryable !== true) expect(e.retryable).toBe(false);
        // a certain, retryable failure stays retryable
        if (f.retryable && !f.uncertain_outcome) expect(e.retryable).toBe(true);
        expect(e.uncertain_outcome).toBe(f.uncertain_outcome);
        expect(e.provider_request_id).toBe(f.provider_request_id);
        expect(e.provider_operation).toEqual(f.provider_operation);
        expect(e.remote_status).toBe(f.remote_status);
        expect(e.retry_after_ms).toBe(f.retry_after_ms);
        expect(e.source).toBe(f.source);
        expect(e.details?.connector_operation).toBe(f.operation);
        for (const [k, v] of Object.entries(f.redacted_details))
          if (k !== 'connector_operation' && k !== 'uncertain_outcome') expect(e.details?.[k]).toEqual(v);
        expect(safeRetryable(f, capabilityRetryable)).toBe(e.retryable);
      }),
      { numRuns: 300 },
    );
  });

  it('clamps a ProtocolError from elsewhere with the same rule', () => {
    const e = { code: 'x.y', message: 'm', category: 'temporary' as const, retryable: true, uncertain_outcome: true };
    expect(clampProtocolErrorRetry(e).retryable).toBe(false);
    expect(clampProtocolErrorRetry(e, { capabilityRetryable: true }).retryable).toBe(true);
    expect(clampProtocolErrorRetry({ ...e, uncertain_outcome: undefined, details: { uncertain_outcome: true } }).retryable).toBe(false);
  });
});
