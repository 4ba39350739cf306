/**
 * The bench's verdicts on the targets (bench/report.ts judgeTargets): met, not met, or not
 * measured — and a figure the run cannot judge (the in-process RSS, which holds the bench's own
 * threads) never counts as met.
 */
import { describe, expect, it } from 'vitest';
import { judgeTargets, type TargetInputs } from '../bench/report.ts';

const call = (p99_ms: number, count = 100) => ({ p99_ms, count });

function postgresRun(over: Partial<TargetInputs> = {}): TargetInputs {
  return {
    kind: 'postgres',
    inProcess: false,
    flowsPerS: 171.3,
    p99ByCall: { lead: call(36.8), pay: call(44.2), upsell: call(47.3), complete: call(38.5) },
    cpuMsPerFlow: 4.3,
    statementsBySource: { api: 22.1, worker: 0.9 },
    commits: { perFlow: 7, from: 'window' },
    rssMb: { max: 194 },
    ...over,
  };
}

describe('the bench judges the issue targets', () => {
  it('a run within every target meets them all', () => {
    const t = judgeTargets(postgresRun());
    expect(t.all_met).toBe(true);
    expect(t.funnels_per_s).toEqual({ target: '≥ 150 funnels/s (postgres)', measured: '171.3/s', met: true });
    expect(t.funnels_per_s_goal.met).toBe(false);
    expect(t.rss_mb).toEqual({ target: '≤ 200 MB per process (PostgreSQL)', measured: '194 MB (largest)', met: true });
  });

  it('one call over 50 ms at p99 misses the p99 target, and so all_met; the goal beyond does not count', () => {
    const t = judgeTargets(postgresRun({ p99ByCall: { lead: call(36.8), pay: call(50.0), upsell: call(47.3), complete: call(38.5) } }));
    expect(t.p99_per_call.pay).toEqual({ target: 'p99 < 50 ms', measured: '50.0 ms', met: false });
    expect(t.p99_per_call.lead!.met).toBe(true);
    expect(t.all_met).toBe(false);
  });

  it('a call that never answered does not meet its p99 target', () => {
    expect(judgeTargets(postgresRun({ p99ByCall: { pay: call(0, 0) } })).p99_per_call.pay!.met).toBe(false);
  });

  it('each figure over its line misses: funnels/s, CPU, statements from the API or the worker, commits, RSS', () => {
    expect(judgeTargets(postgresRun({ flowsPerS: 149.9 })).funnels_per_s.met).toBe(false);
    expect(judgeTargets(postgresRun({ cpuMsPerFlow: 6.1 })).cpu_ms_per_flow.met).toBe(false);
    expect(judgeTargets(postgresRun({ statementsBySource: { api: 25.1, worker: 0.9 } })).sql_statements_per_flow.met).toBe(false);
    expect(judgeTargets(postgresRun({ statementsBySource: { api: 22, worker: 8.1 } })).sql_statements_per_flow.met).toBe(false);
    expect(judgeTargets(postgresRun({ commits: { perFlow: 10.1, from: 'window' } })).commits_per_flow.met).toBe(false);
    const rss = judgeTargets(postgresRun({ rssMb: { max: 201 } }));
    expect(rss.rss_mb.met).toBe(false);
    expect(rss.all_met).toBe(false);
  });

  it("in process the RSS is the whole bench's: not measured, whatever it is, and not a miss", () => {
    const t = judgeTargets(postgresRun({ inProcess: true, rssMb: { max: 507 } }));
    expect(t.rss_mb).toMatchObject({ measured: "507 MB (whole bench process; a server's alone: --processes)", met: null });
    expect(t.all_met).toBe(true);
  });

  it('what was not counted says why, and is not judged', () => {
    const children = judgeTargets(postgresRun({ statementsBySource: null, commits: { perFlow: 9.1, from: 'xact_commit' } }));
    expect(children.sql_statements_per_flow).toMatchObject({ measured: '? (child processes)', met: null });
    expect(children.commits_per_flow).toMatchObject({ measured: '9.1 (xact_commit, whole run)', met: true });
    expect(judgeTargets(postgresRun({ inProcess: true, statementsBySource: null })).sql_statements_per_flow.measured).toBe('? (not counted apart without a warm-up)');
  });

  it('embedded has its own lines: 50 funnels/s, 15 ms, 300 MB for npm start', () => {
    const t = judgeTargets(postgresRun({ kind: 'pglite', flowsPerS: 60, cpuMsPerFlow: 14, rssMb: { max: 280 } }));
    expect(t.funnels_per_s).toMatchObject({ target: '≥ 50 funnels/s (pglite)', met: true });
    expect(t.cpu_ms_per_flow).toMatchObject({ target: '≤ 15 ms (pglite, all server processes)', met: true });
    expect(t.rss_mb).toMatchObject({ target: '≤ 300 MB for npm start (embedded)', met: true });
  });
});
