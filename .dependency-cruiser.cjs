/**
 * The layering rules, checked by `npm run lint:deps` (part of `npm test`).
 * CONTRIBUTING.md › "Layering" explains them.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes the import order decide behaviour and hides which module owns a name.',
      from: { path: '^(lib|functions|infra|dev|bench|console/src)/' },
      to: { circular: true },
    },
    {
      name: 'domain-imports-no-aws-sdk',
      severity: 'error',
      comment: 'The domain is pure: only the adapters under lib/aws talk to AWS.',
      from: { path: '^(lib|packages)/', pathNot: '^lib/aws/' },
      to: { path: '^node_modules/(@aws-sdk|@smithy|@aws-lambda-powertools)/' },
    },
    {
      name: 'runtime-imports-no-infra',
      severity: 'error',
      comment: 'Lambda code must never pull the CDK app (or aws-cdk-lib) into a bundle.',
      from: { path: '^(lib|functions)/' },
      to: { path: ['^infra/', '^node_modules/(aws-cdk-lib|constructs)/'] },
    },
    {
      name: 'connectors-import-no-runtime',
      severity: 'error',
      comment:
        'lib/connectors holds connectors (reference, declarative HTTP), which run inside the runtime and never reach back into it: the attempt machinery and the remote placement are lib/runtime (lib/connectors/README.md).',
      from: { path: '^lib/connectors/' },
      to: { path: '^lib/runtime/' },
    },
    // packages/connector-sdk/src/common/zod.ts is the one zod: `zod/mini` with the English locale installed. Classic
    // zod (or zod/mini without those messages) must not reach a deployed module; dev/ may keep classic zod.
    {
      name: 'zod-through-common',
      severity: 'error',
      comment:
        'import zod through packages/connector-sdk/src/common/zod.ts (zod/mini with the English messages, installed when the SDK loads). Exceptions: the connectors that consume the SDK package as a third party would (lib/connectors/http, lib/connectors/reference) import zod/mini themselves, after the SDK installed the messages; and the HTTP connector builds validators from JSON Schema with fromJSONSchema, which only classic zod has (lib/connectors/http/compile.ts); it is loaded with the connectors, never by a read route or the authorizer.',
      from: {
        path: '^(lib|functions|infra|packages/connector-sdk/src)/',
        pathNot: '^(packages/connector-sdk/src/common/zod\\.ts$|lib/connectors/(http|reference)/)',
      },
      to: { path: '^node_modules/zod/' },
    },
    {
      name: 'consumers-of-the-sdk-use-zod-mini',
      severity: 'error',
      comment: 'The connectors that consume the SDK package import zod/mini (classic zod only in lib/connectors/http/compile.ts, see zod-through-common).',
      from: { path: '^lib/connectors/(http|reference)/', pathNot: '^lib/connectors/http/compile\\.ts$' },
      to: { path: '^node_modules/zod/', pathNot: '^node_modules/zod/(v4/)?mini/' },
    },
    // The MCP endpoint answers with its own protocol layer (functions/mcp/protocol.ts, docs/mcp.md): the SDK's server and
    // protocol schemas (classic zod) stay out of every deployed module; the SDK's types and two small helpers may be used.
    {
      name: 'mcp-sdk-types-only',
      severity: 'error',
      comment:
        'import only types from @modelcontextprotocol/sdk in deployed code (its server and types modules load classic zod and ~900 schemas at import: docs/mcp.md, "The protocol layer"); server/requestBody.js and shared/mediaType.js are the exceptions. Tests use the SDK as the reference.',
      from: { path: '^(lib|functions|infra|packages/connector-sdk/src)/' },
      to: {
        path: '^node_modules/@modelcontextprotocol/sdk/',
        pathNot: '/(server/requestBody|shared/mediaType)\\.(d\\.ts|js)$',
        dependencyTypesNot: ['type-only'],
      },
    },
    // The connector SDK and conformance kit are a package of their own (packages/connector-sdk, docs in its README):
    // it imports nothing of the repository, only its own modules, Node's and its declared dependencies.
    {
      name: 'sdk-package-self-contained',
      severity: 'error',
      comment:
        'packages/connector-sdk/src imports only itself, node: modules, its package.json dependencies (ajv, canonicalize), the optional peer vitest, zod (bundled into dist by build.mjs) and the types of @standard-schema/spec (inlined in the declarations): never lib/, the runtime, or another package.',
      from: { path: '^packages/connector-sdk/src/' },
      to: { dependencyTypesNot: ['core'], pathNot: '^(packages/connector-sdk/src/|node_modules/(zod|ajv|canonicalize|vitest|@standard-schema/spec)/)' },
    },
    // The reference connectors and the declarative HTTP connector are written as a third party would: through the
    // package's public exports (resolved by tsconfig "paths"), never a relative path into the package.
    {
      name: 'reference-connectors-use-public-exports',
      severity: 'error',
      comment:
        'lib/connectors/{reference,http} import @aip-runtime/connector-sdk (and its /protocol, /errors, /common entries) by package name, as an author would.',
      from: { path: '^lib/connectors/(reference|http)/' },
      to: {
        path: '^packages/',
        pathNot: '^packages/connector-sdk/src/(index|protocol/index|errors/index|common/index)\\.ts$',
      },
    },
    {
      name: 'reference-connectors-import-the-package-by-name',
      severity: 'error',
      comment: 'A relative path into packages/connector-sdk is not how a third party imports the SDK: use the package name.',
      from: { path: '^lib/connectors/(reference|http)/' },
      to: { path: '^packages/', dependencyTypesNot: ['aliased-tsconfig-paths'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Packages are not followed but not excluded either: the rules above match imports of them (an excluded module's edges are dropped).
    exclude: { path: '^(cdk\\.out|\\.vitest-tmp|packages/[^/]+/dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
