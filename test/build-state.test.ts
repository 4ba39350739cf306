/**
 * When the command line runs the bundle in build/ (scripts/build-server.mjs) instead of the
 * TypeScript sources (bin/build-state.js): only a complete bundle whose every source file is
 * unchanged since its build started; anything else runs the sources through tsx.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleIsCurrent } from '../bin/build-state.js';
import { serverCode } from '../bench/server-processes.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A checkout with a src/ and a build/ folder; `touch` sets a source's time, `manifest` writes the bundle's. */
function checkout(): { root: string; touch(file: string, atMs: number): void; manifest(startedAt: number, inputs?: string[]): void } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-build-'));
  dirs.push(root);
  fs.mkdirSync(path.join(root, 'src/cli'), { recursive: true });
  fs.mkdirSync(path.join(root, 'build/cli'), { recursive: true });
  const touch = (file: string, atMs: number) => {
    const p = path.join(root, file);
    if (!fs.existsSync(p)) fs.writeFileSync(p, '// source\n');
    fs.utimesSync(p, atMs / 1000, atMs / 1000);
  };
  return {
    root,
    touch,
    manifest: (startedAt, inputs = ['src/cli/serve.ts', 'src/app.ts']) =>
      fs.writeFileSync(path.join(root, 'build/inputs.json'), JSON.stringify({ started_at: startedAt, inputs })),
  };
}

describe('bundleIsCurrent', () => {
  const t0 = Date.now() - 60_000;

  it('runs the bundle when every source that went into it is older than its build', () => {
    const c = checkout();
    c.touch('src/cli/serve.ts', t0);
    c.touch('src/app.ts', t0);
    c.manifest(t0 + 1_000);
    expect(bundleIsCurrent(c.root, {})).toBe(true);
    // The same, given the checkout as a file URL (as bin/checkstand.js does).
    expect(bundleIsCurrent(new URL(`file://${c.root}/`), {})).toBe(true);
  });

  it('runs the sources when one changed after the build started, or is gone', () => {
    const c = checkout();
    c.touch('src/cli/serve.ts', t0);
    c.touch('src/app.ts', t0 + 2_000);
    c.manifest(t0 + 1_000);
    expect(bundleIsCurrent(c.root, {})).toBe(false);

    const gone = checkout();
    gone.touch('src/cli/serve.ts', t0);
    gone.manifest(t0 + 1_000);
    expect(bundleIsCurrent(gone.root, {})).toBe(false);
  });

  it('runs the sources without a complete bundle (no manifest, an unreadable or empty one) or when told to', () => {
    const c = checkout();
    c.touch('src/cli/serve.ts', t0);
    c.touch('src/app.ts', t0);
    expect(bundleIsCurrent(c.root, {})).toBe(false);
    fs.writeFileSync(path.join(c.root, 'build/inputs.json'), '{"started_at": 1');
    expect(bundleIsCurrent(c.root, {})).toBe(false);
    c.manifest(t0 + 1_000, []);
    expect(bundleIsCurrent(c.root, {})).toBe(false);
    c.manifest(t0 + 1_000);
    expect(bundleIsCurrent(c.root, {})).toBe(true);
    expect(bundleIsCurrent(c.root, { CHECKSTAND_FROM_SOURCES: '1' })).toBe(false);
  });

  // npm install builds it; CI checks that it is current before the tests.
  it.skipIf(!fs.existsSync(path.resolve('build/inputs.json')))("this checkout's own build lists the command line's sources", () => {
    const manifest = path.resolve('build/inputs.json');
    const { inputs } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { inputs: string[] };
    expect(inputs).toContain('src/cli/serve.ts');
    expect(inputs).toContain('src/app/project-root.ts');
    expect(inputs.some((f) => f.startsWith('node_modules/'))).toBe(false);
  });
});

describe("the bench's server processes (bench/server-processes.ts serverCode)", () => {
  const t0 = Date.now() - 60_000;

  it('rebuilds a stale bundle before it starts them, leaves a current one alone, and runs the sources only when asked', () => {
    const c = checkout();
    c.touch('src/cli/serve.ts', t0);
    c.touch('src/app.ts', t0 + 2_000);
    c.manifest(t0 + 1_000);
    let builds = 0;
    // The build writes a manifest newer than every source, as scripts/build-server.mjs does.
    const build = () => {
      builds++;
      c.manifest(Date.now());
    };
    expect(serverCode({}, c.root, build)).toEqual({ code: 'build', rebuilt: true });
    expect(builds).toBe(1);
    expect(serverCode({}, c.root, build)).toEqual({ code: 'build', rebuilt: false });
    expect(builds).toBe(1);
    expect(serverCode({ CHECKSTAND_FROM_SOURCES: '1' }, c.root, build)).toEqual({ code: 'sources', rebuilt: false });
    expect(builds).toBe(1);
  });

  it('stops when the build leaves no current bundle', () => {
    const c = checkout();
    c.touch('src/cli/serve.ts', t0 + 2_000);
    c.manifest(t0 + 1_000);
    expect(() => serverCode({}, c.root, () => {})).toThrow('did not leave a current bundle');
  });
});
