import { describe, expect, it } from 'vitest';
import { NMI_RESPONSE_CODES, classifyNmi } from './status.ts';

describe('NMI response codes', () => {
  it('approves only 100', () => {
    expect(classifyNmi('100')).toMatchObject({ outcome: 'approved' });
    for (const [code, s] of Object.entries(NMI_RESPONSE_CODES)) expect(s.outcome === 'approved').toBe(code === '100');
  });

  it('salvages soft declines on another gateway', () => {
    for (const code of ['200', '201', '202', '203', '204', '240', '260', '263', '264'])
      expect(classifyNmi(code), code).toMatchObject({ outcome: 'soft_decline', retryable: true });
  });

  it('never retries hard declines', () => {
    for (const code of ['220', '221', '222', '223', '224', '225', '250', '251', '252', '253', '261', '262'])
      expect(classifyNmi(code), code).toMatchObject({ outcome: 'hard_decline', retryable: false });
  });

  it('refuses to retry a gateway rejection or a duplicate, retries processor and communication errors', () => {
    expect(classifyNmi('300')).toMatchObject({ outcome: 'error', retryable: false });
    expect(classifyNmi('430')).toMatchObject({ outcome: 'error', retryable: false });
    for (const code of ['400', '410', '411', '420', '421', '440', '441', '460', '461'])
      expect(classifyNmi(code), code).toMatchObject({ outcome: 'error', retryable: true });
  });

  it('keeps every code in its family: 2xx declines, 3xx and 4xx errors', () => {
    for (const [code, s] of Object.entries(NMI_RESPONSE_CODES)) {
      if (code.startsWith('2')) expect(s.outcome, code).toMatch(/_decline$/);
      if (code.startsWith('3') || code.startsWith('4')) expect(s.outcome, code).toBe('error');
      expect(s.text.length, code).toBeGreaterThan(0);
      if (s.outcome === 'hard_decline') expect(s.retryable, code).toBe(false);
    }
  });

  it('falls back safely for codes it does not know', () => {
    expect(classifyNmi('299')).toMatchObject({ outcome: 'soft_decline', retryable: false });
    for (const code of ['', '999', '150', 'abc', '3', '401'])
      expect(classifyNmi(code), code).toMatchObject({ outcome: 'error', retryable: false });
    expect(classifyNmi(' 202 ')).toMatchObject({ outcome: 'soft_decline', retryable: true });
    expect(classifyNmi('toString')).toMatchObject({ outcome: 'error', retryable: false });
  });
});
