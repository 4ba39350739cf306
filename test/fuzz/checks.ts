import { ERRORS, type ErrorCode } from '../../src/app/errors.ts';
import type { ApiResponse } from '../support/harness.ts';
import type { FuzzCase } from './operations.ts';

/** What is wrong with an answer, judged on its own: a 5xx, or an error that is not the envelope. */
export function checkAnswer(res: ApiResponse): string[] {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`answered ${res.status}`);
  if (res.status < 300) return problems;
  const body = res.body;
  if (!body || typeof body !== 'object') return [...problems, `error answer is not JSON: ${res.text.slice(0, 200)}`];
  if (body.success !== false || typeof body.message !== 'string' || !(body.data === null || typeof body.data === 'object')) {
    problems.push('error answer is not the envelope { success: false, message, data }');
  }
  const code = body.error?.code as ErrorCode | undefined;
  const known = code !== undefined && Object.hasOwn(ERRORS, code) ? ERRORS[code] : undefined;
  if (!known) problems.push(`error.code ${JSON.stringify(code)} is not in the catalogue`);
  else {
    if (body.error.type !== known.type) problems.push(`error.type ${body.error.type} is not ${known.type} for ${code}`);
    if (res.status !== known.status) problems.push(`${code} answered ${res.status}, the catalogue says ${known.status}`);
  }
  return problems;
}

function describeCase(c: FuzzCase): string {
  const body = c.transport.kind === 'raw' ? c.transport.text : c.body === undefined ? '' : JSON.stringify(c.body);
  const type = c.transport.kind === 'none' ? '(no body)' : `content-type ${JSON.stringify(c.transport.contentType)}`;
  const key = c.idempotencyKey ? ` idempotency-key ${c.idempotencyKey}` : '';
  return `${c.op.method} ${c.url.slice(0, 200)} ${type}${key} body ${body.length > 300 ? `${body.slice(0, 300)}… (${body.length} chars)` : body}`;
}

/** Answers by status class and error code, and every failing case (the first few in full). */
export class Tally {
  cases = 0;
  readonly byClass: Record<string, number> = {};
  readonly byCode: Record<string, number> = {};
  readonly failures: string[] = [];

  record(c: FuzzCase, res: ApiResponse, problems: string[]): void {
    this.cases++;
    const cls = `${Math.floor(res.status / 100)}xx`;
    this.byClass[cls] = (this.byClass[cls] ?? 0) + 1;
    const code = res.body?.error?.code ?? (res.status < 300 ? 'ok' : '?');
    this.byCode[`${res.status} ${code}`] = (this.byCode[`${res.status} ${code}`] ?? 0) + 1;
    for (const p of problems) this.failures.push(`${p}\n    ${describeCase(c)}\n    → ${res.text.slice(0, 300)}`);
  }

  failureText(): string {
    return this.failures.slice(0, 10).join('\n') + (this.failures.length > 10 ? `\n… and ${this.failures.length - 10} more` : '');
  }

  report(seed: number): string {
    const classes = Object.entries(this.byClass).sort().map(([k, n]) => `${k} ${n}`).join(', ');
    const codes = Object.entries(this.byCode).sort((a, b) => b[1] - a[1]).map(([k, n]) => `  ${k}: ${n}`).join('\n');
    const fiveHundreds = Object.entries(this.byClass).filter(([k]) => k === '5xx').reduce((n, [, v]) => n + v, 0);
    return `fuzz: ${this.cases} cases (seed ${seed}): ${classes}; ${fiveHundreds} answered ≥ 500; ${this.failures.length} problems\n${codes}`;
  }
}
