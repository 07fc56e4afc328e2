/**
 * IAM policies for the API Gateway (REST) Lambda authorizer, and the small
 * evaluator the local HTTP server uses to apply them the way API Gateway does.
 *
 * The policy never names one method: it covers the whole stage
 * (`<api>/<stage>/*`), so a cached authorizer result stays correct for every
 * route the same token calls. Route-level rules (scopes, tenants) are the
 * handlers' job.
 */
import type { APIGatewayAuthorizerResult, PolicyDocument } from 'aws-lambda';
import type { AuthorizerContext } from './authorizer-context.js';

export interface MethodArnParts {
  readonly partition: string;
  readonly region: string;
  readonly accountId: string;
  readonly apiId: string;
  readonly stage: string;
  readonly method: string;
  /** Resource path without the leading slash (may be empty). */
  readonly path: string;
}

/** `arn:<partition>:execute-api:<region>:<account>:<api>/<stage>/<METHOD>/<path>` → parts, or undefined. */
export function parseMethodArn(arn: string): MethodArnParts | undefined {
  const m = /^arn:([a-z-]+):execute-api:([a-z0-9-]+):(\d{12}|[0-9A-Za-z]+):([^/:]+)\/([^/]+)\/([A-Z*]+)\/?(.*)$/.exec(arn);
  if (!m) return undefined;
  const [, partition, region, accountId, apiId, stage, method, path] = m as unknown as [string, string, string, string, string, string, string, string];
  return { partition, region, accountId, apiId, stage, method, path };
}

/** The stage-wide resource a policy grants: `arn:…:<api>/<stage>/*`. Falls back to the exact ARN when it cannot be parsed. */
export function stageWildcardArn(methodArn: string): string {
  const p = parseMethodArn(methodArn);
  if (!p) return methodArn;
  return `arn:${p.partition}:execute-api:${p.region}:${p.accountId}:${p.apiId}/${p.stage}/*`;
}

function document(effect: 'Allow' | 'Deny', resource: string): PolicyDocument {
  return { Version: '2012-10-17', Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: resource }] };
}

export function allowResult(principalId: string, methodArn: string, context: AuthorizerContext): APIGatewayAuthorizerResult {
  return { principalId, policyDocument: document('Allow', stageWildcardArn(methodArn)), context };
}

export function denyResult(principalId: string, methodArn: string): APIGatewayAuthorizerResult {
  return { principalId, policyDocument: document('Deny', stageWildcardArn(methodArn)) };
}

function wildcardMatch(pattern: string, value: string): boolean {
  // IAM-style: `*` any run of characters, `?` one character.
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    's',
  );
  return re.test(value);
}

function asList(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return [];
}

/**
 * Whether a policy document lets the caller invoke `methodArn`: some Allow
 * statement for `execute-api:Invoke` matches and no Deny statement does
 * (explicit deny wins, as in IAM). Conditions are not supported: a statement
 * with a Condition is treated as not matching.
 */
export function policyAllows(policy: unknown, methodArn: string): boolean {
  if (typeof policy !== 'object' || policy === null) return false;
  const statements = (policy as { Statement?: unknown }).Statement;
  const list = Array.isArray(statements) ? statements : statements !== undefined ? [statements] : [];
  let allowed = false;
  for (const s of list) {
    if (typeof s !== 'object' || s === null) continue;
    const st = s as Record<string, unknown>;
    if (st.Condition !== undefined) continue;
    const actions = asList(st.Action);
    if (!actions.some((a) => wildcardMatch(a, 'execute-api:Invoke'))) continue;
    const resources = asList(st.Resource);
    if (!resources.some((r) => wildcardMatch(r, methodArn))) continue;
    if (st.Effect === 'Deny') return false;
    if (st.Effect === 'Allow') allowed = true;
  }
  return allowed;
}
