/** The JSON report and its markdown rendering. */
import { bundlesHeadline, renderBundlesMarkdown, type BundlesFigures } from '../sections/bundles.js';
import type { ScenarioFigures } from '../sections/cost.js';
import type { E2eFigures } from '../sections/e2e.js';
import type { PeerFigures } from '../sections/peer.js';
import { renderMcpMarkdown, type McpFigures } from '../sections/mcp.js';
import type { ScalingFigures } from '../sections/scaling.js';
import { latencyHeadline, renderLatencyMarkdown, type LatencyFigures } from '../sections/latency.js';
import { fairnessHeadline, renderFairnessMarkdown, type FairnessFigures } from '../sections/fairness.js';
import { credentialsHeadline, renderCredentialsMarkdown, type CredentialsFigures } from '../sections/credentials.js';
import { awsCostHeadline, renderAwsCostMarkdown, type AwsCostFigures } from '../sections/awscost.js';
import type { BenchConfig, SectionId } from './config.js';
import type { MachineInfo } from './machine.js';
import type { CostSummary } from './meter.js';

export interface BenchReport {
  readonly schema: 'aip-bench/1';
  readonly started_at: string;
  finished_at?: string;
  duration_seconds?: number;
  readonly config: BenchConfig;
  readonly machine: MachineInfo;
  readonly section_seconds: Partial<Record<SectionId, number>>;
  readonly errors: Partial<Record<SectionId, string>>;
  readonly cost?: ScenarioFigures[];
  readonly peer?: PeerFigures;
  readonly mcp?: McpFigures;
  readonly e2e?: E2eFigures;
  readonly bundles?: BundlesFigures;
  readonly scaling?: ScalingFigures;
  readonly credentials?: CredentialsFigures;
  readonly latency?: LatencyFigures;
  readonly fairness?: FairnessFigures;
  readonly awscost?: AwsCostFigures;
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? (Math.round(x * 10 ** d) / 10 ** d).toString() : '–');

function writesCell(c: CostSummary): string {
  return c.transact_writes > 0 ? `${f(c.writes)} (${f(c.transact_writes)} TWI, ${f(c.transact_items)} items)` : f(c.writes);
}

function costRow(label: string, c: CostSummary, p50: number, p95: number): string {
  return `| ${label} | ${f(c.reads)} | ${writesCell(c)} | ${f(c.failed_conditional)} | ${f(c.read_capacity)} | ${f(c.write_capacity)} | ${f(c.sqs_sends)} | ${f(c.scheduler_calls)} | ${f(p50)} | ${f(p95)} |`;
}

const COST_HEAD = [
  '| action / phase | reads | writes | failed cond. writes | RCU | WCU | SQS sends | Scheduler calls | p50 ms | p95 ms |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
];

/** Section 1's billed capacity per action and the item sizes behind the execute's bill (bench/lib/billing.ts). */
function billedMarkdown(cost: readonly ScenarioFigures[]): string[] {
  if (!cost.some((s) => s.billed !== undefined)) return [];
  const lines = [
    '',
    '### Capacity as AWS bills it (on demand)',
    '',
    'From the item images of the warm-up run (bench/lib/billing.ts): a write bills ceil(max(item size before, after) / 1 KB) write request units, twice for an item of a TransactWriteItems; ' +
      'a strongly consistent read bills ceil(size / 4 KB) per item; index entries written apart; a refused conditional write is estimated at 1 WRU.',
    '',
    '| action | write requests | WRU | index WRU | RRU | request units | requests estimated or as reported |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const s of cost) {
    if (s.billed === undefined) continue;
    const b = s.billed.total;
    lines.push(
      `| ${s.label} | ${f(s.total.writes)} | ${f(b.wru)} | ${f(b.index_wru)} | ${f(b.rru)} | **${f(b.total)}** | ${b.estimated_requests + b.reported_requests} |`,
    );
  }
  const exec = cost.find((s) => s.id === 'execute');
  if (exec?.billed !== undefined) {
    lines.push(
      '',
      "Item sizes behind the execute's bill (largest image of each item kind, AWS's size rules; units of that write or read):",
      '',
      '| item | bytes | where | units | largest attributes (bytes) |',
      '|---|---:|---|---:|---|',
    );
    for (const it of exec.billed.items) {
      lines.push(
        `| ${it.kind} | ${it.bytes.toLocaleString('en')} | ${it.at} | ${f(it.units)} | ${it.attributes
          .slice(0, 5)
          .map((a) => `${a.name} ${a.bytes}`)
          .join(', ')} |`,
      );
    }
    lines.push('', 'Per phase:', '', '| phase | WRU | index WRU | RRU | request units |', '|---|---:|---:|---:|---:|');
    for (const p of exec.billed.phases)
      lines.push(`| ${p.phase} | ${f(p.billed.wru)} | ${f(p.billed.index_wru)} | ${f(p.billed.rru)} | ${f(p.billed.total)} |`);
  }
  return lines;
}

export function headline(r: BenchReport): string[] {
  const out: string[] = [];
  const exec = r.cost?.find((s) => s.id === 'execute');
  if (exec) {
    const t = exec.total;
    out.push(
      `- **execute** (payments.charge with an idempotency key, admitted + run + settled): **${f(t.reads + t.writes)} DynamoDB requests** (${f(t.reads)} ${t.reads === 1 ? 'read' : 'reads'}, ${f(t.writes)} writes of which ${f(t.transact_writes)} TransactWriteItems), ${f(t.read_capacity)} RCU + ${f(t.write_capacity)} WCU, 1 SQS send; p50 ${f(exec.latency_ms.p50)} ms in-process (submit + attempt, queue wait excluded).`,
    );
  }
  if (exec?.billed) {
    const b = exec.billed.total;
    out.push(
      `- **execute, capacity as AWS bills it** (on-demand; item sizes rounded up to 1 KB per write and 4 KB per read, transactional items ×2): **${f(b.total)} request units** = ${f(b.wru)} WRU + ${f(b.index_wru)} index WRU + ${f(b.rru)} RRU, from ${f(exec.total.writes)} write requests.`,
    );
  }
  const peer = r.peer?.cases.find((c) => c.id === 'execute');
  if (peer) {
    out.push(
      `- vs **Powertools idempotency** (${r.peer?.powertools_version}) around the same provider call: ×${f(peer.ratio.requests, 2)} requests, ×${f(peer.ratio.capacity, 2)} capacity, ×${f(peer.ratio.latency_p50, 2)} median latency (${f(peer.ours.latency_ms.p50)} ms vs ${f(peer.powertools.latency_ms.p50)} ms)` +
        `${peer.ratio.billed !== undefined && peer.ours.billed && peer.powertools.billed ? `; billed capacity ×${f(peer.ratio.billed, 2)} (${f(peer.ours.billed.total)} vs ${f(peer.powertools.billed.total)} request units)` : ''}.`,
    );
  }
  const e1 = r.e2e?.levels.find((l) => l.flow === 'execute' && l.concurrency === 1);
  const eMax = r.e2e?.levels.filter((l) => l.flow === 'execute').sort((a, b) => b.throughput_per_s - a.throughput_per_s)[0];
  if (e1 && eMax) {
    out.push(
      `- **end to end** on the local stack (HTTP submit → terminal result, \`Prefer: wait\`): execute p50 ${f(e1.latency_ms.p50, 0)} ms / p95 ${f(e1.latency_ms.p95, 0)} ms with 1 client; best throughput ${f(eMax.throughput_per_s)} executes/s at ${eMax.concurrency} clients (p50 ${f(eMax.latency_ms.p50, 0)} ms).`,
    );
  }
  if (r.bundles && r.bundles.bundles.length > 0) {
    const line = bundlesHeadline(r.bundles);
    if (line !== undefined) out.push(line);
  }
  const s = r.scaling;
  if (s && s.sizes.length > 0) {
    const first = s.sizes[0]!;
    const last = s.sizes[s.sizes.length - 1]!;
    const req = (c: CostSummary) => f(c.reads + c.writes);
    out.push(
      `- **scaling**: an execute costs ${req(first.execute.cost)} requests at ${first.stored.toLocaleString('en')} stored transactions and ${req(last.execute.cost)} at ${last.stored.toLocaleString('en')} (p50 ${f(first.execute.latency_ms.p50)} → ${f(last.execute.latency_ms.p50)} ms)${s.load.stopped_early ? ` — ${s.load.note}` : ''}.`,
    );
  }
  const cred = r.credentials ? credentialsHeadline(r.credentials) : undefined;
  if (cred !== undefined) out.push(cred);
  const lat = r.latency ? latencyHeadline(r.latency) : undefined;
  if (lat !== undefined) out.push(lat);
  const fair = r.fairness ? fairnessHeadline(r.fairness) : undefined;
  if (fair !== undefined) out.push(fair);
  const aws = r.awscost ? awsCostHeadline(r.awscost) : undefined;
  if (aws !== undefined) out.push(aws);
  return out;
}

export function renderMarkdown(r: BenchReport): string {
  const m = r.machine;
  const lines: string[] = [];
  lines.push('# AIP runtime benchmarks', '');
  lines.push(
    `Run ${r.started_at}${r.duration_seconds !== undefined ? `, ${f(r.duration_seconds, 0)} s in total` : ''}${r.config.quick ? ' (BENCH_QUICK: small sizes)' : ''}` +
      `${r.config.storeKnownImages !== undefined ? ` with BENCH_STORE_KNOWN_IMAGES=${r.config.storeKnownImages}${r.config.storeKnownImages === '0' ? ' (transaction store without known images: every receipt-carrying write is read back, as before docs/bench/analysis.md 4.1)' : ''}` : ''}` +
      '. ' +
      `Machine: ${m.cores} cores (${m.cpu_model}), ${f(m.memory_gib)} GiB memory, Node ${m.node}, \`uname -m\` ${m.machine}, ${m.os}, ${m.java}. ` +
      `1-minute load average ${f(m.load_average_start, 2)} at the start${m.load_average_end !== undefined ? ` and ${f(m.load_average_end, 2)} at the end` : ''}` +
      `${m.git_commit ? `; source ${m.git_commit}${m.git_dirty ? ' with uncommitted changes' : ''}` : ''}.`,
    '',
    'Generated by `npm run bench` (bench/run.ts; method in bench/README.md, findings in docs/bench/analysis.md). ' +
      'A benchmark, not a test: nothing here passes or fails on a figure. Latencies are from emulators on one shared machine; ' +
      'request counts and capacity units are what DynamoDB bills and do not depend on the machine.',
    '',
  );
  const h = headline(r);
  if (h.length > 0) lines.push('## Headline', '', ...h, '');
  for (const [section, error] of Object.entries(r.errors)) lines.push(`> **Section ${section} failed:** ${error}`, '');

  if (r.cost) {
    lines.push('## 1. DynamoDB cost per action', '');
    lines.push(
      `DynamoDB Local, the real Runtime with the payments connector against the payments simulator. Mean per action over ${r.cost[0]?.runs ?? 0} runs (after one warm-up); ` +
        'reads = GetItem/Query/BatchGetItem, writes = PutItem/UpdateItem/DeleteItem/TransactWriteItems (TWI: the items it carries are listed); ' +
        'RCU/WCU = ConsumedCapacity (TOTAL) as DynamoDB Local reports it (transactional items cost double; a failed conditional write reports none, though AWS bills it). ' +
        'Latency is in-process (the queue wait between admission and attempt is not included).',
      '',
      ...COST_HEAD,
    );
    for (const s of r.cost) {
      lines.push(costRow(`**${s.label}**`, s.total, s.latency_ms.p50, s.latency_ms.p95));
      if (s.phases.length > 1) for (const p of s.phases) lines.push(costRow(`  ↳ ${p.phase}`, p.cost, p.latency_ms.p50, p.latency_ms.p95));
    }
    lines.push(...billedMarkdown(r.cost));
    lines.push(
      '',
      '<details><summary>Call traces (warm-up run of each action, with the adapter method and runtime function that issued each call)</summary>',
      '',
    );
    for (const s of r.cost) lines.push(`**${s.label}**`, '', '```', ...s.trace, '```', '');
    lines.push('</details>', '');
  }

  if (r.peer) {
    lines.push('## 2. Side by side with Powertools idempotency', '');
    lines.push(
      `Same DynamoDB Local and payments simulator; @aws-lambda-powertools/idempotency ${r.peer.powertools_version} \`makeIdempotent\` + \`DynamoDBPersistenceLayer\` (own table, key \`id\`) around a handler that makes the same charge; ` +
        `${r.peer.runs} interleaved runs. Capacity includes 1 WCU per failed conditional write (estimate; see section 1). ` +
        'Powertools stores one idempotency record; the runtime also stores the action, the transaction with its hash-chained receipts, the route assignment, fenced leases and the provider operation.',
      '',
      '| case | side | reads | writes | RCU | WCU | capacity (est.) | p50 ms | p95 ms |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const c of r.peer.cases) {
      for (const [name, s] of [
        ['AIP runtime', c.ours],
        ['Powertools', c.powertools],
      ] as const) {
        lines.push(
          `| ${c.id} | ${name} | ${f(s.cost.reads)} | ${f(s.cost.writes)} | ${f(s.cost.read_capacity)} | ${f(s.cost.write_capacity)} | ${f(s.cost.capacity_total_est)} | ${f(s.latency_ms.p50)} | ${f(s.latency_ms.p95)} |`,
        );
      }
      const x = (r: number, a: number, b: number) => (Number.isFinite(r) ? `×${f(r, 2)}` : `${f(a)} vs ${f(b)}`);
      lines.push(
        `| ${c.id} | **ratio (ours / theirs)** | ${x(c.ratio.reads, c.ours.cost.reads, c.powertools.cost.reads)} | ${x(c.ratio.writes, c.ours.cost.writes, c.powertools.cost.writes)} | | | ${x(c.ratio.capacity, c.ours.cost.capacity_total_est, c.powertools.cost.capacity_total_est)} | ${x(c.ratio.latency_p50, c.ours.latency_ms.p50, c.powertools.latency_ms.p50)} | |`,
      );
    }
    if (r.peer.cases.some((c) => c.ours.billed && c.powertools.billed)) {
      lines.push(
        '',
        'Capacity as AWS bills it on demand (bench/lib/billing.ts: from the item images of the warm run; writes per 1 KB, reads per 4 KB, transactional items ×2, index writes apart):',
        '',
        '| case | side | DynamoDB requests | write requests | WRU | index WRU | RRU | request units |',
        '|---|---|---:|---:|---:|---:|---:|---:|',
      );
      for (const c of r.peer.cases) {
        if (!c.ours.billed || !c.powertools.billed) continue;
        for (const [name, side] of [
          ['AIP runtime', c.ours],
          ['Powertools', c.powertools],
        ] as const) {
          const b = side.billed!;
          lines.push(
            `| ${c.id} | ${name} | ${f(side.cost.reads + side.cost.writes)} | ${f(side.cost.writes)} | ${f(b.wru)} | ${f(b.index_wru)} | ${f(b.rru)} | ${f(b.total)} |`,
          );
        }
        lines.push(
          `| ${c.id} | **ratio (ours / theirs)** | ×${f(c.ratio.requests, 2)} | ×${f(c.ratio.writes, 2)} | | | | **×${f(c.ratio.billed ?? Number.NaN, 2)}** |`,
        );
      }
    }
    lines.push('', '<details><summary>Call traces</summary>', '');
    for (const c of r.peer.cases) {
      lines.push(`**${c.id}, AIP runtime**`, '', '```', ...c.ours.trace, '```', '', `**${c.id}, Powertools**`, '', '```', ...c.powertools.trace, '```', '');
    }
    lines.push('</details>', '');
  }

  if (r.e2e) {
    lines.push('## 3. End to end on the local stack', '');
    lines.push(
      'HTTP on loopback with the typed client: `POST /v1/actions` with `Prefer: wait=20` until the action is terminal (long-poll `GET /v1/actions/{id}` if the wait ends early). ' +
        `plan+commit = a plan, then the commit of that plan with the wait, timed together. No approval policy. Note: ${r.e2e.note}.`,
      '',
      '| flow | clients | requests | completed | failed | wall s | throughput /s | p50 ms | p95 ms | p99 ms |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const l of r.e2e.levels) {
      lines.push(
        `| ${l.flow} | ${l.concurrency} | ${l.requests} | ${l.completed} | ${l.failed} | ${f(l.wall_seconds)} | ${f(l.throughput_per_s)} | ${f(l.latency_ms.p50, 0)} | ${f(l.latency_ms.p95, 0)} | ${f(l.latency_ms.p99, 0)} |`,
      );
    }
    const errs = r.e2e.levels.filter((l) => l.errors && l.errors.length > 0);
    if (errs.length > 0) {
      lines.push('', 'Errors seen (first few per level):', '');
      for (const l of errs) lines.push(`- ${l.flow} ×${l.concurrency}: ${(l.errors ?? []).join('; ')}`);
    }
    lines.push('');
  }

  if (r.bundles) lines.push(...renderBundlesMarkdown(r.bundles));
  if (r.mcp) lines.push(...renderMcpMarkdown(r.mcp, '## MCP endpoint: DynamoDB requests per call beside REST'));

  if (r.scaling) {
    const s = r.scaling;
    lines.push('## 5. Scaling', '');
    lines.push(
      `Table size: transaction items, each with its action item, cloned from a committed execute (the transaction ${f(s.load.item_bytes / 1024, 1)} KiB as JSON) bulk-loaded with BatchWriteItem: ${s.load.items.toLocaleString('en')} transactions in ${f(s.load.seconds)} s (${s.load.items_per_second.toLocaleString('en')} transactions/s on this machine). ` +
        `Requested sizes: ${s.requested_sizes.map((n) => n.toLocaleString('en')).join(', ')}.${s.load.note ? ` **${s.load.note}.**` : ''} ` +
        'At each size: an execute (submit + attempt), the transaction view of a stored transaction looked up by action ID (the action item names its transaction) with receipts, and one sweeper run (sparse byStatus index).',
      '',
      '| stored transactions | execute: requests | execute: RCU + WCU | execute p50 ms | view: requests | view: RCU | view p50 ms | sweep: requests | sweep p50 ms |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const z of s.sizes) {
      const e = z.execute.cost;
      const v = z.view_by_action.cost;
      const w = z.sweep.cost;
      lines.push(
        `| ${z.stored.toLocaleString('en')} | ${f(e.reads + e.writes)} | ${f(e.read_capacity + e.write_capacity)} | ${f(z.execute.latency_ms.p50)} | ${f(v.reads + v.writes)} | ${f(v.read_capacity)} | ${f(z.view_by_action.latency_ms.p50)} | ${f(w.reads + w.writes)} | ${f(z.sweep.latency_ms.p50)} |`,
      );
    }
    lines.push(
      '',
      'Receipt chains: a transaction with 1, 10 and 100 receipts; appending one more receipt (a provider-operation checkpoint: TransactWriteItems of the record update + the receipt) and reading the transaction view with `include=receipts`.',
      '',
      '| receipts | append: requests | append: WCU | append p50 ms | read view: requests | read view: RCU | read view p50 ms |',
      '|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const c of s.chains) {
      lines.push(
        `| ${c.receipts} | ${f(c.append.cost.reads + c.append.cost.writes)} | ${f(c.append.cost.write_capacity)} | ${f(c.append.latency_ms.p50)} | ${f(c.read_view.cost.reads + c.read_view.cost.writes)} | ${f(c.read_view.cost.read_capacity)} | ${f(c.read_view.latency_ms.p50)} |`,
      );
    }
    lines.push('');
  }

  if (r.credentials) lines.push(...renderCredentialsMarkdown(r.credentials, '## 5b. Credentials: Secrets Manager requests per execute'));
  if (r.latency) lines.push(...renderLatencyMarkdown(r.latency, '## 6. Latency breakdown of one execute (local stack)'));
  if (r.fairness) lines.push(...renderFairnessMarkdown(r.fairness, '## 7. Fairness between tenants (local stack)'));
  if (r.awscost) lines.push(...renderAwsCostMarkdown(r.awscost, '## 8. AWS cost per million executes'));

  lines.push('## Run', '', '| section | seconds |', '|---|---:|');
  for (const [k, v] of Object.entries(r.section_seconds)) lines.push(`| ${k} | ${f(v ?? 0, 0)} |`);
  lines.push(`| **total** | **${f(r.duration_seconds ?? 0, 0)}** |`, '');
  const c = r.config;
  lines.push(
    `Sizes: cost runs ${c.costRuns}, peer runs ${c.peerRuns}, e2e concurrency ${c.e2eConcurrency.join('/')} (requests per level max(${c.e2eMinRequests}, ${c.e2eRequestsPerClient} × clients)), ` +
      `cold-start runs ${c.importRuns} per function, table sizes ${c.scaleSizes.join('/')}, chains ${c.chainSizes.join('/')}, scale runs ${c.scaleRuns}, load budget ${c.loadBudgetSeconds} s.`,
    '',
  );
  return lines.join('\n');
}
