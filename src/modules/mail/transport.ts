import path from 'node:path';
import { Worker } from 'node:worker_threads';
import nodemailer from 'nodemailer';
import { fromRoot } from '../../app/project-root.ts';

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

function messageId(mail: OutgoingMail): string {
  const domain = /@([^>\s]+)>?\s*$/.exec(mail.from)?.[1] ?? 'checkstand.local';
  return `<${mail.id}@${domain}>`;
}

function envelopeOf(mail: OutgoingMail) {
  return {
    from: mail.from,
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    ...(mail.html ? { html: mail.html } : {}),
    messageId: messageId(mail),
  };
}

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
 * Builds each message as SMTP would send it and writes it to `<dir>/<mail id>.eml`, on a thread of
 * its own (eml-writer.mjs): this thread only hands it the message and waits for its answer.
 */
export function fileTransport(dir: string): MailTransport {
  const writer = new EmlWriterThread();
  const emlPath = (id: string) => path.join(dir, `${id}.eml`);
  return {
    kind: 'file',
    async send(mail) {
      const ref = await writer.write(emlPath(mail.id), envelopeOf(mail));
      return { transport: 'file', ref };
    },
    emlPath,
    close: () => writer.close(),
  };
}

type Pending = { resolve: (ref: string) => void; reject: (err: Error) => void };

/**
 * The writer thread, started at the first mail (a server that sends none never starts it). It
 * holds the process open only while a mail is being written. If it dies, the mails it held fail
 * (the drainer counts each as a failed attempt, to retry) and the next mail starts a new one.
 */
class EmlWriterThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private seq = 0;

  write(file: string, envelope: ReturnType<typeof envelopeOf>): Promise<string> {
    const worker = this.worker ?? this.start();
    const seq = ++this.seq;
    return new Promise<string>((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(seq, { resolve, reject });
      worker.postMessage({ seq, file, envelope });
    });
  }

  close(): void {
    const worker = this.worker;
    this.worker = null;
    this.failAll(new Error('the mail transport was closed'));
    void worker?.terminate();
  }

  private start(): Worker {
    // No tsx loader in the thread (execArgv): its file is plain JavaScript. Its heap is bounded
    // (WRITER_HEAP): with V8's defaults the thread added ≈ 60 MB of RSS to its process, with these ≈ 28.
    const worker = new Worker(WRITER_FILE, { execArgv: [], name: EML_WRITER_THREAD, workerData: { threadName: EML_WRITER_THREAD }, resourceLimits: WRITER_HEAP });
    worker.unref();
    worker.on('message', (m: { seq: number; ref?: string; error?: string }) => {
      const p = this.pending.get(m.seq);
      if (!p) return;
      this.pending.delete(m.seq);
      if (this.pending.size === 0) worker.unref();
      if (m.error !== undefined) p.reject(new Error(m.error));
      else p.resolve(m.ref!);
    });
    const gone = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.failAll(err);
    };
    worker.on('error', (err) => gone(new Error(`the mail file writer failed: ${err.message}`)));
    worker.on('exit', (code) => gone(new Error(`the mail file writer stopped (exit code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }
}

const WRITER_FILE = fromRoot('src/modules/mail/eml-writer.mjs');
/** The writer thread's name: Linux shows it (`/proc/<tid>/comm`: `top -H`, `ps -L`), and the bench counts that thread's CPU by it. */
export const EML_WRITER_THREAD = 'eml-writer';
/**
 * The writer's heap: a small young generation (what a process's RSS grows by) and an old one far
 * above what it keeps (a message at a time). A thread that runs out of it stops; its mails fail
 * and are retried, and the next mail starts a new thread.
 */
const WRITER_HEAP = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 48 } as const;

export function createMailTransport(opts: { smtpUrl: string | undefined; dataDir: string }): MailTransport {
  return opts.smtpUrl ? smtpTransport(opts.smtpUrl) : fileTransport(path.join(opts.dataDir, 'mail'));
}
