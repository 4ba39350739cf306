import { describe, expect, it } from 'vitest';
import { csvCell, csvLine } from './csv.ts';

describe('warehouse CSV', () => {
  it('quotes every field, doubles quotes, keeps commas and line breaks inside the field', () => {
    expect(csvLine(['a', 'b,c', 'say "hi"', 'two\nlines', null, 3])).toBe('"a","b,c","say ""hi""","two\nlines","","3"\r\n');
  });
  it('defuses cells a spreadsheet would run as a formula', () => {
    expect(csvCell('=HYPERLINK("x")')).toBe('"\'=HYPERLINK(""x"")"');
    expect(csvCell('+1 555')).toBe('"\'+1 555"');
    expect(csvCell('@SUM(A1)')).toBe('"\'@SUM(A1)"');
    expect(csvCell(-5)).toBe('"-5"');
  });
});
