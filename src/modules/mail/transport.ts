import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';

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

/** Builds each message as SMTP would send it and writes it to `<dir>/<mail id>.eml`. */
export function fileTransport(dir: string): MailTransport {
  const builder = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const fileOf = (id: string) => path.join(dir, `${id}.eml`);
  // The folder is made when a write finds it missing (the first, or after it was removed), not before every message.
  const writeTmp = async (tmp: string, message: Buffer) => {
    try {
      await fs.writeFile(tmp, message);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await fs.mkdir(dir, { recursive: true });
      await fs.writeFile(tmp, message);
    }
  };
  return {
    kind: 'file',
    async send(mail) {
      const info = await builder.sendMail(envelopeOf(mail));
      // Write then rename: a reader never sees half a message.
      const tmp = `${fileOf(mail.id)}.${process.pid}.tmp`;
      await writeTmp(tmp, info.message as Buffer);
      await fs.rename(tmp, fileOf(mail.id));
      return { transport: 'file', ref: info.messageId };
    },
    emlPath: fileOf,
    close: () => builder.close(),
  };
}

export function createMailTransport(opts: { smtpUrl: string | undefined; dataDir: string }): MailTransport {
  return opts.smtpUrl ? smtpTransport(opts.smtpUrl) : fileTransport(path.join(opts.dataDir, 'mail'));
}
