/**
 * RFC 4180 CSV for the warehouse export: CRLF line ends, every field quoted, quotes doubled. A cell a
 * spreadsheet would run as a formula (starting with = + - @, a tab or a carriage return) gets a
 * leading apostrophe (OWASP "CSV injection"): names and addresses come from shoppers.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '""';
  let s = String(value);
  if (typeof value === 'string' && FORMULA_START.test(s)) s = `'${s}`;
  return `"${s.replace(/"/g, '""')}"`;
}

export function csvLine(cells: readonly (string | number | null | undefined)[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
