import { isAffiliateScoped, PERMISSIONS, type Permission, PROVIDER_PERMISSIONS, ROLE_NAMES, ROLE_PERMISSIONS, ROLES } from './permissions.ts';

export const MATRIX_START = '<!-- permission-matrix:start (generated from src/modules/access/permissions.ts; test/permission-matrix.test.ts checks it) -->';
export const MATRIX_END = '<!-- permission-matrix:end -->';

/**
 * Who holds a permission: ✓ on every route that needs it, "own" only on the routes that narrow to
 * the caller's affiliate ids (affiliate-scoped columns), "opt" only when the merchant grants it to
 * the provider, – never.
 */
function cell(holds: boolean, optional = false, scoped = false, p?: Permission): string {
  if (holds) return scoped && p !== 'team:view' ? 'own' : '✓';
  return optional ? 'opt' : '–';
}

/** The README's permission matrix: every permission × every role and provider kind. */
export function permissionMatrixMarkdown(): string {
  const head = ['Permission', ...ROLES.map((r) => ROLE_NAMES[r]), 'Customer Service Provider', 'Affiliate Provider'];
  const rows = (Object.keys(PERMISSIONS) as Permission[]).map((p) => [
    `\`${p}\``,
    ...ROLES.map((r) => cell(ROLE_PERMISSIONS[r].includes(p), false, isAffiliateScoped(r), p)),
    cell(PROVIDER_PERMISSIONS.customer_service.base.includes(p), PROVIDER_PERMISSIONS.customer_service.optional.includes(p)),
    cell(PROVIDER_PERMISSIONS.affiliate.base.includes(p), PROVIDER_PERMISSIONS.affiliate.optional.includes(p), true, p),
  ]);
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [MATRIX_START, line(head), line(head.map(() => '---')), ...rows.map(line), MATRIX_END].join('\n');
}

export interface MatrixColumn {
  /** Permissions held on every route that needs them. */
  all: Set<string>;
  /** Permissions held only on the routes that narrow to the caller's affiliate ids. */
  own: Set<string>;
}

/** Parses the README's matrix back: column title → what it holds. */
export function parseMatrix(markdown: string): Map<string, MatrixColumn> {
  const start = markdown.indexOf(MATRIX_START);
  const end = markdown.indexOf(MATRIX_END);
  if (start < 0 || end < start) throw new Error('README has no permission matrix between its markers');
  const lines = markdown
    .slice(start + MATRIX_START.length, end)
    .split('\n')
    .filter((l) => l.startsWith('|'));
  const split = (l: string) => l.split('|').slice(1, -1).map((c) => c.trim());
  const head = split(lines[0]!);
  const out = new Map<string, MatrixColumn>(head.slice(1).map((h) => [h, { all: new Set<string>(), own: new Set<string>() }]));
  for (const l of lines.slice(2)) {
    const cells = split(l);
    const permission = cells[0]!.replace(/`/g, '');
    cells.slice(1).forEach((c, i) => {
      if (c === '✓') out.get(head[i + 1]!)!.all.add(permission);
      if (c === 'own') out.get(head[i + 1]!)!.own.add(permission);
    });
  }
  return out;
}
