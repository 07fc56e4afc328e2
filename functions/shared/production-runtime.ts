/**
 * The runtime the deployed HTTP handlers use: the container-wide Runtime of
 * the composition root (./bootstrap.ts `getRuntime`, built lazily from the
 * function environment on the first invocation; in-process hosts install
 * their own with `installRuntime`).
 *
 * The assignment below is the compile-time check that the Runtime satisfies
 * the edge's RuntimeApi (./runtime-api.ts). If the two drift, this line is
 * where tsc says so; adapt here, not in the handlers.
 */
import { getRuntime } from './bootstrap.js';
import type { RuntimeApi } from './runtime-api.js';

export async function productionRuntime(): Promise<RuntimeApi> {
  const runtime: RuntimeApi = await getRuntime();
  return runtime;
}
