/**
 * Whether the command line may run the bundle in build/ (scripts/build-server.mjs) instead of the
 * TypeScript sources: only when the bundle is complete (its manifest is written last) and no
 * source file that went into it changed since its build started. Otherwise the sources run
 * through tsx, as they always can. CHECKSTAND_FROM_SOURCES=1 always runs the sources.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `rootUrl`: the checkout's folder as a file URL (or path). */
export function bundleIsCurrent(rootUrl, env = process.env) {
  if (env.CHECKSTAND_FROM_SOURCES === '1') return false;
  const root = typeof rootUrl === 'string' ? rootUrl : fileURLToPath(rootUrl);
  let manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(root, 'build', 'inputs.json'), 'utf8'));
  } catch {
    return false;
  }
  if (!Array.isArray(manifest.inputs) || manifest.inputs.length === 0 || typeof manifest.started_at !== 'number') return false;
  for (const input of manifest.inputs) {
    const stat = fs.statSync(path.join(root, input), { throwIfNoEntry: false });
    if (!stat || stat.mtimeMs > manifest.started_at) return false;
  }
  return true;
}
