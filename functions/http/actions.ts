/**
 * Action routes:
 * - POST /v1/actions              → submitActionHandler
 * - GET  /v1/actions/{id}         → getActionHandler
 * - POST /v1/actions/{id}/cancel  → cancelActionHandler
 * - GET  /v1/actions/{id}/stream  → streamActionHandler
 */
import { TERMINAL_ACTION_STATUSES } from '../../packages/connector-sdk/src/protocol/action.js';
import { validateAction, validateTransactionRequest } from '../../packages/connector-sdk/src/protocol/validate.js';
import { createRouteHandler, type HttpDeps, type ProxyHandler } from '../shared/route-handler.js';
import { headerValues, type AipHttpEvent, type HttpResult } from '../shared/http.js';
import { productionRuntime } from '../shared/production-runtime.js';
import type { ActionState, CallerIdentity, RuntimeApi, SubmitOutcome } from '../shared/runtime-api.js';
import { actionPoll, parsePreferWait, SETTLE_TIMES, waitBudgetMs, waitForSettlement, type WaitClock } from '../shared/wait.js';
import { ROUTES } from '../../lib/http/routes.js';

/**
 * Edge validation of the submit body with the protocol's core envelope
 * validator: an object with an `action` member is a TransactionRequest,
 * anything else an Action. The runtime receives the parsed JSON unchanged
 * (it validates again; the edge only rejects early, with the same codes).
 */
export function validateSubmitBody(json: unknown): unknown {
  const isRequest = typeof json === 'object' && json !== null && !Array.isArray(json) && Object.hasOwn(json, 'action');
  if (isRequest) validateTransactionRequest(json);
  else validateAction(json);
  return json;
}

/** Path prefix of the API as the caller sees it (stage or base path mapping), from the proxy event. */
export function basePath(event: Pick<AipHttpEvent, 'path' | 'requestContext'>): string {
  const full = event.requestContext?.path;
  if (typeof full !== 'string' || typeof event.path !== 'string' || !full.endsWith(event.path)) return '';
  const prefix = full.slice(0, full.length - event.path.length);
  return /^(\/[A-Za-z0-9._~-]+)*$/.test(prefix) ? prefix : '';
}

export function actionStatusUrl(event: Pick<AipHttpEvent, 'path' | 'requestContext'>, actionId: string): string {
  return `${basePath(event)}/v1/actions/${encodeURIComponent(actionId)}`;
}

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_ACTION_STATUSES);

/**
 * A wait: polls the action on the schedule of ./wait.ts (one read of the
 * action record per poll) until it settles or the deadline passes. The poll
 * that sees it settled also builds the full state (with the transaction view)
 * from the record it read (RuntimeApi.pollAction); a wait that ends unsettled,
 * or a runtime without pollAction, reads the full state once with getAction.
 * `learn`: the key under which this environment's settle times time the first
 * poll, and learn from this wait (POST); without it the first poll is at once
 * (GET).
 */
async function waitForAction(
  rt: RuntimeApi,
  caller: CallerIdentity,
  tenant_id: string,
  action_id: string,
  deadline: number,
  clock: WaitClock,
  deps: Pick<HttpDeps, 'waitPoll' | 'settleTimes'>,
  learn?: string,
): Promise<ActionState> {
  const outcome = await waitForSettlement(actionPoll(rt, caller, tenant_id, action_id), {
    options: deps.waitPoll ?? {},
    times: deps.settleTimes ?? SETTLE_TIMES,
    deadline,
    clock,
    ...(learn !== undefined ? { learn } : {}),
  });
  return outcome.value.state ?? rt.getAction(caller, tenant_id, action_id);
}

/** The key settle times are learnt under: the capability and transaction mode of a submitted body. */
function settleKey(body: unknown): string | undefined {
  const record = (x: unknown): Record<string, unknown> | undefined => (typeof x === 'object' && x !== null ? (x as Record<string, unknown>) : undefined);
  const envelope = record(body);
  const action = record(envelope?.action) ?? envelope;
  const capability = action?.capability_id;
  if (typeof capability !== 'string') return undefined;
  const mode = record(envelope?.transaction)?.mode ?? record(action?.transaction)?.mode;
  return `${capability} ${typeof mode === 'string' ? mode : 'invoke'}`;
}

function validStatus(status: unknown, disposition: SubmitOutcome['disposition']): number {
  if (typeof status === 'number' && Number.isInteger(status) && status >= 200 && status <= 599) return status;
  return disposition === 'accepted' ? 202 : 200;
}

export function createSubmitActionHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(
    ROUTES.submitAction,
    deps,
    async ({ event, caller, tenant_id, body, runtime, clock, remainingMs }): Promise<HttpResult> => {
      const rt = await runtime();
      // A client that waits is told to the runtime, with the time this function has left: the runtime may run the
      // first attempt here and answer with the settled state (lib/runtime/pipeline/inline-attempt.ts).
      const wait = parsePreferWait(headerValues(event, 'prefer'));
      const waitMs = wait === undefined ? 0 : waitBudgetMs(wait, remainingMs());
      const outcome = await rt.submit(caller, body, {
        tenant_id: tenant_id as string,
        ...(waitMs > 0 ? { waiting: { wait_ms: waitMs, remaining_ms: remainingMs } } : {}),
      });
      const statusUrl = actionStatusUrl(event, outcome.action_id);
      const response = {
        action_id: outcome.action_id,
        tenant_id: outcome.tenant_id,
        disposition: outcome.disposition,
        status_url: statusUrl,
        action_result: outcome.action_result,
        ...(outcome.transaction_result !== undefined ? { transaction_result: outcome.transaction_result } : {}),
      };
      const status = validStatus(outcome.http_status, outcome.disposition);
      if (status !== 202) return { status, body: response };

      // Queued (`accepted`) actions may be waited for; `requires_human` waits for a person, not for us.
      const pending = { Location: statusUrl, 'Retry-After': '1' };
      if (outcome.disposition !== 'accepted' || wait === undefined) return { status: 202, headers: pending, body: response };
      // The attempt ran in this submit and settled: the answer a wait would have polled for, without a poll.
      let state: ActionState | undefined = outcome.settled;
      const budget = state === undefined ? waitBudgetMs(wait, remainingMs()) : 0;
      if (state === undefined && budget === 0) return { status: 202, headers: pending, body: response };

      if (state === undefined) {
        try {
          state = await waitForAction(rt, caller, outcome.tenant_id, outcome.action_id, clock.now() + budget, clock, deps, settleKey(body) ?? '');
        } catch {
          // The action WAS admitted: a failed status read must not turn that into an error answer.
          return { status: 202, headers: pending, body: response };
        }
      }
      const latest = {
        ...response,
        action_result: state.action_result,
        ...(state.transaction !== undefined ? { transaction_result: state.transaction } : {}),
      };
      const applied = { 'Preference-Applied': `wait=${wait}` };
      if (TERMINAL.has(state.action_result.status)) return { status: 200, headers: applied, body: latest };
      return { status: 202, headers: { ...pending, ...applied }, body: latest };
    },
    { parseBody: validateSubmitBody },
  );
}

export function createGetActionHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.getAction, deps, async ({ caller, tenant_id, path, query, runtime, clock, remainingMs }) => {
    const rt = await runtime();
    const tenant = tenant_id as string;
    const fetch = () => rt.getAction(caller, tenant, path.id);
    const budget = query.wait === undefined ? 0 : waitBudgetMs(query.wait, remainingMs());
    const state = budget > 0 ? await waitForAction(rt, caller, tenant, path.id, clock.now() + budget, clock, deps) : await fetch();
    return { status: 200, body: state };
  });
}

export function createCancelActionHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.cancelAction, deps, async ({ caller, tenant_id, path, runtime }) => {
    const rt = await runtime();
    return { status: 200, body: await rt.cancel(caller, tenant_id as string, path.id) };
  });
}

export function createStreamActionHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.streamAction, deps, async ({ caller, tenant_id, path, query, runtime }) => {
    const rt = await runtime();
    return { status: 200, body: await rt.readStream(caller, tenant_id as string, path.id, query.after) };
  });
}

const production: HttpDeps = { runtime: productionRuntime };

/** Deployed handlers (functions/http/actions.<name>). */
export const submitActionHandler = createSubmitActionHandler(production);
export const getActionHandler = createGetActionHandler(production);
export const cancelActionHandler = createCancelActionHandler(production);
export const streamActionHandler = createStreamActionHandler(production);
