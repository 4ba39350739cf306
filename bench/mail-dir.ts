/**
 * Where the bench's server writes its mail files (no SMTP_URL: each mail is `<data dir>/mail/<id>.eml`).
 *
 * `tmpfs` (the default where the machine has one at /dev/shm): `<data dir>/mail` is a link to a
 * directory there. `data`: a plain folder in the data dir, on the disk the data dir is on.
 *
 * Why not the disk by default: on ext4 without a journal (this machine's root filesystem) the
 * kernel gives a new file an inode only after skipping every free inode of the group that was
 * freed in the last 5 s to 5 min (`find_inode_bit` → `recently_deleted`, a block-cache lookup
 * each). A run writes one file per funnel (≈ 4 000) and removes them when it ends, so the next
 * run's mail writer paid for the last run's removal: 0.9–1.2 ms of CPU per funnel against 0.6–0.7 ms
 * on tmpfs or in the first run after a quiet spell (bench/README, twenty-first round). A server's
 * mail folder only grows, so no server pays that; the bench's own cleanup did, and it made the
 * second run of every alternated A/B pair dearer than the first.
 */
import fs from 'node:fs';
import path from 'node:path';

export const MAIL_DIRS = ['tmpfs', 'data'] as const;
export type MailDir = (typeof MAIL_DIRS)[number];

const TMPFS_ROOT = '/dev/shm';
/** statfs(2)'s f_type of a tmpfs. */
const TMPFS_MAGIC = 0x01021994;

/** /dev/shm when it is a tmpfs this process may write to, else null. */
export function tmpfsRoot(): string | null {
  try {
    fs.accessSync(TMPFS_ROOT, fs.constants.W_OK);
    return fs.statfsSync(TMPFS_ROOT).type === TMPFS_MAGIC ? TMPFS_ROOT : null;
  } catch {
    return null;
  }
}

/** The default: tmpfs where there is one (`root`: what tmpfsRoot() answered, if the caller has it), else the data dir. */
export function defaultMailDir(root: string | null = tmpfsRoot()): MailDir {
  return root ? 'tmpfs' : 'data';
}

export interface PlacedMailDir {
  /** What the report says: `tmpfs (/dev/shm/checkstand-bench-mail-…)` or `data dir`. */
  readonly description: string;
  /** Removes what `placeMailDir` made outside the data dir (the data dir itself is the caller's). */
  remove(): void;
}

/**
 * Makes `<dataDir>/mail` for the run: with `tmpfs`, a link to a new directory under /dev/shm
 * (throws when there is none: `--mail-dir tmpfs` was asked for on a machine without it).
 */
export function placeMailDir(dataDir: string, where: MailDir): PlacedMailDir {
  if (where === 'data') return { description: 'data dir', remove: () => {} };
  const root = tmpfsRoot();
  if (!root) throw new Error(`--mail-dir tmpfs: ${TMPFS_ROOT} is not a writable tmpfs on this machine`);
  const target = fs.mkdtempSync(path.join(root, 'checkstand-bench-mail-'));
  fs.symlinkSync(target, path.join(dataDir, 'mail'), 'dir');
  return { description: `tmpfs (${target})`, remove: () => fs.rmSync(target, { recursive: true, force: true }) };
}
