import { ERRORS, type ErrorCode } from '../../src/app/errors.ts';
import type { ApiResponse } from '../support/harness.ts';
import type { FuzzCase } from './operations.ts';

/**
 * 502 about a payment provider is the right answer about the environment, not about the input:
 * an object created without a base URL gets the real provider's, which the test machine cannot
 * reach (`gateway_unavailable`), and one whose base URL the run pointed elsewhere gets an HTTP
 * error where an answer was due (`payment_outcome_unknown`). Counted apart, never a failure.
 */
export function isProviderAnswer(res: ApiResponse): boolean {
  return res.status === 502 && ['gateway_unavailable', 'payment_outcome_unknown'].includes(res.body?.error?.code);
}

/** What is wrong with an answer, judged on its own: a 5xx, or an error that is not the envelope. */
export function checkAnswer(res: ApiResponse): string[] {
  const problems: string[] = [];
  if (res.status >= 500 && !isProviderAnswer(res)) problems.push(`answered ${res.status}`);
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
  /** 5xx answers that are not failures: `isProviderAnswer`. */
  providerAnswers = 0;
  readonly byClass: Record<string, number> = {};
  readonly byCode: Record<string, number> = {};
  readonly failures: string[] = [];
  /** 2xx answers per operation: which operations the run got past validation on. */
  readonly accepted = new Map<string, number>();
  /** The last refusal message per operation, shown for operations never accepted. */
  private readonly lastRefusal = new Map<string, string>();

  record(c: FuzzCase, res: ApiResponse, problems: string[]): void {
    this.cases++;
    if (isProviderAnswer(res)) this.providerAnswers++;
    const cls = `${Math.floor(res.status / 100)}xx`;
    this.byClass[cls] = (this.byClass[cls] ?? 0) + 1;
    const op = `${c.op.method} ${c.op.path}`;
    this.accepted.set(op, (this.accepted.get(op) ?? 0) + (res.status < 300 ? 1 : 0));
    if (res.status >= 400 && c.transport.kind === 'json') this.lastRefusal.set(op, `${res.status} ${String(res.body?.message).slice(0, 160)}`);
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
    const fiveHundreds = this.byClass['5xx'] ?? 0;
    const never = [...this.accepted].filter(([, n]) => n === 0).map(([op]) => op);
    const why = never.map((op) => `  ${op}: ${this.lastRefusal.get(op) ?? '-'}`).join('\n');
    const coverage = `operations sent: ${this.accepted.size}, never accepted (no 2xx): ${never.length}${why ? `\n${why}` : ''}`;
    return `fuzz: ${this.cases} cases (seed ${seed}): ${classes}; ${fiveHundreds - this.providerAnswers} answered ≥ 500 (besides ${this.providerAnswers} 502s about a provider); ${this.failures.length} problems\n${coverage}\n${codes}`;
  }
}
