/**
 * `aip verify <file | - | transaction-id>`: verifies a transaction's receipt
 * chain offline, from the JSON the API returns
 * (`GET /v1/transactions?transaction_id=…&include=result,receipts`: a
 * TransactionResult with `receipts`, `receipt_count`, `receipt_head` and
 * `action_result`). The `{ transaction: … }` shapes (`GET /v1/actions/{id}`,
 * the operator routes) and `{ transaction_result: … }` (`POST /v1/actions`)
 * are unwrapped; they verify when the transaction in them carries receipts.
 *
 * The checks are lib/protocol/receipt-chain.ts's (the runtime's and the
 * console's) with node:crypto's SHA-256: every hash, seq, link and revision;
 * the anchor (`receipt_count`, `receipt_head`), so a removed last receipt is
 * `truncated`; and the action result against the `result_digest` of the
 * receipt that recorded it. A document without the anchor is refused as
 * unverifiable: a truncated chain must never pass for lack of one.
 *
 * Exit codes: 0 valid; 1 invalid, truncated or unverifiable; 2 usage, an
 * unreadable file, or the API could not be asked (fetch errors).
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { AipClientError, CLIENT_ERROR_CODES, type AipClient } from '../../lib/client/index.js';
import { verifyReceiptChainSync, type ReceiptChainProblem } from '../../packages/connector-sdk/src/protocol/receipt-chain.js';

export type VerifyVerdictKind = 'valid' | ReceiptChainProblem | 'truncated' | 'unverifiable';

/** What `aip verify --json` prints. */
export interface VerifyVerdict {
  readonly valid: boolean;
  readonly verdict: VerifyVerdictKind;
  /** The one-line verdict. */
  readonly summary: string;
  readonly source: 'file' | 'stdin' | 'api';
  readonly transaction_id?: string;
  /** Receipts presented. */
  readonly receipts_presented: number;
  /** The anchor the chain was checked against (the record's receipt_count and receipt_head). */
  readonly expected_count?: number;
  readonly expected_head?: string;
  /** The verified chain's head (valid chains). */
  readonly head?: string;
  /** Where the chain breaks (position = expected seq). */
  readonly at_seq?: number;
  /** Whether an action_result was checked against a receipt's result_digest. */
  readonly result_checked: boolean;
  /** The receipts as presented (unless --quiet). */
  readonly receipts?: readonly ReceiptLine[];
}

export interface ReceiptLine {
  readonly seq: unknown;
  readonly at: unknown;
  readonly status: unknown;
  readonly event: unknown;
  readonly actor?: unknown;
}

export interface VerifyIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly stdin?: () => Promise<string>;
  readonly client: AipClient;
  readonly baseUrl: string;
  readonly asJson: boolean;
  readonly quiet: boolean;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The transaction in a document: a TransactionResult, or one wrapped as `transaction` / `transaction_result`. */
export function transactionOf(doc: unknown): Record<string, unknown> | undefined {
  if (!isObject(doc)) return undefined;
  if (Array.isArray(doc.receipts) || 'receipt_count' in doc || 'receipt_head' in doc) return doc;
  for (const key of ['transaction', 'transaction_result'] as const) if (isObject(doc[key])) return doc[key];
  return typeof doc.transaction_id === 'string' ? doc : undefined;
}

function lineOf(r: unknown): ReceiptLine {
  const o = isObject(r) ? r : {};
  return { seq: o.seq, at: o.at, status: o.status, event: o.event, ...(o.actor !== undefined ? { actor: o.actor } : {}) };
}

const PROBLEM_TEXT: Readonly<Record<Exclude<VerifyVerdictKind, 'valid' | 'unverifiable' | 'truncated'>, (at: number) => string>> = {
  altered: (at) =>
    `receipt #${at} was altered (its content does not hash to its recorded hash, it names another transaction, or the chain does not end at receipt_head)`,
  removed: (at) => `receipt #${at} is missing (removed from the chain)`,
  reordered: (at) => `receipt #${at} is out of order`,
  broken_link: (at) => `receipt #${at} does not link to the previous receipt's hash`,
  result_mismatch: (at) => `action_result does not match the result_digest of receipt #${at}`,
};

/** Verifies the transaction in `doc`; `requested`: the transaction ID asked of the API (every receipt must name it). */
export function verifyDocument(doc: unknown, source: VerifyVerdict['source'], requested?: string): VerifyVerdict {
  const txn = transactionOf(doc);
  const transaction_id = requested ?? (typeof txn?.transaction_id === 'string' ? txn.transaction_id : undefined);
  const receipts = Array.isArray(txn?.receipts) ? (txn.receipts as unknown[]) : undefined;
  const base = {
    source,
    ...(transaction_id !== undefined ? { transaction_id } : {}),
    receipts_presented: receipts?.length ?? 0,
    ...(receipts !== undefined ? { receipts: receipts.map(lineOf) } : {}),
  };
  const name = transaction_id !== undefined ? `transaction ${transaction_id}` : 'the document';
  const unverifiable = (why: string): VerifyVerdict => ({
    ...base,
    valid: false,
    verdict: 'unverifiable',
    result_checked: false,
    summary: `UNVERIFIABLE: ${name}: ${why}`,
  });

  if (txn === undefined) return unverifiable('no transaction in it (expected the JSON of GET /v1/transactions?transaction_id=…&include=result,receipts)');
  if (receipts === undefined)
    return unverifiable('it carries no receipts (fetch GET /v1/transactions with include=result,receipts, or run aip verify <transaction-id>)');
  const count = txn.receipt_count;
  const head = txn.receipt_head;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || typeof head !== 'string') {
    return unverifiable(
      'no anchor (receipt_count and receipt_head): without the record’s count and head a truncated chain would look complete, so it is refused',
    );
  }
  const anchored = { ...base, expected_count: count, expected_head: head };
  const result = txn.action_result;
  const verdict = verifyReceiptChainSync(
    receipts,
    { ...(transaction_id !== undefined ? { transaction_id } : {}), expected_count: count, expected_head: head, ...(result !== undefined ? { result } : {}) },
    sha256,
  );
  const result_checked = result !== undefined && receipts.some((r) => isObject(r) && typeof r.result_digest === 'string');
  if (verdict.valid) {
    return {
      ...anchored,
      valid: true,
      verdict: 'valid',
      ...(verdict.head !== undefined ? { head: verdict.head } : {}),
      result_checked,
      summary:
        `VALID: ${name}: ${verdict.count} receipt${verdict.count === 1 ? '' : 's'}, every hash and link checked, ending at receipt_head ${head.slice(0, 16)}… (receipt_count ${count})` +
        (result_checked ? '; action_result matches its result_digest' : result !== undefined ? '; no receipt carries a result_digest (legacy receipts)' : ''),
    };
  }
  if (verdict.problem === 'removed' && verdict.at_seq === receipts.length && receipts.length < count) {
    return {
      ...anchored,
      valid: false,
      verdict: 'truncated',
      at_seq: verdict.at_seq,
      result_checked,
      summary: `INVALID (truncated): ${name}: ${receipts.length} receipt${receipts.length === 1 ? '' : 's'} presented but the record holds ${count}: receipt #${receipts.length} onward is missing`,
    };
  }
  return {
    ...anchored,
    valid: false,
    verdict: verdict.problem,
    at_seq: verdict.at_seq,
    result_checked,
    summary: `INVALID (${verdict.problem}): ${name}: ${PROBLEM_TEXT[verdict.problem](verdict.at_seq)}`,
  };
}

const text = (v: unknown) => (v === undefined || v === null ? '?' : typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v));
const actorText = (a: unknown) =>
  isObject(a) && typeof a.id === 'string' ? `${typeof a.kind === 'string' ? a.kind : '?'}:${a.id}` : a === undefined ? '-' : text(a);

/** The readable receipt list, with where the chain breaks marked. */
export function formatReceipts(v: VerifyVerdict): string {
  const lines = v.receipts ?? [];
  if (lines.length === 0) return '  (no receipts)';
  const rows = lines.map((r) => [`#${text(r.seq)}`, text(r.at), text(r.status), text(r.event), actorText(r.actor)]);
  const widths = [0, 1, 2, 3].map((c) => Math.max(...rows.map((row) => (row[c] ?? '').length)));
  const out: string[] = [];
  rows.forEach((row, i) => {
    if (v.verdict === 'removed' && v.at_seq === i) out.push(`  (receipt #${i} missing here)`);
    const seq = lines[i]?.seq;
    const mark =
      v.at_seq === undefined
        ? ''
        : v.verdict === 'result_mismatch'
          ? seq === v.at_seq
            ? '  <- result_digest does not match action_result'
            : ''
          : v.at_seq === i && ['altered', 'reordered', 'broken_link'].includes(v.verdict)
            ? `  <- ${v.verdict}`
            : '';
    out.push(`  ${row.map((cell, c) => (c < 4 ? cell.padEnd(widths[c] ?? 0) : cell)).join('  ')}${mark}`);
  });
  if (v.verdict === 'truncated' && v.expected_count !== undefined) {
    out.push(
      `  (receipt${v.expected_count - lines.length === 1 ? '' : 's'} #${lines.length}${v.expected_count - lines.length > 1 ? `..#${v.expected_count - 1}` : ''} missing)`,
    );
  }
  return out.join('\n');
}

function print(v: VerifyVerdict, io: VerifyIo): number {
  if (io.asJson) {
    const { receipts, ...rest } = v;
    io.out(JSON.stringify(io.quiet || receipts === undefined ? rest : { ...rest, receipts }, null, 2));
    io.err(v.summary);
  } else {
    io.out(v.summary);
    if (!io.quiet && v.receipts !== undefined) io.out(formatReceipts(v));
  }
  return v.valid ? 0 : 1;
}

async function isFile(path: string): Promise<boolean | 'directory'> {
  try {
    const s = await stat(path);
    return s.isDirectory() ? 'directory' : true;
  } catch {
    return false;
  }
}

/** Runs `aip verify <target>`: 0 valid, 1 invalid / truncated / unverifiable, 2 usage or fetch error. */
export async function verifyCommand(target: string, io: VerifyIo): Promise<number> {
  const parse = (raw: string, what: string): unknown => {
    try {
      return JSON.parse(raw);
    } catch {
      throw new VerifyUsageError(`${what} is not valid JSON`);
    }
  };
  try {
    if (target === '-') {
      if (!io.stdin) throw new VerifyUsageError('standard input is not available');
      return print(verifyDocument(parse(await io.stdin(), 'standard input'), 'stdin'), io);
    }
    const kind = await isFile(target);
    if (kind === 'directory') throw new VerifyUsageError(`${target} is a directory`);
    if (kind) {
      let raw: string;
      try {
        raw = await readFile(target, 'utf8');
      } catch {
        throw new VerifyUsageError(`cannot read ${target}`);
      }
      return print(verifyDocument(parse(raw, target), 'file'), io);
    }
    // Not a file: a transaction ID, fetched with its result and whole receipt chain.
    let doc: unknown;
    try {
      doc = await io.client.getTransaction({ transaction_id: target }, { include: ['result', 'receipts'] });
    } catch (e) {
      if (!(e instanceof AipClientError)) throw e;
      if (io.asJson && e.problem) io.out(JSON.stringify(e.problem, null, 2));
      io.err(`aip verify: cannot fetch transaction ${target}: ${e.code}${e.status ? ` (HTTP ${e.status})` : ''}: ${e.problem?.detail ?? e.message}`);
      if (e.status === 404 && /[/\\]|\.json$/i.test(target)) io.err(`(there is no file named ${target} either)`);
      if (e.code === CLIENT_ERROR_CODES.network) io.err(`is the API running at ${io.baseUrl}? (npm start, or set --url / AIP_URL)`);
      if (e.status === 401) io.err('the token is missing, expired or not accepted here (aip token mints one for the local stack)');
      return 2;
    }
    return print(verifyDocument(doc, 'api', target), io);
  } catch (e) {
    if (e instanceof VerifyUsageError) {
      io.err(`aip verify: ${e.message}`);
      return 2;
    }
    throw e;
  }
}

class VerifyUsageError extends Error {}
