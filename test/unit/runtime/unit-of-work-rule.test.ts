/**
 * Keeps the write path single (issue 21): every durable change is a write
 * intent committed through the unit of work (lib/ports/unit-of-work.ts).
 *
 * - The store ports are read-only: no write method exists for a runtime step
 *   to call beside `commit`.
 * - Each intent kind is mapped once, by the store adapter that owns its item.
 * - No prepare/build pairs: an adapter builds a write in one function per intent.
 * - Only the DynamoDB adapter sends writes (lib/runtime never names a write command).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The method names an interface declares (`name(` at the start of a member line). */
function interfaceMethods(source: string, name: string): string[] {
  const start = source.indexOf(`export interface ${name} {`);
  if (start < 0) throw new Error(`interface ${name} not found`);
  const body = source.slice(start, source.indexOf('\n}', start));
  return [...body.matchAll(/^\s+(\w+)\(/gm)].map((m) => m[1] as string);
}

const READS = /^(get\w*|list\w*|nextSeq)$/;

describe('one write path', () => {
  it.each([
    ['lib/ports/transaction-store.ts', 'TransactionStore'],
    ['lib/ports/action-store.ts', 'ActionStore'],
    ['lib/ports/idempotency-store.ts', 'IdempotencyStore'],
    ['lib/ports/approval-store.ts', 'ApprovalStore'],
    ['lib/ports/route-store.ts', 'RouteStore'],
    ['lib/ports/stream-store.ts', 'StreamStore'],
  ])('%s: the %s port has reads only', (path, name) => {
    const methods = interfaceMethods(read(path), name);
    expect(methods.length).toBeGreaterThan(0);
    expect(methods.filter((m) => !READS.test(m))).toEqual([]);
  });

  it('every intent kind is mapped exactly once, by the adapter of the store that owns its item', () => {
    const kinds = [...read('lib/ports/unit-of-work.ts').matchAll(/^ {2}'([a-z_]+\.[a-z_]+)': \{ input:/gm)].map((m) => m[1] as string);
    expect(kinds.length).toBeGreaterThanOrEqual(25);
    const adapters = filesUnder('lib/aws/dynamo').map((f) => [f, read(f)] as const);
    for (const kind of kinds) {
      const mappedIn = adapters.filter(([, src]) => src.includes(`case '${kind}':`) || src.includes(`intent.kind !== '${kind}'`)).map(([f]) => f);
      expect(mappedIn, kind).toHaveLength(1);
      const owner = kind.slice(0, kind.indexOf('.'));
      expect(relative('lib/aws/dynamo', mappedIn[0] as string), kind).toBe(`${owner}-store.ts`);
    }
  });

  it('no adapter keeps a prepareX/buildX pair beside its mapping', () => {
    for (const file of filesUnder('lib/aws/dynamo')) {
      expect(read(file).match(/\b(prepare|build)[A-Z]\w*\(/g) ?? [], file).toEqual([]);
    }
  });

  it('the runtime names no write command and no store write method: it commits intents', () => {
    const writeMethods =
      /\.(create|claimDirectCommit|claimPlan|transition|checkpointProviderOperation|settle|acquireLease|renewLease|redactTerminal|requestCancel|reserve|complete|markUncertain|expireRejected|adopt|putIfAbsent|decide|expire|withdraw|append)\(/;
    for (const file of filesUnder('lib/runtime')) {
      const source = read(file);
      expect(source, file).not.toMatch(/TransactWrite|PutItem|UpdateItem|conditionalPut/);
      for (const line of source.split('\n')) {
        if (/k\.deps\.(transactions|actions|idempotency|approvals|routes|streams)\./.test(line)) expect(line, file).not.toMatch(writeMethods);
      }
    }
  });
});
