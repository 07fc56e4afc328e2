/**
 * The conformance subject for the tickets reference connector: the kit's
 * planted secret becomes the desk's only API token, the scenarios drive the
 * in-process TicketDesk through its test hooks (hold, failNext, events), and
 * the desk tells the kit what it observes: tickets (effects), pending
 * operations, token rotation and the idempotency keys it was given.
 * A worked example of a ConformanceSubject for connector authors.
 */
import type { Action, JsonObject } from '../../packages/connector-sdk/src/protocol/index.js';
import { TicketDesk } from '../../lib/connectors/reference/ticket-desk.js';
import { DEFAULT_TICKETS_CREDENTIAL_HANDLE, createTicketsConnector } from '../../lib/connectors/reference/tickets.js';
import type { ConformanceInstance, ConformanceSubject } from '../../packages/connector-sdk/src/conformance/subject.js';

/** The CLI's module contract: `npx aip-conformance test/support/tickets-conformance-subject.ts`. */
export default function ticketsConformanceSubject(): ConformanceSubject {
  return {
    name: 'tickets (defineConnector over the in-process ticket desk)',
    credential_handle: DEFAULT_TICKETS_CREDENTIAL_HANDLE,
    async setup(env): Promise<ConformanceInstance> {
      const desk = new TicketDesk({ api_tokens: [env.secret] });
      const connector = createTicketsConnector({ desk, credentials: env.credentials, logger: env.log });
      // The authority the desk was presented with: the idempotency key of every accepted creation.
      const received: { idempotency_key: string }[] = [];
      desk.onEvent((e) => {
        if (e.type === 'accepted') received.push({ idempotency_key: e.idempotency_key });
      });
      let n = 0;
      const action = (mode: 'commit' | 'execute', title: string): Action => {
        n += 1;
        return {
          id: `tickets-conformance-${n}`,
          capability_id: 'tickets.create',
          input: { title, priority: 'normal' },
          idempotency_key: `tickets-conformance-key-${n}`,
          transaction: { mode, transaction_id: `tickets-conformance-tx-${n}`, ...(mode === 'commit' ? { plan_id: `plan:tickets-conformance-tx-${n}` } : {}) },
        };
      };
      return {
        connector,
        provider: {
          effects: () => desk.tickets().length,
          settle: async () => {
            desk.release();
          },
          isPending: (ref) => desk.findOperation(ref.operation_id)?.status === 'pending',
          rotateSecret: (next) => desk.setApiTokens([next]),
          received: () => received,
        },
        sampleInput(capability_id): JsonObject | undefined {
          if (capability_id === 'tickets.create') return { title: 'conformance probe', priority: 'low' };
          if (capability_id === 'tickets.search') return { query: 'probe' };
          return undefined;
        },
        scenarios: {
          async uncertainCommit() {
            // The desk accepts the creation (an operation ID exists) and holds its processing.
            desk.hold();
            const waiting = desk.waitForEvent((e) => e.type === 'waiting').then(() => undefined);
            return {
              action: action('commit', 'accepted then lost'),
              waiting,
              expect_provider_request_id: true,
              verifyOperation: (ref) => (desk.findOperation(ref.operation_id) !== undefined ? undefined : 'the desk has no such operation'),
              cleanup: async () => {
                desk.release();
              },
            };
          },
          async lostResponse() {
            desk.failNext('drop_after_accept');
            return { action: action('commit', 'response lost') };
          },
          async committedEffect() {
            const before = desk.tickets().length;
            return { action: action('commit', 'committed'), effectRecorded: () => desk.tickets().length === before + 1 };
          },
          async rejectedBeforeEffect() {
            desk.failNext('unavailable');
            return { action: action('commit', 'rejected') };
          },
          async streamed() {
            // tickets.search streams one chunk per ticket whose title contains the query ('' matches every ticket).
            return {
              action: { id: `tickets-conformance-search-${++n}`, capability_id: 'tickets.search', input: { query: '' } },
              min_chunks: desk.tickets().length,
            };
          },
          async retry() {
            const before = desk.tickets().length;
            desk.failNext('drop_after_accept');
            return {
              action: action('execute', 'retried'),
              verify: () => {
                const created = desk.tickets().length - before;
                return created === 1 ? undefined : `the desk holds ${created} new tickets after two attempts of one action`;
              },
            };
          },
        },
      };
    },
  };
}
