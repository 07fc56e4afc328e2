/**
 * How validation issues are named in error messages and redacted details:
 * by where they are (a path) and what is wrong, never by the offending value.
 */
import type * as z from './zod.js';

/**
 * A zod issue path as people read it: `a.b[0].c` (array indexes in brackets);
 * `''` for the root. For configuration errors shown to operators.
 */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

/**
 * A zod issue path joined with `separator` (`/` in redacted details, the
 * machine-readable form the connector failures carry). Symbols are named, not
 * dropped.
 */
export function joinIssuePath(path: readonly PropertyKey[], separator: string): string {
  return path.map(String).join(separator);
}

/**
 * What is wrong, in words that do not quote the input: unknown keys are
 * listed by name, a missing value reads "is required".
 */
export function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s) ${issue.keys.map((key) => `"${key}"`).join(', ')}`;
  if (issue.code === 'invalid_type' && issue.input === undefined) {
    return issue.message.startsWith('Invalid input') ? 'is required' : `is required: it ${issue.message}`;
  }
  return issue.message;
}
