import { invalid } from '../../app/errors.ts';
import type { Row, RowPatch } from '../../db/schema.ts';
import { type Abandonment, type AbandonmentInput, DEFAULT_ABANDONMENT_DELAY_MINUTES } from '../catalog/schemas.ts';

/** A campaign's abandoned-lead follow-up settings as the API shows them. */
export function abandonmentView(c: Row<'campaigns'>): Abandonment {
  return {
    enabled: c.abandonment_enabled,
    delay_minutes: c.abandonment_delay_minutes,
    checkout_url: c.abandonment_checkout_url,
    mail: { enabled: c.abandonment_mail_enabled, subject: c.abandonment_email_subject, body: c.abandonment_email_body },
  };
}

/**
 * The campaign columns a create (`current` null) or an update writes for `input`: the fields sent
 * over the campaign's (or the defaults), judged as a whole. `switchedOn`: the follow-up goes from
 * off to on, so the campaign's `abandonment_enabled_at` is stamped (leads idle since before are left alone).
 */
export function abandonmentColumns(current: Row<'campaigns'> | null, input: AbandonmentInput): { patch: RowPatch<'campaigns'>; switchedOn: boolean } {
  const was = current
    ? abandonmentView(current)
    : { enabled: false, delay_minutes: DEFAULT_ABANDONMENT_DELAY_MINUTES, checkout_url: null, mail: { enabled: false, subject: null, body: null } };
  const next: Abandonment = {
    enabled: input.enabled ?? was.enabled,
    delay_minutes: input.delay_minutes ?? was.delay_minutes,
    checkout_url: input.checkout_url !== undefined ? input.checkout_url : was.checkout_url,
    mail: {
      enabled: input.mail?.enabled ?? was.mail.enabled,
      subject: input.mail?.subject !== undefined ? input.mail.subject : was.mail.subject,
      body: input.mail?.body !== undefined ? input.mail.body : was.mail.body,
    },
  };
  if (next.mail.enabled && next.checkout_url === null) {
    throw invalid('abandonment.checkout_url', 'is required while abandonment.mail.enabled is true: the mail links back to the checkout');
  }
  return {
    patch: {
      abandonment_enabled: next.enabled,
      abandonment_delay_minutes: next.delay_minutes,
      abandonment_checkout_url: next.checkout_url,
      abandonment_mail_enabled: next.mail.enabled,
      abandonment_email_subject: next.mail.subject,
      abandonment_email_body: next.mail.body,
    },
    switchedOn: next.enabled && !was.enabled,
  };
}
