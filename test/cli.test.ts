import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleIsCurrent } from '../bin/build-state.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/checkstand.js');
const dirs: string[] = [];
const children: ChildProcess[] = [];

function dataDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-cli-'));
  dirs.push(d);
  return d;
}

function cli(args: string[], dir: string, extra: Record<string, string> = {}) {
  // The CLI always runs embedded here, whatever the suite's database.
  const env = { ...process.env, CHECKSTAND_DATA_DIR: dir, DATABASE_URL: '', LOG_LEVEL: 'warn', ...extra };
  return run(process.execPath, [BIN, ...args], { env, timeout: 60_000 });
}

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('checkstand CLI', () => {
  it('prints --help for every command', async () => {
    const dir = dataDir();
    const top = await cli(['--help'], dir);
    for (const cmd of ['start', 'serve', 'worker', 'sandbox', 'migrate', 'seed', 'token']) expect(top.stdout).toContain(cmd);
    const cmds = [['serve'], ['worker'], ['sandbox'], ['migrate'], ['seed'], ['token'], ['token', 'create'], ['token', 'list'], ['token', 'revoke'], ['token', 'rotate'], ['team', 'create']];
    const outs = await Promise.all(cmds.map((cmd) => cli([...cmd, '--help'], dir)));
    outs.forEach((r, i) => expect(r.stdout, cmds[i]!.join(' ')).toMatch(/^Usage: checkstand/));
    const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8'));
    expect((await cli(['--version'], dir)).stdout.trim()).toBe(pkg.version);
  }, 120_000);

  it('--help and --version load nothing of the app: the command table imports only commander, each command its own module when it runs', () => {
    const bin = fs.readFileSync(BIN, 'utf8');
    const staticImports = [...bin.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    expect(staticImports).toEqual(['node:fs', 'commander']);
    expect(bin).toContain("import('tsx/esm/api')");
    expect(fs.existsSync(path.resolve('src/cli/main.ts'))).toBe(true);
  });

  it('seed --demo --json prints the ids and a working token; token list/revoke manage it', async () => {
    const dir = dataDir();
    // At the default log level: stdout is the JSON and nothing else (logs go to stderr).
    const seedRun = await cli(['seed', '--demo', '--json'], dir, { LOG_LEVEL: 'info' });
    expect(seedRun.stdout.trim().split('\n')).toHaveLength(1);
    expect(seedRun.stderr).toContain('migrations applied');
    const seeded = JSON.parse(seedRun.stdout);
    expect(seeded).toMatchObject({ team_id: expect.stringMatching(/^team_/), token: expect.stringMatching(/^csk_/), campaign_id: expect.stringMatching(/^cmp_/) });
    expect(seeded.upsells).toHaveLength(2);
    expect(seeded.gateway_id).toMatch(/^gw_/);
    expect(Object.keys(seeded.offers)).toEqual(['serum', 'club_trial', 'guide']);
    expect(seeded.token_id).toMatch(/^tok_/);

    const created = JSON.parse((await cli(['token', 'create', '--team', seeded.team_id, '--name', 'ci', '--json'], dir)).stdout);
    expect(created.token).toMatch(/^csk_/);
    const listed = JSON.parse((await cli(['token', 'list', '--json'], dir)).stdout);
    expect(listed.map((t: { name: string }) => t.name).sort()).toEqual(['ci', 'demo']);
    expect(JSON.stringify(listed)).not.toContain(created.token);
    const revoked = await cli(['token', 'revoke', created.id], dir);
    expect(revoked.stdout).toContain(`revoked ${created.id}`);
    const unknown = await cli(['token', 'revoke', 'tok_nope'], dir).catch((e: { code: number; stderr: string }) => e);
    expect((unknown as { code: number }).code).toBe(1);
    expect((unknown as { stderr: string }).stderr).toContain('not found');
  }, 120_000);

  it('team create --kind provider makes a provider organisation and prints its id; --json prints only JSON; a bad kind is refused', async () => {
    const dir = dataDir();
    const json = await cli(['team', 'create', '--name', 'Acme Support', '--kind', 'provider', '--json'], dir, { LOG_LEVEL: 'info' });
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    const provider = JSON.parse(json.stdout);
    expect(provider).toMatchObject({ object: 'team', id: expect.stringMatching(/^team_/), name: 'Acme Support', kind: 'provider' });

    const plain = await cli(['team', 'create', '--name', 'Corner Shop'], dir);
    const [id, hint] = plain.stdout.trim().split('\n');
    expect(id).toMatch(/^team_[0-9A-Za-z]+$/);
    expect(id).not.toBe(provider.id);
    expect(hint).toContain('a merchant team');
    // The new team exists: a token can be made for it.
    const token = JSON.parse((await cli(['token', 'create', '--team', id!, '--json'], dir)).stdout);
    expect(token).toMatchObject({ team_id: id, token: expect.stringMatching(/^csk_/) });

    const bad = (await cli(['team', 'create', '--name', 'X', '--kind', 'reseller'], dir).catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('must be merchant or provider');
    const blank = (await cli(['team', 'create', '--name', '  '], dir).catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(blank.code).toBe(1);
    expect(blank.stderr).toContain('--name');
  }, 180_000);

  it('a second process on the same embedded data dir gets a clear error, not a corrupted database', async () => {
    const dir = dataDir();
    const server = spawn(process.execPath, [BIN, 'serve'], {
      env: { ...process.env, CHECKSTAND_DATA_DIR: dir, DATABASE_URL: '', PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(server);
    let out = '';
    await new Promise<void>((resolve, reject) => {
      // Minutes, not seconds: a start on a loaded machine (migrations on the embedded database) is slow.
      const t = setTimeout(() => reject(new Error('server did not start')), 180_000);
      server.stdout!.on('data', (d: Buffer) => {
        out += String(d);
        if (out.includes('checkstand serving')) {
          clearTimeout(t);
          resolve();
        }
      });
    });
    // The bundle in build/ runs when it is current with the sources (always in CI: npm ci builds it).
    expect(out).toContain(`"code":"${bundleIsCurrent(process.cwd()) ? 'build' : 'sources'}"`);
    const second = await cli(['migrate'], dir).catch((e: { code: number; stderr: string }) => e);
    expect((second as { code: number }).code).toBe(2);
    expect((second as { stderr: string }).stderr).toContain('in use by another Checkstand process');
    server.kill('SIGTERM');
    await new Promise((r) => server.on('exit', r));
    // After a clean stop the directory opens again.
    expect((await cli(['migrate'], dir)).stdout).toContain('up to date');
  }, 300_000);
});
