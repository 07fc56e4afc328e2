/**
 * Pipeline step 3: capability lookup, then input schema validation, then the
 * capability's declared support for the requested transaction mode.
 */
import { AipError } from '../../errors/aip-error.js';
import type { Action, Capability, TransactionMode } from '../../protocol/index.js';
import type { CapabilityRegistry, RegisteredCapability } from '../registry.js';

/** Looks the capability up (`capability.not_found`) and validates the input (`runtime.input_invalid`). */
export function lookupAndValidate(registry: CapabilityRegistry, action: Action): RegisteredCapability {
  const reg = registry.lookup(action.capability_id);
  const issues = reg.validateInput(action.input);
  if (issues.length > 0) {
    throw new AipError('runtime.input_invalid', undefined, { details: { capability_id: reg.capability_id, issues: issues.map((i) => ({ path: i.path, keyword: i.keyword })) } });
  }
  return reg;
}

/**
 * The capability must declare the mode: its TransactionContract lists the
 * transaction modes; `compensate` is governed by the CompensationContract
 * (checked with the compensation rules), a plain invocation needs nothing.
 */
export function assertModeDeclared(capability: Capability, mode: TransactionMode | undefined): void {
  if (mode === undefined || mode === 'compensate') return;
  const modes = capability.transaction?.modes ?? [];
  if (!modes.includes(mode)) {
    throw new AipError('runtime.mode_unsupported', undefined, { details: { capability_id: capability.id, mode, declared_modes: [...modes] } });
  }
}

/** Step 7's static precondition: the capability requires an idempotency key. */
export function assertIdempotencyKey(capability: Capability, action: Action): void {
  if (capability.idempotency?.required === true && action.idempotency_key === undefined) {
    throw new AipError('runtime.idempotency_key_required', undefined, { details: { capability_id: capability.id, path: '/idempotency_key' } });
  }
}
