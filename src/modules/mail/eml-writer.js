// The file mail transport's work (issue 13: "mail file writes off the API thread"): building a
// message as SMTP would send it (nodemailer's MIME build) and writing it to `<dir>/<mail id>.eml`.
// `fileTransport()` (transport.ts) runs it in a worker thread, so neither the MIME build nor the
// file system calls' JavaScript run on the thread that serves HTTP; `emlWriter()` is the same work
// on the calling thread (the tests' reference, and what the thread itself runs).
//
// Plain JavaScript, not TypeScript: a worker thread loads its file with Node's own loader, from
// src/ as from the bundle in build/, with no TypeScript compiler in between. Types: eml-writer.d.ts.
import fs from 'node:fs/promises';
import process from 'node:process';
import path from 'node:path';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import nodemailer from 'nodemailer';

/** The mark in `workerData` that makes this file the mail thread's entry point. */
export const THREAD_MARK = 'checkstandEmlWriter';

function messageId(mail) {
  const domain = /@([^>\s]+)>?\s*$/.exec(mail.from)?.[1] ?? 'checkstand.local';
  return `<${mail.id}@${domain}>`;
}

/** nodemailer's message options for one of our mails (the SMTP transport sends the same). */
export function envelopeOf(mail) {
  return {
    from: mail.from,
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    ...(mail.html ? { html: mail.html } : {}),
    messageId: messageId(mail),
  };
}

/** Builds each message and writes it to `<dir>/<mail id>.eml`, on the calling thread. */
export function emlWriter(dir) {
  const builder = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const fileOf = (id) => path.join(dir, `${id}.eml`);
  // The folder is made when a write finds it missing (the first, or after it was removed), not before every message.
  const writeTmp = async (tmp, message) => {
    try {
      await fs.writeFile(tmp, message);
    } catch (err) {
      if (err?.code !== 'ENOENT') throw err;
      await fs.mkdir(dir, { recursive: true });
      await fs.writeFile(tmp, message);
    }
  };
  return {
    async write(mail) {
      const info = await builder.sendMail(envelopeOf(mail));
      // Write then rename: a reader never sees half a message.
      const tmp = `${fileOf(mail.id)}.${process.pid}.tmp`;
      await writeTmp(tmp, info.message);
      await fs.rename(tmp, fileOf(mail.id));
      return info.messageId;
    },
    fileOf,
    close: () => builder.close(),
  };
}

// The thread: one `{ seq, mail }` in, one `{ seq, ref }` or `{ seq, error }` out, in any order.
if (!isMainThread && workerData?.[THREAD_MARK]) {
  const writer = emlWriter(workerData[THREAD_MARK].dir);
  parentPort.on('message', ({ seq, mail }) => {
    writer.write(mail).then(
      (ref) => parentPort.postMessage({ seq, ref }),
      (err) => parentPort.postMessage({ seq, error: err instanceof Error ? err.message : String(err) }),
    );
  });
}
