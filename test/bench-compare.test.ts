/**
 * `npm run bench:compare`: the figures it sets side by side (pure functions), its command line,
 * and one real comparison of HEAD with itself on the embedded database as child processes: a
 * worktree made and removed, both benches run and correct, the summary written.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../bench/common.ts';
import { parseCompareArgs } from '../bench/compare.ts';
import { compareFigure, compareReports, comparisonTable, signTestP } from '../bench/compare-figures.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TSX_CLI = createRequire(import.meta.url).resolve('tsx/cli');

describe('bench:compare options', () => {
  it('defaults: base chosen later, 3 pairs, no bench options', () => {
    expect(parseCompareArgs([])).toEqual({ base: null, pairs: 3, verbose: false, benchArgs: [] });
  });
  it('takes --base, --pairs, --verbose, and passes everything after -- to the benches', () => {
    expect(parseCompareArgs(['--base', 'abc123', '--pairs', '5', '--verbose', '--', '--processes', '2', '--pairs', 'x'])).toEqual({
      base: 'abc123',
      pairs: 5,
      verbose: true,
      benchArgs: ['--processes', '2', '--pairs', 'x'],
    });
    expect(parseCompareArgs(['--help'])).toBe('help');
  });
  it('refuses a bad pair count, a missing value and an option of the bench before --', () => {
    for (const bad of [['--pairs', '0'], ['--pairs', '21'], ['--pairs', '1.5'], ['--base'], ['--base', '--pairs'], ['--processes', '2']]) {
      expect(() => parseCompareArgs(bad)).toThrow(UsageError);
    }
  });
});

describe('bench:compare figures', () => {
  it('the sign test: pairs all one way, and splits', () => {
    expect(signTestP(3, 0)).toBe(0.25);
    expect(signTestP(0, 5)).toBe(0.0625);
    expect(signTestP(6, 0)).toBe(0.03125);
    expect(signTestP(2, 1)).toBe(1);
    expect(signTestP(9, 1)).toBeCloseTo(22 / 1024, 10);
  });
  it('counts a pair as better by the figure\'s direction, skips pairs missing a side, and gives the ratio of the means', () => {
    const higher = compareFigure({ key: 'f', label: 'funnels/s', better: 'higher' }, [100, 90, 80, null], [110, 99, 70, 50]);
    expect(higher.baseMean).toBe(90);
    expect(higher.nextMean).toBeCloseTo(82.25);
    expect(higher.ratio).toBeCloseTo(82.25 / 90);
    expect(higher.pairRatios).toEqual([1.1, 1.1, 0.875]);
    expect(higher.aheadIn).toBe(2);
    expect(higher.behindIn).toBe(1);
    expect(higher.signP).toBe(1);
    const lower = compareFigure({ key: 'c', label: 'CPU', better: 'lower' }, [8, 8, 8], [7, 7.5, 6]);
    expect([lower.aheadIn, lower.behindIn, lower.signP]).toEqual([3, 0, 0.25]);
    const counts = compareFigure({ key: 's', label: 'statements', better: null }, [22], [21]);
    expect([counts.aheadIn, counts.signP]).toEqual([null, null]);
  });
  it('reads the reports\' figures and each endpoint\'s p99, and leaves out what neither side reported', () => {
    const report = (perS: number, cpu: number, p99: number) => ({
      results: {
        flows: { per_s: perS, latency: { p99_ms: 4 * p99 } },
        server: { server_cpu_ms_per_flow: cpu, db_statements_per_flow_by_source: { api: 22.3, worker: 0.9 } },
        endpoints: { 'POST /checkout/leads': { p99_ms: p99 } },
        side_effects: { webhooks: { lag_ms: { p50: p99 / 2, p99: 100 * p99 } } },
      },
    });
    const figures = compareReports([report(100, 8, 60), report(90, 9, 70)], [report(110, 7, 50), report(95, 8, 65)]);
    const byKey = Object.fromEntries(figures.map((f) => [f.key, f]));
    expect(byKey.funnels_per_s!.ratio).toBeCloseTo(102.5 / 95);
    expect(byKey.funnels_per_s!.aheadIn).toBe(2);
    expect(byKey.server_cpu_ms!.aheadIn).toBe(2);
    expect(byKey['p99:POST /checkout/leads']!.next).toEqual([50, 65]);
    expect(byKey.statements_api!.baseMean).toBeCloseTo(22.3);
    // The outbox's lag: lower is better.
    expect(byKey.webhook_lag_p99_ms!.base).toEqual([6000, 7000]);
    expect(byKey.webhook_lag_p99_ms!.aheadIn).toBe(2);
    expect(byKey.mail_lag_p99_ms).toBeUndefined();
    // Not in these reports: not in the table.
    expect(byKey.postgres_cpu_ms).toBeUndefined();
    expect(byKey.wal_kb).toBeUndefined();
    const table = comparisonTable(figures, 'base old', 'new this').join('\n');
    expect(table).toContain('funnels/s');
    expect(table).toContain('100.0, 90.0');
    expect(table).toContain('1.08× (pairs 1.06–1.10)');
    expect(table).toContain('new better in 2/2 pairs, sign test p = 0.50');
  });
});

interface Run {
  code: number | null;
  out: string;
}

function compare(args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  for (const k of Object.keys(env)) if (k.startsWith('BENCH_')) delete env[k];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX_CLI, 'bench/compare.ts', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 540_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

const worktrees = () => execFileSync('git', ['worktree', 'list', '--porcelain'], { cwd: ROOT, encoding: 'utf8' });
const inGit = (() => {
  try {
    execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

// Once, in the embedded pass (the PostgreSQL pass runs the same bench code).
describe.skipIf(!inGit || Boolean(process.env.TEST_DATABASE_URL))('npm run bench:compare (child processes, embedded database)', () => {
  it('refuses bad options with exit 2, and a base that names no commit', async () => {
    const bad = await compare(['--pairs', '0']);
    expect(bad.code).toBe(2);
    expect(bad.out).toContain('--pairs must be a whole number');
    expect(bad.out).toContain('usage: npm run bench:compare');
    const noRev = await compare(['--base', 'no-such-rev-of-checkstand']);
    expect(noRev.code).toBe(2);
    expect(noRev.out).toContain('names no commit');
  });

  it('stops with exit 2 when the benches refuse their options, and removes the worktree', async () => {
    const r = await compare(['--base', 'HEAD', '--pairs', '1', '--', '--scenario', 'nope']);
    expect(r.code, r.out).toBe(2);
    expect(r.out).toContain('refused the options');
    const dir = /in (\S*checkstand-compare-\S+);/.exec(r.out)?.[1];
    expect(dir).toBeTruthy();
    expect(fs.existsSync(dir!)).toBe(false);
    expect(worktrees()).not.toContain(dir!);
  });

  it('runs HEAD against this tree, both correct, and keeps the reports and profiles with the comparison', async () => {
    const r = await compare(['--base', 'HEAD', '--pairs', '1', '--', '--duration', '2', '--warmup', '1', '--concurrency', '2', '--profile']);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/pair 1 base \S+: [\d.]+ funnels\/s/);
    expect(r.out).toMatch(/pair 1 new \S+: [\d.]+ funnels\/s/);
    expect(r.out).toMatch(/funnels\/s\s+[\d.]+\s+[\d.]+\s+[\d.]+ → [\d.]+\s+[\d.]+×\s+new better in [01]\/1 pair/);
    const folder = /summary\.json in (\S+)/.exec(r.out)?.[1];
    expect(folder).toBeTruthy();
    const summaryDir = path.join(ROOT, folder!);
    try {
      const summary = JSON.parse(fs.readFileSync(path.join(summaryDir, 'summary.json'), 'utf8'));
      expect(summary.kind).toBe('checkstand-bench-compare');
      expect(summary.runs.map((x: { side: string; exit: number }) => [x.side, x.exit])).toEqual([
        ['base', 0],
        ['new', 0],
      ]);
      for (const run of summary.runs) {
        const report = JSON.parse(fs.readFileSync(path.join(ROOT, run.report), 'utf8'));
        expect(report.passed).toBe(true);
        expect(report.results.flows.completed).toBeGreaterThan(0);
        // The profile moved with it (the base's was in its worktree, now removed), its path rewritten.
        expect(path.dirname(report.results.profile.file)).toBe(summaryDir);
        expect(fs.statSync(report.results.profile.file).size).toBeGreaterThan(0);
      }
      const dir = /in (\S*checkstand-compare-\S+);/.exec(r.out)![1]!;
      expect(fs.existsSync(dir)).toBe(false);
      expect(worktrees()).not.toContain(dir);
    } finally {
      fs.rmSync(summaryDir, { recursive: true, force: true });
    }
  });
});
