/**
 * What the benchmarks share: the git state they ran on, a database URL fit for a log line, and the
 * throwaway database `--fresh-db` makes (only one whose name says "bench").
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** A bad command line: the bench prints it with its usage and exits 2. */
export class UsageError extends Error {}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

export function gitInfo(): { commit: string | null; dirty: boolean | null } {
  try {
    const opts = { cwd: HERE, stdio: ['ignore', 'pipe', 'ignore'] as ['ignore', 'pipe', 'ignore'], encoding: 'utf8' as const };
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], opts).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], opts).trim().length > 0;
    return { commit, dirty };
  } catch {
    return { commit: null, dirty: null };
  }
}

/** A results file's time in its name: `2026-12-04T19-51-55Z` (no colons, no milliseconds). */
export function resultStamp(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-');
}

/** The JSON report a bench's output names on its `report: <file>` line (relative to where it ran), or null. */
export function reportFileIn(output: string): string | null {
  return /report: (\S+\.json)/.exec(output)?.[1] ?? null;
}

/** With --fresh-db: (re)creates the database DATABASE_URL names, through the server's `postgres` database. */
export async function recreateDatabase(url: string, drop: boolean): Promise<void> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!/bench/i.test(name) || !/^[A-Za-z0-9_]+$/.test(name)) {
    throw new UsageError(`--fresh-db drops the database: it only works on a database whose name contains "bench" (letters, digits, _), not "${name}"`);
  }
  u.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: u.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    if (!drop) await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
}

/** With --fresh-db, at the end: the bench database dropped; a failure is logged, never thrown (the figures stand). */
export async function dropBenchDatabase(url: string, log: (line: string) => void): Promise<void> {
  try {
    await recreateDatabase(url, true);
    log('dropped the bench database');
  } catch (err) {
    log(`dropping the bench database failed: ${(err as Error).message}`);
  }
}

/** Runs a bench's main and exits with its code; a crash prints its stack under the bench's name and exits 1. */
export function runMain(name: string, main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`${name} failed: ${(err as Error)?.stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}

/** CPU time of the whole machine (all processes), ms, busy and total, from os.cpus(). */
export function machineCpu(): { busy: number; total: number } {
  let busy = 0;
  let all = 0;
  for (const c of os.cpus()) {
    const t = c.times;
    const sum = t.user + t.nice + t.sys + t.idle + t.irq;
    all += sum;
    busy += sum - t.idle;
  }
  return { busy, total: all };
}

/**
 * A bench's command line read into `--name` → value: `--name value` and `--name=value` for the
 * `valued` options, a `bare` option's own `=value` or '1'. `--help`/`-h` answers 'help' where it
 * stands; an unknown option, a value missing or a word that is not an option is a UsageError.
 */
export function readFlags(argv: readonly string[], valued: readonly string[], bare: readonly string[]): Record<string, string> | 'help' {
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return 'help';
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new UsageError(`unexpected argument "${arg}"`);
    const name = m[1]!;
    if (bare.includes(name)) flags[name] = m[2] ?? '1';
    else if (valued.includes(name)) {
      const value = m[2] ?? argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      flags[name] = value;
    } else throw new UsageError(`unknown option --${name}`);
  }
  return flags;
}

/** A switch given as a flag or an environment variable: 1, true, yes or on. */
export const truthy = (v: string | undefined): boolean => v !== undefined && /^(1|true|yes|on)$/i.test(v);

/** A number option (flag, else environment, else `fallback`), refused unless `check` holds; `what` says what it must be. */
export function num(name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean, what: string): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || !check(n)) throw new UsageError(`${name} must be ${what}, got "${raw}"`);
  return n;
}
