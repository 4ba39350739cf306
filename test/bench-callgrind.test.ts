/**
 * `npm run bench -- --callgrind` (bench/callgrind.ts): the server's instructions per funnel. The
 * parts that need no valgrind (reading a dump's count, the options it refuses) always run; a real
 * run under valgrind on PostgreSQL (several minutes: valgrind starts and runs the server about 40
 * times slower) when this machine has valgrind and TEST_DATABASE_URL is set, as in CI.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { callgrindMissing, dumpInstructions } from '../bench/callgrind.ts';
import { explain, runBench } from './support/bench-cli.ts';

/** Refusals answer at once; a run under valgrind starts in a minute and runs 40 times slower. */
const REFUSAL_TIMEOUT_MS = 60_000;
const RUN_TIMEOUT_MS = 1_500_000;
const PG = 'postgres://postgres@127.0.0.1:5432/checkstand_bench';

describe('a callgrind dump', () => {
  it('counts what its summary line says, or its totals line', () => {
    expect(dumpInstructions('version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 1318087984\n\nfl=(1) x\n')).toBe(1318087984);
    expect(dumpInstructions('events: Ir\nfn=(2) f\n16 3\ntotals: 42\n')).toBe(42);
    expect(dumpInstructions('events: Ir\nfn=(2) f\n')).toBeNull();
  });
});

describe('bench --callgrind options', () => {
  it('refuses the embedded database, more processes, worker processes and --profile (exit 2, before starting anything)', async () => {
    const pg = { DATABASE_URL: PG };
    const cases: Array<[string[], NodeJS.ProcessEnv, string]> = [
      [['--callgrind'], {}, 'set DATABASE_URL'],
      [[], { BENCH_CALLGRIND: '1' }, 'set DATABASE_URL'],
      [['--callgrind', '--processes', '2'], pg, '--processes 1, no --workers'],
      [['--callgrind', '--workers', '1'], pg, '--processes 1, no --workers'],
      [['--callgrind', '--profile'], pg, 'one measurement of the server at a time'],
    ];
    for (const [args, env, message] of cases) {
      const r = await runBench(args, env, REFUSAL_TIMEOUT_MS);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stdout).not.toContain('starting the server');
    }
  }, 300_000);
  it('is in the usage', async () => {
    const r = await runBench(['--help'], {}, REFUSAL_TIMEOUT_MS);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--callgrind');
  });
});

describe.skipIf(callgrindMissing() !== null || !process.env.TEST_DATABASE_URL)('bench --callgrind on PostgreSQL (needs valgrind and TEST_DATABASE_URL)', () => {
  it('counts the serve process\'s instructions per funnel over the window; every correctness check still passes', async () => {
    const databaseUrl = new URL('/checkstand_callgrind_bench', process.env.TEST_DATABASE_URL).href;
    const args = ['--callgrind', '--fresh-db', '--concurrency', '2', '--warmup', '10', '--duration', '20', '--webhook-wait', '120', '--timeout', '120'];
    const r = await runBench(args, { DATABASE_URL: databaseUrl }, RUN_TIMEOUT_MS);
    expect(r.code, explain(r)).toBe(0);
    const rep = r.report;
    expect(rep, explain(r)).not.toBeNull();
    expect(rep.passed, explain(r)).toBe(true);
    expect(rep.parameters.callgrind).toBe(true);
    expect(rep.results.flows.completed, explain(r)).toBeGreaterThan(0);
    const srv = rep.results.server;
    // A card funnel is tens of millions of instructions in the server (HTTP, four requests' SQL,
    // two sales, two webhooks, a mail): bounds that hold on any machine, not a speed.
    expect(srv.server_instructions_per_flow_m, explain(r)).toBeGreaterThan(5);
    expect(srv.server_instructions_per_flow_m, explain(r)).toBeLessThan(5000);
    expect(r.stdout).toMatch(/server instructions per funnel: [\d.]+ M \(callgrind/);
    // The window's dump is kept next to the report, by function.
    expect(fs.readFileSync(srv.callgrind_file, 'utf8')).toMatch(/^events: Ir$/m);
    fs.rmSync(srv.callgrind_file, { force: true });
    expect(srv.server_processes.mode).not.toBe('in-process');
    expect(rep.parameters.processes).toBe(1);
    expect(rep.parameters.workers).toBe(0);
  }, RUN_TIMEOUT_MS + 30_000);
});
