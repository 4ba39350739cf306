/**
 * The file mail transport (the embedded default: one .eml per mail in <data dir>/mail): it makes
 * its folder once, not before every message, and makes it again when it was removed meanwhile; the
 * message is built and written on a thread of its own, not on the one that asked (issue 13).
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

  it('writes each message whole to <dir>/<id>.eml, and again after the folder was removed', async () => {
    const dir = path.join(root, 'mail');
    const t = fileTransport(dir);
    const first = await t.send(mail('m1'));
    expect(first).toEqual({ transport: 'file', ref: '<m1@example.com>' });
    expect(fs.readFileSync(t.emlPath('m1')!, 'utf8')).toContain('Subject: Order m1');
    fs.rmSync(dir, { recursive: true });
    await t.send(mail('m2'));
    expect(fs.readFileSync(t.emlPath('m2')!, 'utf8')).toContain('Subject: Order m2');
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    t.close();
  });

  it('writes the message as SMTP carries it: CRLF line ends (bodies too), both parts, its Message-ID', async () => {
    const t = fileTransport(path.join(root, 'crlf'));
    const sent = await t.send({ id: 'm9', from: 'Shop <shop@example.com>', to: 'buyer@example.com', subject: 'Order m9', text: 'Thanks\nfor your order\r\nÖ', html: '<p>Thanks</p>\n<p>again</p>' });
    expect(sent).toEqual({ transport: 'file', ref: '<m9@example.com>' });
    const eml = fs.readFileSync(t.emlPath('m9')!, 'utf8');
    expect(eml.replace(/\r\n/g, '')).not.toContain('\n');
    expect(eml).toContain('Message-ID: <m9@example.com>\r\n');
    expect(eml).toContain('Content-Type: multipart/alternative');
    expect(eml).toContain('Thanks\r\nfor your order\r\n=C3=96');
    expect(eml).toContain('<p>Thanks</p>\r\n<p>again</p>');
    t.close();
  });

  it('builds and writes the message on its own thread: the file appears while the asking thread is blocked', async () => {
    const dir = path.join(root, 'blocked');
    const t = fileTransport(dir);
    const sent = t.send(mail('m3'));
    // This thread does nothing else until the file is there (or 60 s have gone): a transport that
    // built or wrote the message on it, through its event loop, could not have written it yet.
    const file = t.emlPath('m3')!;
    const nap = new Int32Array(new SharedArrayBuffer(4));
    const deadline = Date.now() + 60_000;
    while (!fs.existsSync(file) && Date.now() < deadline) Atomics.wait(nap, 0, 0, 5);
    expect(fs.existsSync(file)).toBe(true);
    expect(await sent).toEqual({ transport: 'file', ref: '<m3@example.com>' });
    expect(fs.readFileSync(file, 'utf8')).toContain('Subject: Order m3');
    // Linux: the thread has a name of its own (top -H, ps -L, the bench's server CPU).
    if (process.platform === 'linux') {
      const names = fs.readdirSync('/proc/self/task').map((tid) => fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim());
      expect(names).toContain('eml-writer');
    }
    t.close();
  }, 90_000);

  it('a closed transport fails the mail it still held; a new one writes again', async () => {
    const dir = path.join(root, 'closed');
    const t = fileTransport(dir);
    const held = t.send(mail('m4'));
    t.close();
    await expect(held).rejects.toThrow('the mail transport was closed');
    const again = fileTransport(dir);
    await again.send(mail('m5'));
    expect(fs.existsSync(again.emlPath('m5')!)).toBe(true);
    again.close();
  });
});
