/**
 * The transaction statuses and modes. They are protocol terms, defined in
 * lib/protocol (beside their schemas); the transaction code imports them from
 * here or from lib/protocol alike.
 *
 * `TransactionStatus` is a durable record status; the wire-facing
 * TransactionProtocolStatus adds `requires_human` and `cancelled`, which are
 * projected from the surrounding action and never stored.
 */
export { TRANSACTION_MODES, type TransactionMode } from '../../packages/connector-sdk/src/protocol/action.js';
export { DURABLE_TRANSACTION_STATUSES, TRANSACTION_PROTOCOL_STATUSES, type TransactionStatus } from '../../packages/connector-sdk/src/protocol/transaction.js';
