import { newId } from '../../app/ids.ts';
import type { MailTransport } from '../mail/transport.ts';

/**
 * Account mail (invitations, password resets) goes out at once through the mail module's
 * transport (SMTP, or an .eml file per mail in embedded mode). It is never written to a team's
 * mail outbox: the links in it are credentials, and the outbox is readable through the API.
 */
/** Where a failed send is reported (a request's logger). */
export interface MailLog {
  warn(obj: object, msg: string): void;
}

export interface AccountMailer {
  /** True when the transport took it; a failure is logged (without the body) and answered false. */
  send(mail: { to: string; subject: string; text: string }, log?: MailLog): Promise<boolean>;
}

export function accountMailer(transport: MailTransport, from: string): AccountMailer {
  return {
    async send(mail, log) {
      const id = newId('mail');
      try {
        await transport.send({ id, from, to: mail.to, subject: mail.subject, text: mail.text, html: null });
        return true;
      } catch (err) {
        log?.warn({ mail: id, err: { message: (err as Error).message } }, 'account mail could not be sent');
        return false;
      }
    },
  };
}
