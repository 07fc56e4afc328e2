#!/usr/bin/env node
/**
 * `aip-conformance` command-line entry (package.json "bin"): runs the
 * connector conformance kit against the subject a module exports, e.g.
 * `npx aip-conformance ./my-connector.ts`. Like bin/aip.mjs it registers
 * tsx's ESM loader in-process (node:module register, Node >= 20.6), so both
 * the kit (TypeScript) and the author's .ts module load without a build
 * step. See packages/connector-sdk/src/conformance/README.md.
 */
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../packages/connector-sdk/src/conformance/cli.ts');

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
