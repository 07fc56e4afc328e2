/**
 * The downstream idempotency key is unique per
 * idempotency reservation (tenant, principal, key), not per (tenant, key).
 * The context is built as the runtime builds it (lib/runtime/attempts/worker.ts):
 * `reservation_id` is `reservationIdentity(scope)`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EnvCredentialProvider,
  credentialHandle,
  type ActionExecutionContext,
  type TrustedAttemptState,
} from '../../../../packages/connector-sdk/src/index.js';
import { IDEMPOTENCY_DERIVATION_VERSION, downstreamIdempotencyKey } from '../../../../lib/connectors/http/index.js';
import { TicketDesk } from '../../../../lib/connectors/reference/ticket-desk.js';
import { DEFAULT_TICKETS_CREDENTIAL_HANDLE, createTicketsConnector } from '../../../../lib/connectors/reference/tickets.js';
import { reservationIdentity } from '../../../../lib/ports/idempotency-store.js';
import { PRINCIPAL_KINDS, type Action, type Principal, type PrincipalKind } from '../../../../packages/connector-sdk/src/protocol/index.js';
import { action as makeAction, attempt } from '../fixtures.js';

interface Who {
  readonly tenant_id: string;
  readonly principal: Principal;
}

const ALICE: Who = { tenant_id: 'demo', principal: { id: 'alice', kind: 'user' } };
const BOB: Who = { tenant_id: 'demo', principal: { id: 'bob', kind: 'user' } };

/** The context the runtime builds for `who`'s attempt of `action` (reservation only when the action has a key). */
function contextFor(who: Who, action: Action, overrides: Partial<TrustedAttemptState> = {}): ActionExecutionContext {
  const key = action.idempotency_key;
  const attempt_id = overrides.attempt_id ?? 'att-1';
  return attempt({
    action_id: action.id,
    capability_id: action.capability_id,
    attempt_id,
    actor: {
      principal: who.principal,
      issuer: 'https://issuer.example',
      scheme: 'bearer_jwt',
      scopes: [],
      lifetime: { issued_at: new Date(0), expires_at: new Date(4_102_444_800_000) },
    },
    tenant: { tenant_id: who.tenant_id },
    idempotency:
      key === undefined
        ? undefined
        : {
            key,
            reservation_id: reservationIdentity({ tenant_id: who.tenant_id, principal_kind: who.principal.kind, principal_id: who.principal.id, key }),
            attempt_id,
          },
    ...overrides,
  }).context;
}

const chargeWith = (id: string, idempotency_key?: string): Action =>
  makeAction({
    id,
    capability_id: 'payments.charge',
    input: { amount: 1000, currency: 'eur', customer: 'cus_x' },
    ...(idempotency_key !== undefined ? { idempotency_key } : {}),
  });

describe('reservationIdentity', () => {
  it('is `idr-` + 40 hex and deterministic', () => {
    const scope = { tenant_id: 'demo', principal_kind: 'user', principal_id: 'alice', key: 'K1' } as const;
    const id = reservationIdentity(scope);
    expect(id).toMatch(/^idr-[0-9a-f]{40}$/);
    expect(reservationIdentity({ ...scope })).toBe(id);
  });
});

describe('the downstream idempotency key', () => {
  it('differs for two principals of the same tenant using the same key and body', () => {
    const alice = chargeWith('act-alice', 'K1');
    const bob = chargeWith('act-bob', 'K1');
    const a = downstreamIdempotencyKey(alice, contextFor(ALICE, alice), 'payments');
    const b = downstreamIdempotencyKey(bob, contextFor(BOB, bob), 'payments');
    expect(a).toMatch(/^aip1-[A-Za-z0-9_-]{43}$/);
    expect(b).not.toBe(a);
    // Even the same action ID (a retry under a new principal is not the same reservation).
    expect(downstreamIdempotencyKey(alice, contextFor(BOB, alice), 'payments')).not.toBe(a);
  });

  it('differs for principals with the same ID but different kinds', () => {
    const act = chargeWith('act-1', 'K1');
    const user = downstreamIdempotencyKey(act, contextFor({ tenant_id: 'demo', principal: { id: 'p1', kind: 'user' } }, act), 'payments');
    const agent = downstreamIdempotencyKey(act, contextFor({ tenant_id: 'demo', principal: { id: 'p1', kind: 'agent' } }, act), 'payments');
    expect(agent).not.toBe(user);
  });

  it('is the same for the same principal across two attempts of the action', () => {
    const act = chargeWith('act-1', 'K1');
    const first = downstreamIdempotencyKey(act, contextFor(ALICE, act, { attempt_id: 'att-1' }), 'payments');
    const second = downstreamIdempotencyKey(act, contextFor(ALICE, act, { attempt_id: 'att-2' }), 'payments');
    expect(second).toBe(first);
    // The cancel of the same action is another identity.
    expect(downstreamIdempotencyKey(act, contextFor(ALICE, act), 'payments', 'cancel')).not.toBe(first);
  });

  it("derives from the runtime's reservation, never from the action body's raw key", () => {
    const act = chargeWith('act-1', 'K1');
    const ctx = contextFor(ALICE, act);
    const forged = { ...act, idempotency_key: 'someone-elses-key' };
    expect(downstreamIdempotencyKey(forged, ctx, 'payments')).toBe(downstreamIdempotencyKey(act, ctx, 'payments'));
  });

  it('differs for two tenants using the same action ID without an idempotency key', () => {
    const act = chargeWith('act-1');
    const a = downstreamIdempotencyKey(act, contextFor({ tenant_id: 'tenant-a', principal: ALICE.principal }, act), 'payments');
    const b = downstreamIdempotencyKey(act, contextFor({ tenant_id: 'tenant-b', principal: ALICE.principal }, act), 'payments');
    expect(b).not.toBe(a);
    // Without a reservation, the body's key is not used either: the action identity is.
    const withBodyKey = { ...act, idempotency_key: 'K1' };
    const noReservation = contextFor({ tenant_id: 'tenant-a', principal: ALICE.principal }, act);
    expect(noReservation.idempotency).toBeUndefined();
    expect(downstreamIdempotencyKey(withBodyKey, noReservation, 'payments')).toBe(a);
  });

  it(`is tagged ${IDEMPOTENCY_DERIVATION_VERSION}`, () => {
    expect(IDEMPOTENCY_DERIVATION_VERSION).toBe('aip-idem/v2');
  });

  describe('differs whenever any scope component differs (property)', () => {
    const id = fc.stringMatching(/^[a-z0-9-]{1,8}$/);
    const scope = fc.record({
      tenant_id: id,
      kind: fc.constantFrom<PrincipalKind>(...PRINCIPAL_KINDS),
      principal_id: id,
      key: fc.stringMatching(/^[\x21-\x7e]{1,12}$/),
    });
    type Scope = { tenant_id: string; kind: PrincipalKind; principal_id: string; key: string };
    const keyOf = (s: Scope, actionId: string, attempt_id: string): string => {
      const act = chargeWith(actionId, s.key);
      return downstreamIdempotencyKey(
        act,
        contextFor({ tenant_id: s.tenant_id, principal: { id: s.principal_id, kind: s.kind } }, act, { attempt_id }),
        'payments',
      );
    };

    it('with a reservation: equal keys exactly when (tenant, principal kind, principal ID, key) are equal', () => {
      fc.assert(
        fc.property(scope, scope, id, id, (a, b, actA, actB) => {
          const sameScope = a.tenant_id === b.tenant_id && a.kind === b.kind && a.principal_id === b.principal_id && a.key === b.key;
          // Action IDs and attempts do not matter: the reservation (its scope) does.
          expect(keyOf(a, `act-${actA}`, 'att-1') === keyOf(b, `act-${actB}`, 'att-2')).toBe(sameScope);
        }),
      );
    });

    it('with one component changed, the key changes', () => {
      fc.assert(
        fc.property(scope, fc.constantFrom('tenant_id', 'kind', 'principal_id', 'key'), id, (s, field, other) => {
          const changed: Scope =
            field === 'kind'
              ? { ...s, kind: PRINCIPAL_KINDS[(PRINCIPAL_KINDS.indexOf(s.kind) + 1) % PRINCIPAL_KINDS.length] as PrincipalKind }
              : { ...s, [field]: s[field] === other ? `${other}x` : other };
          expect(keyOf(changed, 'act-1', 'att-1')).not.toBe(keyOf(s, 'act-1', 'att-1'));
        }),
      );
    });

    it('without a reservation: equal keys exactly when (tenant, action ID) are equal', () => {
      fc.assert(
        fc.property(id, id, id, id, (tenantA, tenantB, actA, actB) => {
          const a = chargeWith(actA);
          const b = chargeWith(actB);
          const ka = downstreamIdempotencyKey(a, contextFor({ tenant_id: tenantA, principal: ALICE.principal }, a), 'payments');
          const kb = downstreamIdempotencyKey(b, contextFor({ tenant_id: tenantB, principal: BOB.principal }, b), 'payments');
          expect(ka === kb).toBe(tenantA === tenantB && actA === actB);
        }),
      );
    });
  });
});

describe('the tickets reference connector', () => {
  const TOKEN = 'tickets-token-defect-1';
  const credentials = new EnvCredentialProvider({
    connector_id: 'tickets',
    env: { TICKETS_TOKEN: TOKEN },
    references: [{ connector_id: 'tickets', handle: DEFAULT_TICKETS_CREDENTIAL_HANDLE, tenant_id: 'demo', env: 'TICKETS_TOKEN' }],
  });

  it('creates two tickets for two principals reusing one key and body, one for a retry', async () => {
    const desk = new TicketDesk({ api_tokens: [TOKEN] });
    const connector = createTicketsConnector({ desk, credentials });
    const accepted: string[] = [];
    desk.onEvent((e) => {
      if (e.type === 'accepted') accepted.push(e.idempotency_key);
    });
    const create = (id: string): Action => ({
      id,
      capability_id: 'tickets.create',
      input: { title: 'printer on fire', priority: 'high' },
      idempotency_key: 'K1',
    });
    const run = async (who: Who, act: Action, attempt_id: string) =>
      (await connector.invoke_typed(
        act,
        contextFor(who, act, { attempt_id, credential: credentialHandle(DEFAULT_TICKETS_CREDENTIAL_HANDLE), deadline_at: new Date(Date.now() + 10_000) }),
      )) as {
        output?: { ticket_id?: string };
      };

    const alice = create('act-alice');
    const first = await run(ALICE, alice, 'att-1');
    const retry = await run(ALICE, alice, 'att-2');
    const bob = await run(BOB, create('act-bob'), 'att-1');

    const ticketOf = (r: { output?: { ticket_id?: string } }) => r.output?.ticket_id;
    expect(ticketOf(first)).toEqual(expect.any(String));
    expect(ticketOf(retry)).toBe(ticketOf(first));
    expect(ticketOf(bob)).toEqual(expect.any(String));
    expect(ticketOf(bob)).not.toBe(ticketOf(first));
    // One desk operation per reservation: Alice's retry replayed hers, Bob got his own.
    expect(new Set(accepted).size).toBe(2);
    expect(accepted).not.toContain('K1');
  });
});
