/**
 * AWS list prices the cost model (./awscost-model.ts) multiplies by, with
 * where and when they were read. Region us-east-1 (US East, N. Virginia),
 * on-demand, first pricing tier, free tiers left out (the model prices the
 * marginal execute of a workload past them).
 *
 * Read on 2026-12-02 through the project's search tool (no network access
 * from the bench machine). AWS's own pricing pages render their tables with
 * JavaScript, so the stored copies of several of them carry the prose but not
 * the figures; where that is so the figure comes from the source named in
 * `source`, and `basis` says which kind it is:
 * - `official`: the figure itself was read on an aws.amazon.com or
 *   docs.aws.amazon.com page (or a verbatim copy of one);
 * - `secondary`: read on a third-party page that quotes the official table
 *   (dated when the page says when), and consistent with the last value
 *   published by AWS that we know of;
 * - `last-known`: not found in any source read that day; the last published
 *   value known to us, marked as such (none at present).
 *
 * Update: change the figure, `read_on` and `source` together. The model and
 * its unit test take prices as input, so a new price list changes the report,
 * not the arithmetic.
 */

export type PriceBasis = 'official' | 'secondary' | 'last-known';

export interface Price {
  /** USD per `per` units of `unit`. */
  readonly usd: number;
  readonly per: number;
  readonly unit: string;
  readonly service: string;
  readonly item: string;
  readonly region: 'us-east-1';
  /** ISO date the figure was read. */
  readonly read_on: string;
  readonly basis: PriceBasis;
  readonly source: string;
  readonly note?: string;
}

export const PRICES_READ_ON = '2026-12-02';

const p = (x: Omit<Price, 'region' | 'read_on'> & { read_on?: string }): Price => ({ region: 'us-east-1', read_on: PRICES_READ_ON, ...x });

export const PRICES = {
  apigwRestRequest: p({
    service: 'API Gateway',
    item: 'REST API request',
    usd: 3.5,
    per: 1e6,
    unit: 'request',
    basis: 'official',
    source:
      'docs.aws.amazon.com/whitepapers/latest/best-practices-api-gateway-private-apis-integration/cost-optimization.html (Table 4: REST, first 333 million requests per month $3.50 per million); aws.amazon.com/api-gateway/pricing/',
    note: 'first 333 M requests/month; the authorizer cache is not billed per request (caching of responses is, and is off)',
  }),
  apigwHttpRequest: p({
    service: 'API Gateway',
    item: 'HTTP API request',
    usd: 1.0,
    per: 1e6,
    unit: 'request',
    basis: 'secondary',
    source:
      'awsforengineers.com/blog/aws-api-gateway-pricing-explained (2025-05-19: HTTP APIs $1.00 per million, first 300 M, US East); amnic.com and apigatewaycost.com quote the same, citing aws.amazon.com/api-gateway/pricing/',
    note: 'metered in 512 KB increments (one per request here); the JWT authorizer is not billed separately',
  }),
  lambdaRequest: p({
    service: 'Lambda',
    item: 'request (invocation)',
    usd: 0.2,
    per: 1e6,
    unit: 'request',
    basis: 'official',
    source: 'aws.amazon.com/lambda/pricing/ (pricing example: "$0.20 per 1 million requests")',
  }),
  lambdaArmGbSecond: p({
    service: 'Lambda',
    item: 'duration, arm64',
    usd: 0.0000133334,
    per: 1,
    unit: 'GB-second',
    basis: 'secondary',
    source:
      'cloudchipr.com/blog/aws-lambda-pricing (US East (N. Virginia), Arm: first 7.5 billion GB-seconds per month $0.0000133334); same figure in git.mcrn.ar lambda_local_runner docs/lambda-13-cost.md',
    note: 'billed per 1 ms; since 2025-08-01 the INIT phase of ZIP functions on managed runtimes is billed too (AWS Compute Blog, "AWS Lambda standardizes billing for INIT Phase")',
  }),
  dynamoWriteRequestUnit: p({
    service: 'DynamoDB',
    item: 'on-demand write request unit',
    usd: 0.625,
    per: 1e6,
    unit: 'WRU',
    basis: 'secondary',
    source:
      'airbyte.com/data-engineering-resources/dynamodb-pricing (2025-07-21, US East: $0.625 per million WRU after the 2024-11-01 50 % on-demand price cut); jusdb.com DynamoDB cost guide (2025-08-19)',
    note: '1 WRU per 1 KB of item written (UpdateItem: the larger of the item before and after); an item in TransactWriteItems costs 2 WRU per 1 KB',
  }),
  dynamoReadRequestUnit: p({
    service: 'DynamoDB',
    item: 'on-demand read request unit',
    usd: 0.125,
    per: 1e6,
    unit: 'RRU',
    basis: 'secondary',
    source: 'airbyte.com/data-engineering-resources/dynamodb-pricing (2025-07-21, US East: $0.125 per million RRU)',
    note: '1 RRU per strongly consistent read of up to 4 KB (0.5 eventually consistent, 2 transactional)',
  }),
  sqsStandardRequest: p({
    service: 'SQS',
    item: 'standard queue request',
    usd: 0.4,
    per: 1e6,
    unit: 'request',
    basis: 'secondary',
    source:
      'cloudburn.io/blog/amazon-sqs-pricing (2026-03-14, US East: Standard $0.40 per million, first 100 billion/month); factualminds.com SQS pricing (2026-06-13)',
    note: 'every 64 KB chunk of a payload is one request; SendMessage, ReceiveMessage (empty ones too) and DeleteMessage(Batch) each count',
  }),
  schedulerInvocation: p({
    service: 'EventBridge Scheduler',
    item: 'scheduled invocation',
    usd: 1.0,
    per: 1e6,
    unit: 'invocation',
    basis: 'secondary',
    source:
      'cloudburn.io/blog/amazon-eventbridge-pricing (2026-03-13: Scheduler $1.00 per million invocations, 14 M/month free); awsnegotiations.com/eventbridge-scheduler-cost (2026-05: creating and storing schedules is included, firing them is billed)',
    note: 'CreateSchedule / DeleteSchedule calls are not billed per the sources read; one wring.co page says invocations are free, which the others contradict: the model bills them',
  }),
  sfnStandardTransition: p({
    service: 'Step Functions',
    item: 'Standard workflow state transition',
    usd: 25,
    per: 1e6,
    unit: 'state transition',
    basis: 'official',
    source:
      'aws.amazon.com/step-functions/pricing/ (state transitions pricing table: US East (N. Virginia) $0.0250 per 1,000 state transitions); aws.amazon.com/blogs/compute/building-cost-effective-aws-step-functions-workflows/ ("$25 per million for Standard Workflows")',
    note: 'a transition each time a state of the workflow runs, retries included; 4,000/month free',
  }),
  sfnExpressRequest: p({
    service: 'Step Functions',
    item: 'Express workflow request',
    usd: 1.0,
    per: 1e6,
    unit: 'request',
    basis: 'official',
    source: 'aws.amazon.com/step-functions/pricing/ (pricing example 3: "The price is $1.00 per million requests"; copy at mdsite.deno.dev)',
  }),
  sfnExpressGbSecond: p({
    service: 'Step Functions',
    item: 'Express workflow duration',
    usd: 0.06 / 3600,
    per: 1,
    unit: 'GB-second',
    basis: 'official',
    source:
      'aws.amazon.com/step-functions/pricing/ (pricing example 3: $0.06000 per GB-hour for the first 1,000 GB-hours, $0.03 for the next 4,000, $0.01642 beyond)',
    note: 'duration rounded up to 100 ms, memory billed in 64 MB chunks (50 MB + definition + payload for a small workflow)',
  }),
  logsIngestGb: p({
    service: 'CloudWatch Logs',
    item: 'log data ingested (Standard class)',
    usd: 0.5,
    per: 1,
    unit: 'GB',
    basis: 'secondary',
    source: 'go-cloud.io/aws-api-gateway-pricing (2026: "CloudWatch execution logs accumulate $0.50 per GB ingested"); aws.amazon.com/cloudwatch/pricing/',
    note: 'Lambda function logs, EMF metric documents and API Gateway access logs all ingest at this rate; storage ($0.03/GB-month) and the 5 GB free tier left out',
  }),
  xrayTraceRecorded: p({
    service: 'X-Ray',
    item: 'trace recorded',
    usd: 5.0,
    per: 1e6,
    unit: 'trace',
    basis: 'official',
    source:
      'aws.amazon.com/xray/pricing/ (German and Chinese copies: 5 USD per million recorded traces, 0.000005 USD per trace, beyond 100,000 free per month)',
  }),
  xrayTraceRetrieved: p({
    service: 'X-Ray',
    item: 'trace retrieved or scanned',
    usd: 0.5,
    per: 1e6,
    unit: 'trace',
    basis: 'official',
    source: 'aws.amazon.com/xray/pricing/ (0.50 USD per million retrieved or scanned traces beyond 1,000,000 free per month)',
  }),
  secretsManagerApiCall: p({
    service: 'Secrets Manager',
    item: 'API call',
    usd: 0.05,
    per: 1e4,
    unit: 'call',
    basis: 'last-known',
    source:
      'aws.amazon.com/secrets-manager/pricing/ ($0.05 per 10,000 API calls; $0.40 per secret per month, not per execute); the figure the issue "The whole bill" used ($5.00 per million)',
  }),
  kmsRequest: p({
    service: 'KMS',
    item: 'symmetric key request',
    usd: 0.03,
    per: 1e4,
    unit: 'request',
    basis: 'last-known',
    source: 'aws.amazon.com/kms/pricing/ ($0.03 per 10,000 requests; 20,000 free per month)',
  }),
  dynamoStorageGbMonth: p({
    service: 'DynamoDB',
    item: 'table storage, Standard class',
    usd: 0.25,
    per: 1,
    unit: 'GB-month',
    basis: 'last-known',
    source:
      'aws.amazon.com/dynamodb/pricing/on-demand/ (Standard table class: $0.25 per GB-month beyond the first 25 GB); the stored copies read carry the prose, not the table',
    note: 'item size plus 100 bytes of overhead per item and per index entry',
  }),
  dynamoPitrGbMonth: p({
    service: 'DynamoDB',
    item: 'continuous backups (point-in-time recovery)',
    usd: 0.2,
    per: 1,
    unit: 'GB-month',
    basis: 'last-known',
    source:
      'aws.amazon.com/dynamodb/pricing/on-demand/ (continuous backups: $0.20 per GB-month of table size); the figure the issue "The whole bill" used ($2.51 per million executes per month retained)',
  }),
  temporalAction: p({
    service: 'Temporal Cloud',
    item: 'action',
    usd: 25,
    per: 1e6,
    unit: 'action',
    basis: 'official',
    source:
      'docs.temporal.io/cloud/pricing (copy: "The base rate is $25 per one million Actions per month"; credit tiers from $23.25); the plan-based pricing since 2025 adds a monthly plan (Essentials: 1 M actions included) whose on-demand rate beyond it the stored copies do not show',
    note: 'Temporal Cloud is not an AWS service (not region-priced); the worker that runs the activity is always-on compute, not per execute',
  }),
} as const satisfies Record<string, Price>;

export type PriceId = keyof typeof PRICES;
export type PriceList = { readonly [K in PriceId]: Price };

/** USD for `quantity` units at `price`. */
export function costOf(price: Price, quantity: number): number {
  return (price.usd / price.per) * quantity;
}
