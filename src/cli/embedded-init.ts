/**
 * The first start on an empty data dir creates the embedded database (PGlite's initdb) and applies
 * every migration in a short-lived child process (`checkstand migrate`), then opens it here.
 * PGlite's WebAssembly memory only grows: done in this process, initdb and the migrations would
 * leave it at ≈850 MB RSS for as long as the server runs; opened afterwards it holds ≈300 MB.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../app/config.ts';
import { fromRoot } from '../app/project-root.ts';
import { StartupError } from '../app/runtime.ts';

const BIN = fromRoot('bin/checkstand.js');

/** True when the embedded database of this data dir has not been created yet. */
export function embeddedDatabaseMissing(config: Config): boolean {
  return !config.databaseUrl && !fs.existsSync(path.join(config.dataDir, 'pg', 'PG_VERSION'));
}

/** Runs `checkstand migrate` in a child process with this environment; its log is shown only if it fails. */
export async function createEmbeddedDatabase(): Promise<void> {
  process.stderr.write('checkstand: creating the embedded database (first start, a few seconds)…\n');
  const child = spawn(process.execPath, [BIN, 'migrate'], { env: process.env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + String(d)).slice(-8000);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (c) => resolve(c));
  });
  if (code !== 0) {
    const last = stderr.trim().split('\n').slice(-5).join('\n');
    throw new StartupError(`creating the embedded database failed (checkstand migrate exited ${code}):\n${last}`);
  }
}
