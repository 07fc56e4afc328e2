/**
 * The module contract of `aip-conformance <module>`: what a connector
 * author's module exports so the CLI can run the kit against it.
 *
 * A module exports its subject(s) in one of these forms (first match wins):
 *
 * 1. `export default subject` (or a function returning one, possibly async,
 *    or an array of subjects);
 * 2. `export const subject = ...` (same shapes), or `export const subjects = [...]`;
 * 3. the flat form, a connector plus the provider fake the author supplies:
 *
 *        export const name = 'bank';                       // optional (default: the file name)
 *        export const credential_handle = 'bank/api_key';  // optional
 *        export async function setup(env) {                // required
 *          const bank = new FakeBank({ apiKeys: [env.secret] });        // the provider fake
 *          return {
 *            connector: bankConnector(bank, env.credentials),
 *            provider: { effects: () => bank.ledger.length, settle: () => bank.releaseAll(), ... },
 *            scenarios: { ... },
 *            sampleInput: () => ({ ... }),
 *          };
 *        }
 *
 * `defineConformanceSubject` only types a subject (it returns its argument).
 */
import type { ConformanceEnvironment, ConformanceInstance, ConformanceSubject } from './subject.js';

export type SubjectExport =
  | ConformanceSubject
  | readonly ConformanceSubject[]
  | (() => ConformanceSubject | readonly ConformanceSubject[] | Promise<ConformanceSubject | readonly ConformanceSubject[]>);

/** Types a subject for `export default defineConformanceSubject({...})`. */
export function defineConformanceSubject(subject: ConformanceSubject): ConformanceSubject {
  return subject;
}

function isSubject(v: unknown): v is ConformanceSubject {
  return v !== null && typeof v === 'object' && typeof (v as { name?: unknown }).name === 'string' && typeof (v as { setup?: unknown }).setup === 'function';
}

async function fromExport(v: unknown, where: string): Promise<ConformanceSubject[]> {
  let value = v;
  if (typeof value === 'function' && !isSubject(value)) value = await (value as () => unknown)();
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || !list.every(isSubject)) {
    throw new TypeError(
      `${where} is not a conformance subject (an object with a string name and a setup(env) function), an array of them, or a function returning one`,
    );
  }
  return list as ConformanceSubject[];
}

/**
 * The subjects a module exports (see the module comment for the forms).
 * `fallbackName` names a flat-form subject without `name` (e.g. the file name).
 */
export async function subjectsFromModule(mod: Readonly<Record<string, unknown>>, fallbackName = 'connector'): Promise<ConformanceSubject[]> {
  // A default export that is some other object (e.g. a CommonJS namespace) falls through to the named forms.
  const d = mod.default;
  if (isSubject(d) || Array.isArray(d) || typeof d === 'function') return fromExport(d, 'the default export');
  if (mod.subject !== undefined) return fromExport(mod.subject, 'the `subject` export');
  if (mod.subjects !== undefined) return fromExport(mod.subjects, 'the `subjects` export');
  const setup = mod.setup;
  if (typeof setup === 'function') {
    const name = typeof mod.name === 'string' && mod.name.length > 0 ? mod.name : fallbackName;
    const credential_handle = typeof mod.credential_handle === 'string' ? mod.credential_handle : undefined;
    return [
      {
        name,
        ...(credential_handle !== undefined ? { credential_handle } : {}),
        setup: (env: ConformanceEnvironment) => (setup as (env: ConformanceEnvironment) => Promise<ConformanceInstance>)(env),
      },
    ];
  }
  throw new TypeError(
    'the module exports no conformance subject: export a subject as `default` or `subject`, or export `setup(env)` (see aip-conformance --help)',
  );
}
