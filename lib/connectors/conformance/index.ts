/**
 * The connector conformance kit (issue 3, §10). See README.md next to this
 * file. The vitest wrapper lives in ./vitest.ts (import it from test code).
 */
export * from './rules.js';
export * from './subject.js';
export { runConformance, type RunConformanceOptions } from './run.js';
export {
  AttemptRecorder,
  Evidence,
  PlantedCredentialProvider,
  captureConsole,
  conformanceAttempt,
  conformanceTrustedState,
  describeThrown,
  secretNeedles,
  type ConformanceContextOptions,
  type Outcome,
} from './harness.js';
