/**
 * `npm run bench:floor`: the funnel's I/O with none of Checkstand's work (bench/floor.ts), run as a
 * child process for a few seconds: every funnel completes through the bench's own driver, sandbox
 * and receiver, the report holds its figures, and bad options are refused with exit 2.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { reportFileIn } from '../bench/common.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TSX_CLI = createRequire(import.meta.url).resolve('tsx/cli');
const PG_URL = process.env.TEST_DATABASE_URL;

function floor(args: string[], env: Record<string, string | undefined> = {}) {
  const r = spawnSync(process.execPath, [TSX_CLI, 'bench/floor.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: undefined, BENCH_FLOOR_DB: undefined, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  const out = `${r.stdout}${r.stderr}`;
  // A failure's own lines first: a test report cuts a long message at its start.
  const why = [...out.split('\n').filter((l) => /FAILED|failed:|Error/.test(l)), out].join('\n');
  return { code: r.status, out, why };
}

function report(out: string): { options: { db: string; notify: boolean }; figures: Record<string, unknown> } {
  const file = reportFileIn(out);
  expect(file, out).not.toBeNull();
  const body = JSON.parse(fs.readFileSync(path.join(ROOT, file!), 'utf8'));
  fs.rmSync(path.join(ROOT, file!));
  return body;
}

const SHORT = ['--warmup', '1', '--duration', '2', '--concurrency', '4'];

describe('bench:floor', () => {
  it('without a database: funnels complete and the report gives funnels/s and CPU per funnel', () => {
    const r = floor(['--db', 'none', ...SHORT]);
    expect(r.code, r.why).toBe(0);
    const { options, figures } = report(r.out);
    expect(options.db).toBe('none');
    expect(figures.failed_funnels).toBe(0);
    expect(figures.funnels_per_s as number).toBeGreaterThan(0);
    expect(figures.machine_cpu_ms_per_funnel as number).toBeGreaterThan(0);
    expect(figures.statements_per_funnel).toBeNull();
  }, 120_000);

  it('refuses what it cannot do: a database it has no URL for, --notify without one, an unknown option', () => {
    expect(floor(['--db', 'pg']).code).toBe(2);
    expect(floor(['--db', 'none', '--notify']).code).toBe(2);
    expect(floor(['--db', 'sqlite']).code).toBe(2);
    expect(floor(['--pairs', '3']).code).toBe(2);
    expect(floor(['--concurrency', '0']).code).toBe(2);
    const help = floor(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('--notify');
  }, 60_000);

  it.skipIf(!PG_URL)('on PostgreSQL with --notify: eight statements per funnel, every event row notified, the database dropped after', () => {
    const url = new URL(PG_URL!);
    url.pathname = '/checkstand_floor_bench';
    const r = floor(['--fresh-db', '--notify', ...SHORT], { DATABASE_URL: url.toString() });
    expect(r.code, r.why).toBe(0);
    const { options, figures } = report(r.out);
    expect(options).toMatchObject({ db: 'pg', notify: true });
    expect(figures.failed_funnels).toBe(0);
    // lead 1, payment 3, upsell 3, complete 1; the deliveries' UPDATE (one per 50 ms that had a
    // delivery) adds at most two per funnel, its two webhooks, on a machine slow enough that every
    // flush carries one. The window's edges move the ratio a little either way.
    expect(figures.statements_per_funnel as number).toBeGreaterThanOrEqual(7.5);
    expect(figures.statements_per_funnel as number).toBeLessThanOrEqual(10.5);
    expect(figures.postgres_cpu_ms_per_funnel as number).toBeGreaterThan(0);
    // Two event rows per funnel (the upsell's and the completion's), each notified.
    expect(figures.event_rows as number).toBeGreaterThan(0);
    expect(figures.notifications).toBe(figures.event_rows);
    expect(r.out).toContain('dropped the bench database');
  }, 120_000);
});
