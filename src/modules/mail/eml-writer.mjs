/**
 * The file mail transport's thread (transport.ts, `fileTransport`): builds each message as SMTP
 * would send it (nodemailer's stream transport) and writes it to `<dir>/<mail id>.eml`, so neither
 * the message's MIME encoding nor its file's open, write, close and rename run on the thread that
 * serves HTTP and drains the outbox.
 *
 * Plain JavaScript, found from the project's root (src/app/project-root.ts), so the same file runs
 * whether the server runs from src/ through tsx or from the bundle in build/.
 *
 * Asked: `{ seq, dir, id, envelope }`. Answers `{ seq, ref }` (the Message-ID) once the file is in
 * place, or `{ seq, error }`. Writes go to a temporary name, then are renamed: a reader never sees
 * half a message, and a process that dies mid-write leaves only a `.tmp` (the mail, still claimed,
 * is sent again when its lease runs out, to the same file name).
 */
/* global process */
import fs from 'node:fs';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import nodemailer from 'nodemailer';

// Linux: the thread names itself, so `top -H`, `ps -L` and the bench (bench/run.ts) tell it from
// Node's other threads (all `node`). /proc/thread-self is this thread's own entry.
try {
  fs.writeFileSync('/proc/thread-self/comm', 'eml-writer');
} catch {
  // not Linux, or /proc not mounted: the thread keeps its name
}

const builder = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

/** The folder is made when a write finds it missing (the first, or after it was removed), not before every message. */
function writeTmp(dir, tmp, message) {
  try {
    fs.writeFileSync(tmp, message);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(tmp, message);
  }
}

parentPort.on('message', async ({ seq, dir, id, envelope }) => {
  try {
    const info = await builder.sendMail(envelope);
    const file = path.join(dir, `${id}.eml`);
    const tmp = `${file}.${process.pid}.tmp`;
    writeTmp(dir, tmp, info.message);
    fs.renameSync(tmp, file);
    parentPort.postMessage({ seq, ref: info.messageId });
  } catch (err) {
    parentPort.postMessage({ seq, error: err instanceof Error ? err.message : String(err) });
  }
});
