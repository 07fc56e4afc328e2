/**
 * Regenerates the table section of docs/authority.md from
 * lib/runtime/authority.ts (AUTHORITY_TABLE), between the GENERATED markers.
 *
 *   npx tsx dev/scripts/gen-authority-docs.ts          # rewrite the section
 *   npx tsx dev/scripts/gen-authority-docs.ts --check  # exit 1 when the committed doc is stale
 *
 * test/unit/runtime/authority.test.ts asserts the committed doc holds
 * renderAuthorityTable(), so the doc cannot drift from the rule.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AUTHORITY_OPERATIONS, AUTHORITY_ROLES, AUTHORITY_TABLE, type Refusal } from '../../lib/runtime/authority.js';

export const AUTHORITY_DOC_PATH = resolve(dirname(fileURLToPath(import.meta.url)), '../../docs/authority.md');
export const BEGIN = '<!-- BEGIN GENERATED: dev/scripts/gen-authority-docs.ts renders this table from lib/runtime/authority.ts -->';
export const END = '<!-- END GENERATED -->';

function refusal(r: Refusal | 'by_kind'): string {
  if (r === 'by_kind') return 'the target kind’s not-found';
  return `\`${r.code}\`${r.conceal === true ? ' (naming only the ID the caller gave)' : ''}`;
}

export function renderAuthorityTable(): string {
  const lines = [
    BEGIN,
    '',
    `| operation | what | ${AUTHORITY_ROLES.map((r) => `\`${r}\``).join(' | ')} | refusal, caller may read the target | refusal, caller may not |`,
    `|---|---|${AUTHORITY_ROLES.map(() => ':-:').join('|')}|---|---|`,
  ];
  for (const op of AUTHORITY_OPERATIONS) {
    const row = AUTHORITY_TABLE[op];
    const cells = AUTHORITY_ROLES.map((r) => (row.allowed.includes(r) ? 'yes' : '—'));
    lines.push(`| \`${op}\` | ${row.description} | ${cells.join(' | ')} | ${refusal(row.visible)} | ${refusal(row.hidden)} |`);
  }
  lines.push('', END);
  return lines.join('\n');
}

export function withTable(doc: string): string {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start === -1 || end === -1 || end < start) throw new Error(`docs/authority.md lacks the ${BEGIN} … ${END} markers`);
  return doc.slice(0, start) + renderAuthorityTable() + doc.slice(end + END.length);
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  const current = readFileSync(AUTHORITY_DOC_PATH, 'utf8');
  const next = withTable(current);
  if (process.argv.includes('--check')) {
    if (next !== current) {
      process.stderr.write('docs/authority.md is stale: run npx tsx dev/scripts/gen-authority-docs.ts\n');
      process.exit(1);
    }
  } else {
    writeFileSync(AUTHORITY_DOC_PATH, next);
  }
}
