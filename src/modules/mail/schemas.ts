import { z } from 'zod';
import { Timestamp } from '../../app/schemas.ts';

const mailFields = {
  object: z.literal('mail'),
  id: z.string(),
  order_number: z.string().nullable(),
  event_id: z.string(),
  kind: z.string().describe('e.g. `purchase_confirmation`'),
  to: z.string(),
  subject: z.string(),
  status: z.string().describe('`pending` (retrying with backoff), `sent` or `failed`'),
  attempts: z.number().int(),
  next_attempt_at: Timestamp.nullable(),
  last_error: z.string().nullable(),
  transport: z.string().nullable().describe('`smtp`, `file` or `log`'),
  sent_at: Timestamp.nullable(),
  created_at: Timestamp.nullable(),
};

/** What mailView (service.ts) answers. */
export const Mail = z.object(mailFields).meta({ id: 'Mail' });

export const MailDetail = z
  .object({
    ...mailFields,
    text_body: z.string(),
    html_body: z.string().nullable(),
    transport_ref: z.string().nullable(),
    eml_path: z.string().nullable().describe('`file` transport: where the .eml was written'),
  })
  .meta({ id: 'MailDetail' });

const Variable = z.object({ name: z.string(), description: z.string() });

export const PurchaseEmail = z
  .object({
    object: z.literal('purchase_email'),
    campaign_id: z.string(),
    subject: z.string(),
    body: z.string(),
    is_default: z.boolean(),
    unknown_variables: z.array(z.string()).describe('Variables the template names that do not exist (rendered empty)'),
    variables: z.array(Variable),
  })
  .meta({ id: 'PurchaseEmail' });

export const MailPreview = z
  .object({ subject: z.string(), text: z.string(), html: z.string(), unknown_variables: z.array(z.string()) })
  .meta({ id: 'MailPreview' });

export const AbandonmentMailPreview = z
  .object({
    subject: z.string(),
    text: z.string(),
    html: z.string(),
    checkout_url: z.string().nullable(),
    unknown_variables: z.array(z.string()),
    variables: z.array(Variable),
  })
  .meta({ id: 'AbandonmentMailPreview' });
