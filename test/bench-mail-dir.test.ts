/**
 * bench/mail-dir.ts: the bench's mail files on tmpfs by default (ext4 without a journal made each
 * new file pay for the files the last run removed), in the data dir with `data`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultMailDir, placeMailDir, tmpfsRoot } from '../bench/mail-dir.ts';

const TMPFS_MAGIC = 0x01021994;
const dirs: string[] = [];
const dataDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-mail-dir-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('the bench mail dir', () => {
  it('defaults to tmpfs exactly where /dev/shm is a writable tmpfs', () => {
    let isTmpfs = false;
    try {
      isTmpfs = fs.statfsSync('/dev/shm').type === TMPFS_MAGIC;
    } catch {
      // no /dev/shm
    }
    expect(tmpfsRoot()).toBe(isTmpfs ? '/dev/shm' : null);
    expect(defaultMailDir()).toBe(isTmpfs ? 'tmpfs' : 'data');
  });

  it.skipIf(!tmpfsRoot())('tmpfs: <data dir>/mail is a link to a new directory on tmpfs, which remove() takes away', () => {
    const data = dataDir();
    const placed = placeMailDir(data, 'tmpfs');
    const link = path.join(data, 'mail');
    const target = fs.realpathSync(link);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(target.startsWith('/dev/shm/checkstand-bench-mail-')).toBe(true);
    expect(placed.description).toBe(`tmpfs (${target})`);
    // A mail written where the server writes it lands on tmpfs, not on the data dir's disk.
    fs.writeFileSync(path.join(link, 'm_1.eml'), 'Subject: x\r\n\r\nbody\r\n');
    expect(fs.statfsSync(path.join(target, 'm_1.eml')).type).toBe(TMPFS_MAGIC);
    expect(fs.readdirSync(target)).toEqual(['m_1.eml']);
    placed.remove();
    expect(fs.existsSync(target)).toBe(false);
  });

  it('data: nothing made; the server makes <data dir>/mail itself, on the data dir\'s disk', () => {
    const data = dataDir();
    const placed = placeMailDir(data, 'data');
    expect(placed.description).toBe('data dir');
    expect(fs.existsSync(path.join(data, 'mail'))).toBe(false);
    placed.remove();
    expect(fs.existsSync(data)).toBe(true);
  });
});
