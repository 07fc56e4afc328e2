import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Action, ActionResult, Capability, ProtocolError } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  ConnectorFailure,
  defaultHealth,
  toConnectorFailure,
  toProtocolError,
  type ActionExecutionContext,
  type CancelOutcome,
  type CapabilityProviderConnector,
  type ChannelConnector,
  type Connector,
  type ConnectorContext,
  type ConnectorManifest,
  type EscalationConnector,
  type ExternalEvent,
  type FrozenConnector,
  type InboundConnector,
  type OutboundConnector,
} from '../../../packages/connector-sdk/src/index.js';
import { capability } from './fixtures.js';

const manifest: ConnectorManifest = {
  connector_id: 'helpdesk',
  version: '1.0.0',
  capabilities: [capability({ id: 'tickets.create' })],
  implementation_support: {},
};

/** The base responsibilities, shared by every role below. */
const base = {
  id: 'helpdesk',
  discover: async (_ctx: ConnectorContext) => manifest,
  map_error: (err: unknown): ProtocolError => toProtocolError(toConnectorFailure(err, 'invocation', 'connector:helpdesk')),
  health(ctx: ConnectorContext) {
    return defaultHealth(this, ctx);
  },
} satisfies Connector;

describe('role interfaces', () => {
  it('extend the base Connector with one focused responsibility each', async () => {
    const provider = {
      ...base,
      capabilities: async (ctx: ConnectorContext): Promise<readonly Capability[]> => (await base.discover(ctx)).capabilities,
    } satisfies CapabilityProviderConnector;
    const inbound = {
      ...base,
      async map_event(event: ExternalEvent): Promise<readonly Action[]> {
        if (event.headers['x-signature'] !== 'valid')
          throw new ConnectorFailure({ code: 'helpdesk.signature_invalid', operation: 'ingestion', source: 'connector:helpdesk' });
        return [{ id: 'evt-1', capability_id: 'tickets.create', input: { body: String(event.body) } }];
      },
    } satisfies InboundConnector;
    const channel = {
      ...base,
      ingest_channel_event: async (): Promise<readonly Action[]> => [],
      emit_to_conversation: async (_r: ActionResult, _c: { channel: string; conversation_id: string }, _ctx: ActionExecutionContext) => undefined,
    } satisfies ChannelConnector;
    const outbound = {
      ...base,
      invoke: async (a: Action): Promise<ActionResult> => ({ action_id: a.id, status: 'completed' }),
      request_remote_cancellation: async (): Promise<CancelOutcome> => ({ accepted: false }),
      emit_result: async () => undefined,
    } satisfies OutboundConnector;
    const escalation = { ...base, escalate: async () => ({ ticket_id: 'T-1', url: 'https://helpdesk.example/T-1' }) } satisfies EscalationConnector;

    await expect(provider.capabilities({})).resolves.toHaveLength(1);
    await expect(inbound.map_event({ headers: { 'x-signature': 'valid' }, body: 'hi', received_at: new Date() })).resolves.toHaveLength(1);
    await expect(inbound.map_event({ headers: {}, body: 'hi', received_at: new Date() })).rejects.toMatchObject({
      code: 'helpdesk.signature_invalid',
      operation: 'ingestion',
    });
    await expect(escalation.escalate()).resolves.toMatchObject({ ticket_id: 'T-1' });
    await expect(base.health({})).resolves.toEqual({ ready: true });
    expectTypeOf(channel).toMatchTypeOf<Connector>();
    expectTypeOf(outbound).toMatchTypeOf<Connector>();
  });

  it('do not make callable claims: only FrozenConnector carries implementation_support and the typed operations', () => {
    expectTypeOf<OutboundConnector>().not.toMatchTypeOf<FrozenConnector>();
    expectTypeOf<FrozenConnector>().toHaveProperty('implementation_support');
    expectTypeOf<FrozenConnector>().toHaveProperty('invoke_typed');
  });
});
