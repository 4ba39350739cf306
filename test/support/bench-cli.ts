/**
 * `npm run bench` (bench/run.ts) as a child process, the way the bench's tests run it: through
 * tsx from the project's root, with none of the caller's DATABASE_URL or BENCH_ variables (the
 * embedded database in a temporary dir and the bench's own defaults, whatever pass of the suite
 * this is) unless `env` names them. Its JSON report, when it wrote one, is read and removed.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { reportFileIn } from '../../bench/common.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX_CLI = createRequire(import.meta.url).resolve('tsx/cli');

export interface BenchRun {
  code: number | null;
  stdout: string;
  stderr: string;
  report: any;
}

/** Runs `tsx bench/run.ts …` with `env` on top of a scrubbed environment; killed after `timeoutMs` (a hang). */
export function runBench(args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<BenchRun> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.DATABASE_URL;
  for (const k of Object.keys(childEnv)) if (k.startsWith('BENCH_')) delete childEnv[k];
  Object.assign(childEnv, env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX_CLI, 'bench/run.ts', ...args], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      const file = reportFileIn(stdout);
      let report: any = null;
      if (file) {
        const full = path.resolve(ROOT, file);
        report = JSON.parse(fs.readFileSync(full, 'utf8'));
        fs.rmSync(full, { force: true });
      }
      resolve({ code, stdout, stderr, report });
    });
  });
}

/** A failed run's exit code and the end of its output, for an assertion's message. */
export const explain = (r: Pick<BenchRun, 'code' | 'stdout' | 'stderr'>) => `exit ${r.code}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-2000)}`;
