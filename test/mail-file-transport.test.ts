/**
 * The file mail transport (the embedded default: one .eml per mail in <data dir>/mail): it makes
 * its folder once, not before every message, and makes it again when it was removed meanwhile; it
 * builds and writes in a thread of its own, not on the thread that serves HTTP (issue 13).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileTransport } from '../src/modules/mail/transport.ts';

describe('fileTransport', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-mail-'));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  const mail = (id: string) => ({ id, from: 'Shop <shop@example.com>', to: 'buyer@example.com', subject: `Order ${id}`, text: 'Thanks', html: null });

  it.each([
    ['in its thread', {}],
    ['on the calling thread', { thread: false }],
  ])('writes each message whole to <dir>/<id>.eml, and again after the folder was removed (%s)', async (name, opts) => {
    const dir = path.join(root, `mail-${name.length}`);
    const t = fileTransport(dir, opts);
    const first = await t.send(mail('m1'));
    expect(first).toEqual({ transport: 'file', ref: '<m1@example.com>' });
    expect(fs.readFileSync(t.emlPath('m1')!, 'utf8')).toContain('Subject: Order m1');
    fs.rmSync(dir, { recursive: true });
    await t.send(mail('m2'));
    expect(fs.readFileSync(t.emlPath('m2')!, 'utf8')).toContain('Subject: Order m2');
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    t.close();
  });

  it('builds and writes while the calling thread is busy', async () => {
    const dir = path.join(root, 'busy');
    const t = fileTransport(dir);
    await t.send(mail('warm')); // the thread is started and has loaded nodemailer
    const sent = t.send(mail('busy'));
    // The calling thread does not yield until the file is there (or 60 s passed): written on this
    // thread, it could never appear.
    const deadline = Date.now() + 60_000;
    while (!fs.existsSync(t.emlPath('busy')!) && Date.now() < deadline);
    expect(fs.existsSync(t.emlPath('busy')!)).toBe(true);
    expect(await sent).toEqual({ transport: 'file', ref: '<busy@example.com>' });
    expect(fs.readFileSync(t.emlPath('busy')!, 'utf8')).toContain('Subject: Order busy');
    t.close();
  });

  it("answers the thread's failure as the send's, and keeps sending after it", async () => {
    const blocker = path.join(root, 'not-a-folder');
    fs.writeFileSync(blocker, 'a file where the folder should be');
    const t = fileTransport(blocker);
    await expect(t.send(mail('x1'))).rejects.toThrow(/ENOTDIR|EEXIST/);
    fs.rmSync(blocker);
    await t.send(mail('x2'));
    expect(fs.readFileSync(t.emlPath('x2')!, 'utf8')).toContain('Subject: Order x2');
    t.close();
  });
});
