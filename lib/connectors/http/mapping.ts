/**
 * Applies the declarative mappings: action input → request (path, query,
 * headers, body) and provider response → output. Pure functions.
 */
import type { JsonObject, JsonValue } from '@aip-runtime/connector-sdk/protocol';
import type { ContextValueName, Mapping, RequestSpec, ValueSource } from './config.js';
import { getPointer, parseTemplate, setPointer } from './pointer.js';

/** What a mapping reads: its document (input or response) and trusted context values. */
export interface MappingScope {
  readonly document: unknown;
  context(name: ContextValueName): string | undefined;
}

/** A required value is missing or has the wrong shape. Carries the target only, never values. */
export class MappingError extends Error {
  constructor(
    readonly target: string,
    readonly reason: 'missing' | 'not_scalar' | 'invalid_target',
  ) {
    super(`mapping ${reason} at ${target}`);
    this.name = 'MappingError';
  }
}

function cloneJson(v: JsonValue): JsonValue {
  return v !== null && typeof v === 'object' ? (structuredClone(v) as JsonValue) : v;
}

function scalarText(v: JsonValue | undefined, target: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === undefined) throw new MappingError(target, 'missing');
  throw new MappingError(target, 'not_scalar');
}

/** Renders a template; every placeholder must resolve to a scalar. `encode` is applied to placeholder values only. */
export function renderTemplate(template: string, scope: MappingScope, target: string, encode: (s: string) => string = (s) => s): string {
  let out = '';
  for (const part of parseTemplate(template)) {
    if ('text' in part) out += part.text;
    else if ('pointer' in part) out += encode(scalarText(getPointer(scope.document, part.pointer), target));
    else out += encode(scalarText(scope.context(part.context as ContextValueName), target));
  }
  return out;
}

/** Resolves one source; undefined means "omit" (an optional value that is missing). */
export function resolveSource(src: ValueSource, scope: MappingScope, target: string): JsonValue | undefined {
  if ('value' in src) return cloneJson(src.value);
  if ('template' in src) return renderTemplate(src.template, scope, target);
  if ('context' in src) {
    const v = scope.context(src.context);
    if (v === undefined && src.optional !== true) throw new MappingError(target, 'missing');
    return v;
  }
  const v = getPointer(scope.document, src.from);
  if (v !== undefined) return cloneJson(v);
  if (src.default !== undefined) return cloneJson(src.default);
  if (src.optional === true) return undefined;
  throw new MappingError(target, 'missing');
}

/** Builds a JSON document from a mapping (target pointer → source), starting from `{}`. */
export function applyMapping(mapping: Mapping, scope: MappingScope): JsonValue {
  let doc: JsonValue = {};
  for (const [target, src] of Object.entries(mapping)) {
    const v = resolveSource(src, scope, target);
    if (v === undefined) continue;
    try {
      doc = setPointer(doc, target, v);
    } catch {
      throw new MappingError(target, 'invalid_target');
    }
  }
  return doc;
}

/** A request ready to send (no credentials yet: the transport adds them at the edge). */
export interface BuiltRequest {
  readonly method: RequestSpec['method'];
  /** The configured path template (logged instead of the rendered path, which may carry input values). */
  readonly route: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: JsonValue;
}

/** Joins base URL and rendered path, adds query and headers, maps the body. */
export function buildRequest(baseUrl: string, spec: RequestSpec, scope: MappingScope): BuiltRequest {
  const path = renderTemplate(spec.path, scope, 'path', encodeURIComponent);
  const url = new URL(baseUrl.replace(/\/+$/, '') + path);
  for (const [name, src] of Object.entries(spec.query ?? {})) {
    const v = resolveSource(src, scope, `query.${name}`);
    if (v === undefined) continue;
    const values = Array.isArray(v) ? v : [v];
    for (const item of values) url.searchParams.append(name, scalarText(item, `query.${name}`));
  }
  const headers: Record<string, string> = {};
  for (const [name, src] of Object.entries(spec.headers ?? {})) {
    const v = resolveSource(src, scope, `headers.${name}`);
    if (v === undefined) continue;
    const text = scalarText(v, `headers.${name}`);
    if (/[\r\n\0]/.test(text)) throw new MappingError(`headers.${name}`, 'not_scalar');
    headers[name.toLowerCase()] = text;
  }
  const body = spec.body !== undefined ? applyMapping(spec.body, scope) : undefined;
  return { method: spec.method, route: spec.path, url, headers, ...(body !== undefined ? { body } : {}) };
}

/** A short, JSON-safe scalar for evidence (strings capped), or undefined. */
export function evidenceScalar(v: JsonValue | undefined): string | number | boolean | undefined {
  if (typeof v === 'string') return v.length <= 128 ? v : undefined;
  if (typeof v === 'number' || typeof v === 'boolean') return v;
  return undefined;
}

/** The preview a `plan: {preview: true}` returns: what commit would send, minus credentials. */
export function requestPreview(req: BuiltRequest, idempotencyHeader: string | undefined): JsonObject {
  const query: JsonObject = {};
  for (const [k, v] of req.url.searchParams) query[k] = v;
  return {
    method: req.method,
    route: req.route,
    path: req.url.pathname,
    query,
    ...(req.body !== undefined ? { body: req.body } : {}),
    ...(idempotencyHeader !== undefined ? { idempotency_header: idempotencyHeader } : {}),
  };
}
