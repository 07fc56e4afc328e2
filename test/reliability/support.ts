/**
 * Helpers of the reliability suite (test/reliability): a local stack on the
 * run's emulators, table scans, and the counts each scenario records for
 * `npm run reliability:report` (written as JSON under `.vitest-tmp/reliability/`).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { PROJECT_ROOT, startLocalStack, type LocalStack, type LocalStackOptions } from '../../dev/local/start.js';

export const REPORT_DIR = join(PROJECT_ROOT, '.vitest-tmp', 'reliability');

/** One scenario's line of the reliability report. */
export interface ScenarioReport {
  scenario: string;
  cases: number;
  held: string[];
  counts: Record<string, number>;
  /** A sentence the report prints under the table (what a reader should see of this scenario besides its counts). */
  summary?: string;
}

/** A scenario's counters: `bump(key, n)` adds n (default 1) to `counts[key]`. */
export function counter(): { counts: Record<string, number>; bump: (key: string, n?: number) => void } {
  const counts: Record<string, number> = {};
  return {
    counts,
    bump: (key, n = 1) => {
      counts[key] = (counts[key] ?? 0) + n;
    },
  };
}

/** Writes a scenario's counts for the report script (one JSON file per scenario). */
export function recordScenario(file: string, report: ScenarioReport): void {
  mkdirSync(REPORT_DIR, { recursive: true });
  writeFileSync(join(REPORT_DIR, `${file}.json`), `${JSON.stringify(report, null, 2)}\n`);
}

/** A local stack on the test run's DynamoDB Local and fauxqs, under its own names. */
export async function reliabilityStack(prefix: string, options: Partial<LocalStackOptions> = {}): Promise<{ stack: LocalStack; table: string }> {
  const namePrefix = `${prefix}-${randomUUID().slice(0, 8)}`;
  const stack = await startLocalStack({
    dynamoEndpoint: inject('dynamoEndpoint'),
    sqsEndpoint: inject('sqsEndpoint'),
    namePrefix,
    inMemory: true,
    schedulerAutoFire: false,
    sweepIntervalMs: 0,
    ...options,
  });
  return { stack, table: namePrefix };
}

export function dynamoClient(): DynamoDBClient {
  return new DynamoDBClient({
    endpoint: inject('dynamoEndpoint'),
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/** Every item of a table (paged Scan, strongly consistent). */
export async function scanAll(ddb: DynamoDBClient, table: string): Promise<Record<string, AttributeValue>[]> {
  const items: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

/** A stable fingerprint of a table's content (key + every attribute), to prove "nothing written". */
export async function tableFingerprint(ddb: DynamoDBClient, table: string): Promise<{ count: number; digest: string }> {
  const items = await scanAll(ddb, table);
  const lines = items
    .map((i) =>
      JSON.stringify(
        Object.keys(i)
          .sort()
          .map((k) => [k, i[k]]),
      ),
    )
    .sort();
  return { count: items.length, digest: lines.join('\n') };
}
