/**
 * The file mail transport's thread (transport.ts, `fileTransport`): builds each message as SMTP
 * would send it (nodemailer's MailComposer, CRLF line ends) and writes it to `<dir>/<mail id>.eml`, so neither
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
import MailComposer from 'nodemailer/lib/mail-composer';

// Linux: the thread names itself (transport.ts, EML_WRITER_THREAD), so `top -H`, `ps -L` and the
// bench (bench/run.ts) tell it from Node's other threads (all `node`). /proc/thread-self is this
// thread's own entry.
try {
  fs.writeFileSync('/proc/thread-self/comm', workerData.threadName);
} catch {
  // not Linux, or /proc not mounted: the thread keeps its name
}

/** CRLF line ends in a body, as SMTP carries them (MIME's own lines are CRLF already). */
const crlf = (text) => text.replace(/\r?\n/g, '\r\n');

/**
 * The message as SMTP would send it: nodemailer's MailComposer, which its transports build with,
 * without a transport around it (its stream transport cost twice the CPU per message, and only
 * added the bodies' CRLF line ends, done here). Its Message-ID is the one the envelope names.
 */
function build(envelope) {
  const mail = { ...envelope, text: crlf(envelope.text), ...(envelope.html ? { html: crlf(envelope.html) } : {}) };
  return new Promise((resolve, reject) => new MailComposer(mail).compile().build((err, message) => (err ? reject(err) : resolve(message))));
}

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
    const message = await build(envelope);
    const tmp = `${file}.${process.pid}.tmp`;
    writeTmp(path.dirname(file), tmp, message);
    fs.renameSync(tmp, file);
    parentPort.postMessage({ seq, ref: envelope.messageId });
  } catch (err) {
    parentPort.postMessage({ seq, error: err instanceof Error ? err.message : String(err) });
  }
});
