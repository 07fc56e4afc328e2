/**
 * The single-table design, shared by the DynamoDB adapters, the CDK stateful
 * stack and the tests, so the three can never disagree. Documented in
 * docs/table-design.md.
 */
export const TABLE_KEYS = { partitionKey: 'PK', sortKey: 'SK' } as const;

/** TTL attribute: epoch seconds. DynamoDB deletes the item some time after. */
export const TTL_ATTRIBUTE = 'ttl' as const;

export const GSIS = {
  /** Lookup by plan ID: `PLAN#<tenant>#<plan_id>`; set only when a plan exists. */
  byPlan: { name: 'byPlan', partitionKey: 'GSI1PK', sortKey: 'GSI1SK' },
  /** Lookup by the action ID bound to a transaction: `ACTION#<tenant>#<action_id>`. */
  byAction: { name: 'byAction', partitionKey: 'GSI2PK', sortKey: 'GSI2SK' },
  /**
   * Sparse operator/sweeper index: only records that may need attention carry
   * it. PK `STATUS#<status>`, SK `<iso time>#<tenant>#<id>` where the time is
   * the earliest reconciliation time for `outcome_unknown`, otherwise the last
   * update. The sweeper queries `STATUS#outcome_unknown` with SK <= now.
   */
  byStatus: { name: 'byStatus', partitionKey: 'GSI3PK', sortKey: 'GSI3SK' },
} as const;

/** Key builders. IDs never contain '#': the protocol ID pattern forbids it. */
export const keys = {
  transaction: (tenant: string, transactionId: string) => ({ PK: `TXN#${tenant}#${transactionId}`, SK: 'TXN' }),
  receipt: (tenant: string, transactionId: string, seq: number) => ({
    PK: `TXN#${tenant}#${transactionId}`,
    SK: `RCPT#${String(seq).padStart(8, '0')}`,
  }),
  planIndex: (tenant: string, planId: string) => `PLAN#${tenant}#${planId}`,
  actionIndex: (tenant: string, actionId: string) => `ACTION#${tenant}#${actionId}`,
  statusIndex: (status: string) => `STATUS#${status}`,
} as const;
