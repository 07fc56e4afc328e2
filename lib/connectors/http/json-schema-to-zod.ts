/**
 * JSON Schema (2020-12 subset) → zod/mini validators, for the declarative HTTP
 * connector's capability input/output schemas (compile.ts).
 *
 * Why our own: classic zod's `fromJSONSchema` is the only converter zod ships,
 * and zod/mini has none. Importing it made every function that composes the
 * connectors (the submit's first execute, the invoke worker, MCP tools/call)
 * load a 141 KiB classic-zod copy (docs/bench/analysis.md "Issue 22: no classic
 * zod at run time"). This file builds the same zod core schemas through zod/mini.
 * The bundling builds it apart with its own copy of the core it uses
 * (infra/bundling.ts jsonSchemaConverterApartPlugin): keep its imports to
 * zod/mini alone.
 *
 * The subset (docs: lib/connectors/http/README.md "JSON Schemas"):
 * - `type` (a name or an array of names: string, number, integer, boolean,
 *   null, object, array); `enum` / `const` of strings, numbers, booleans, null;
 * - strings: `minLength`, `maxLength`, `pattern` (unanchored, as JSON Schema),
 *   `format` ∈ FORMATS;
 * - numbers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`
 *   (numbers, draft 6+), `multipleOf`;
 * - objects: `properties`, `required`, `additionalProperties` (boolean or
 *   schema; absent = any extra key allowed and kept), `minProperties`,
 *   `maxProperties`;
 * - arrays: `items` (a schema), `prefixItems`, `minItems`, `maxItems`,
 *   `uniqueItems`;
 * - `anyOf`, `oneOf`, `allOf`; local `$ref` (`#`, `#/$defs/…`,
 *   `#/definitions/…`, with `$defs` / `definitions` at the root; recursion ok);
 * - annotations, ignored: `$schema`, `$id`, `$comment`, `title`,
 *   `description`, `default`, `examples`, `deprecated`, `readOnly`,
 *   `writeOnly`, `contentEncoding`, `contentMediaType`, and `x-…` extensions.
 *
 * Everything else is refused with UnsupportedJsonSchemaError (compile.ts turns
 * it into `connector.definition_invalid`): unknown keywords (so a typo such as
 * `requried` cannot silently accept anything), unknown formats, `not`,
 * `if`/`then`/`else`, `patternProperties`, draft-7 array `items`, remote refs,
 * `$ref` with sibling keywords, non-primitive `enum`/`const` values, and a type
 * keyword without a `type` that declares its type (`{ "minLength": 1 }` alone, or
 * `{ "type": "integer", "minLength": 1 }`): those would constrain nothing.
 *
 * Where it differs from `fromJSONSchema`, it follows JSON Schema: `default` is an
 * annotation (it does not fill values, nor make a required property optional);
 * `required` names not in `properties` are still required; `type` and
 * `enum`/`const` together both apply; `minItems`/`maxItems` apply without
 * `items` too; a required property, or a `prefixItems` position below
 * `minItems`, whose schema accepts anything (`{}`) must still be present.
 * Otherwise the zod constructs, and so the
 * accept/reject and the issue paths, are fromJSONSchema's (property-tested in
 * test/unit/connectors/http/json-schema-to-zod.test.ts).
 */
import * as z from 'zod/mini';

type Schema = z.core.$ZodType;
type Literal = string | number | boolean | null;

/** A schema outside the supported subset; `pointer` is where in the schema (RFC 6901). */
export class UnsupportedJsonSchemaError extends Error {
  override readonly name = 'UnsupportedJsonSchemaError';
  constructor(
    readonly pointer: string,
    readonly reason: string,
  ) {
    super(`${pointer === '' ? '/' : pointer}: ${reason}`);
  }
}

const ANNOTATIONS = new Set([
  '$schema',
  '$id',
  '$comment',
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  'contentEncoding',
  'contentMediaType',
]);

/** Keywords that only constrain one kind of value, by the `type` names they apply to. */
const TYPED_KEYWORDS: Readonly<Record<string, readonly string[]>> = {
  minLength: ['string'],
  maxLength: ['string'],
  pattern: ['string'],
  format: ['string'],
  minimum: ['number', 'integer'],
  maximum: ['number', 'integer'],
  exclusiveMinimum: ['number', 'integer'],
  exclusiveMaximum: ['number', 'integer'],
  multipleOf: ['number', 'integer'],
  properties: ['object'],
  required: ['object'],
  additionalProperties: ['object'],
  minProperties: ['object'],
  maxProperties: ['object'],
  items: ['array'],
  prefixItems: ['array'],
  minItems: ['array'],
  maxItems: ['array'],
  uniqueItems: ['array'],
};

const GENERAL_KEYWORDS = new Set(['type', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref', '$defs', 'definitions']);

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);

/** RFC 3339 full-time (fromJSONSchema's, narrower than z.iso.time()). */
const FULL_TIME = /^(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/** The supported `format` values and their zod checks (the mapping fromJSONSchema uses). */
const FORMATS: Readonly<Record<string, () => z.core.$ZodCheck<string>>> = {
  email: () => z.email(),
  uri: () => z.url(),
  uuid: () => z.uuid(),
  'date-time': () => z.iso.datetime({ offset: true }),
  date: () => z.iso.date(),
  time: () => z.regex(FULL_TIME),
  duration: () => z.iso.duration(),
  hostname: () => z.hostname(),
  ipv4: () => z.ipv4(),
  ipv6: () => z.ipv6(),
};

interface Context {
  readonly root: Record<string, unknown>;
  /** Converted `$ref` targets, by reference. */
  readonly refs: Map<string, Schema>;
  /** References being converted (a reference met again inside is recursive: z.lazy). */
  readonly converting: Set<string>;
}

/**
 * Converts a JSON Schema (an object or a boolean) into a zod/mini schema that
 * accepts exactly the JSON values the schema accepts. Throws
 * UnsupportedJsonSchemaError for anything outside the subset above.
 */
export function jsonSchemaToZod(schema: unknown): Schema {
  if (isObject(schema)) {
    const ctx: Context = { root: schema, refs: new Map(), converting: new Set() };
    const converted = convert(schema, '', ctx);
    // Every definition is checked, referenced or not: nothing in the document escapes the subset.
    for (const key of ['$defs', 'definitions']) {
      const defs = schema[key];
      if (isObject(defs)) for (const name of Object.keys(defs)) reference(`#/${key}/${escapeToken(name)}`, `/${key}`, ctx);
    }
    return converted;
  }
  return convert(schema, '', { root: {}, refs: new Map(), converting: new Set() });
}

function refuse(pointer: string, reason: string): never {
  throw new UnsupportedJsonSchemaError(pointer, reason);
}

function escapeToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isLiteral(v: unknown): v is Literal {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

function nonNegativeInteger(s: Record<string, unknown>, key: string, at: string): number | undefined {
  const v = s[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) refuse(`${at}/${key}`, `${key} must be a non-negative integer`);
  return v;
}

function finiteNumber(s: Record<string, unknown>, key: string, at: string): number | undefined {
  const v = s[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) refuse(`${at}/${key}`, `${key} must be a number`);
  return v;
}

function schemaList(s: Record<string, unknown>, key: string, at: string, ctx: Context): Schema[] | undefined {
  const v = s[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length === 0) refuse(`${at}/${key}`, `${key} must be a non-empty array of schemas`);
  return v.map((sub, i) => convert(sub, `${at}/${key}/${i}`, ctx));
}

function convert(schema: unknown, at: string, ctx: Context): Schema {
  if (schema === true) return z.unknown();
  if (schema === false) return z.never();
  if (!isObject(schema)) return refuse(at, 'a schema must be an object or a boolean');

  for (const key of Object.keys(schema)) {
    if (ANNOTATIONS.has(key) || GENERAL_KEYWORDS.has(key) || key in TYPED_KEYWORDS || key.startsWith('x-')) continue;
    refuse(`${at}/${escapeToken(key)}`, `the keyword ${key} is not supported`);
  }
  for (const key of ['$defs', 'definitions']) {
    if (schema[key] === undefined) continue;
    if (at !== '') refuse(`${at}/${key}`, `${key} is supported at the root only`);
    if (!isObject(schema[key])) refuse(`/${key}`, `${key} must be an object of schemas`);
  }

  if (schema.$ref !== undefined) {
    const siblings = Object.keys(schema).filter(
      (k) => !ANNOTATIONS.has(k) && !k.startsWith('x-') && k !== '$ref' && !(at === '' && (k === '$defs' || k === 'definitions')),
    );
    if (siblings.length > 0) refuse(`${at}/$ref`, `$ref with sibling keywords (${siblings.join(', ')}) is not supported: put them in an allOf`);
    return reference(schema.$ref, at, ctx);
  }

  const types = typeNames(schema, at);
  for (const key of Object.keys(schema)) {
    const applies = TYPED_KEYWORDS[key];
    if (applies === undefined) continue;
    if (types === undefined || !applies.some((t) => types.includes(t))) {
      refuse(`${at}/${key}`, `${key} constrains ${applies.join(' or ')} values: the schema must declare that type`);
    }
  }

  let base: Schema | undefined;
  if (types !== undefined) {
    const typed = types.map((t) => typedSchema(t, schema, at, ctx));
    base = typed.length === 1 ? typed[0] : z.union(typed);
  }

  if (schema.enum !== undefined || schema.const !== undefined) {
    let values: Literal[] | undefined;
    if (schema.enum !== undefined) {
      if (!Array.isArray(schema.enum)) refuse(`${at}/enum`, 'enum must be an array');
      schema.enum.forEach((v, i) => {
        if (!isLiteral(v)) refuse(`${at}/enum/${i}`, 'enum values must be strings, numbers, booleans or null');
      });
      values = schema.enum as Literal[];
    }
    if (schema.const !== undefined) {
      const c = schema.const;
      if (!isLiteral(c)) refuse(`${at}/const`, 'const must be a string, a number, a boolean or null');
      values = values === undefined ? [c] : values.filter((v) => v === c);
    }
    // The sibling keywords still apply: keep the values they accept (a value they reject can never match).
    const inType = base;
    const kept = (values as Literal[]).filter((v) => inType === undefined || z.safeParse(inType, v).success);
    base = kept.length === 0 ? z.never() : z.literal(kept);
  }

  // Composition applies on top of the rest, in fromJSONSchema's order: base ∧ anyOf ∧ oneOf ∧ allOf…
  const parts: Schema[] = base !== undefined ? [base] : [];
  const anyOf = schemaList(schema, 'anyOf', at, ctx);
  if (anyOf !== undefined) parts.push(z.union(anyOf));
  const oneOf = schemaList(schema, 'oneOf', at, ctx);
  if (oneOf !== undefined) parts.push(z.xor(oneOf));
  const allOf = schemaList(schema, 'allOf', at, ctx);
  if (allOf !== undefined) parts.push(...allOf);

  const [first, ...rest] = parts;
  if (first === undefined) return z.unknown();
  return rest.reduce<Schema>((acc, s) => z.intersection(acc, s), first);
}

function typeNames(schema: Record<string, unknown>, at: string): string[] | undefined {
  const type = schema.type;
  if (type === undefined) return undefined;
  const names = Array.isArray(type) ? type : [type];
  if (names.length === 0) refuse(`${at}/type`, 'type must name at least one type');
  names.forEach((t, i) => {
    if (typeof t !== 'string' || !TYPES.has(t)) refuse(Array.isArray(type) ? `${at}/type/${i}` : `${at}/type`, `unknown type ${JSON.stringify(t)}`);
  });
  if (new Set(names).size !== names.length) refuse(`${at}/type`, 'type names must be unique');
  return names as string[];
}

function typedSchema(type: string, s: Record<string, unknown>, at: string, ctx: Context): Schema {
  switch (type) {
    case 'string':
      return stringSchema(s, at);
    case 'number':
    case 'integer':
      return numberSchema(type, s, at);
    case 'boolean':
      return z.boolean();
    case 'null':
      return z.null();
    case 'object':
      return objectSchema(s, at, ctx);
    default:
      return arraySchema(s, at, ctx);
  }
}

function stringSchema(s: Record<string, unknown>, at: string): Schema {
  const checks: z.core.$ZodCheck<string>[] = [];
  if (s.format !== undefined) {
    const format = typeof s.format === 'string' ? FORMATS[s.format] : undefined;
    if (format === undefined || !Object.hasOwn(FORMATS, s.format as string)) {
      refuse(`${at}/format`, `format ${JSON.stringify(s.format)} is not supported (supported: ${Object.keys(FORMATS).join(', ')})`);
    }
    checks.push(format());
  }
  const minLength = nonNegativeInteger(s, 'minLength', at);
  if (minLength !== undefined) checks.push(z.minLength(minLength));
  const maxLength = nonNegativeInteger(s, 'maxLength', at);
  if (maxLength !== undefined) checks.push(z.maxLength(maxLength));
  if (s.pattern !== undefined) {
    if (typeof s.pattern !== 'string') refuse(`${at}/pattern`, 'pattern must be a string');
    let regex: RegExp;
    try {
      regex = new RegExp(s.pattern);
    } catch {
      return refuse(`${at}/pattern`, 'pattern is not a valid regular expression');
    }
    checks.push(z.regex(regex));
  }
  return checks.length > 0 ? z.string().check(...checks) : z.string();
}

function numberSchema(type: 'number' | 'integer', s: Record<string, unknown>, at: string): Schema {
  const checks: z.core.$ZodCheck<number>[] = type === 'integer' ? [z.int()] : [];
  const minimum = finiteNumber(s, 'minimum', at);
  if (minimum !== undefined) checks.push(z.gte(minimum));
  const maximum = finiteNumber(s, 'maximum', at);
  if (maximum !== undefined) checks.push(z.lte(maximum));
  const exclusiveMinimum = finiteNumber(s, 'exclusiveMinimum', at);
  if (exclusiveMinimum !== undefined) checks.push(z.gt(exclusiveMinimum));
  const exclusiveMaximum = finiteNumber(s, 'exclusiveMaximum', at);
  if (exclusiveMaximum !== undefined) checks.push(z.lt(exclusiveMaximum));
  const multipleOf = finiteNumber(s, 'multipleOf', at);
  if (multipleOf !== undefined) {
    if (multipleOf <= 0) refuse(`${at}/multipleOf`, 'multipleOf must be greater than 0');
    checks.push(z.multipleOf(multipleOf));
  }
  return checks.length > 0 ? z.number().check(...checks) : z.number();
}

function objectSchema(s: Record<string, unknown>, at: string, ctx: Context): Schema {
  const properties = s.properties ?? {};
  if (!isObject(properties)) refuse(`${at}/properties`, 'properties must be an object of schemas');
  const required = s.required ?? [];
  if (!Array.isArray(required) || !required.every((k) => typeof k === 'string') || new Set(required).size !== required.length) {
    refuse(`${at}/required`, 'required must be an array of unique strings');
  }
  const requiredSet = new Set<string>(required);
  const shape: Record<string, Schema> = {};
  const define = (key: string, value: Schema): void => {
    // defineProperty: a `__proto__` property becomes an own key, not the prototype.
    Object.defineProperty(shape, key, { value, enumerable: true, writable: true, configurable: true });
  };
  for (const [key, sub] of Object.entries(properties)) {
    const converted = convert(sub, `${at}/properties/${escapeToken(key)}`, ctx);
    // Required: present. A schema that accepts anything (`{}`, `true`, an anyOf holding one) is one zod would let be absent.
    define(key, !requiredSet.has(key) ? z.optional(converted) : converted._zod.optin === 'optional' ? z.nonoptional(converted) : converted);
  }
  // A required name without a property schema: present, any value.
  for (const key of requiredSet) if (!Object.hasOwn(properties, key)) define(key, z.nonoptional(z.unknown()));

  const extra = s.additionalProperties;
  let object: Schema;
  if (extra === false) object = z.strictObject(shape);
  else if (extra === undefined || extra === true) object = z.looseObject(shape);
  else object = z.catchall(z.object(shape), convert(extra, `${at}/additionalProperties`, ctx));

  const minProperties = nonNegativeInteger(s, 'minProperties', at);
  const maxProperties = nonNegativeInteger(s, 'maxProperties', at);
  if (minProperties === undefined && maxProperties === undefined) return object;
  // Counted on the instance before the object parse, which ends the parse when it fails (as fromJSONSchema's guard).
  const guard = instanceGuard().check(
    z.superRefine((value, payload) => {
      if (!isObject(value)) return;
      const count = Object.keys(value).length;
      if (minProperties !== undefined && count < minProperties) {
        payload.addIssue({
          code: 'too_small',
          origin: 'object',
          minimum: minProperties,
          inclusive: true,
          input: value,
          message: `Too small: expected object to have >=${minProperties} properties`,
          continue: true,
        });
      }
      if (maxProperties !== undefined && count > maxProperties) {
        payload.addIssue({
          code: 'too_big',
          origin: 'object',
          maximum: maxProperties,
          inclusive: true,
          input: value,
          message: `Too big: expected object to have <=${maxProperties} properties`,
          continue: true,
        });
      }
    }),
  );
  return z.pipe(guard, object);
}

function arraySchema(s: Record<string, unknown>, at: string, ctx: Context): Schema {
  const minItems = nonNegativeInteger(s, 'minItems', at);
  const maxItems = nonNegativeInteger(s, 'maxItems', at);
  const checks: z.core.$ZodCheck<unknown[]>[] = [];
  if (minItems !== undefined) checks.push(z.minLength(minItems));
  if (maxItems !== undefined) checks.push(z.maxLength(maxItems));
  if (Array.isArray(s.items)) refuse(`${at}/items`, 'items as an array (draft 7 tuples) is not supported: use prefixItems');

  let array: Schema;
  if (s.prefixItems !== undefined) {
    if (!Array.isArray(s.prefixItems) || s.prefixItems.length === 0) refuse(`${at}/prefixItems`, 'prefixItems must be a non-empty array of schemas');
    // Positions past minItems may be absent.
    const positional = s.prefixItems.map((sub, i) => {
      const converted = convert(sub, `${at}/prefixItems/${i}`, ctx);
      if (i >= (minItems ?? 0)) return z.optional(converted);
      // Required: present. A tuple with a rest (`items` not false) hands an absent position to its schema as
      // `undefined`, which one that accepts anything (`{}`, `true`) passes, and the parsed array then holds it:
      // fromJSONSchema accepts `[]` for `prefixItems: [{}], minItems: 1` so. `nonoptional` adds an issue only where
      // its schema passed `undefined`. Without a rest, zod counts the required positions itself.
      return s.items === false ? converted : z.nonoptional(converted);
    }) as [Schema, ...Schema[]];
    const tuple =
      s.items === false
        ? z.tuple(positional)
        : z.tuple(positional, s.items === undefined || s.items === true ? z.unknown() : convert(s.items, `${at}/items`, ctx));
    array = checks.length > 0 ? tuple.check(...checks) : tuple;
  } else {
    const element = s.items === undefined ? z.unknown() : convert(s.items, `${at}/items`, ctx);
    const list = z.array(element);
    array = checks.length > 0 ? list.check(...checks) : list;
  }

  if (s.uniqueItems === undefined || s.uniqueItems === false) return array;
  if (s.uniqueItems !== true) refuse(`${at}/uniqueItems`, 'uniqueItems must be a boolean');
  // Checked on the instance before the array parse, which ends the parse when it fails (as fromJSONSchema's guard).
  const guard = instanceGuard().check(
    z.superRefine((value, payload) => {
      if (!Array.isArray(value)) return;
      const seen = new Map<string, number>();
      value.forEach((item, i) => {
        const key = canonicalKey(item);
        const first = seen.get(key);
        if (first === undefined) {
          seen.set(key, i);
          return;
        }
        payload.addIssue({
          code: 'custom',
          message: `Array items must be unique: element at index ${i} duplicates the one at index ${first}`,
          input: value,
          path: [i],
          continue: true,
        });
      });
    }),
  );
  return z.pipe(guard, array);
}

/**
 * The input side of a guard piped before an object or array schema: an identity
 * transform, not z.unknown(), which zod would take for an optional value (a
 * required property or tuple position holding the pipe could then be absent).
 */
function instanceGuard(): z.ZodMiniTransform<unknown, unknown> {
  return z.transform((value: unknown) => value);
}

/** Equal keys exactly for JSON values uniqueItems calls equal (object key order ignored). */
function canonicalKey(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalKey).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalKey(value[k])}`)
      .join(',')}}`;
  }
  return typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? 'undefined');
}

function reference(ref: unknown, at: string, ctx: Context): Schema {
  if (typeof ref !== 'string') return refuse(`${at}/$ref`, '$ref must be a string');
  const known = ctx.refs.get(ref);
  if (known !== undefined) return known;
  if (ctx.converting.has(ref)) {
    // A recursive reference: resolved once its target has been converted.
    return z.lazy(() => ctx.refs.get(ref) as Schema);
  }
  let target: unknown;
  let pointer: string;
  if (ref === '#') {
    target = ctx.root;
    pointer = '';
  } else {
    const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
    if (m === null) return refuse(`${at}/$ref`, `only local references (#, #/$defs/name, #/definitions/name) are supported`);
    const name = (m[2] as string).replace(/~1/g, '/').replace(/~0/g, '~');
    const defs = ctx.root[m[1] as string];
    target = isObject(defs) && Object.hasOwn(defs, name) ? defs[name] : undefined;
    if (target === undefined) return refuse(`${at}/$ref`, `reference ${ref} not found`);
    pointer = `/${m[1]}/${m[2]}`;
  }
  ctx.converting.add(ref);
  const converted = convert(target, pointer, ctx);
  ctx.converting.delete(ref);
  ctx.refs.set(ref, converted);
  return converted;
}
