/**
 * `aip`: the command-line client of the AIP HTTPS API (bin/aip.mjs runs it).
 *
 *   aip submit payments.charge --input '{"amount":1250,"currency":"eur","customer":"cus_1"}' --mode execute --wait 5
 *   aip wait <action-id>
 *   aip operator outcome-unknown
 *   aip token --sub alice --tenant demo --account acct_1   (local stack only)
 *   aip verify <file | - | transaction-id>   (receipt chain, offline; dev/cli/verify.ts)
 *
 * Every command prints human-readable text, or the API's JSON with --json.
 * Base URL: --url, else AIP_URL, else http://127.0.0.1:3000 (`npm start`).
 * Token: --token, else AIP_TOKEN. Tenant: --tenant, else AIP_TENANT.
 *
 * Exit codes: 0 done; 1 the API answered an error, or (get/wait/submit) the
 * action failed or was cancelled; 2 usage; 3 `wait` reached its timeout.
 * `verify`: 0 valid; 1 invalid, truncated or unverifiable; 2 usage or fetch error.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { AipClient, AipClientError, CLIENT_ERROR_CODES, OPERATOR_VIEWS, type ActionState, type OperatorView, type SubmitBody } from '../../lib/client/index.js';
import type { Action, PrincipalKind, TransactionMode } from '../../packages/connector-sdk/src/protocol/index.js';
import { TRANSACTION_MODES } from '../../packages/connector-sdk/src/protocol/index.js';
import { formatApproval, formatJson, formatPage, formatState, formatSubmit, formatTransaction, operatorApprovalRows, providerCheckLine } from './format.js';
import { verifyCommand } from './verify.js';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Reads standard input (`aip submit -`). */
  readonly stdin?: () => Promise<string>;
  readonly fetch?: typeof fetch;
}

/** CLI names of the operator views. */
export const OPERATOR_LISTS: Readonly<Record<string, OperatorView>> = {
  'outcome-unknown': 'outcome_unknown',
  reconciling: 'reconciling',
  stalled: 'stalled_committing',
  approvals: 'pending_approvals',
  'requires-human': 'requires_human',
};

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  tenant: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  // submit
  input: { type: 'string' },
  mode: { type: 'string' },
  id: { type: 'string' },
  'idempotency-key': { type: 'string' },
  'transaction-id': { type: 'string' },
  'plan-id': { type: 'string' },
  'compensation-for': { type: 'string' },
  'external-account': { type: 'string' },
  wait: { type: 'string' },
  // wait
  timeout: { type: 'string' },
  // transactions
  'action-id': { type: 'string' },
  include: { type: 'string' },
  // lists
  cursor: { type: 'string' },
  limit: { type: 'string' },
  // approve / deny, operator reconcile / resolve
  reason: { type: 'string' },
  // operator resolve
  effect: { type: 'string' },
  provider: { type: 'string' },
  'operation-id': { type: 'string' },
  'override-provider': { type: 'string' },
  // token
  sub: { type: 'string' },
  kind: { type: 'string' },
  scope: { type: 'string', multiple: true },
  account: { type: 'string', multiple: true },
  ttl: { type: 'string' },
  // verify
  quiet: { type: 'boolean', short: 'q' },
} as const;

type Values = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K] extends { multiple: true } ? string[] : (typeof OPTIONS)[K] extends { type: 'boolean' } ? boolean : string;
};

const GLOBAL = ['url', 'token', 'tenant', 'json', 'help'] as const;
const COMMAND_OPTIONS: Readonly<Record<string, readonly (keyof typeof OPTIONS)[]>> = {
  submit: ['input', 'mode', 'id', 'idempotency-key', 'transaction-id', 'plan-id', 'compensation-for', 'external-account', 'wait'],
  get: ['wait'],
  wait: ['timeout'],
  cancel: [],
  approve: ['reason'],
  deny: ['reason'],
  approvals: ['cursor', 'limit'],
  transactions: ['transaction-id', 'plan-id', 'action-id', 'include'],
  operator: ['cursor', 'limit', 'reason', 'effect', 'provider', 'operation-id', 'override-provider'],
  capabilities: [],
  health: [],
  token: ['sub', 'kind', 'scope', 'account', 'ttl'],
  verify: ['quiet'],
  help: [],
};

export const USAGE = `usage: aip <command> [options]

Actions
  submit <capability> --input <json> [--mode <mode>] [--id <id>] [--idempotency-key <k>]
         [--transaction-id <t>] [--plan-id <p>] [--compensation-for <action-id>]
         [--external-account <id>] [--wait <0-25>]
  submit <file.json | ->        submit an action envelope or TransactionRequest as is
  get <action-id> [--wait <0-25>]
  wait <action-id> [--timeout <seconds>]   long-poll until terminal (progress on stderr)
  cancel <action-id>

Approvals
  approvals [--limit N] [--cursor C]       pending approvals of the tenant
  approvals show <approval-id>             what it approves: capability, mode, input (as the data
                                           contract lets it be shown), the plan's preview and fidelity,
                                           who asked and when, the policy and the approvals so far
  approve <approval-id> [--reason <text>]
  deny <approval-id> [--reason <text>]

Transactions and operators
  transactions (--transaction-id T | --plan-id P | --action-id A) [--include result,receipts]
  operator <list> [--limit N] [--cursor C]
           lists: ${Object.keys(OPERATOR_LISTS).join(', ')}
  operator reconcile <transaction-id> [--reason <text>]
           reconcile now (resets the attempt bound once)
  operator resolve <transaction-id> --effect committed|not_committed --reason <text>
           [--provider <p> --operation-id <id>] [--override-provider <why>]
           records what was found at the provider for an escalated transaction; the
           runtime asks the provider first and refuses a resolution its answer
           contradicts, unless --override-provider says why it is recorded anyway
  verify <file.json | - | transaction-id> [--quiet]
           verifies a receipt chain offline (hashes, links, the receipt_count/receipt_head
           anchor, action_result against its result_digest); a transaction ID is fetched
           with include=result,receipts. Exit 0 valid, 1 invalid/truncated/unverifiable,
           2 usage or fetch error
  capabilities
  health

Local stack only
  token [--sub <id>] [--tenant <id>] [--scope <s>]... [--account <id>]... [--kind user] [--ttl 1h]
        mints a development token signed with the local dev key (.local/dev-keys);
        --account (repeatable or comma-separated) names the external accounts the
        token holds (claim aip:accounts): an action's identity.external_account_id
        must be one of them

Global options
  --url <base>     API base URL (AIP_URL; default ${DEFAULT_URL})
  --token <jwt>    bearer token (AIP_TOKEN)
  --tenant <id>    tenant, when the token names several (AIP_TENANT)
  --json           print the API's JSON instead of text

Transaction modes: ${TRANSACTION_MODES.join(', ')}
Exit codes: 0 ok; 1 API error or the action failed; 2 usage; 3 wait timed out
`;

class UsageError extends Error {}

function intOption(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${name} must be an integer`);
  const n = Number(raw);
  if (n < min || n > max) throw new UsageError(`--${name} must be from ${min} to ${max}`);
  return n;
}

function parseJsonOption(name: string, raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw new UsageError(`--${name} is not valid JSON`);
  }
}

async function readBody(source: string, io: CliIo): Promise<SubmitBody> {
  let text: string;
  if (source === '-') {
    if (!io.stdin) throw new UsageError('standard input is not available');
    text = await io.stdin();
  } else {
    try {
      text = await readFile(source, 'utf8');
    } catch {
      throw new UsageError(`cannot read ${source}`);
    }
  }
  try {
    return JSON.parse(text) as SubmitBody;
  } catch {
    throw new UsageError(`${source === '-' ? 'standard input' : source} is not valid JSON`);
  }
}

/** Builds an action envelope from the flags of `aip submit <capability> ...`. */
export function actionFromFlags(capability: string, v: Values): Action {
  if (v.input === undefined) throw new UsageError('--input <json object> is required (or give a JSON file instead of a capability)');
  const input = parseJsonOption('input', v.input);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new UsageError('--input must be a JSON object');
  const mode = v.mode as TransactionMode | undefined;
  if (mode !== undefined && !(TRANSACTION_MODES as readonly string[]).includes(mode))
    throw new UsageError(`--mode must be one of ${TRANSACTION_MODES.join(', ')}`);
  if (mode === undefined && (v['transaction-id'] || v['plan-id'] || v['compensation-for']))
    throw new UsageError('--transaction-id, --plan-id and --compensation-for need --mode');
  const action: Action = {
    id: v.id ?? `act-${randomUUID()}`,
    capability_id: capability,
    input: input as Action['input'],
    ...(v['idempotency-key'] !== undefined ? { idempotency_key: v['idempotency-key'] } : {}),
    ...(v['external-account'] !== undefined ? { identity: { external_account_id: v['external-account'] } } : {}),
    ...(mode !== undefined
      ? {
          transaction: {
            mode,
            ...(v['transaction-id'] !== undefined ? { transaction_id: v['transaction-id'] } : {}),
            ...(v['plan-id'] !== undefined ? { plan_id: v['plan-id'] } : {}),
            ...(v['compensation-for'] !== undefined ? { compensation_for: v['compensation-for'] } : {}),
          },
        }
      : {}),
  };
  return action;
}

function positional(positionals: string[], index: number, what: string): string {
  const value = positionals[index];
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`);
  return value;
}

function failedOrCancelled(state: ActionState): boolean {
  return state.action_result.status === 'failed' || state.action_result.status === 'cancelled';
}

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const out = (text: string) => io.stdout(text.endsWith('\n') ? text : `${text}\n`);
  const err = (text: string) => io.stderr(text.endsWith('\n') ? text : `${text}\n`);
  let values: Values;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
    values = parsed.values as Values;
    positionals = parsed.positionals;
  } catch (e) {
    err(`aip: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const command = positionals[0] ?? 'help';
  if (values.help || command === 'help') {
    out(USAGE);
    return 0;
  }
  const allowed = COMMAND_OPTIONS[command];
  if (!allowed) {
    err(`aip: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  for (const key of Object.keys(values)) {
    if (!(GLOBAL as readonly string[]).includes(key) && !allowed.includes(key as keyof typeof OPTIONS)) {
      err(`aip: --${key} does not apply to "${command}"`);
      return 2;
    }
  }

  const asJson = values.json === true;
  const baseUrl = values.url ?? io.env.AIP_URL ?? DEFAULT_URL;
  const token = values.token ?? io.env.AIP_TOKEN;
  const tenant = values.tenant ?? io.env.AIP_TENANT;

  try {
    if (command === 'token') return await mintDevToken(values, tenant, out, err, asJson);

    const client = new AipClient({ baseUrl, ...(token ? { token } : {}), ...(tenant ? { tenant } : {}), ...(io.fetch ? { fetch: io.fetch } : {}) });
    const args = positionals.slice(1);
    switch (command) {
      case 'submit': {
        const target = positional(args, 0, 'a capability ID, a JSON file or - (standard input)');
        const isFile = target === '-' || target.endsWith('.json');
        if (isFile && (values.input !== undefined || values.mode !== undefined)) throw new UsageError('give either a JSON file or --input/--mode, not both');
        const body = isFile ? await readBody(target, io) : actionFromFlags(target, values);
        const wait = intOption('wait', values.wait, 0, 25);
        const res = await client.submitAction(body, wait !== undefined ? { wait } : {});
        out(asJson ? formatJson(res) : formatSubmit(res));
        return failedOrCancelled(res) ? 1 : 0;
      }
      case 'get': {
        const wait = intOption('wait', values.wait, 0, 25);
        const state = await client.getAction(positional(args, 0, 'the action ID'), wait !== undefined ? { wait } : {});
        out(asJson ? formatJson(state) : formatState(state));
        return failedOrCancelled(state) ? 1 : 0;
      }
      case 'wait': {
        const id = positional(args, 0, 'the action ID');
        const timeoutSeconds = intOption('timeout', values.timeout, 0, 86_400) ?? 300;
        let lastStatus: string | undefined;
        let state: ActionState;
        try {
          state = await client.waitForAction(id, {
            timeoutMs: timeoutSeconds * 1000,
            onProgress: (s, elapsedMs) => {
              const status = s.action_result.status;
              err(
                `waiting for ${id}: ${status}${status === lastStatus ? '' : status === 'requires_human' ? ' (an approval is needed)' : ''} after ${Math.round(elapsedMs / 1000)}s`,
              );
              lastStatus = status;
            },
          });
        } catch (e) {
          if (e instanceof AipClientError && e.code === CLIENT_ERROR_CODES.waitTimeout) {
            err(`aip: ${e.message}`);
            return 3;
          }
          throw e;
        }
        out(asJson ? formatJson(state) : formatState(state));
        return failedOrCancelled(state) ? 1 : 0;
      }
      case 'cancel': {
        const res = await client.cancel(positional(args, 0, 'the action ID'));
        out(asJson ? formatJson(res) : `cancellation requested\n${formatJson(res)}`);
        return 0;
      }
      case 'approve':
      case 'deny': {
        const id = positional(args, 0, 'the approval ID');
        const res = await client.decideApproval(id, command, values.reason !== undefined ? { reason: values.reason } : {});
        out(asJson ? formatJson(res) : `${command === 'approve' ? 'approved' : 'denied'} ${id}\n${formatJson(res)}`);
        return 0;
      }
      case 'approvals': {
        if (args[0] === 'show') {
          const approval = await client.getApproval(positional(args, 1, 'the approval ID'));
          out(asJson ? formatJson(approval) : formatApproval(approval));
          return 0;
        }
        if (args.length > 0) throw new UsageError(`unknown approvals command "${args[0]}": use show <approval-id>`);
        const limit = intOption('limit', values.limit, 1, 100);
        const page = await client.listApprovals({ ...(values.cursor ? { cursor: values.cursor } : {}), ...(limit !== undefined ? { limit } : {}) });
        out(asJson ? formatJson(page) : formatPage(page, 'no pending approvals'));
        return 0;
      }
      case 'transactions': {
        const selectors = [
          values['transaction-id'] !== undefined ? { transaction_id: values['transaction-id'] } : undefined,
          values['plan-id'] !== undefined ? { plan_id: values['plan-id'] } : undefined,
          values['action-id'] !== undefined ? { action_id: values['action-id'] } : undefined,
        ].filter((s) => s !== undefined);
        if (selectors.length !== 1) throw new UsageError('give exactly one of --transaction-id, --plan-id or --action-id');
        const include = (values.include ?? 'result,receipts')
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s.length > 0);
        for (const i of include) if (i !== 'result' && i !== 'receipts') throw new UsageError('--include accepts result and receipts');
        const txn = await client.getTransaction(selectors[0] as { transaction_id: string }, { include: include as ('result' | 'receipts')[] });
        out(asJson ? formatJson(txn) : formatTransaction(txn));
        return 0;
      }
      case 'operator': {
        if (args[0] === 'reconcile') {
          const id = positional(args, 1, 'the transaction ID');
          const res = await client.operatorReconcile(id, values.reason !== undefined ? { reason: values.reason } : {});
          out(asJson ? formatJson(res) : `reconcile requested for ${id}\n${formatJson(res)}`);
          return 0;
        }
        if (args[0] === 'resolve') {
          const id = positional(args, 1, 'the transaction ID');
          if (values.effect !== 'committed' && values.effect !== 'not_committed') throw new UsageError('--effect must be committed or not_committed');
          if (values.reason === undefined || values.reason.trim() === '') throw new UsageError('--reason is required: say what you found at the provider');
          if ((values.provider === undefined) !== (values['operation-id'] === undefined)) throw new UsageError('give --provider and --operation-id together');
          const override = values['override-provider'];
          if (override !== undefined && override.trim() === '')
            throw new UsageError('--override-provider needs a reason: say why the provider answer is wrong');
          const resolution = {
            effect: values.effect,
            reason: values.reason,
            ...(values.provider !== undefined ? { provider_operation: { provider: values.provider, operation_id: values['operation-id'] } } : {}),
            ...(override !== undefined ? { provider_override: { reason: override } } : {}),
          };
          const res = await client.operatorResolve(id, resolution);
          const waiting = (res as { status?: unknown }).status === 'requires_human';
          out(asJson ? formatJson(res) : `${waiting ? 'resolution proposed; waiting for a second operator' : 'resolved'} ${id}\n${formatJson(res)}`);
          return 0;
        }
        const list = positional(args, 0, `the list (${Object.keys(OPERATOR_LISTS).join(', ')})`);
        const view = OPERATOR_LISTS[list] ?? ((OPERATOR_VIEWS as readonly string[]).includes(list) ? (list as OperatorView) : undefined);
        if (!view) throw new UsageError(`unknown list "${list}": use ${Object.keys(OPERATOR_LISTS).join(', ')}`);
        const limit = intOption('limit', values.limit, 1, 100);
        const page = await client.listOperator(view, { ...(values.cursor ? { cursor: values.cursor } : {}), ...(limit !== undefined ? { limit } : {}) });
        out(asJson ? formatJson(page) : formatPage(view === 'pending_approvals' ? operatorApprovalRows(page) : page, `nothing in ${list}`));
        return 0;
      }
      case 'capabilities': {
        const res = await client.capabilities();
        out(formatJson(res));
        return 0;
      }
      case 'verify': {
        const target = positional(args, 0, 'a JSON file, - (standard input) or a transaction ID');
        return await verifyCommand(target, { out, err, ...(io.stdin ? { stdin: io.stdin } : {}), client, baseUrl, asJson, quiet: values.quiet === true });
      }
      case 'health': {
        const res = await client.health();
        out(asJson ? formatJson(res) : `health: ${res.status}${Object.keys(res).length > 1 ? `\n${formatJson(res)}` : ''}`);
        return res.status === 'ok' ? 0 : 1;
      }
    }
    throw new UsageError(`unknown command "${command}"`);
  } catch (e) {
    if (e instanceof UsageError) {
      err(`aip ${command}: ${e.message}`);
      return 2;
    }
    if (e instanceof AipClientError) {
      if (asJson && e.problem) out(formatJson(e.problem));
      err(`aip ${command}: ${e.code}${e.status ? ` (HTTP ${e.status})` : ''}: ${e.problem?.detail ?? e.message}`);
      if (e.code === CLIENT_ERROR_CODES.network) err(`is the API running at ${baseUrl}? (npm start, or set --url / AIP_URL)`);
      if (e.status === 401) err('the token is missing, expired or not accepted here (aip token mints one for the local stack)');
      if (e.code === 'operator.resolution_contradicts_provider') err(contradictionHint(e.details));
      return 1;
    }
    throw e;
  }
}

/** What the provider answered against the operator's resolution, and how to record it anyway. */
function contradictionHint(details: unknown): string {
  const d = (details ?? {}) as {
    provider_answer?: { effect?: string; provider_operation?: { provider?: string; operation_id?: string } };
    resolution?: { effect?: string };
    approval_id?: string;
    provider_check_at_proposal?: Parameters<typeof providerCheckLine>[0];
  };
  const op = d.provider_answer?.provider_operation;
  const said =
    `the provider answered: ${d.provider_answer?.effect ?? '?'}${op?.operation_id !== undefined ? ` (operation ${op.provider}/${op.operation_id})` : ''}; ` +
    `the resolution says: ${d.resolution?.effect ?? '?'}.`;
  // Refused at a four-eyes approval: what the proposal carried, and what the second operator can do.
  if (d.approval_id !== undefined)
    return `${said} When it was proposed the provider said: ${providerCheckLine(d.provider_check_at_proposal)}. Deny it (aip deny ${d.approval_id}); the proposer can resolve again with --override-provider <why>`;
  return `${said} Check again, or record it anyway with --override-provider <why>`;
}

/** `aip token`: a development token for the local stack, signed with the dev key (dev/auth). */
async function mintDevToken(values: Values, tenant: string | undefined, out: (t: string) => void, err: (t: string) => void, asJson: boolean): Promise<number> {
  const { mintToken, ttlSeconds } = await import('../auth/mint.js');
  const { LOCAL_TOKEN_DEFAULTS } = await import('../local/defaults.js');
  const ttl = values.ttl ?? '1h';
  const scopes = values.scope?.flatMap((s) => s.split(/\s+/).filter((x) => x.length > 0)) ?? [...LOCAL_TOKEN_DEFAULTS.scopes];
  const accounts = values.account?.flatMap((a) => a.split(/[\s,]+/).filter((x) => x.length > 0));
  let token: string;
  try {
    token = await mintToken({
      sub: values.sub ?? LOCAL_TOKEN_DEFAULTS.sub,
      ...(values.kind !== undefined ? { kind: values.kind as PrincipalKind } : {}),
      tenants: tenant ? [tenant] : [...LOCAL_TOKEN_DEFAULTS.tenants],
      ...(accounts !== undefined ? { accounts } : {}),
      scopes,
      ttl,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  out(asJson ? formatJson({ token, token_type: 'Bearer', expires_in: ttlSeconds(ttl) }) : token);
  err('development token: accepted only by the local stack (npm start)');
  return 0;
}
