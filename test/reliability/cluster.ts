/**
 * A private PostgreSQL cluster for one test run: initdb into a temporary folder, a free port on
 * loopback, started and restarted with the server's own `pg_ctl` — never the system's server,
 * which other tests and services share. As root (CI), every server command runs as the
 * `postgres` OS user, because PostgreSQL refuses to run as root.
 *
 * The binaries: PG_BINDIR if set, else the newest /usr/lib/postgresql/<major>/bin (Debian's
 * layout, what .ci/run installs), else `pg_config --bindir`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './processes.ts';

export type StopMode = 'smart' | 'fast' | 'immediate';

function findBinDir(): string {
  const given = process.env.PG_BINDIR;
  if (given) return given;
  const root = '/usr/lib/postgresql';
  if (fs.existsSync(root)) {
    const majors = fs
      .readdirSync(root)
      .filter((d) => fs.existsSync(path.join(root, d, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (majors[0]) return path.join(root, majors[0], 'bin');
  }
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('no PostgreSQL server binaries found: install postgresql (Debian) or set PG_BINDIR');
  }
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

export class PrivateCluster {
  readonly url: string;
  /** Wall-clock milliseconds each restart took (pg_ctl's stop and start, waiting for connections). */
  readonly restartsMs: Array<{ mode: StopMode; ms: number }> = [];

  private constructor(
    private readonly bin: string,
    readonly dir: string,
    readonly port: number,
  ) {
    this.url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  }

  static async create(): Promise<PrivateCluster> {
    const bin = findBinDir();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-pg-'));
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      fs.chownSync(dir, uid, gid);
    }
    const cluster = new PrivateCluster(bin, dir, await freePort());
    cluster.pg('initdb', ['-D', cluster.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    fs.appendFileSync(
      path.join(cluster.data, 'postgresql.conf'),
      [
        `port = ${cluster.port}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${cluster.dir}'`,
        'max_connections = 60',
        'shared_buffers = 32MB',
        "log_min_messages = 'warning'",
        '',
      ].join('\n'),
    );
    await cluster.ctl(['start']);
    return cluster;
  }

  private get data(): string {
    return path.join(this.dir, 'data');
  }

  private pg(tool: string, args: string[]): string {
    const cmd = path.join(this.bin, tool);
    const r = asRoot ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' }) : spawnSync(cmd, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}${this.logTail()}`);
    return r.stdout;
  }

  private async ctl(args: string[]): Promise<void> {
    this.pg('pg_ctl', ['-D', this.data, '-l', path.join(this.dir, 'server.log'), '-w', '-t', '120', ...args]);
  }

  /** `pg_ctl restart -m <mode>`: every connection is cut; resolves once the server accepts connections again. */
  async restart(mode: StopMode): Promise<number> {
    const started = Date.now();
    await this.ctl(['restart', '-m', mode]);
    const ms = Date.now() - started;
    this.restartsMs.push({ mode, ms });
    return ms;
  }

  logTail(): string {
    try {
      const text = fs.readFileSync(path.join(this.dir, 'server.log'), 'utf8');
      return `\n--- private cluster log (tail) ---\n${text.split('\n').slice(-30).join('\n')}`;
    } catch {
      return '';
    }
  }

  /** Stops the server (immediately: nothing of it is kept) and removes its folder. */
  async destroy(): Promise<void> {
    try {
      await this.ctl(['stop', '-m', 'immediate']);
    } catch {
      // already stopped
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
