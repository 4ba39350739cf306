import path from 'node:path';
import { Worker } from 'node:worker_threads';
import nodemailer from 'nodemailer';
import { fromRoot } from '../../app/project-root.ts';
import { type EmlAnswer, type EmlRequest, THREAD_MARK, emlWriter, envelopeOf } from './eml-writer.js';

/** The mail thread's file, loaded by path (from src/ also when the server runs from build/). */
const EML_WRITER_FILE = fromRoot('src/modules/mail/eml-writer.js');

export interface OutgoingMail {
  /** Our mail id: the Message-ID is derived from it, so every retry carries the same one. */
  id: string;
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string | null;
}

export interface SentMail {
  transport: 'smtp' | 'file';
  /** The Message-ID header the mail went out with. */
  ref: string;
}

/** Where mail goes: an SMTP server, or (embedded default) one .eml file per mail. */
export interface MailTransport {
  readonly kind: 'smtp' | 'file';
  send(mail: OutgoingMail): Promise<SentMail>;
  /** File mode: where the mail with this id is (or will be) written. */
  emlPath(id: string): string | null;
  close(): void;
}

/**
 * The longest one send may take before nodemailer gives up. The drainer's lease is longer,
 * so a mail is never claimed by a second worker while the first may still be sending it.
 */
export const SMTP_TIMEOUTS = { connectionTimeout: 30_000, greetingTimeout: 30_000, socketTimeout: 60_000 } as const;

export function smtpTransport(url: string): MailTransport {
  const mailer = nodemailer.createTransport({ url, pool: true, maxConnections: 5, ...SMTP_TIMEOUTS });
  return {
    kind: 'smtp',
    async send(mail) {
      const info = await mailer.sendMail(envelopeOf(mail));
      const rejected = (info.rejected ?? []).map(String);
      if (rejected.length > 0) throw new Error(`the SMTP server rejected ${rejected.join(', ')}: ${info.response}`);
      return { transport: 'smtp', ref: info.messageId };
    },
    emlPath: () => null,
    close: () => mailer.close(),
  };
}

/**
 * Builds each message as SMTP would send it and writes it to `<dir>/<mail id>.eml`. By default in a
 * worker thread of its own (eml-writer.js), started on the first send and restarted after it died:
 * the MIME build and the file system calls' JavaScript stay off the thread that serves HTTP, which
 * in `start` (embedded) and `serve --with-worker` also runs the outbox (issue 13). `thread: false`
 * does the same work on the calling thread.
 */
export function fileTransport(dir: string, opts: { thread?: boolean } = {}): MailTransport {
  const writer = emlWriter(dir);
  if (opts.thread === false) {
    return {
      kind: 'file',
      send: async (mail) => ({ transport: 'file', ref: await writer.write(mail) }),
      emlPath: writer.fileOf,
      close: () => writer.close(),
    };
  }
  let thread: Worker | null = null;
  let seq = 0;
  const pending = new Map<number, { resolve(ref: string): void; reject(err: Error): void }>();
  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const start = (): Worker => {
    const w = new Worker(EML_WRITER_FILE, { workerData: { [THREAD_MARK]: { dir } } });
    w.on('message', (a: EmlAnswer) => {
      const p = pending.get(a.seq);
      pending.delete(a.seq);
      // An idle thread does not keep the process alive; one with a mail in hand does.
      if (pending.size === 0) w.unref();
      if (a.error !== undefined) p?.reject(new Error(a.error));
      else p?.resolve(a.ref);
    });
    w.on('error', (err) => {
      if (thread === w) thread = null;
      failAll(err);
    });
    w.on('exit', (code) => {
      if (thread === w) thread = null;
      failAll(new Error(`the mail file thread stopped (exit code ${code}) before it wrote the message`));
    });
    return w;
  };
  return {
    kind: 'file',
    async send(mail) {
      const w = (thread ??= start());
      const n = ++seq;
      const ref = await new Promise<string>((resolve, reject) => {
        pending.set(n, { resolve, reject });
        w.ref();
        w.postMessage({ seq: n, mail } satisfies EmlRequest);
      });
      return { transport: 'file', ref };
    },
    emlPath: writer.fileOf,
    close() {
      const w = thread;
      thread = null;
      void w?.terminate();
      writer.close();
    },
  };
}

export function createMailTransport(opts: { smtpUrl: string | undefined; dataDir: string }): MailTransport {
  return opts.smtpUrl ? smtpTransport(opts.smtpUrl) : fileTransport(path.join(opts.dataDir, 'mail'));
}
