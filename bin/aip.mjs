#!/usr/bin/env node
/**
 * `aip` command-line entry (package.json "bin"). The CLI is TypeScript
 * (dev/cli/main.ts); this file registers tsx's ESM loader in-process
 * (node:module register, Node >= 20.6) and imports it, so there is no build
 * step and no second process. Run it as `npx aip ...` inside the repository,
 * or `node bin/aip.mjs ...`. See dev/cli/README.md.
 */
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../dev/cli/main.ts');

const readStdin = async () => {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
};

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  stdin: readStdin,
});
