/**
 * A small, explicit evaluator of the identity policies of the assembly's
 * roles, for the calls the assembly test recorded (test/assembly/aws-gateway.ts).
 *
 * What it evaluates, as IAM does for an identity policy in one account (no
 * resource policies, boundaries or SCPs involved):
 * - the role's statements: its inline `Policies` and every
 *   `AWS::IAM::Policy` attached to it (`Roles: [{Ref: role}]`), with every
 *   intrinsic resolved against the deployed resources;
 * - `Effect` Allow and Deny (an explicit Deny wins), `Action` and `Resource`
 *   as strings or lists, with IAM's wildcards (`*` any run of characters,
 *   `?` one character; actions case-insensitive, resources case-sensitive);
 * - `Condition` with `StringEquals` and `StringLike` on the keys the call
 *   carries (a key the call does not carry does not match, as in IAM).
 *
 * Anything else (`NotAction`, `NotResource`, other condition operators,
 * managed policy ARNs) is refused with an error naming it, rather than
 * evaluated loosely.
 */
import type { AwsCall } from './aws-gateway.js';
import { resourcesOfType, type Resolver, type StackArtifact } from './template.js';

export interface Grant {
  readonly role: string;
  readonly policy: string;
  readonly effect: 'Allow' | 'Deny';
  readonly actions: readonly string[];
  readonly resources: readonly string[];
  readonly conditions?: Readonly<Record<string, Readonly<Record<string, string | readonly string[]>>>>;
}

const list = (v: unknown): string[] => (v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)]);

function wildcard(pattern: string, caseInsensitive: boolean): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, caseInsensitive ? 'i' : '');
}
export const actionMatches = (pattern: string, action: string) => wildcard(pattern, true).test(action);
export const resourceMatches = (pattern: string, resource: string) => wildcard(pattern, false).test(resource);

function conditionsHold(grant: Grant, call: AwsCall): boolean {
  for (const [operator, keys] of Object.entries(grant.conditions ?? {})) {
    for (const [key, expected] of Object.entries(keys)) {
      const actual = call.context?.[key];
      if (actual === undefined) return false;
      const values = list(expected);
      if (operator === 'StringEquals') {
        if (!values.includes(actual)) return false;
      } else if (operator === 'StringLike') {
        if (!values.some((v) => resourceMatches(v, actual))) return false;
      } else {
        throw new Error(`${grant.role}/${grant.policy}: condition operator ${operator} is not evaluated by the assembly test`);
      }
    }
  }
  return true;
}

/** The statements of every role in the stacks, by role logical ID, resolved. */
export function roleGrants(stacks: readonly StackArtifact[], resolver: Resolver): { grants: Map<string, Grant[]>; managed: Set<string> } {
  const out = new Map<string, Grant[]>();
  /** Roles with managed policies: their grants are not in the template, so calls under them cannot be proved. */
  const managed = new Set<string>();
  const add = (stack: StackArtifact, role: string, policy: string, document: unknown) => {
    const doc = resolver.resolve(stack.name, document) as { Statement: Record<string, unknown>[] };
    for (const s of doc.Statement) {
      for (const key of Object.keys(s)) {
        if (!['Effect', 'Action', 'Resource', 'Condition', 'Sid'].includes(key))
          throw new Error(`${role}/${policy}: statement key ${key} is not evaluated by the assembly test`);
      }
      const grants = out.get(role) ?? [];
      grants.push({
        role,
        policy,
        effect: s.Effect as 'Allow' | 'Deny',
        actions: list(s.Action),
        resources: list(s.Resource),
        ...(s.Condition !== undefined ? { conditions: s.Condition as Grant['conditions'] & object } : {}),
      });
      out.set(role, grants);
    }
  };
  for (const [stack, id, r] of resourcesOfType(stacks, 'AWS::IAM::Role')) {
    const p = (r.Properties ?? {}) as { Policies?: { PolicyName: string; PolicyDocument: unknown }[]; ManagedPolicyArns?: unknown[] };
    if ((p.ManagedPolicyArns ?? []).length > 0) managed.add(id);
    for (const inline of p.Policies ?? []) add(stack, id, inline.PolicyName, inline.PolicyDocument);
    if (!out.has(id)) out.set(id, []);
  }
  for (const [stack, id, r] of resourcesOfType(stacks, 'AWS::IAM::Policy')) {
    const p = r.Properties as { PolicyDocument: unknown; Roles?: { Ref: string }[] };
    for (const role of p.Roles ?? []) add(stack, role.Ref, id, p.PolicyDocument);
  }
  return { grants: out, managed };
}

export interface Decision {
  readonly allowed: boolean;
  /** The Allow statements that match (empty when denied). */
  readonly by: readonly Grant[];
  readonly deniedBy?: Grant;
}

/** Whether the role's statements allow the call. */
export function evaluate(grants: readonly Grant[], call: AwsCall): Decision {
  const matching = grants.filter(
    (g) => g.actions.some((a) => actionMatches(a, call.action)) && g.resources.some((r) => resourceMatches(r, call.resource)) && conditionsHold(g, call),
  );
  const deny = matching.find((g) => g.effect === 'Deny');
  if (deny !== undefined) return { allowed: false, by: [], deniedBy: deny };
  const allow = matching.filter((g) => g.effect === 'Allow');
  return { allowed: allow.length > 0, by: allow };
}

/** One (action, resource) pair a role is granted, and whether a recorded call used it. */
export interface GrantUse {
  readonly role: string;
  readonly action: string;
  readonly resource: string;
  readonly used: boolean;
}

/** Every (action pattern, resource pattern) of the roles' Allow statements, marked used when some call of the role matched both. */
export function grantUse(grants: ReadonlyMap<string, readonly Grant[]>, callsByRole: ReadonlyMap<string, readonly AwsCall[]>): GrantUse[] {
  const out: GrantUse[] = [];
  for (const [role, gs] of grants) {
    const calls = callsByRole.get(role) ?? [];
    for (const g of gs) {
      if (g.effect !== 'Allow') continue;
      for (const action of g.actions) {
        for (const resource of g.resources) {
          const used = calls.some((c) => actionMatches(action, c.action) && resourceMatches(resource, c.resource) && conditionsHold(g, c));
          out.push({ role, action, resource, used });
        }
      }
    }
  }
  return out;
}
