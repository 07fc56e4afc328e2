/**
 * Reading a provider's answer: whether a status counts as success, the
 * operation ID a response names, and the operation status a lookup reports.
 */
import type { JsonValue } from '@aip-runtime/connector-sdk/protocol';
import type { StatusLookup } from './config.js';
import { evidenceScalar } from './mapping.js';
import { getPointer } from './pointer.js';
import type { ProviderResponse } from './transport.js';

/** The configured success statuses, or any 2xx when none are configured. */
export function isSuccess(status: number, statuses: readonly number[] | undefined): boolean {
  return statuses !== undefined ? statuses.includes(status) : status >= 200 && status < 300;
}

/** A provider operation ID read from a response: a non-empty string, or a finite number as text. */
export function operationIdText(v: JsonValue | undefined): string | undefined {
  if (typeof v === 'string' && v.length > 0) return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

export type LookupStatus = { kind: 'succeeded' | 'failed' | 'pending'; res: ProviderResponse; provider_status: string | number | boolean | undefined };

/** Reads an operation status from a lookup answer: succeeded / failed per the lookup's lists, anything else pending. */
export function classifyStatus(res: ProviderResponse, status_pointer: string, lists: Pick<StatusLookup, 'succeeded' | 'failed'>): LookupStatus {
  const raw = getPointer(res.json, status_pointer);
  const provider_status = evidenceScalar(raw);
  if (typeof raw === 'string' && lists.succeeded.includes(raw)) return { kind: 'succeeded', res, provider_status };
  if (typeof raw === 'string' && lists.failed.includes(raw)) return { kind: 'failed', res, provider_status };
  return { kind: 'pending', res, provider_status };
}
