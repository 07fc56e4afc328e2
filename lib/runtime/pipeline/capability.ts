/**
 * Pipeline step 3: capability lookup, then input schema validation, then the
 * capability's declared support for the requested transaction mode.
 */
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { Action, Capability, TransactionMode } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { CapabilityRegistry, RegisteredCapability } from '../registry.js';

/**
 * Looks the capability up (`capability.not_found`) and validates the input (`runtime.input_invalid`).
 *
 * A compensate whose CompensationContract names another compensation
 * capability is rewritten to that capability before it reaches the connector
 * (modes/compensate.ts), with this same input: its input schema governs the
 * input. When that capability is not registered, admission fails later with
 * `runtime.compensation_capability_unavailable`.
 */
export function lookupAndValidate(registry: CapabilityRegistry, action: Action): RegisteredCapability {
  const reg = registry.lookup(action.capability_id);
  const alternate = action.transaction?.mode === 'compensate' ? reg.capability.compensation?.compensation_capability_id : undefined;
  const schemaOf = (alternate !== undefined && alternate !== reg.capability_id ? registry.find(alternate) : undefined) ?? reg;
  const issues = schemaOf.validateInput(action.input);
  if (issues.length > 0) {
    throw new AipError('runtime.input_invalid', undefined, {
      details: { capability_id: schemaOf.capability_id, issues: issues.map((i) => ({ path: i.path, keyword: i.keyword })) },
    });
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
