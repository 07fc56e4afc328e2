/**
 * Deployment configuration of the AIP runtime: typed, validated with zod at synth
 * time, and read from a JSON file named by CDK context (`-c config=path.json`).
 * The CDK app (infra/) and the Lambda functions both read it from here; its
 * run-time part reaches the functions as the `AIP_RUNTIME_CONFIG` variable.
 *
 * Field reference and rationale: docs/infra.md ("Configuration").
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { describeIssue, formatIssuePath } from '../../packages/connector-sdk/src/common/issues.js';
import { ClaimsConfigSchema } from '../auth/claims.js';
import { HTTP_AUTH_ENVIRONMENTS } from '../auth/environments.js';
import { ID_MAX_LENGTH, ID_PATTERN } from '../../packages/connector-sdk/src/protocol/primitives.js';
import { MAX_CONCURRENT_ATTEMPTS_LIMIT } from '../runtime/remote/config.js';
import { TRANSACTION_MODES, type TransactionMode } from '../../packages/connector-sdk/src/protocol/action.js';

/** CloudWatch Logs accepts only these retention periods (days). */
export const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653] as const;

/**
 * Modes an approval policy may gate. `dry_run` and `plan` are previews: the
 * transactions page ("Preview comes before approval; mutation does not") runs
 * them before any pending approval, so a policy can never gate them.
 */
export const APPROVAL_GATED_MODES = ['execute', 'commit', 'compensate', 'reconcile'] as const satisfies readonly TransactionMode[];

/** JWS algorithms the authorizer may accept. `none` is not representable. */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

/** Log levels of the functions (Powertools Logger and Lambda's application log level). */
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;

/**
 * Levels of Lambda's own records (its system log level, JSON log format only).
 * INFO keeps `platform.start` and `platform.report` of every invocation (and
 * `platform.initStart`/`platform.initReport` of a cold start); WARN keeps only
 * the records of a failure (a report, init or extension whose status is not
 * `success`: a timeout, a crash, an out-of-memory) and `platform.logsDropped`;
 * DEBUG adds `platform.runtimeDone`. docs/infra.md ("Logs").
 */
export const LAMBDA_SYSTEM_LOG_LEVELS = ['DEBUG', 'INFO', 'WARN'] as const;

/** Largest authorizer results cache TTL this stack accepts (API Gateway allows 3600 s). See docs/infra.md ("Authorizer"). */
export const MAX_AUTHORIZER_CACHE_SECONDS = 300;

/**
 * An auth URL (JWT issuer, JWKS URL): https, or http where the environment
 * allows it. The field accepts both schemes; {@link refineAuthUrls} refuses
 * `http:` unless `envName` is one of {@link HTTP_AUTH_ENVIRONMENTS}.
 */
const authUrl = (what: string) =>
  z.string({ error: `must be a string holding the ${what}` }).check(
    z.refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
      message: `must be an absolute https:// URL (the ${what})`,
    }),
  );

const AUTH_URL_FIELDS = [
  ['issuer', 'JWT issuer'],
  ['jwksUrl', 'JWKS URL'],
] as const;

/**
 * `http:` auth URLs only in the `local` and `localstack` environments, where
 * LocalStack's Lambda containers verify tokens against a development JWKS on
 * the host (README.md, "Deploy to LocalStack"). Everywhere else the issuer
 * and the JWKS URL must be https.
 */
function refineAuthUrls(config: { envName: string; auth: { issuer: string; jwksUrl: string } }, ctx: z.core.$RefinementCtx): void {
  if (HTTP_AUTH_ENVIRONMENTS.includes(config.envName)) return;
  for (const [field, what] of AUTH_URL_FIELDS) {
    const value = config.auth[field];
    if (URL.canParse(value) && new URL(value).protocol === 'http:') {
      ctx.addIssue({
        code: 'custom',
        path: ['auth', field],
        message: `must be an absolute https:// URL (the ${what}); http:// is accepted only when envName is ${HTTP_AUTH_ENVIRONMENTS.map((e) => `"${e}"`).join(' or ')} (envName is "${config.envName}")`,
      });
    }
  }
}

/**
 * The HTTP API's JWT authorizer verifies RSA signatures only, and finds the
 * issuer's keys by OIDC discovery from the issuer URL over https (it does not
 * use `auth.jwksUrl`): refuse a configuration it cannot honour at synth.
 */
function refineHttpApiAuth(config: { auth: { issuer: string; algorithms: readonly string[] } }, ctx: z.core.$RefinementCtx): void {
  config.auth.algorithms.forEach((alg, index) => {
    if (!(HTTP_API_JWT_ALGORITHMS as readonly string[]).includes(alg)) {
      ctx.addIssue({
        code: 'custom',
        path: ['auth', 'algorithms', index],
        message: `"${alg}" is not accepted by the HTTP API's JWT authorizer (api.type "http" verifies only ${HTTP_API_JWT_ALGORITHMS.join(', ')}); use api.type "rest" for other algorithms`,
      });
    }
  });
  if (URL.canParse(config.auth.issuer) && new URL(config.auth.issuer).protocol !== 'https:') {
    ctx.addIssue({
      code: 'custom',
      path: ['auth', 'issuer'],
      message: 'must be an https:// URL when api.type is "http" (the JWT authorizer discovers the signing keys from the issuer over https)',
    });
  }
}

const intIn = (min: number, max: number, what: string) =>
  z
    .int({ error: `must be an integer (${what})` })
    .check(z.gte(min, { message: `must be at least ${min} (${what})` }), z.lte(max, { message: `must be at most ${max} (${what})` }));

/** IDs follow the protocol ID pattern (lib/protocol/primitives.ts), as connectors, handles, tenants and capabilities do. */
const protocolId = (what: string) =>
  z
    .string({ error: `must be a string (${what})` })
    .check(
      z.minLength(1, { message: `must not be empty (${what})` }),
      z.maxLength(ID_MAX_LENGTH, { message: `must be at most ${ID_MAX_LENGTH} characters (${what})` }),
      z.regex(ID_PATTERN, { message: `must use only letters, digits and . _ : @ / - (${what})` }),
    );

const nonEmpty = (what: string, max = 256) =>
  z
    .string({ error: `must be a string (${what})` })
    .check(z.minLength(1, { message: `must not be empty (${what})` }), z.maxLength(max, { message: `must be at most ${max} characters (${what})` }));

/**
 * A Secrets Manager reference: the complete secret ARN (with the 6-character
 * suffix Secrets Manager appends) or the secret name. A name is granted as
 * `<name>-??????` in the stack's account and region, so no `*` is needed; a
 * partial ARN is refused because it cannot be told apart from a complete one.
 */
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}-[A-Za-z0-9]{6}$/;
const SECRET_NAME = /^[A-Za-z0-9/_+=.@-]{1,512}$/;
const KMS_KEY_ARN = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]{1,128}$/;

export const SecretReferenceSchema = z.deferred(() =>
  z.string({ error: 'must be a string: a Secrets Manager secret ARN or secret name' }).check(
    z.refine((value) => (value.startsWith('arn:') ? SECRET_ARN.test(value) : SECRET_NAME.test(value)), {
      message:
        'must be a complete Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>) ' +
        'or a secret name of 1-512 characters from A-Z a-z 0-9 / _ + = . @ -',
    }),
  ),
);

/**
 * One row of the deployment's credential reference map (the rows
 * packages/connector-sdk/src/credentials/references.ts selects from): which secret backs
 * credential `handle` of the connector for a tenant, optionally for one
 * external account of that tenant. The secret value never enters
 * configuration; see `secretsManagerReferences` (./secret-references.ts) for the adapter's shape.
 */
export const CredentialReferenceSchema = z.deferred(() =>
  z.strictObject({
    handle: protocolId('credential handle'),
    tenantId: protocolId('tenant ID'),
    /** Absent: the tenant-wide default for every external account of the tenant. */
    externalAccountId: z.optional(protocolId('external account ID')),
    secret: SecretReferenceSchema,
    /** @default AWSCURRENT (the service default) */
    versionStage: z.optional(nonEmpty('secret version stage')),
    /** When the SecretString is a JSON object: the string field holding the material. */
    jsonField: z.optional(nonEmpty('JSON field name')),
    /** The customer managed KMS key of the secret, when it is not the default `aws/secretsmanager` key. */
    kmsKeyArn: z.optional(
      z
        .string({ error: 'must be a string (KMS key ARN)' })
        .check(z.regex(KMS_KEY_ARN, { message: 'must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<key-id>)' })),
    ),
  }),
);

export const ConnectorConfigSchema = z.deferred(() =>
  z.strictObject({
    /** Connector ID as its manifest names it. Only listed connectors are enabled. */
    id: protocolId('connector ID'),
    /**
     * Where the deployment credential provider resolves each credential handle.
     * Handles stay opaque to connectors (connector contract: "Resolve credentials
     * at the provider edge").
     */
    credentials: z._default(z.array(CredentialReferenceSchema), []),
    /**
     * How long one execution environment reuses a credential fetched from
     * Secrets Manager, in seconds (0: fetched for every provider call). A
     * rotated secret takes effect within this age, and at once when the
     * provider refuses the old one with 401/403. docs/runtime.md, "Credentials".
     * @default 300 (DEFAULT_CREDENTIAL_CACHE_SECONDS in lib/aws/secrets/secret-cache.ts)
     */
    credentialCacheSeconds: z.optional(intIn(0, 3600, 'seconds')),
  }),
);

/** A JSON object (the declarative HTTP connector's document; its own schema checks it at synth, infra/deployment-connectors.ts). */

/**
 * A connector of the deployment configuration: the enabled connector's ID and
 * credentials (what the functions read at run time, {@link ConnectorConfigSchema})
 * and, for a connector that is not built into this project, where it comes
 * from (docs/deploying-your-connectors.md):
 * - `http`: a declarative HTTP connector document (lib/connectors/http,
 *   `HttpConnectorConfig`), no code; validated and manifest-checked at synth;
 * - `module`: a code connector, the path of a module whose default export
 *   (or `createConnector` export) builds it; relative paths resolve against
 *   the configuration file's folder. Bundled into the functions by esbuild.
 * Absent both: a connector built into this project (`payments`).
 */
const deploymentConnectorConfigSchema = z.lazySchema(() =>
  z.strictObject({
    ...ConnectorConfigSchema.shape,
    http: z.optional(z.record(z.string(), z.unknown(), { error: 'must be a JSON object (a declarative HTTP connector document)' })),
    module: z.optional(nonEmpty('connector module path', 1024)),
  }),
);

/** An approval policy's tenant selector: a protocol tenant ID, or `'*'` (every tenant). */
const tenantSelector = z.deferred(() =>
  z.string({ error: 'must be a string (a tenant ID, or "*" for every tenant)' }).check(
    z.refine((value) => value === '*' || (value.length >= 1 && value.length <= ID_MAX_LENGTH && ID_PATTERN.test(value)), {
      message: `must be "*" or a tenant ID of at most ${ID_MAX_LENGTH} letters, digits and . _ : @ / -`,
    }),
  ),
);

export const ApprovalPolicySchema = z.deferred(() =>
  z.strictObject({
    id: protocolId('approval policy ID'),
    description: z.optional(z.string({ error: 'must be a string' }).check(z.maxLength(512, { message: 'must be at most 512 characters' }))),
    /** The enabled connector whose capabilities this policy gates. */
    connector: protocolId('connector ID'),
    /** Capability IDs gated; absent means every capability of the connector. */
    capabilities: z.optional(z.array(protocolId('capability ID')).check(z.minLength(1, { message: 'must list at least one capability, or be omitted' }))),
    /**
     * Transaction modes gated; absent means every mutating path (plain
     * invocation, execute, commit, compensate, reconcile).
     */
    modes: z.optional(
      z
        .array(z.enum(TRANSACTION_MODES, { error: `must be one of ${TRANSACTION_MODES.join(', ')}` }))
        .check(z.minLength(1, { message: 'must list at least one mode, or be omitted' })),
    ),
    /**
     * Tenants the policy applies to: tenant IDs, or `'*'` for every tenant.
     * Absent means every tenant, including tenants the configuration names
     * nowhere else (a token's tenant is enough).
     */
    tenants: z.optional(
      z
        .array(tenantSelector)
        .check(
          z.minLength(1, { message: 'must list at least one tenant (or "*"), or be omitted' }),
          z.maxLength(1000, { message: 'must list at most 1000 tenants' }),
        ),
    ),
    /** A decision is accepted only from a principal holding ONE of these JWT scopes (any of them suffices). */
    approverScopes: z.array(nonEmpty('JWT scope', 128)).check(z.minLength(1, { message: 'must list at least one approver scope' })),
    /** Distinct approvers needed before the action runs; any one denial ends the approval. */
    minApprovals: z._default(intIn(1, 10, 'approvals needed'), 1),
    /** A pending approval expires after this many seconds. */
    expiresAfterSeconds: z._default(intIn(60, 7 * 24 * 3600, 'seconds'), 24 * 3600),
  }),
);

/** OAuth scope tokens (RFC 6749 §3.3: printable ASCII but space, `"` and `\\`). */
const oauthScope = z.deferred(() =>
  z
    .string({ error: 'must be a string (OAuth scope)' })
    .check(z.regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/, { message: 'must be an OAuth scope: 1-128 printable characters, no space, " or \\' })),
);

/** Scopes the operator console asks for when `auth.console.scopes` is not set. */
export const DEFAULT_CONSOLE_SCOPES = ['openid', 'aip:actions:read', 'aip:actions:write', 'aip:operator'] as const;

/**
 * The operator console's OIDC client (authorization code + PKCE, a public
 * client: no secret). When set, the stack serves the console at
 * `<ApiUrl>console/` (infra/console.ts); the IdP settings it needs are in
 * docs/infra.md ("Operator console").
 */
export const ConsoleAuthSchema = z.deferred(() =>
  z.strictObject({
    /** The public client's ID at the identity provider. */
    clientId: nonEmpty('OIDC client ID'),
    /** Requested scopes; must include `openid`. The route scopes a token needs are in docs/http-api.md. */
    scopes: z._default(
      z
        .array(oauthScope)
        .check(z.minLength(1, { message: 'must list at least one scope' }))
        .check(z.refine((scopes) => scopes.includes('openid'), { message: 'must include "openid" (the console signs in with OpenID Connect)' })),
      [...DEFAULT_CONSOLE_SCOPES],
    ),
    /** Sent as `audience` on the authorization request, for IdPs that pick the access token's audience that way (Auth0). */
    audience: z.optional(nonEmpty('OAuth audience')),
    /** Where OIDC discovery starts, when it is not `auth.issuer` (an https URL). */
    discoveryIssuer: z.optional(
      z
        .string({ error: 'must be a string holding the OIDC issuer URL' })
        .check(
          z.refine((value) => URL.canParse(value) && new URL(value).protocol === 'https:', { message: 'must be an absolute https:// URL (the OIDC issuer)' }),
        ),
    ),
    /** The tenant the console selects at first (X-AIP-Tenant); otherwise the token's first. */
    defaultTenant: z.optional(protocolId('tenant ID')),
  }),
);

export const AuthConfigSchema = z.deferred(() =>
  z.strictObject({
    /** Exact `iss` claim expected (keep a trailing slash if the IdP issues one, as Auth0 does). */
    issuer: authUrl('JWT issuer'),
    /** Accepted `aud` value(s). */
    audience: z.union([nonEmpty('JWT audience'), z.array(nonEmpty('JWT audience')).check(z.minLength(1, { message: 'must list at least one JWT audience' }))], {
      error: 'must be a non-empty string or a non-empty array of strings (JWT audience)',
    }),
    jwksUrl: authUrl('JWKS URL'),
    algorithms: z._default(
      z
        .array(z.enum(JWT_ALGORITHMS, { error: `must be one of ${JWT_ALGORITHMS.join(', ')}` }))
        .check(z.minLength(1, { message: 'must list at least one JWS algorithm' })),
      ['RS256'],
    ),
    /**
     * Where the authorizer finds tenants, principal kind and scopes in the
     * verified claims: a preset (`generic`, `cognito`, `auth0`, `okta`) plus
     * overrides (lib/auth/claims.ts). Absent: `generic`.
     */
    claims: z.optional(ClaimsConfigSchema),
    /** Accepted clock skew for `exp`/`nbf`/`iat`, in seconds. @default the verifier's */
    clockToleranceSeconds: z.optional(intIn(0, 60, 'seconds')),
    /** The operator console's OIDC client. Absent: the console is not deployed. */
    console: z.optional(ConsoleAuthSchema),
  }),
);

/** The API shapes the stack can deploy (docs/infra.md, "HTTP API option"). */
export const API_TYPES = ['rest', 'http'] as const;

/** Where the first attempt of an action whose client waits runs (`attemptWhenWaited`). */
export const ATTEMPT_WHEN_WAITED = ['inline', 'queue'] as const;

/**
 * JWS algorithms API Gateway's JWT authorizer (HTTP API) accepts: RSA
 * signatures only (AWS documents "only RSA-based algorithms"; RSASSA-PSS is
 * not listed as supported, so this stack does not rely on it).
 */
export const HTTP_API_JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512'] as const satisfies readonly (typeof JWT_ALGORITHMS)[number][];

/** The API's shape, stage, throttling and authorizer settings. */
const apiConfigSchema = z.lazySchema(() =>
  z.strictObject({
    /**
     * `rest`: an API Gateway REST API with the Lambda TOKEN authorizer
     * (functions/authorizer.ts), problem+json gateway responses and request
     * validation. `http`: an HTTP API with API Gateway's built-in JWT
     * authorizer (no authorizer Lambda; RSA-signed tokens only; no WAF, no
     * gateway responses). What each gives and costs: docs/infra.md.
     */
    type: z._default(z.enum(API_TYPES, { error: `must be one of ${API_TYPES.join(', ')}` }), 'rest'),
    /** The stage name: the first path segment of the invoke URL (`https://<api>.execute-api.<region>.amazonaws.com/<stage>/v1/...`). */
    stageName: z._default(
      z
        .string({ error: 'must be a string (API stage name)' })
        .check(z.regex(/^[A-Za-z0-9_]{1,64}$/, { message: 'must be 1-64 of A-Z a-z 0-9 _ (API stage name)' })),
      'api',
    ),
    /**
     * Route ID (lib/http/routes.ts, e.g. `submitAction`) → provisioned concurrent executions of the function that
     * serves it. Such a function gets a `live` alias with that many environments kept initialized, and the API
     * invokes the alias. Their INIT runs before any request reaches them, and there the function builds its Runtime
     * (functions/shared/production-runtime.ts), which an on-demand environment builds on its first request. Billed
     * per environment for every second it is provisioned, whether used or not: docs/infra.md ("Provisioned
     * concurrency"). Two routes of one function take the larger count. Absent: none (every environment on demand).
     */
    provisionedConcurrency: z._default(
      z.record(z.string(), intIn(1, 1000, 'provisioned concurrent executions'), {
        error: 'must be an object: route ID → provisioned concurrent executions',
      }),
      {},
    ),
    /** Steady-state requests per second across the stage (API Gateway token bucket rate). */
    throttlingRateLimit: z._default(intIn(1, 10_000, 'requests per second'), 50),
    /** Burst size of the stage's token bucket. */
    throttlingBurstLimit: z._default(intIn(1, 5_000, 'requests'), 100),
    /** REST only: how long API Gateway caches an authorizer answer per token; 0 turns the cache off. (The HTTP API's JWT authorizer caches only keys.) */
    authorizerCacheTtlSeconds: z._default(intIn(0, MAX_AUTHORIZER_CACHE_SECONDS, 'seconds'), 60),
    /**
     * REST only: create the account-level role API Gateway uses to write
     * execution logs (AWS::ApiGateway::Account, one per account and region).
     * Set false when the account already has one configured.
     */
    cloudWatchRole: z._default(z.boolean({ error: 'must be true or false' }), true),
    /**
     * REST only, with `tracing` on: the X-Ray sampling rule of the stage (an
     * AWS::XRay::SamplingRule matching this API's stage). Each second the
     * first `reservoir` requests are traced, then a `rate` share (0-1) of the
     * rest. The stage's decision carries to the authorizer and the route
     * function (one trace); the HTTP API does not trace, and Lambda's own
     * sampling (functions triggered by SQS or a schedule, every function
     * behind the HTTP API) follows X-Ray's default and cannot be configured.
     * docs/infra.md ("Stage").
     */
    xraySampling: z.prefault(
      z.strictObject({
        reservoir: z._default(intIn(0, 1000, 'traced requests per second before the rate applies'), 1),
        rate: z._default(
          z
            .number({ error: 'must be a number from 0 to 1 (the share of requests traced after the reservoir)' })
            .check(z.gte(0, { message: 'must be at least 0 (a share)' }), z.lte(1, { message: 'must be at most 1 (a share)' })),
          0.01,
        ),
      }),
      {},
    ),
  }),
);

/** A connector's base URL override: an absolute http(s) URL. */
const baseUrl = z.lazySchema(() =>
  z.string({ error: 'must be a string holding the connector base URL' }).check(
    z.refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
      message: 'must be an absolute http:// or https:// URL (the connector base URL)',
    }),
  ),
);

/**
 * The infrastructure configuration file (`cdk synth`, the local stack). Built on first use: the
 * functions parse only its run-time part (AIP_RUNTIME_CONFIG, below), so their cold start skips it.
 */
const infraConfigSchema = z.lazySchema(() =>
  z
    .strictObject({
      /** Short environment name; part of stack names and the schedule group name. */
      envName: z.string({ error: 'must be a short environment name such as "dev" or "prod"' }).check(
        z.regex(/^[a-z][a-z0-9-]{0,15}$/, {
          message: 'must match ^[a-z][a-z0-9-]{0,15}$ (it becomes part of stack and resource names)',
        }),
      ),
      auth: AuthConfigSchema,
      connectors: z._default(z.array(deploymentConnectorConfigSchema()), []),
      approvalPolicies: z._default(z.array(ApprovalPolicySchema), []),
      /** Alarm notifications go here when set. */
      alarmEmail: z.optional(z.email({ error: 'must be an email address' })),
      logRetentionDays: z._default(
        z.literal(LOG_RETENTION_DAYS, { error: `must be one of ${LOG_RETENTION_DAYS.join(', ')} (CloudWatch Logs retention days)` }),
        30,
      ),
      /** `sqs-managed` (SSE-SQS) or `kms` (a customer managed key created by the stateful stack). */
      queueEncryption: z._default(z.enum(['sqs-managed', 'kms'], { error: 'must be "sqs-managed" or "kms"' }), 'sqs-managed'),
      /** Timeout of the connector worker Lambda; the invoke queue's visibility timeout derives from it. */
      workerTimeoutSeconds: z._default(intIn(10, 900, 'seconds; Lambda allows at most 900'), 60),
      /** Timeout of the reconcile consumer Lambda; the reconcile queue's visibility timeout derives from it. */
      reconcilerTimeoutSeconds: z._default(intIn(10, 900, 'seconds; Lambda allows at most 900'), 60),
      /** Most concurrent worker instances the invoke queue's event source scales to (bounds the load on providers). */
      workerMaxConcurrency: z._default(intIn(2, 1000, 'concurrent invocations; SQS event sources allow 2-1000'), 10),
      /** Most concurrent reconcile consumer instances. */
      reconcilerMaxConcurrency: z._default(intIn(2, 1000, 'concurrent invocations; SQS event sources allow 2-1000'), 5),
      /**
       * Reserved concurrency of the invoke worker: instances no other function of
       * the account can take, so a burst elsewhere (the API functions included)
       * never throttles the worker below its event source's maximum concurrency.
       * At least `workerMaxConcurrency` (Lambda throttles an event source whose
       * maximum concurrency exceeds the function's reserved concurrency). Absent:
       * the worker shares the account's unreserved pool (an account must keep
       * 100 unreserved, so small accounts cannot reserve). docs/infra.md.
       */
      workerReservedConcurrency: z.optional(intIn(2, 10_000, 'reserved concurrent executions')),
      /** Reserved concurrency of the reconcile consumer; at least `reconcilerMaxConcurrency`. Absent: none. */
      reconcilerReservedConcurrency: z.optional(intIn(2, 10_000, 'reserved concurrent executions')),
      /**
       * The alarm on the invoke queue's quiet tenants (SQS fair queues'
       * ApproximateAgeOfOldestMessageInQuietGroups: the oldest message of the
       * tenants that are not noisy) fires when it is older than this.
       */
      quietTenantQueueAgeAlarmSeconds: z._default(intIn(60, 43_200, 'seconds'), 300),
      /**
       * X-Ray active tracing of every function, with the Powertools Tracer in the
       * code (handler subsegments, outgoing HTTPS calls). Off: no X-Ray, and the
       * functions never import the tracer (about 100 KiB of code, loaded on the
       * first sampled invocation; docs/bench/analysis.md, "Cold start and bundles").
       */
      tracing: z._default(z.boolean(), true),
      /**
       * NODE_OPTIONS=--enable-source-maps on every function: stack traces in the
       * logs name the TypeScript files and lines. Off by default because Node
       * then reads every chunk's source map as it loads it, which costs 10 to
       * 20 % of a cold start (docs/bench/analysis.md, "Cold start and bundles");
       * the bundles ship their `.map` files either way, so a logged stack can be
       * mapped offline, or this switched on while investigating.
       */
      sourceMaps: z._default(z.boolean(), false),
      /** Log level of every function (Powertools Logger and Lambda's application log level). */
      logLevel: z._default(z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }), 'INFO'),
      /**
       * Lambda's system log level on every function ({@link LAMBDA_SYSTEM_LOG_LEVELS}).
       * WARN (the default) drops the `platform.start` and `platform.report`
       * records of every successful invocation, about 40 % of the bytes an execute
       * writes to CloudWatch Logs, and keeps those of a failed one. Lambda's
       * free CloudWatch metrics (Duration, Errors, Throttles, ConcurrentExecutions)
       * carry the same figures per function; INFO brings the per-invocation
       * REPORT back (billed duration, max memory used, init duration).
       * docs/infra.md ("Logs").
       */
      lambdaSystemLogLevel: z._default(
        z.enum(LAMBDA_SYSTEM_LOG_LEVELS, { error: `must be one of ${LAMBDA_SYSTEM_LOG_LEVELS.join(', ')} (Lambda's system log level)` }),
        'WARN',
      ),
      /**
       * Where the first attempt of an action whose client waits (`Prefer: wait` on POST /v1/actions) runs: `inline`,
       * in the submit function, when the capability's attempt timeout plus the 10 s settlement margin fits the
       * function's remaining time (the answer is the settled result, without SQS, the worker or the wait's polls);
       * `queue`, through the invoke queue and the worker as every other invocation. `inline` grants the submit
       * function what a settlement as `outcome_unknown` needs (create and delete the one-time reconciliation
       * schedules, pass the scheduler role); it already reads the connector secrets for previews. Every invocation
       * nobody waits on, and every retry, goes through the queue either way (docs/runtime.md, "The attempt inside the
       * submit when the client waits").
       */
      attemptWhenWaited: z._default(z.enum(ATTEMPT_WHEN_WAITED, { error: `must be one of ${ATTEMPT_WHEN_WAITED.join(', ')}` }), 'inline'),
      api: z.prefault(apiConfigSchema(), {}),
      /** The alarm on the oldest outcome_unknown record fires when it is older than this. */
      outcomeUnknownAlarmAgeSeconds: z._default(intIn(60, 7 * 24 * 3600, 'seconds'), 1800),
      /**
       * Connector ID → base URL of its provider API, for connectors whose default
       * base URL is not the one to use (the reference payments connector defaults
       * to the local simulator). Set as AIP_CONNECTOR_ENDPOINTS on the functions.
       */
      connectorEndpoints: z._default(z.record(z.string(), baseUrl(), { error: 'must be an object: connector ID → base URL' }), {}),
      /**
       * Remote connector placement (infra/remote-host.ts, docs/infra.md "Remote
       * connector host"): these enabled connectors run in a connector host
       * Lambda behind a Function URL, reached through signed requests (KMS keys
       * created by the stack). Absent: every connector runs in-process.
       */
      remoteConnectorHost: z.optional(
        z.strictObject({
          connectors: z.array(protocolId('connector ID')).check(z.minLength(1, { message: 'must list at least one enabled connector' })),
          instanceId: z._default(protocolId('connector instance ID'), 'host-1'),
          replica: z._default(protocolId('replica ID'), 'host-1-a'),
          timeoutSeconds: z._default(intIn(10, 900, 'seconds; Lambda allows at most 900'), 60),
          memorySize: z._default(intIn(128, 10_240, 'MB'), 512),
          /**
           * Placed connector ID → most attempts of it the host runs at once
           * (across all its Lambda environments: slots in the host's table). A
           * request beyond it is refused, signed, with
           * `connector.remote_capacity_exhausted` (retryable; the connector was
           * not called). Absent for a connector: no limit.
           */
          maxConcurrentAttempts: z._default(
            z.record(z.string(), intIn(1, MAX_CONCURRENT_ATTEMPTS_LIMIT, 'concurrent attempts'), {
              error: 'must be an object: placed connector ID → concurrent attempts',
            }),
            {},
          ),
        }),
      ),
    })
    .check(
      z.superRefine((config, ctx) => {
        refineAuthUrls(config, ctx);
        const seen = new Set<string>();
        config.connectors.forEach((connector, index) => {
          if (seen.has(connector.id)) {
            ctx.addIssue({ code: 'custom', path: ['connectors', index, 'id'], message: `duplicate connector ID "${connector.id}"` });
          }
          if (connector.http !== undefined && connector.module !== undefined) {
            ctx.addIssue({
              code: 'custom',
              path: ['connectors', index, 'module'],
              message: 'a connector is either a declarative HTTP document (http) or a code module (module), not both',
            });
          }
          seen.add(connector.id);
          const rows = new Set<string>();
          connector.credentials.forEach((row, rowIndex) => {
            const key = JSON.stringify([row.handle, row.tenantId, row.externalAccountId ?? null]);
            if (rows.has(key)) {
              const scope =
                row.externalAccountId === undefined ? `tenant "${row.tenantId}"` : `tenant "${row.tenantId}", external account "${row.externalAccountId}"`;
              ctx.addIssue({
                code: 'custom',
                path: ['connectors', index, 'credentials', rowIndex],
                message: `duplicate credential reference: handle "${row.handle}" for ${scope} is already mapped`,
              });
            }
            rows.add(key);
          });
        });
        for (const id of Object.keys(config.remoteConnectorHost?.maxConcurrentAttempts ?? {})) {
          if (!config.remoteConnectorHost?.connectors.includes(id)) {
            ctx.addIssue({
              code: 'custom',
              path: ['remoteConnectorHost', 'maxConcurrentAttempts', id],
              message: `"${id}" is not placed on the remote connector host (placed: ${config.remoteConnectorHost?.connectors.join(', ')})`,
            });
          }
        }
        config.remoteConnectorHost?.connectors.forEach((id, index) => {
          if (!seen.has(id)) {
            ctx.addIssue({
              code: 'custom',
              path: ['remoteConnectorHost', 'connectors', index],
              message: `"${id}" is not an enabled connector (enabled: ${[...seen].join(', ') || 'none'})`,
            });
          }
        });
        for (const id of Object.keys(config.connectorEndpoints)) {
          if (!seen.has(id)) {
            ctx.addIssue({
              code: 'custom',
              path: ['connectorEndpoints', id],
              message: `"${id}" is not an enabled connector (enabled: ${[...seen].join(', ') || 'none'})`,
            });
          }
        }
        for (const [reserved, max] of [
          ['workerReservedConcurrency', 'workerMaxConcurrency'],
          ['reconcilerReservedConcurrency', 'reconcilerMaxConcurrency'],
        ] as const) {
          const value = config[reserved];
          if (value !== undefined && value < config[max]) {
            ctx.addIssue({
              code: 'custom',
              path: [reserved],
              message: `must be at least ${max} (${config[max]}): Lambda throttles an SQS event source whose maximum concurrency exceeds the function's reserved concurrency`,
            });
          }
        }
        if (config.api.type === 'http') refineHttpApiAuth(config, ctx);
        if (config.api.throttlingBurstLimit < Math.min(config.api.throttlingRateLimit, 5_000)) {
          ctx.addIssue({
            code: 'custom',
            path: ['api', 'throttlingBurstLimit'],
            message: `must be at least the rate limit (${config.api.throttlingRateLimit}): a smaller bucket cannot sustain the rate`,
          });
        }
        const policyIds = new Set<string>();
        config.approvalPolicies.forEach((policy, index) => {
          if (policyIds.has(policy.id)) {
            ctx.addIssue({ code: 'custom', path: ['approvalPolicies', index, 'id'], message: `duplicate approval policy ID "${policy.id}"` });
          }
          policyIds.add(policy.id);
          if (!seen.has(policy.connector)) {
            const enabled = [...seen].join(', ') || 'none';
            ctx.addIssue({
              code: 'custom',
              path: ['approvalPolicies', index, 'connector'],
              message: `"${policy.connector}" is not an enabled connector (enabled: ${enabled})`,
            });
          }
          const selected = policy.tenants ?? [];
          if (selected.includes('*') && selected.length > 1) {
            ctx.addIssue({
              code: 'custom',
              path: ['approvalPolicies', index, 'tenants'],
              message: '"*" selects every tenant: list it alone, or list tenant IDs',
            });
          }
          selected.forEach((tenant, tenantIndex) => {
            if (selected.indexOf(tenant) !== tenantIndex) {
              ctx.addIssue({ code: 'custom', path: ['approvalPolicies', index, 'tenants', tenantIndex], message: `duplicate tenant "${tenant}"` });
            }
          });
          policy.modes?.forEach((mode, modeIndex) => {
            if (!(APPROVAL_GATED_MODES as readonly string[]).includes(mode)) {
              ctx.addIssue({
                code: 'custom',
                path: ['approvalPolicies', index, 'modes', modeIndex],
                message: `"${mode}" cannot be gated by approval: dry_run and plan are previews that run before any approval; gate one of ${APPROVAL_GATED_MODES.join(', ')}`,
              });
            }
          });
        });
      }),
    ),
);

/** The validated configuration, with defaults applied. */
export type InfraConfig = z.output<ReturnType<typeof infraConfigSchema>>;
/** What a configuration file may contain (defaults not yet applied). */
export type InfraConfigInput = z.input<ReturnType<typeof infraConfigSchema>>;
export type ApprovalPolicy = InfraConfig['approvalPolicies'][number];

export interface InfraConfigIssue {
  /** Dotted path of the offending field, e.g. `auth.issuer` or `connectors[0].id`. */
  readonly path: string;
  readonly message: string;
}

/** Thrown at synth time for a configuration that cannot be deployed. */
export class InfraConfigError extends Error {
  readonly issues: readonly InfraConfigIssue[];

  constructor(source: string, issues: readonly InfraConfigIssue[]) {
    const lines = issues.map((issue) => `  - ${issue.path || '(root)'}: ${issue.message}`);
    super(`Invalid AIP infrastructure configuration (${source}):\n${lines.join('\n')}`);
    this.name = 'InfraConfigError';
    this.issues = issues;
  }
}

/** Validates a configuration object; throws {@link InfraConfigError} naming every bad field. */
export function parseInfraConfig(input: unknown, source = 'inline configuration'): InfraConfig {
  const result = infraConfigSchema().safeParse(input);
  if (result.success) return result.data;
  throw new InfraConfigError(
    source,
    result.error.issues.map((issue) => ({ path: formatIssuePath(issue.path), message: describeIssue(issue) })),
  );
}

/** Reads and validates a JSON configuration file. Relative paths resolve against `cwd`. */
export function loadInfraConfig(file: string, cwd: string = process.cwd()): InfraConfig {
  const path = isAbsolute(file) ? file : resolve(cwd, file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (error as Error).message;
    throw new InfraConfigError(path, [{ path: '', message: `cannot read the configuration file: ${reason} (pass -c config=<path.json>)` }]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InfraConfigError(path, [{ path: '', message: `not valid JSON: ${(error as Error).message}` }]);
  }
  const config = parseInfraConfig(json, path);
  // A code connector's module path is relative to the configuration file (a package's own layout), not to where synth runs.
  return {
    ...config,
    connectors: config.connectors.map((c) => (c.module !== undefined && !isAbsolute(c.module) ? { ...c, module: resolve(dirname(path), c.module) } : c)),
  };
}

/**
 * The part of the configuration the Lambda functions need at run time. The
 * stateless stack serialises it into the `AIP_RUNTIME_CONFIG` variable.
 * Not the Runtime's own settings (`RuntimeSettings` in
 * lib/runtime/config.ts, the `AIP_RUNTIME_SETTINGS` variable).
 */
export const DeploymentRuntimeConfigSchema = z.deferred(() =>
  z
    .strictObject({
      envName: z.string(),
      auth: AuthConfigSchema,
      connectors: z.array(ConnectorConfigSchema),
      approvalPolicies: z.array(ApprovalPolicySchema),
      /** `attemptWhenWaited` of the configuration; absent: the Runtime's own setting (`attempt_when_waited`). */
      attemptWhenWaited: z.optional(z.enum(ATTEMPT_WHEN_WAITED)),
    })
    .check(z.superRefine(refineAuthUrls)),
);
export type DeploymentRuntimeConfig = z.output<typeof DeploymentRuntimeConfigSchema>;

/** The run-time part of a validated configuration (what the stack puts in `AIP_RUNTIME_CONFIG`). */
export function toDeploymentRuntimeConfig(config: InfraConfig): DeploymentRuntimeConfig {
  return {
    envName: config.envName,
    auth: config.auth,
    // Where a connector comes from is build-time knowledge (it is bundled): the functions get IDs and credentials only.
    connectors: config.connectors.map(({ http: _http, module: _module, ...connector }) => connector),
    approvalPolicies: config.approvalPolicies,
    attemptWhenWaited: config.attemptWhenWaited,
  };
}

/** Parses the `AIP_RUNTIME_CONFIG` JSON; throws {@link InfraConfigError} naming the bad field. */
export function parseDeploymentRuntimeConfig(json: string): DeploymentRuntimeConfig {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new InfraConfigError('AIP_RUNTIME_CONFIG', [{ path: '', message: `not valid JSON: ${(error as Error).message}` }]);
  }
  const result = DeploymentRuntimeConfigSchema.safeParse(value);
  if (result.success) return result.data;
  throw new InfraConfigError(
    'AIP_RUNTIME_CONFIG',
    result.error.issues.map((issue) => ({ path: formatIssuePath(issue.path), message: describeIssue(issue) })),
  );
}
