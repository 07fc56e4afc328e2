/**
 * Manifest admission: compares each capability's nine implementation flags
 * with the behaviour its contract advertises (the page's table) and lists
 * every missing claim as a named issue.
 */
import type { Capability } from './protocol/index.js';
import type { FrozenConnector, ConnectorContext } from './interfaces.js';
import { ConnectorManifestSchema, type ConnectorManifest } from './manifest.js';
import {
  IMPLEMENTATION_FLAGS,
  ImplementationSupportSchema,
  NO_IMPLEMENTATION_SUPPORT,
  type ImplementationFlag,
  type ImplementationSupport,
} from './support.js';
import { renderPath } from './protocol/index.js';

/** Rule names, quoted in every issue. Stable: tests and the conformance kit match on them. */
export const ADMISSION_RULES = {
  invocation: 'callable capability requires invocation',
  cancellation: 'execution.supports_cancel requires cancellation',
  streaming: 'execution.supports_streaming requires streaming',
  retry: 'execution.supports_retry requires retry',
  transaction: 'transaction contract requires transaction',
  reconciliation: 'transaction mode reconcile requires reconciliation',
  compensation: 'supported compensation requires compensation',
  compensation_target: 'the compensation capability is in the connector or resolvable',
  approval: 'required approval requires approval',
  credentials: 'required credentials requires credentials',
  support_record: 'callable capability requires an implementation support record',
  exact_record: 'implementation support record has exactly the nine flags',
  record_mismatch: 'manifest implementation_support equals the connector declaration',
  duplicate_capability: 'capability IDs are unique',
  manifest_schema: 'manifest matches the ConnectorManifest schema',
  discovery: 'discovery succeeds',
} as const;
export type AdmissionRule = (typeof ADMISSION_RULES)[keyof typeof ADMISSION_RULES];

export interface AdmissionIssue {
  /** The capability concerned (absent for manifest-level issues). */
  readonly capability_id?: string;
  readonly rule: AdmissionRule;
  /** The implementation flag that is missing, for flag rules. */
  readonly flag?: ImplementationFlag;
  /** Operator-safe detail (paths, never values). */
  readonly detail?: string;
}

export interface AdmittedCapability {
  readonly capability_id: string;
  readonly capability: Capability;
  readonly implementation_support: ImplementationSupport;
}

export interface AdmissionReport {
  /** True when there is no issue at all. */
  readonly admitted: boolean;
  /** Every issue, in capability order then rule order. */
  readonly issues: readonly AdmissionIssue[];
  /** Capabilities without any issue (with their support records). */
  readonly capabilities: readonly AdmittedCapability[];
}

/**
 * Where admission reads the nine-flag records from: a record keyed by
 * capability ID, a lookup function, or a connector's implementation_support.
 */
export type SupportSource = Readonly<Record<string, unknown>> | ((capability_id: string) => unknown) | Pick<FrozenConnector, 'implementation_support'>;

/**
 * The capability a supported compensation is sent to: the contract's
 * `compensation_capability_id` when it names another capability (the
 * runtime rewrites the compensating action to it), else the capability
 * itself. Undefined when the capability supports no compensation.
 */
export function compensationTarget(capability: Capability): string | undefined {
  const comp = capability.compensation;
  if (comp?.mode !== 'supported' && comp?.mode !== 'best_effort') return undefined;
  return comp.compensation_capability_id ?? capability.id;
}

/** A compensation capability found outside the manifest being admitted. */
export interface ResolvedCapability {
  readonly capability: Capability;
  readonly implementation_support: ImplementationSupport;
}

export interface AdmissionOptions {
  /**
   * Resolves a compensation capability that is not in the manifest (e.g.
   * another connector's, from the runtime's registry). Without it, such a
   * capability is not resolvable and the naming capability is not admitted.
   */
  readonly resolve_capability?: (capability_id: string) => ResolvedCapability | undefined;
}

/**
 * The flags a capability's contract requires OF ITSELF, each with the rule
 * that requires it. A supported compensation sent to another capability
 * (`compensation_capability_id`) requires `compensation` of that capability
 * instead (checked by admitManifest).
 */
export function requiredFlags(capability: Capability): { flag: ImplementationFlag; rule: AdmissionRule }[] {
  const out: { flag: ImplementationFlag; rule: AdmissionRule }[] = [];
  // Resources are not required to declare callable invocation.
  if (capability.kind !== 'resource') out.push({ flag: 'invocation', rule: ADMISSION_RULES.invocation });
  if (capability.execution?.supports_cancel === true) out.push({ flag: 'cancellation', rule: ADMISSION_RULES.cancellation });
  if (capability.execution?.supports_streaming === true) out.push({ flag: 'streaming', rule: ADMISSION_RULES.streaming });
  if (capability.execution?.supports_retry === true) out.push({ flag: 'retry', rule: ADMISSION_RULES.retry });
  if (capability.transaction !== undefined) out.push({ flag: 'transaction', rule: ADMISSION_RULES.transaction });
  if (capability.transaction?.modes.includes('reconcile') === true) out.push({ flag: 'reconciliation', rule: ADMISSION_RULES.reconciliation });
  if (compensationTarget(capability) === capability.id) out.push({ flag: 'compensation', rule: ADMISSION_RULES.compensation });
  if (capability.approval?.required === true) out.push({ flag: 'approval', rule: ADMISSION_RULES.approval });
  if (capability.credentials?.required === true) out.push({ flag: 'credentials', rule: ADMISSION_RULES.credentials });
  return out;
}

function lookup(source: SupportSource, id: string): unknown {
  if (typeof source === 'function') return source(id);
  if (typeof (source as { implementation_support?: unknown }).implementation_support === 'function') {
    return (source as Pick<FrozenConnector, 'implementation_support'>).implementation_support(id);
  }
  const rec = source as Readonly<Record<string, unknown>>;
  return Object.hasOwn(rec, id) ? rec[id] : undefined;
}

function sameFlags(a: ImplementationSupport, b: ImplementationSupport): boolean {
  return IMPLEMENTATION_FLAGS.every((f) => a[f] === b[f]);
}

/**
 * Admits a manifest. `support` defaults to the manifest's own
 * implementation_support; when given (e.g. the connector itself), the
 * manifest's records must also equal it.
 *
 * A capability whose supported compensation names another capability
 * (`compensation_capability_id`) needs `compensation` on THAT capability,
 * where the runtime sends the compensating action: found in the same
 * manifest, or through `options.resolve_capability`; otherwise it is not
 * admitted (`the compensation capability is in the connector or resolvable`).
 */
export function admitManifest(manifest: ConnectorManifest | unknown, support?: SupportSource, options: AdmissionOptions = {}): AdmissionReport {
  const parsed = ConnectorManifestSchema.safeParse(manifest);
  if (!parsed.success) {
    const issues: AdmissionIssue[] = parsed.error.issues.slice(0, 50).map((i) => ({
      rule: ADMISSION_RULES.manifest_schema,
      detail: `${renderPath(i.path)}: ${i.message}`,
    }));
    return { admitted: false, issues, capabilities: [] };
  }
  const m = parsed.data;
  const issues: AdmissionIssue[] = [];
  const admitted: AdmittedCapability[] = [];
  const seen = new Set<string>();

  for (const capability of m.capabilities) {
    const id = capability.id;
    const own: AdmissionIssue[] = [];
    if (seen.has(id)) own.push({ capability_id: id, rule: ADMISSION_RULES.duplicate_capability });
    seen.add(id);

    const declared = lookup(support ?? m.implementation_support, id);
    let record: ImplementationSupport | undefined;
    if (declared === undefined || declared === null) {
      if (capability.kind !== 'resource') own.push({ capability_id: id, rule: ADMISSION_RULES.support_record });
    } else {
      const exact = ImplementationSupportSchema.safeParse(declared);
      if (exact.success) record = exact.data;
      else own.push({ capability_id: id, rule: ADMISSION_RULES.exact_record, detail: exact.error.issues.map((i) => renderPath(i.path) || i.code).join(', ') });
    }
    if (support !== undefined && record !== undefined) {
      const inManifest = m.implementation_support[id];
      if (inManifest === undefined || !sameFlags(inManifest, record)) {
        own.push({ capability_id: id, rule: ADMISSION_RULES.record_mismatch });
      }
    }
    const effective = record ?? NO_IMPLEMENTATION_SUPPORT;
    for (const { flag, rule } of requiredFlags(capability)) {
      if (!effective[flag]) own.push({ capability_id: id, rule, flag });
    }
    const target = compensationTarget(capability);
    if (target !== undefined && target !== id) {
      const inManifest = m.capabilities.some((c) => c.id === target);
      let targetSupport: ImplementationSupport | undefined;
      if (inManifest) {
        const exact = ImplementationSupportSchema.safeParse(lookup(support ?? m.implementation_support, target));
        targetSupport = exact.success ? exact.data : NO_IMPLEMENTATION_SUPPORT;
      } else {
        const resolved = options.resolve_capability?.(target);
        const exact = resolved !== undefined ? ImplementationSupportSchema.safeParse(resolved.implementation_support) : undefined;
        targetSupport = exact === undefined ? undefined : exact.success ? exact.data : NO_IMPLEMENTATION_SUPPORT;
      }
      if (targetSupport === undefined) own.push({ capability_id: id, rule: ADMISSION_RULES.compensation_target, detail: `compensation capability ${target}` });
      else if (!targetSupport.compensation)
        own.push({ capability_id: id, rule: ADMISSION_RULES.compensation, flag: 'compensation', detail: `compensation capability ${target}` });
    }
    issues.push(...own);
    if (own.length === 0) admitted.push({ capability_id: id, capability, implementation_support: effective });
  }
  return { admitted: issues.length === 0, issues, capabilities: admitted };
}

/**
 * Discovers a connector's manifest and admits it against the connector's own
 * implementation_support declarations. A discovery failure is reported as an
 * issue, not thrown.
 */
export async function admitConnector(connector: FrozenConnector, ctx: ConnectorContext = {}): Promise<AdmissionReport & { manifest?: ConnectorManifest }> {
  let manifest: ConnectorManifest;
  try {
    manifest = await connector.discover(ctx);
  } catch {
    return { admitted: false, issues: [{ rule: ADMISSION_RULES.discovery }], capabilities: [] };
  }
  return { ...admitManifest(manifest, connector), manifest };
}

/** One line per issue, for logs and error messages. */
export function formatAdmissionIssue(issue: AdmissionIssue): string {
  const where = issue.capability_id ? `${issue.capability_id}: ` : '';
  const flag = issue.flag ? ` (flag ${issue.flag} is false)` : '';
  const detail = issue.detail ? ` [${issue.detail}]` : '';
  return `${where}${issue.rule}${flag}${detail}`;
}
