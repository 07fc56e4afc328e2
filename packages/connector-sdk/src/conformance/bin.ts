#!/usr/bin/env node
/**
 * The package's `aip-conformance` command on plain Node (no loader): an
 * author's `.ts` module loads with Node's built-in type stripping
 * (Node >= 22.18); see the package README, "Why type stripping".
 */
import { main } from './cli.js';

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
