/**
 * What the MCP endpoint's unit tests share: a capability listing with one
 * tool of each kind (a capability with every transaction mode and a
 * compensation, one with execute alone, one without a transaction contract)
 * and a caller who may read and submit.
 */
import type { CallerIdentity } from '../../../functions/shared/runtime-api.js';
import type { CapabilityList } from '../../../lib/runtime/types.js';

const transaction = {
  modes: ['dry_run', 'plan', 'execute', 'commit', 'compensate', 'reconcile'] as const,
  dry_run_fidelity: 'policy_and_schema' as const,
  requires_plan_before_commit: false,
};
export const CAPS: CapabilityList = {
  tenant_id: 'demo',
  items: [
    {
      id: 'payments.charge',
      kind: 'tool',
      connector_id: 'payments',
      connector_version: '1.0.0',
      input_schema: { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] },
      transaction: { ...transaction, modes: [...transaction.modes] },
      compensation: { mode: 'supported', compensation_capability_id: 'payments.refund', approval_required: false },
      tenant_approval_policies: [{ policy_id: 'p', modes: ['commit'], approver_scopes: ['aip:approve'], allow_self_approval: false }],
    },
    {
      id: 'payments.refund',
      kind: 'tool',
      connector_id: 'payments',
      connector_version: '1.0.0',
      input_schema: { type: 'object', properties: { charge_id: { type: 'string' } } },
      transaction: { ...transaction, modes: ['execute'] },
      compensation: { mode: 'rollback_not_supported', approval_required: false },
    },
    { id: 'notes.add', kind: 'tool', connector_id: 'notes', connector_version: '1.0.0', input_schema: { type: 'object' } },
  ],
};
export const WRITER = ['aip:actions:read', 'aip:actions:write'];
export const alice: CallerIdentity = {
  principal: { id: 'alice', kind: 'user' } as CallerIdentity['principal'],
  tenants: ['demo'],
  scopes: WRITER,
  issuer: 'https://issuer',
};
