import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_DOC_PATH, renderErrorCatalogueDoc } from '../../../dev/scripts/gen-error-docs.js';
import { ERROR_CATALOGUE } from '../../../packages/connector-sdk/src/errors/catalogue.js';

describe('docs/error-catalogue.md', () => {
  it('matches what dev/scripts/gen-error-docs.ts generates (run `npx tsx dev/scripts/gen-error-docs.ts` to refresh)', () => {
    expect(readFileSync(ERROR_DOC_PATH, 'utf8')).toBe(renderErrorCatalogueDoc());
  });
  it('lists every code', () => {
    const doc = renderErrorCatalogueDoc();
    for (const code of Object.keys(ERROR_CATALOGUE)) expect(doc).toContain(`| \`${code}\` |`);
  });
});
