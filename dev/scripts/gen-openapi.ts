/**
 * Generates docs/openapi.json from the route table and zod schemas.
 *
 *   npx tsx dev/scripts/gen-openapi.ts          # write the document
 *   npx tsx dev/scripts/gen-openapi.ts --check  # exit 1 when the committed document is stale
 *
 * test/unit/http/openapi.test.ts asserts the committed file equals
 * renderOpenApiDocument(), so the document cannot drift from the code.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { renderOpenApiDocument } from '../../functions/shared/openapi.js';

export const OPENAPI_DOC_PATH = resolve(dirname(fileURLToPath(import.meta.url)), '../../docs/openapi.json');

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  const doc = renderOpenApiDocument();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(OPENAPI_DOC_PATH, 'utf8');
    } catch {
      current = '';
    }
    if (current !== doc) {
      process.stderr.write('docs/openapi.json is stale: run `npx tsx dev/scripts/gen-openapi.ts`\n');
      process.exit(1);
    }
  } else {
    writeFileSync(OPENAPI_DOC_PATH, doc);
    process.stdout.write(`wrote ${OPENAPI_DOC_PATH}\n`);
  }
}
