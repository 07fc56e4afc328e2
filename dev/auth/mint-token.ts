/**
 * Mints a development bearer token for the local stack.
 *
 *   node --import tsx dev/auth/mint-token.ts --sub alice --tenant acme --scope aip:actions:write
 *
 * Options:
 *   --sub <id>          principal ID (required)
 *   --kind <kind>       user | agent | service | application (default user)
 *   --tenant <id>       tenant membership; repeat for several
 *   --account <id>      external account the token holds (claim aip:accounts); repeat, or comma-separate
 *   --scope <scope>     scope; repeat, or pass a space-separated list (default aip:actions:read aip:actions:write)
 *   --ttl <span>        lifetime: seconds or 15m, 1h, 2d (default 1h)
 *   --keys-dir <dir>    dev key directory (default .local/dev-keys)
 *   --json              print {"token": …, "expires_in": …} instead of the bare token
 *
 * FOR LOCAL DEVELOPMENT ONLY: the token is signed with the git-ignored dev key
 * and is accepted only by the local stack.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { PrincipalKind } from '../../packages/connector-sdk/src/protocol/identity.js';
import { DEFAULT_DEV_KEYS_DIR, loadDevKeys } from './keys.js';
import { mintToken, ttlSeconds } from './mint.js';

export async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        sub: { type: 'string' },
        kind: { type: 'string' },
        tenant: { type: 'string', multiple: true },
        account: { type: 'string', multiple: true },
        scope: { type: 'string', multiple: true },
        ttl: { type: 'string' },
        'keys-dir': { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(
      'usage: node --import tsx dev/auth/mint-token.ts --sub <id> [--kind user] [--tenant <id>]... [--account <id>]... [--scope <s>]... [--ttl 1h] [--json]\n',
    );
    return 0;
  }
  if (values.sub === undefined || values.sub === '') {
    process.stderr.write('--sub is required\n');
    return 2;
  }
  try {
    const keys = await loadDevKeys(values['keys-dir'] ?? DEFAULT_DEV_KEYS_DIR);
    const scopes = values.scope?.flatMap((s) => s.split(/\s+/).filter((x) => x.length > 0));
    const accounts = values.account?.flatMap((a) => a.split(/[\s,]+/).filter((x) => x.length > 0));
    const ttl = values.ttl ?? '1h';
    const token = await mintToken(
      {
        sub: values.sub,
        ...(values.kind !== undefined ? { kind: values.kind as PrincipalKind } : {}),
        tenants: values.tenant ?? [],
        ...(accounts !== undefined ? { accounts } : {}),
        ...(scopes !== undefined ? { scopes } : {}),
        ttl,
      },
      keys,
    );
    process.stdout.write(values.json ? `${JSON.stringify({ token, token_type: 'Bearer', expires_in: ttlSeconds(ttl) })}\n` : `${token}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 1;
  }
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  process.exitCode = await main(process.argv.slice(2));
}
