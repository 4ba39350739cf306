/**
 * `npm run build:server` (run by `npm install`'s postinstall): bundles the server's TypeScript
 * (src/cli/*.ts and everything they import; installed packages stay imports, the workspace's
 * @checkstand/client is bundled in) into build/ with esbuild,
 * so the command line runs plain JavaScript instead of compiling through tsx on every start. A
 * process then holds neither tsx's loader thread nor esbuild (≈ 37 MB of RSS each) and starts faster.
 *
 * build/inputs.json lists every source file that went in, with the time the build started:
 * bin/build-state.js uses the build only while none of them changed since (an edited source, a
 * checkout, a pull: back to the sources through tsx until the next build).
 */
/* global process */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
// Installed packages stay imports (resolved from node_modules at run time, subpaths included); the
// workspace's own (@checkstand/client) ships TypeScript sources, so it is bundled in.
const manifests = [pkg, ...fs.readdirSync(path.join(ROOT, 'packages')).map((d) => JSON.parse(fs.readFileSync(path.join(ROOT, 'packages', d, 'package.json'), 'utf8')))];
const external = manifests.flatMap((m) => [...Object.keys(m.dependencies ?? {}), ...Object.keys(m.devDependencies ?? {})]).filter((n) => !n.startsWith('@checkstand/'));
const OUT = path.join(ROOT, 'build');
const startedAt = Date.now();
const entryPoints = fs
  .readdirSync(path.join(ROOT, 'src/cli'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => path.join(ROOT, 'src/cli', f));

// A half-written build is never taken for a fresh one: the manifest goes last, after a clean out dir.
fs.rmSync(OUT, { recursive: true, force: true });
const result = await esbuild.build({
  absWorkingDir: ROOT,
  entryPoints,
  outdir: OUT,
  outbase: 'src',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external,
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
});
const inputs = Object.keys(result.metafile.inputs).sort();
const bundledPackages = inputs.filter((f) => f.includes('node_modules/') && !f.includes('@checkstand/'));
if (bundledPackages.length) throw new Error(`packages bundled that should stay imports (add them to package.json): ${bundledPackages.join(', ')}`);
fs.writeFileSync(path.join(OUT, 'inputs.json'), JSON.stringify({ started_at: startedAt, inputs }, null, 1) + '\n');
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
process.stdout.write(`build/: ${inputs.length} source files bundled in ${Date.now() - startedAt} ms (${(bytes / 2 ** 20).toFixed(1)} MB with source maps)\n`);
