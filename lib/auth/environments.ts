/**
 * Deployment environments (`envName`) whose JWT issuer and JWKS URL may use
 * plain `http:`: the local stack and LocalStack, whose Lambda containers
 * verify tokens against a development JWKS on the host
 * (`http://host.docker.internal:...`, README.md "Deploy to LocalStack").
 * Every other environment needs https: lib/config/deployment.ts refuses the rest at
 * synth, and the verifier refuses an `http:` JWKS URL off loopback
 * (./verifier.ts, ./config.ts).
 *
 * A leaf module (no imports), so the infra configuration and the Lambda
 * bundles can share it without pulling in the verifier.
 */
export const HTTP_AUTH_ENVIRONMENTS: readonly string[] = ['local', 'localstack'];
