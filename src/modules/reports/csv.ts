/**
 * A report as CSV (RFC 4180, CRLF): a header of the row's fields, the rows, then one line per
 * total with `total` in the first column (and the total's own fields, e.g. its currency); money in
 * minor units as in JSON, so the CSV's totals are the JSON's. A text cell that a spreadsheet would
 * read as a formula (= + - @ first) is prefixed with an apostrophe.
 */
export function reportCsv(columns: readonly string[], rows: readonly Record<string, unknown>[], totals: readonly Record<string, unknown>[]): string {
  const [first] = columns;
  const lines = [columns.map(cell), ...rows.map((r) => columns.map((c) => cell(r[c]))), ...totals.map((t) => columns.map((c) => cell(c === first ? 'total' : t[c])))];
  return lines.map((l) => l.join(',')).join('\r\n') + '\r\n';
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return String(v);
  let s = String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
