import { BatchWriteItemCommand } from '@aws-sdk/client-dynamodb';
import { startDynamoDbLocal } from '../../dev/emulators/dynamodb-local.js';
import { createTable } from '../../lib/aws/dynamo/create-table.js';
import { meteredDynamo } from '../lib/harness.js';
import { Meter } from '../lib/meter.js';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
const d = await startDynamoDbLocal({});
const { raw, doc } = meteredDynamo(d.endpoint, new Meter());
await createTable(raw, 'bulk1');
const big = 'x'.repeat(1500);
async function load(n: number, conc: number) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: conc }, async () => {
    for (;;) {
      const start = next; next += 25; if (start >= n) return;
      const items = [];
      for (let i = start; i < Math.min(n, start + 25); i++) items.push({ PutRequest: { Item: { PK: `TXN#t#${i}-${n}`, SK: 'TXN', GSI2PK: `ACTION#t#a${i}`, GSI2SK: `2026#${i}`, status: 'committed', data: { pad: big } } } });
      let req: any = { RequestItems: { bulk1: items } };
      while (true) { const out = await doc.send(new BatchWriteCommand(req)); const un = out.UnprocessedItems?.bulk1; if (!un || un.length === 0) break; req = { RequestItems: { bulk1: un } }; }
    }
  }));
  const ms = performance.now() - t0;
  console.log(n, conc, Math.round(ms), Math.round(n / ms * 1000), 'items/s');
}
await load(2000, 4);
await load(10000, 8);
await load(10000, 16);
await load(20000, 4);
await d.stop();
