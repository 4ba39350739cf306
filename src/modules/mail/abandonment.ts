import type { Row } from '../../db/schema.ts';
import { type MailOrder, type MailTemplate, type RenderedMail, renderPurchaseMail, unknownVariables } from './template.ts';

/** The abandoned-lead mail: one per `lead.abandoned` event of a campaign that enables it (issue 15 item 8). */
export const ABANDONMENT_KIND = 'lead_abandonment';

/** Variables the abandonment mail has on top of the purchase e-mail's. */
export const ABANDONMENT_VARIABLES = {
  checkout_url: "The link back to the campaign's checkout for this lead (the campaign's `abandonment.checkout_url` filled in); a link in the HTML part",
} as const;

export const DEFAULT_ABANDONMENT_TEMPLATE: MailTemplate = {
  subject: 'Your order from {{campaign.name}} is waiting for you',
  body: [
    'Hi {{customer.name}},',
    '',
    'You left your order at {{campaign.name}} before paying. It is saved for you:',
    '',
    '{{lines}}',
    '',
    'Total: {{total}}',
    '',
    'Complete your order here: {{checkout_url}}',
    '',
    'If you have already completed your purchase, please ignore this e-mail.',
  ].join('\n'),
};

/** The campaign's abandonment template; each part it leaves unset is the default's. */
export function abandonmentTemplateOf(c: Row<'campaigns'>): MailTemplate {
  return { subject: c.abandonment_email_subject ?? DEFAULT_ABANDONMENT_TEMPLATE.subject, body: c.abandonment_email_body ?? DEFAULT_ABANDONMENT_TEMPLATE.body };
}

export function renderAbandonmentMail(t: MailTemplate, order: MailOrder, campaignName: string, checkoutUrl: string | null): RenderedMail {
  return renderPurchaseMail(t, order, campaignName, checkoutUrl ? { checkout_url: checkoutUrl } : {});
}

export function unknownAbandonmentVariables(t: MailTemplate): string[] {
  return unknownVariables(t, ABANDONMENT_VARIABLES);
}
