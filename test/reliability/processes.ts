/**
 * Child processes for the crash test: the provider sandbox, the API (`checkstand serve`) and
 * one-shot CLI commands, each a real `node bin/checkstand.js …` process on loopback. Every child
 * is registered so the test can end all of them in afterAll, and a synchronous `exit` hook
 * SIGKILLs any that are left if the test process itself goes away.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

export const BIN = path.resolve('bin/checkstand.js');

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** The last lines a child wrote, for failure messages (it logs at `warn`, so there are few). */
class Tail {
  private lines: string[] = [];
  constructor(private readonly max = 40) {}
  push(chunk: Buffer | string): void {
    for (const line of String(chunk).split('\n')) if (line.trim()) this.lines.push(line.slice(0, 500));
    if (this.lines.length > this.max) this.lines.splice(0, this.lines.length - this.max);
  }
  text(): string {
    return this.lines.join('\n');
  }
}

function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** SIGKILL, then wait for the exit: the kernel has closed its sockets when this resolves. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await exited(child);
}

/** Every child still running, SIGKILLed and waited for. */
export async function killAll(): Promise<void> {
  await Promise.all([...live].map((c) => killHard(c)));
}

/** A free TCP port on loopback (the API keeps it across restarts, so clients keep one URL). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `checkstand <args>` to the end (killed after `timeoutMs`). Never throws for a non-zero exit. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<CliResult> {
  const started = Date.now();
  const child = track(spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += String(d)));
  child.stderr!.on('data', (d: Buffer) => (stderr += String(d)));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (c, s) => resolve([c, s]));
  }).finally(() => clearTimeout(timer));
  return { code, signal, stdout, stderr, ms: Date.now() - started };
}

export interface SandboxProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** `checkstand sandbox` on a port of its own choosing (SANDBOX_PORT=0); resolves with its URL. */
export async function startSandboxProcess(env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<SandboxProcess> {
  const child = track(spawn(process.execPath, [BIN, 'sandbox'], { env: { ...env, SANDBOX_HOST: '127.0.0.1', SANDBOX_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] }));
  const tail = new Tail();
  child.stderr!.on('data', (d: Buffer) => tail.push(d));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`checkstand sandbox ${why}\n${out}${tail.text()}`));
    };
    const timer = setTimeout(() => fail(`did not say where it listens within ${timeoutMs} ms`), timeoutMs);
    const onExit = (c: number | null, s: NodeJS.Signals | null) => fail(`exited (${c ?? s}) before listening`);
    child.once('exit', onExit);
    child.stdout!.on('data', (d: Buffer) => {
      out += String(d);
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.removeListener('exit', onExit);
        resolve(m[1]!);
      }
    });
  });
  child.stdout!.resume();
  return { url, child, stop: () => killHard(child) };
}

/**
 * `checkstand serve` (no worker) on a fixed port, started, killed and restarted by the test.
 * `start()` resolves once `/healthz` answers 200; `kill()` SIGKILLs it and waits for the exit.
 */
export class ServeProcess {
  private child: ChildProcess | undefined;
  private readonly tail = new Tail();
  starts = 0;
  /** Milliseconds from spawn to the first 200 on /healthz, per start. */
  readonly startupMs: number[] = [];

  constructor(
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The pid of the current process (a restart gives a new one). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Recent stderr/stdout of the server, for failure messages. */
  logs(): string {
    return this.tail.text();
  }

  async start(timeoutMs = 60_000): Promise<void> {
    if (this.running) throw new Error('serve is already running');
    const started = Date.now();
    const child = track(
      spawn(process.execPath, [BIN, 'serve'], {
        env: { ...this.env, HOST: '127.0.0.1', PORT: String(this.port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    this.child = child;
    this.starts++;
    child.stdout!.on('data', (d: Buffer) => this.tail.push(d));
    child.stderr!.on('data', (d: Buffer) => this.tail.push(d));
    const deadline = started + timeoutMs;
    for (;;) {
      if (!this.running) throw new Error(`checkstand serve exited (${child.exitCode ?? child.signalCode}) before /healthz answered:\n${this.logs()}`);
      if (Date.now() > deadline) {
        await killHard(child);
        throw new Error(`checkstand serve did not answer /healthz within ${timeoutMs} ms:\n${this.logs()}`);
      }
      try {
        const res = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2000) });
        await res.text();
        if (res.status === 200) break;
      } catch {
        // not listening yet
      }
      await sleep(25);
    }
    this.startupMs.push(Date.now() - started);
  }

  async kill(): Promise<void> {
    if (this.child) await killHard(this.child);
  }
}

/** A long-running `checkstand <command>` (the worker): started once, its pid and log tail kept. */
export class BackgroundProcess {
  readonly child: ChildProcess;
  private readonly tail = new Tail(80);

  constructor(args: string[], env: NodeJS.ProcessEnv) {
    this.child = track(spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
    this.child.stdout!.on('data', (d: Buffer) => this.tail.push(d));
    this.child.stderr!.on('data', (d: Buffer) => this.tail.push(d));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  logs(): string {
    return this.tail.text();
  }

  kill(): Promise<void> {
    return killHard(this.child);
  }
}
