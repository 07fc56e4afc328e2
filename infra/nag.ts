/**
 * cdk-nag (v3) wiring and the reason for every acknowledged finding.
 *
 * cdk-nag 3 is a CDK policy-validation plugin, not an Aspect: it is registered
 * with `Validations.of(app).addPlugins(...)`, runs when the app synthesizes, and
 * any finding it reports (warnings included) fails `cdk synth`. A finding is
 * silenced only by `Validations.of(construct).acknowledge({ id, reason })` on the
 * construct or an ancestor, one finding ID at a time (`AwsSolutions-IAM5[...]`
 * names a single wildcard). Every acknowledgment in infra/ takes its reason from
 * NAG_REASONS below; docs/infra.md lists them with the same words.
 */
import { type App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';

export const NAG_REASONS = {
  /** AwsSolutions-IAM5[Resource::*] on function roles. */
  xrayWrite:
    'Active tracing adds xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions; ' +
    'the function builder grants no other action on "*".',
  /** AwsSolutions-IAM5[Action::kms:ReEncrypt*] and [Action::kms:GenerateDataKey*] on roles with table write access. */
  kmsGrantWildcards:
    "KMS key.grantEncryptDecrypt (used for the table's customer managed key, which DynamoDB uses on the caller's behalf) " +
    'names kms:ReEncrypt* and kms:GenerateDataKey*; the statement is scoped to that one key ARN.',
  /** AwsSolutions-IAM5[Resource::...:schedule/<group>/*] on roles that manage reconciliation schedules. */
  reconcileSchedules:
    'One-time reconciliation schedules get a deterministic name per transaction at run time, so their ARNs cannot be ' +
    'listed at deploy time; the resource is limited to schedules in the AIP reconcile schedule group.',
  /** AwsSolutions-COG4 on every API method. */
  lambdaAuthorizer:
    'The API authenticates with a Lambda TOKEN authorizer that verifies JWTs from any OIDC identity provider (issuer, ' +
    'audience and JWKS URL from the configuration: Cognito, Auth0, Okta); a Cognito user pool authorizer ' +
    'would tie the runtime to Cognito.',
  /** AwsSolutions-APIG4 on the public route(s) of the route table. */
  publicRoute:
    'GET /v1/openapi.json is public by design (the route table marks it auth: none): it serves the static OpenAPI ' +
    'document, reads no data and calls no runtime.',
  /** AwsSolutions-APIG4 and AwsSolutions-COG4 on the operator console's methods (infra/console.ts). */
  consoleStatic:
    'GET /console and /console/{proxy+} serve the operator console: the static files of its build and a config.json holding ' +
    'only public OIDC client settings (issuer, client ID, scopes). They read no data and call no runtime; the page signs in with ' +
    'OIDC (authorization code + PKCE) and calls the API with the bearer token, where the authorizer checks it as on any route.',
  /** AwsSolutions-APIG3 on the stage. */
  noWaf:
    'No WAFv2 web ACL by default: every route except the OpenAPI document needs a verified JWT, the stage throttles, ' +
    'bodies are size-limited, and a web ACL costs a monthly fee per ACL and rule. Associate one with the stage when the ' +
    'deployment is internet-facing and policy demands it.',
  /** AwsSolutions-IAM4 on the API Gateway CloudWatch role. */
  apiGatewayCloudWatchRole:
    'API Gateway writes execution logs (cdk-nag APIG6) through the account-level role, whose AWS managed policy ' +
    'AmazonAPIGatewayPushToCloudWatchLogs is the one AWS documents for it; it grants CloudWatch Logs writes only.',
  /** AwsSolutions-SMG4 on the cursor key secret (stateful stack). */
  cursorKeyRotation:
    'The secret is key material for sealing pagination cursors (AES-256-GCM via HKDF), not a credential of another ' +
    'system, so there is nothing for a rotation function to rotate against; it is rotated by writing ' +
    '{"current": <new>, "previous": [<old>]} as a new version (docs/infra.md), which keeps outstanding cursors valid.',
  /** AwsSolutions-L1 on every function. */
  nodeRuntime:
    'Every function runs on Node.js 22 (LAMBDA_RUNTIME in infra/functions.ts) and its bundle targets node22, so the ' +
    'runtime and the bundle target move together. Moving to a newer runtime is a deliberate upgrade, not a synth-time default.',
} as const;

/** Registers the AWS Solutions pack on the app; `verbose` adds each rule's explanation to findings. */
export function applyNagChecks(app: App): AwsSolutionsChecks {
  const pack = new AwsSolutionsChecks(app, { verbose: true });
  Validations.of(app).addPlugins(pack);
  return pack;
}
