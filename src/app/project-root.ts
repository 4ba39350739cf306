import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout's own folder (where its package.json is), for files read at run time: the
 * migrations, the dashboard's build, the demo funnel's page, the command line. Found by walking
 * up from this module, so it is the same whether the code runs from `src/` (through tsx) or from
 * the bundle in `build/` (scripts/build-server.mjs), whose files sit at another depth.
 */
function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string }).name === 'checkstand') return dir;
    if (path.dirname(dir) === dir) throw new Error(`no checkstand package.json above ${from}`);
  }
}

export const PROJECT_ROOT = findRoot(path.dirname(fileURLToPath(import.meta.url)));

/** A path inside the checkout, e.g. `fromRoot('src/db/migrations')`. */
export function fromRoot(...parts: string[]): string {
  return path.join(PROJECT_ROOT, ...parts);
}
