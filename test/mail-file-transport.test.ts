/**
 * The file mail transport (the embedded default: one .eml per mail in <data dir>/mail): it makes
 * its folder once, not before every message, and makes it again when it was removed meanwhile.
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
});
