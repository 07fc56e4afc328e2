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
      from: { path: '^lib/', pathNot: '^lib/aws/' },
      to: { path: '^node_modules/(@aws-sdk|@smithy|@aws-lambda-powertools)/' },
    },
    {
      name: 'runtime-imports-no-infra',
      severity: 'error',
      comment: 'Lambda code must never pull the CDK app (or aws-cdk-lib) into a bundle.',
      from: { path: '^(lib|functions)/' },
      to: { path: ['^infra/', '^node_modules/(aws-cdk-lib|constructs)/'] },
    },
    // lib/common/zod.ts is the one zod: `zod/mini` with the English locale installed. Classic zod (or
    // zod/mini without those messages) must not reach a deployed module; dev/ may keep classic zod.
    {
      name: 'zod-through-common',
      severity: 'error',
      comment:
        'import zod through lib/common/zod.ts (zod/mini with the English messages). One exception: the HTTP connector builds validators from JSON Schema with fromJSONSchema, which only classic zod has; it is loaded with the connectors, never by a read route or the authorizer.',
      from: { path: '^(lib|functions|infra)/', pathNot: '^lib/(common/zod|connectors/http/compile)\\.ts$' },
      to: { path: '^node_modules/zod/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Packages are not followed but not excluded either: the rules above match imports of them (an excluded module's edges are dropped).
    exclude: { path: '^(cdk\\.out|\\.vitest-tmp)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
