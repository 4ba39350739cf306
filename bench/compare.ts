/**
 * `npm run bench:compare -- --base <rev> [--pairs N] [-- <bench options>]`: the bench of this
 * working tree against the bench of another commit, in the same minutes, runs alternated.
 *
 * On a shared, noisy machine a figure moves by more from one minute to the next than most changes
 * move it, so a change is only judged against its base run in the same minutes. This does what
 * each round of bench/README did by hand: the base commit is checked out in a temporary git
 * worktree (sharing this tree's node_modules when the lockfiles match, `npm ci` there when they
 * do not), both trees' server bundles are built, and the two benches run in pairs, in the order
 * base-new, new-base, base-new … so that neither side always runs second. Every run must be
 * correct (the bench's exit 0); the summary sets each figure's means and ratio side by side and
 * says whether the new side was better in every pair, worse in every pair, or neither (within
 * the runs' spread). The reports are kept in bench/results/compare-<time>/ with a summary.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError, gitInfo, reportFileIn, resultStamp, runMain } from './common.ts';
import { compareReports, comparisonTable, FIGURES } from './compare-figures.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TSX_CLI = createRequire(import.meta.url).resolve('tsx/cli');

const USAGE = `usage: npm run bench:compare -- [--base <rev>] [--pairs <n>] [--verbose] [-- <bench options>]

  --base <rev>   the commit to compare with (default: HEAD when the working tree has changes, else HEAD~1)
  --pairs <n>    how many base/new pairs to run, alternating which runs first (default 3, at most 20)
  --verbose      pass each bench's own output through
  -- …           options for both benches, e.g. -- --processes 2 --duration 30 (DATABASE_URL and
                 BENCH_* variables reach both too; with DATABASE_URL, pass --fresh-db)

exit status: 0 every run correct; 1 a run failed or a step did; 2 bad options (or a bench refused
them); 130 interrupted`;

export interface CompareOptions {
  base: string | null;
  pairs: number;
  verbose: boolean;
  benchArgs: string[];
}

export function parseCompareArgs(argv: readonly string[]): CompareOptions | 'help' {
  const opts: CompareOptions = { base: null, pairs: 3, verbose: false, benchArgs: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${arg} needs a value`);
      return v;
    };
    if (arg === '--') {
      opts.benchArgs = argv.slice(i + 1);
      break;
    } else if (arg === '--help' || arg === '-h') return 'help';
    else if (arg === '--base') opts.base = value();
    else if (arg === '--pairs') {
      const v = value();
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 20) throw new UsageError(`--pairs must be a whole number from 1 to 20, not "${v}"`);
      opts.pairs = n;
    } else if (arg === '--verbose') opts.verbose = true;
    else throw new UsageError(`unknown option "${arg}" (the bench's own options go after --)`);
  }
  return opts;
}

const log = (line: string) => process.stdout.write(`[compare] ${line}\n`);

function git(args: string[], cwd = ROOT): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A command run to its end, its output kept for the message if it fails. */
function runQuiet(cmd: string, args: string[], cwd: string, what: string): void {
  try {
    execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`${what} failed:\n${`${e.stdout ?? ''}${e.stderr ?? ''}`.slice(-3000)}`);
  }
}

/** The base's own checkout (in the empty directory `dir`): a detached worktree, its dependencies. */
function prepareBase(sha: string, dir: string): void {
  git(['worktree', 'add', '--detach', '--quiet', dir, sha]);
  const lock = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null);
  if (lock(path.join(dir, 'package-lock.json')) === lock(path.join(ROOT, 'package-lock.json'))) {
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  } else {
    log("the base's package-lock.json differs from this tree's: npm ci in its worktree (a minute or two)");
    runQuiet('npm', ['ci', '--no-audit', '--no-fund'], dir, "npm ci in the base's worktree");
  }
}

/** `npm run build:server` where the tree has it: with --processes the bench runs the built bundle. */
function buildServer(dir: string, name: string): void {
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  if (pkg.scripts?.['build:server']) runQuiet('npm', ['run', 'build:server'], dir, `building ${name}'s server bundle`);
}

interface Side {
  name: string;
  dir: string;
}

interface Run {
  pair: number;
  side: 'base' | 'new';
  code: number | null;
  report: any;
  reportFile: string | null;
  seconds: number;
  tail: string;
}

let current: ChildProcess | null = null;
let interrupted = false;

function runBench(side: Side, args: readonly string[], verbose: boolean): Promise<Omit<Run, 'pair' | 'side'>> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX_CLI, 'bench/run.ts', ...args], { cwd: side.dir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    current = child;
    let out = '';
    const keep = (d: Buffer, to: NodeJS.WriteStream) => {
      out = (out + d.toString()).slice(-200_000);
      if (verbose) to.write(d);
    };
    child.stdout!.on('data', (d: Buffer) => keep(d, process.stdout));
    child.stderr!.on('data', (d: Buffer) => keep(d, process.stderr));
    child.once('error', reject);
    child.once('exit', (code) => {
      current = null;
      const file = reportFileIn(out);
      const reportFile = file ? path.resolve(side.dir, file) : null;
      const report = reportFile && fs.existsSync(reportFile) ? JSON.parse(fs.readFileSync(reportFile, 'utf8')) : null;
      resolve({ code, report, reportFile, seconds: (Date.now() - started) / 1000, tail: out.split('\n').slice(-25).join('\n') });
    });
  });
}

/** Moves a path into `outDir` under `prefix` (renamed there when it was in the base's worktree, which is removed). */
function moveInto(file: string, outDir: string, name: string): string {
  const to = path.join(outDir, name);
  try {
    fs.renameSync(file, to);
  } catch {
    fs.copyFileSync(file, to);
    fs.rmSync(file, { force: true });
  }
  return to;
}

/**
 * The run's report and the CPU profiles it names (--profile) moved into the comparison's folder,
 * the report's paths rewritten to where they now are: the base's would go with its worktree.
 */
function keepArtifacts(run: Run, outDir: string, prefix: string): string {
  const results = run.report?.results ?? {};
  const profiles: [{ file?: unknown } | null | undefined, string][] = [
    [results.profile, 'server'],
    ...((results.process_profiles ?? []) as { process?: string; file?: unknown }[]).map((p): [typeof p, string] => [p, String(p.process ?? 'process').replace(/\W+/g, '-')]),
  ];
  let moved = false;
  for (const [p, name] of profiles) {
    if (typeof p?.file !== 'string' || !fs.existsSync(p.file)) continue;
    p.file = moveInto(p.file, outDir, `${prefix}-${name}.cpuprofile`);
    moved = true;
  }
  if (moved) fs.writeFileSync(run.reportFile!, `${JSON.stringify(run.report, null, 2)}\n`);
  return moveInto(run.reportFile!, outDir, `${prefix}.json`);
}

/** The figures a run's line shows as it ends, read as the summary reads them. */
const RUN_LINE = [
  ['funnels_per_s', ' funnels/s'],
  ['server_cpu_ms', ' ms server'],
  ['postgres_cpu_ms', ' ms PostgreSQL'],
  ['machine_cpu_ms', ' ms machine CPU per funnel'],
].map(([key, unit]) => ({ def: FIGURES.find((f) => f.key === key)!, unit }));

function runLine(run: Run, name: string): string {
  const figures = RUN_LINE.map(({ def, unit }) => `${def.read(run.report) ?? '?'}${unit}`).join(', ');
  return `pair ${run.pair} ${run.side} ${name}: ${figures} (${run.seconds.toFixed(0)} s)`;
}

async function main(): Promise<number> {
  let opts: CompareOptions | 'help';
  try {
    opts = parseCompareArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${err.message}\n\n${USAGE}\n`);
    return 2;
  }
  if (opts === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { commit: headName, dirty } = gitInfo();
  if (headName === null) {
    process.stderr.write(`bench:compare needs a git checkout (it checks the base out from this repository)\n`);
    return 2;
  }
  const baseRev = opts.base ?? (dirty ? 'HEAD' : 'HEAD~1');
  let sha: string;
  try {
    sha = git(['rev-parse', '--verify', '--quiet', `${baseRev}^{commit}`]);
  } catch {
    process.stderr.write(`--base: "${baseRev}" names no commit of this repository\n\n${USAGE}\n`);
    return 2;
  }
  const head = git(['rev-parse', 'HEAD']);
  const base: Side = { name: git(['rev-parse', '--short', sha]), dir: fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-compare-')) };
  const next: Side = { name: `${headName}${dirty ? '+changes' : ''}`, dir: ROOT };
  if (sha === head && !dirty) log(`the base is this tree's own commit: both sides run the same code (the runs' spread alone)`);
  const outDir = path.join(ROOT, 'bench', 'results', `compare-${resultStamp(new Date())}`);

  const onSignal = () => {
    interrupted = true;
    current?.kill('SIGINT');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const runs: Run[] = [];
  try {
    log(`base ${base.name} (${baseRev}) in ${base.dir}; new ${next.name} (this working tree); ${opts.pairs} pair(s); bench options: ${opts.benchArgs.join(' ') || '(defaults)'}`);
    prepareBase(sha, base.dir);
    buildServer(base.dir, base.name);
    buildServer(next.dir, next.name);
    fs.mkdirSync(outDir, { recursive: true });
    for (let pair = 1; pair <= opts.pairs; pair++) {
      const order: ['base' | 'new', Side][] = pair % 2 === 1 ? [['base', base], ['new', next]] : [['new', next], ['base', base]];
      for (const [sideName, side] of order) {
        log(`pair ${pair}/${opts.pairs}: ${sideName} ${side.name} running (1-min load ${os.loadavg()[0]!.toFixed(2)})`);
        const result = await runBench(side, opts.benchArgs, opts.verbose);
        const run: Run = { pair, side: sideName, ...result };
        if (run.reportFile) run.reportFile = keepArtifacts(run, outDir, `pair${pair}-${sideName}`);
        runs.push(run);
        if (interrupted) {
          log('interrupted');
          return 130;
        }
        if (run.code !== 0) {
          process.stderr.write(`${run.tail}\n`);
          log(`the ${sideName} bench (${side.name}) exited ${run.code}${run.code === 2 ? ': it refused the options' : ''}; stopping`);
          return run.code === 2 ? 2 : 1;
        }
        log(runLine(run, side.name));
      }
    }
    const figures = compareReports(
      runs.filter((r) => r.side === 'base').map((r) => r.report),
      runs.filter((r) => r.side === 'new').map((r) => r.report),
    );
    const summary = {
      kind: 'checkstand-bench-compare',
      base: { rev: baseRev, commit: sha, name: base.name },
      new: { commit: head, dirty, name: next.name },
      pairs: opts.pairs,
      bench_args: opts.benchArgs,
      runs: runs.map((r) => ({ pair: r.pair, side: r.side, exit: r.code, seconds: r.seconds, report: r.reportFile && path.relative(ROOT, r.reportFile) })),
      figures,
    };
    fs.writeFileSync(path.join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    process.stdout.write(`\n${comparisonTable(figures, `base ${base.name}`, `new ${next.name}`).join('\n')}\n\n`);
    log('a figure moved by a change only when its pairs go one way: the sign test needs 6 pairs all one way for p < 0.05 (5 give 0.0625)');
    log(`every run was correct (ledger, orders completed once, webhooks, mail); reports and summary.json in ${path.relative(ROOT, outDir)}`);
    return 0;
  } catch (err) {
    log((err as Error).message);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    try {
      git(['worktree', 'remove', '--force', base.dir]);
    } catch {
      fs.rmSync(base.dir, { recursive: true, force: true });
      try {
        git(['worktree', 'prune']);
      } catch {
        // A worktree entry git can prune later; nothing else is left.
      }
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) runMain('bench:compare', main);
