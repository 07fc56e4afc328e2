/**
 * The payments connector placed on a remote connector host, over
 * HTTP on the local stack (`connectorPlacement: 'remote'`). The runtime holds
 * only the signed proxy; the host holds the payments credential.
 *
 * - an execute completes: one charge, the route pins the host (endpoint,
 *   instance, replica, peer key ID and DID), the provider operation the host
 *   checkpointed through the runtime's receiver is on the record;
 * - the host's answer is lost after the charge: `outcome_unknown` with the
 *   checkpointed operation (from the checkpoint inbox), reconciled through
 *   the host, still one charge;
 * - a forged answer (another key claiming the host's key ID) is refused:
 *   the action never shows the forged output; `outcome_unknown`, reconciled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { verifyReceiptChain } from '../../lib/runtime/receipts.js';
import { executed, RW, securityStack, type SecurityStack } from '../security/support.js';
import { remoteCheckpointKey } from '../../lib/aws/dynamo/remote-checkpoint-inbox.js';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { readableItem } from '../support/packed-items.js';

const T = 'demo';
const clock = new SteppedClock();
let s: SecurityStack;
let alice: string;

beforeAll(async () => {
  s = await securityStack('e2e-remote', T, { clock, connectorPlacement: 'remote' });
  alice = await s.token('alice', RW);
});
afterAll(async () => s?.stop());

async function reconcileNow(txId: string): Promise<void> {
  const view = await s.call(alice, 'GET', `/v1/transactions?transaction_id=${txId}`);
  clock.advanceTo(Date.parse((view.body as { earliest_reconcile_at: string }).earliest_reconcile_at) + 1);
  const out = await s.stack.runtime.reconcile({ kind: 'reconcile', tenant_id: T, transaction_id: txId, reason: 'schedule' });
  expect(out.disposition).toBe('reconciled');
}

describe('payments on a remote connector host', () => {
  it('an execute completes through the signed route; the route pins the host', async () => {
    const remote = s.stack.remote;
    expect(remote).toBeDefined();
    const mark = s.stack.simulator.ledger().length;
    const done = await executed(s, alice);
    expect(done.answer.body.action_result).toMatchObject({ status: 'completed', output: { status: 'succeeded' } });
    expect(done.transaction.status).toBe('committed');
    expect(s.stack.simulator.ledger().slice(mark)).toHaveLength(1);
    // The checkpoint the host published is the record's operation, and the inbox holds the same one.
    const op = done.transaction.provider_operation;
    expect(op?.operation_id).toBe((s.stack.simulator.ledger()[mark] as { operation_id: string }).operation_id);
    const inbox = await s.ddb.send(new GetCommand({ TableName: s.table, Key: remoteCheckpointKey(T, done.transaction.transaction_id), ConsistentRead: true }));
    expect(inbox.Item?.provider_operation).toEqual(op);
    // The action-scoped route pins the remote peer: an attribute of the action item, pinned by the attempt's lease and
    // stored packed (docs/table-design.md, "The route on the action"); no ROUTE item.
    const action = await s.ddb.send(new GetCommand({ TableName: s.table, Key: { PK: `ACTION#${T}#${done.id}`, SK: 'ACTION' }, ConsistentRead: true }));
    const legacy = await s.ddb.send(new GetCommand({ TableName: s.table, Key: { PK: `ACTION#${T}#${done.id}`, SK: 'ROUTE' }, ConsistentRead: true }));
    expect(legacy.Item).toBeUndefined();
    expect(readableItem(action.Item ?? {}).route).toMatchObject({
      connector_id: 'payments',
      endpoint: remote?.hostUrl,
      connector_instance: 'local-host',
      replica: 'local-host-0',
      peer_identity: remote?.kid,
      peer_did: remote?.did,
    });
  });

  it('a lost answer after the charge: outcome_unknown with the checkpointed operation, reconciled, one charge', async () => {
    const mark = s.stack.simulator.ledger().length;
    s.stack.remote?.dropAnswers(1);
    const done = await executed(s, alice);
    expect(done.transaction.status).toBe('outcome_unknown');
    const error = (done.answer.body.action_result as { error: { code: string; uncertain_outcome?: boolean } }).error;
    expect(error).toMatchObject({ code: 'connector.remote_answer_lost', uncertain_outcome: true });
    const charged = s.stack.simulator.ledger().slice(mark);
    expect(charged).toHaveLength(1);
    // The host made the operation durable through the receiver before it waited: the record has it.
    expect(done.transaction.provider_operation?.operation_id).toBe((charged[0] as { operation_id: string }).operation_id);

    await reconcileNow(done.transaction.transaction_id);
    const after = await s.call(alice, 'GET', `/v1/transactions?transaction_id=${done.transaction.transaction_id}&include=receipts`);
    const body = after.body as { status: string; receipts: unknown[]; receipt_count: number; receipt_head: string };
    expect(body.status).toBe('reconciled');
    expect(
      verifyReceiptChain(body.receipts, {
        transaction_id: done.transaction.transaction_id,
        expected_count: body.receipt_count,
        expected_head: body.receipt_head,
      }),
    ).toMatchObject({ valid: true });
    expect(s.stack.simulator.ledger().slice(mark)).toHaveLength(1);
  });

  it('a forged answer is refused: the forged output never shows; outcome_unknown, then reconciled', async () => {
    const mark = s.stack.simulator.ledger().length;
    s.stack.remote?.forgeAnswers(1);
    const done = await executed(s, alice);
    const result = done.answer.body.action_result as {
      status: string;
      output?: unknown;
      error?: { code: string; uncertain_outcome?: boolean; details?: { reason?: string } };
    };
    expect(result.output).toBeUndefined();
    expect(JSON.stringify(done.answer.body)).not.toContain('forged');
    expect(result.error).toMatchObject({ code: 'connector.remote_signature_invalid', uncertain_outcome: true, details: { reason: 'signature' } });
    expect(done.transaction.status).toBe('outcome_unknown');
    expect(s.stack.simulator.ledger().slice(mark)).toHaveLength(1);
    await reconcileNow(done.transaction.transaction_id);
    const after = await s.call(alice, 'GET', `/v1/transactions?transaction_id=${done.transaction.transaction_id}`);
    expect((after.body as { status: string }).status).toBe('reconciled');
    expect(s.stack.simulator.ledger().slice(mark)).toHaveLength(1);
  });
});
