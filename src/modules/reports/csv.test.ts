import { describe, expect, it } from 'vitest';
import { reportCsv } from './csv.ts';

describe('reportCsv', () => {
  it('header, rows, then totals marked `total` in the first column; CRLF', () => {
    const csv = reportCsv(['period', 'currency', 'net'], [{ period: '2025-01-10', currency: 'USD', net: -500 }], [{ currency: 'USD', net: -500 }]);
    expect(csv).toBe('period,currency,net\r\n2025-01-10,USD,-500\r\ntotal,USD,-500\r\n');
  });

  it('quotes commas, quotes and line breaks; defuses formulas in text; empty for null', () => {
    const csv = reportCsv(['code', 'reason', 'count'], [{ code: null, reason: 'Do "not", honor', count: 1 }, { code: '=1+1', reason: '@SUM(A1)\nx', count: 2 }], []);
    expect(csv.split('\r\n')).toEqual(['code,reason,count', ',"Do ""not"", honor",1', `'=1+1,"'@SUM(A1)\nx",2`, '']);
  });
});
