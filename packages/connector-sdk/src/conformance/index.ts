/**
 * The connector conformance kit: the public barrel, `aip-runtime/conformance`
 * (see README.md next to this file). The vitest wrapper is
 * `aip-runtime/conformance/vitest` (./vitest.ts): it imports vitest, this
 * barrel does not. The CLI is bin/aip-conformance.mjs (./cli.ts).
 */
export * from './rules.js';
export * from './subject.js';
export { DECOY_KINDS, type DecoyKind } from './decoys.js';
export { runConformance, CONFORMANCE_TENANT_ID, CONFORMANCE_ACCOUNT_ID, type RunConformanceOptions } from './run.js';
export { formatReport, type FormatReportOptions } from './report.js';
export { defineConformanceSubject, subjectsFromModule, type SubjectExport } from './module.js';
export {
  AttemptRecorder,
  Evidence,
  PlantedCredentialProvider,
  captureConsole,
  clientCancellation,
  conformanceAttempt,
  conformanceTrustedState,
  deadlineCancellation,
  describeThrown,
  secretNeedles,
  type ConformanceContextOptions,
  type LateUse,
  type Outcome,
  type PlantedResolution,
} from './harness.js';
