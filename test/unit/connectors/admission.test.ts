import { describe, expect, it } from 'vitest';
import type { Capability } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  ADMISSION_RULES,
  FrozenConnectorBase,
  admitConnector,
  admitManifest,
  formatAdmissionIssue,
  implementationSupport,
  requiredFlags,
  type ConnectorManifest,
  type ImplementationSupport,
} from '../../../packages/connector-sdk/src/index.js';
import { capability, execution } from './fixtures.js';

const ALL = implementationSupport({
  invocation: true,
  cancellation: true,
  streaming: true,
  retry: true,
  transaction: true,
  reconciliation: true,
  compensation: true,
  approval: true,
  credentials: true,
});

/** A capability that advertises every behaviour of the page's table. */
const everything: Capability = capability({
  id: 'cap.everything',
  execution: execution({ supports_cancel: true, supports_streaming: true, supports_retry: true }),
  transaction: { modes: ['plan', 'commit', 'reconcile'], dry_run_fidelity: 'full_simulation', requires_plan_before_commit: true },
  compensation: { mode: 'supported', approval_required: false },
  approval: { required: true },
  credentials: { required: true },
});

function manifest(capabilities: Capability[], implementation_support: Record<string, unknown>): ConnectorManifest {
  return { connector_id: 'demo', version: '1.0.0', capabilities, implementation_support: implementation_support as Record<string, ImplementationSupport> };
}

describe('manifest admission', () => {
  it('admits a capability whose flags cover every advertised behaviour', () => {
    const report = admitManifest(manifest([everything], { 'cap.everything': ALL }));
    expect(report).toMatchObject({ admitted: true, issues: [] });
    expect(report.capabilities.map((c) => c.capability_id)).toEqual(['cap.everything']);
    expect(report.capabilities[0]?.implementation_support).toEqual(ALL);
  });

  it('names one issue per missing claim and lists every one of them', () => {
    const report = admitManifest(manifest([everything], { 'cap.everything': implementationSupport() }));
    expect(report.admitted).toBe(false);
    expect(report.capabilities).toEqual([]);
    expect(report.issues).toEqual([
      { capability_id: 'cap.everything', rule: 'callable capability requires invocation', flag: 'invocation' },
      { capability_id: 'cap.everything', rule: 'execution.supports_cancel requires cancellation', flag: 'cancellation' },
      { capability_id: 'cap.everything', rule: 'execution.supports_streaming requires streaming', flag: 'streaming' },
      { capability_id: 'cap.everything', rule: 'execution.supports_retry requires retry', flag: 'retry' },
      { capability_id: 'cap.everything', rule: 'transaction contract requires transaction', flag: 'transaction' },
      { capability_id: 'cap.everything', rule: 'transaction mode reconcile requires reconciliation', flag: 'reconciliation' },
      { capability_id: 'cap.everything', rule: 'supported compensation requires compensation', flag: 'compensation' },
      { capability_id: 'cap.everything', rule: 'required approval requires approval', flag: 'approval' },
      { capability_id: 'cap.everything', rule: 'required credentials requires credentials', flag: 'credentials' },
    ]);
  });

  it('applies each table row on its own (one missing flag → exactly that issue)', () => {
    for (const { flag, rule } of requiredFlags(everything)) {
      const report = admitManifest(manifest([everything], { 'cap.everything': { ...ALL, [flag]: false } }));
      expect(report.issues).toEqual([{ capability_id: 'cap.everything', rule, flag }]);
    }
  });

  it('requires compensation for best_effort too, but not for not_required or rollback_not_supported', () => {
    const mk = (mode: 'supported' | 'best_effort' | 'not_required' | 'rollback_not_supported') =>
      capability({ compensation: { mode, approval_required: false } });
    expect(requiredFlags(mk('best_effort')).map((r) => r.flag)).toContain('compensation');
    expect(requiredFlags(mk('not_required')).map((r) => r.flag)).not.toContain('compensation');
    expect(requiredFlags(mk('rollback_not_supported')).map((r) => r.flag)).not.toContain('compensation');
  });

  it('does not require invocation (nor a support record) from a resource', () => {
    const resource = capability({ id: 'catalog.products', kind: 'resource' });
    expect(admitManifest(manifest([resource], {})).admitted).toBe(true);
    const secured = capability({ id: 'catalog.secured', kind: 'resource', credentials: { required: true } });
    expect(admitManifest(manifest([secured], {})).issues).toEqual([
      { capability_id: 'catalog.secured', rule: ADMISSION_RULES.credentials, flag: 'credentials' },
    ]);
  });

  it('reports a callable capability with no support record at all', () => {
    const report = admitManifest(manifest([capability()], {}), () => undefined);
    expect(report.issues).toEqual([
      { capability_id: 'payments.charge', rule: 'callable capability requires an implementation support record' },
      { capability_id: 'payments.charge', rule: 'callable capability requires invocation', flag: 'invocation' },
    ]);
  });

  it('demands an exact nine-flag record', () => {
    const { approval: _a, ...eight } = implementationSupport({ invocation: true });
    const report = admitManifest(manifest([capability()], {}), { 'payments.charge': { ...eight, bonus: true } });
    expect(report.issues.map((i) => i.rule)).toContain(ADMISSION_RULES.exact_record);
  });

  it('flags a manifest whose records differ from the connector declaration', () => {
    const m = manifest([capability()], { 'payments.charge': implementationSupport({ invocation: true, retry: true }) });
    const report = admitManifest(m, { implementation_support: () => implementationSupport({ invocation: true }) });
    expect(report.issues).toEqual([{ capability_id: 'payments.charge', rule: ADMISSION_RULES.record_mismatch }]);
  });

  it('reports duplicate capability IDs and schema problems', () => {
    expect(admitManifest(manifest([capability(), capability()], { 'payments.charge': ALL })).issues).toEqual([
      { capability_id: 'payments.charge', rule: ADMISSION_RULES.duplicate_capability },
    ]);
    const bad = admitManifest({ connector_id: 'demo', version: 'one', capabilities: [], implementation_support: {} });
    expect(bad.admitted).toBe(false);
    expect(bad.issues[0]?.rule).toBe(ADMISSION_RULES.manifest_schema);
  });

  it('formats issues as one readable line naming the rule', () => {
    expect(formatAdmissionIssue({ capability_id: 'c', rule: ADMISSION_RULES.cancellation, flag: 'cancellation' })).toBe(
      'c: execution.supports_cancel requires cancellation (flag cancellation is false)',
    );
  });
});

describe('admitConnector', () => {
  class Broken extends FrozenConnectorBase {
    readonly id = 'broken';
    async discover(): Promise<ConnectorManifest> {
      throw new Error('provider unreachable');
    }
    implementation_support() {
      return undefined;
    }
    async invoke_typed(): Promise<never> {
      throw new Error('nope');
    }
  }

  it('reports a discovery failure as an issue instead of throwing', async () => {
    await expect(admitConnector(new Broken())).resolves.toMatchObject({ admitted: false, issues: [{ rule: ADMISSION_RULES.discovery }] });
  });
});
