/**
 * The file mail transport's thread (transport.ts, `fileTransport`): builds each message as SMTP
 * would send it (nodemailer's stream transport) and writes it to `<dir>/<mail id>.eml`, so neither
 * the message's MIME encoding nor its file's open, write, close and rename run on the thread that
 * serves HTTP and drains the outbox.
 *
 * Plain JavaScript, found from the project's root (src/app/project-root.ts), so the same file runs
 * whether the server runs from src/ through tsx or from the bundle in build/.
 *
 * Asked: `{ seq, file, envelope }` (file: `<dir>/<mail id>.eml`). Answers `{ seq, ref }` (the Message-ID) once the file is in
 * place, or `{ seq, error }`. Writes go to a temporary name, then are renamed: a reader never sees
 * half a message, and a process that dies mid-write leaves only a `.tmp` (the mail, still claimed,
 * is sent again when its lease runs out, to the same file name).
 */
/* global process */
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import nodemailer from 'nodemailer';

// Linux: the thread names itself (transport.ts, EML_WRITER_THREAD), so `top -H`, `ps -L` and the
// bench (bench/run.ts) tell it from Node's other threads (all `node`). /proc/thread-self is this
// thread's own entry.
try {
  fs.writeFileSync('/proc/thread-self/comm', workerData.threadName);
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

parentPort.on('message', async ({ seq, file, envelope }) => {
  try {
    const info = await builder.sendMail(envelope);
    const tmp = `${file}.${process.pid}.tmp`;
    writeTmp(path.dirname(file), tmp, info.message);
    fs.renameSync(tmp, file);
    parentPort.postMessage({ seq, ref: info.messageId });
  } catch (err) {
    parentPort.postMessage({ seq, error: err instanceof Error ? err.message : String(err) });
  }
});
