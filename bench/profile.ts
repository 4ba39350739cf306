/**
 * `--profile`: a V8 CPU profile of the server's thread (the bench's main thread: Fastify, the app,
 * Kysely, pg or PGlite, and the outbox worker) over the measured window, through node:inspector,
 * so the driver, sandbox and receiver threads are not in it. Writes a `.cpuprofile` (open it in
 * Chrome DevTools or speedscope) and sums self time by package. With `--processes`, each server
 * process profiles itself for its whole life (`node --cpu-prof`) and writes its file as it exits.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector/promises';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export class Profiler {
  private readonly session = new Session();
  private running = false;

  async start(samplingIntervalUs = 500): Promise<void> {
    this.session.connect();
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.setSamplingInterval', { interval: samplingIntervalUs });
    await this.session.post('Profiler.start');
    this.running = true;
  }

  async stop(): Promise<CpuProfile | null> {
    if (!this.running) return null;
    this.running = false;
    const { profile } = (await this.session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
    await this.session.post('Profiler.disable');
    this.session.disconnect();
    return profile;
  }
}

const IO_NATIVES = new Set(['writev', 'openFileHandle', 'rename', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeUcs2String', 'shutdown', 'readFileUtf8', 'writeFileUtf8', 'open', 'close', 'read', 'write', 'fsync', 'fdatasync', 'writeString']);

/** The group a frame's self time is counted under. */
export function groupOf(frame: CallFrame): string {
  const url = frame.url;
  const fn = frame.functionName;
  if (!url) {
    if (fn === '(garbage collector)') return 'V8: garbage collector';
    if (fn === '(idle)') return 'idle';
    if (fn === '(program)') return 'V8/native: (program)';
    if (/^wasm-function|^\$/.test(fn)) return 'pglite (wasm)';
    // Native stream/fs bindings: the time is mostly the system call (a socket or file write).
    if (IO_NATIVES.has(fn)) return 'node internals: I/O syscalls';
    return 'V8/native: builtins';
  }
  if (url.startsWith('wasm://')) return 'pglite (wasm)';
  if (url.startsWith('node:') || url.startsWith('internal/') || !url.includes('/')) return 'node internals: JS';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) {
    const pkg = nm[1]!;
    if (pkg === '@electric-sql/pglite') return 'pglite (js)';
    if (pkg === 'pg' || pkg.startsWith('pg-') || pkg === 'pgpass' || pkg === 'postgres-array' || pkg === 'postgres-date' || pkg === 'postgres-interval' || pkg === 'postgres-bytea')
      return 'pg (driver)';
    if (pkg === 'fastify' || pkg.startsWith('@fastify/') || pkg === 'find-my-way' || pkg === 'light-my-request' || pkg === 'avvio' || pkg === 'fast-json-stringify' || pkg === 'secure-json-parse' || pkg === 'fast-querystring')
      return 'fastify';
    if (pkg === 'pino' || pkg.startsWith('pino-') || pkg === 'sonic-boom' || pkg === 'fast-redact' || pkg === '@pinojs/redact') return 'pino';
    if (pkg === 'tsx' || pkg === 'esbuild' || pkg === 'get-tsconfig') return 'tsx (loader)';
    return pkg;
  }
  const app = /\/src\/(?:modules\/([^/]+)|([^/]+))/.exec(url);
  if (app) return `app: ${app[1] ? `modules/${app[1]}` : app[2]}`;
  if (url.includes('/bench/')) return 'bench (counters)';
  // `serve --processes` runs the server's bundle: its chunks mix modules, so one group.
  if (/\/build\/(?:chunks|cli)\//.test(url)) return 'app: bundle (build/)';
  return 'other';
}

export interface ProfileSummary {
  total_ms: number;
  /** Self time by group, largest first (idle excluded); shares are of `total_ms`. */
  groups: Array<{ group: string; self_ms: number; share: number }>;
  /** The `app: …` groups summed. */
  app_code: { self_ms: number; share: number };
  /** The heaviest functions by self time, idle excluded. */
  top_functions: Array<{ function: string; where: string; self_ms: number; share: number }>;
}

const SHORT_PATH = /^.*?(node_modules\/|\/src\/|\/bench\/)/;

export function summarizeProfile(profile: CpuProfile, topN = 15): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // timeDeltas[i] is the time before sample i; attribute the gap after a sample to it.
  for (let i = 0; i < samples.length; i++) {
    const dt = deltas[i + 1] ?? 0;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, dt));
  }
  const groups = new Map<string, number>();
  const fns = new Map<string, { function: string; where: string; us: number }>();
  let totalUs = 0;
  let appUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const g = groupOf(node.callFrame);
    groups.set(g, (groups.get(g) ?? 0) + us);
    if (g === 'idle') continue;
    totalUs += us;
    if (g.startsWith('app: ')) appUs += us;
    const where = node.callFrame.url ? `${node.callFrame.url.replace(SHORT_PATH, '$1')}:${node.callFrame.lineNumber + 1}` : g;
    const key = `${node.callFrame.functionName}@${where}`;
    const f = fns.get(key) ?? { function: node.callFrame.functionName || '(anonymous)', where, us: 0 };
    f.us += us;
    fns.set(key, f);
  }
  const share = (us: number) => (totalUs > 0 ? Math.round((us / totalUs) * 1000) / 1000 : 0);
  const ms = (us: number) => Math.round(us / 100) / 10;
  const rows = [...groups.entries()].filter(([g]) => g !== 'idle').map(([group, us]) => ({ group, self_ms: ms(us), share: share(us) }));
  rows.sort((a, b) => b.self_ms - a.self_ms);
  return {
    total_ms: ms(totalUs),
    groups: rows,
    app_code: { self_ms: ms(appUs), share: share(appUs) },
    top_functions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, topN)
      .map((f) => ({ function: f.function, where: f.where, self_ms: ms(f.us), share: share(f.us) })),
  };
}

export function writeProfile(file: string, profile: CpuProfile): void {
  fs.writeFileSync(file, JSON.stringify(profile));
}

/** The files `node --cpu-prof --cpu-prof-dir=<dir>` wrote (`CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`), by pid. */
export function readProcessProfiles(dir: string): Array<{ pid: number; profile: CpuProfile }> {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const out: Array<{ pid: number; profile: CpuProfile }> = [];
  for (const name of names.sort()) {
    const m = /^CPU\.\d+\.\d+\.(\d+)\.\d+\.\d+\.cpuprofile$/.exec(name);
    if (!m) continue;
    try {
      out.push({ pid: Number(m[1]), profile: JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as CpuProfile });
    } catch {
      // A process killed before it finished writing leaves a partial file: not a profile.
    }
  }
  return out;
}
