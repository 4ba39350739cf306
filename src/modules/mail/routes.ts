import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';
import { CHECKOUT_URL_PLACEHOLDERS, checkoutUrlProblem, renderCheckoutUrl, SAMPLE_CHECKOUT_VALUES } from '../leads/checkout-link.ts';
import { ABANDONMENT_VARIABLES } from './abandonment.ts';
import { AbandonmentMailPreview, Mail, MailDetail, MailPreview, PurchaseEmail } from './schemas.ts';
import { MAIL_STATUSES } from './service.ts';
import { TEMPLATE_VARIABLES } from './template.ts';

const MailQuery = ListQuery.extend({
  status: z.enum(MAIL_STATUSES).optional(),
  order_number: Id('ord').optional(),
}).strict();

const CampaignParams = z.object({ id: Id('cmp') }).strict();

const Subject = z.string().trim().min(1).max(200);
const Body = z.string().min(1).max(20_000);
const PurchaseEmailBody = z.object({ subject: Subject, body: Body }).strict();
const PreviewBody = z.object({ subject: Subject.optional(), body: Body.optional() }).strict().optional();
const CheckoutUrl = z
  .string()
  .trim()
  .min(1)
  .max(2000)
  .superRefine((t, ctx) => {
    const problem = checkoutUrlProblem(t);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
const AbandonmentPreviewBody = z.object({ subject: Subject.optional(), body: Body.optional(), checkout_url: CheckoutUrl.optional() }).strict().optional();

const variablesDoc = Object.entries(TEMPLATE_VARIABLES)
  .map(([name, description]) => `\`{{${name}}}\` ${description}`)
  .join('; ');

export function registerMailRoutes(app: Http, ctx: AppContext): void {
  const mail = ctx.services.mail;
  const tags = ['webhooks'];
  // Another team's (or an unknown) campaign is 404 whatever the body: existence is never revealed by a 422.
  const campaignFirst = async (req: FastifyRequest) => {
    await mail.getPurchaseEmail(teamOf(req), String((req.params as { id?: unknown }).id ?? ''));
  };

  app.get(
    '/v1/mail',
    {
      config: { permission: 'webhooks:manage' },
      schema: {
        tags,
        summary: 'List autoresponder mail, newest first',
        description: 'Every purchase confirmation the team sent or is sending: status `pending` (retrying with backoff), `sent` or `failed` (see `last_error`).',
        querystring: MailQuery,
        response: { 200: ListEnvelope(Mail) },
      },
    },
    async (req) => {
      const page = await mail.list(teamOf(req), req.query);
      return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
    },
  );

  app.get(
    '/v1/mail/:id',
    {
      config: { permission: 'webhooks:manage' },
      schema: {
        tags,
        summary: 'Retrieve a mail with its text and HTML body',
        description: 'Without SMTP_URL each mail is written to a file on the server; `eml_path` says where.',
        params: z.object({ id: Id('mail') }).strict(),
        response: { 200: Envelope(MailDetail) },
      },
    },
    async (req) => ok(await mail.get(teamOf(req), req.params.id)),
  );

  const templateDoc =
    'The purchase confirmation sent when an order of this campaign completes. Plain text with placeholders: ' +
    `${variablesDoc}. Unknown placeholders render as nothing (listed in \`unknown_variables\`). The HTML part is built from the same text, everything escaped.`;

  app.get(
    '/v1/campaigns/:id/purchase-email',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: "The campaign's purchase-confirmation template", description: templateDoc, params: CampaignParams, response: { 200: Envelope(PurchaseEmail) } } },
    async (req) => ok(await mail.getPurchaseEmail(teamOf(req), req.params.id)),
  );

  app.put(
    '/v1/campaigns/:id/purchase-email',
    {
      config: { permission: 'catalog:manage', audit: 'purchase_email.updated' },
      preValidation: campaignFirst,
      schema: { tags, summary: "Set the campaign's purchase-confirmation template", description: templateDoc, params: CampaignParams, body: PurchaseEmailBody, response: { 200: Envelope(PurchaseEmail) } },
    },
    async (req) => ok(await mail.setPurchaseEmail(teamOf(req), req.params.id, req.body)),
  );

  app.delete(
    '/v1/campaigns/:id/purchase-email',
    { config: { permission: 'catalog:manage', audit: 'purchase_email.deleted' }, schema: { tags, summary: 'Reset the campaign to the default purchase-confirmation template', params: CampaignParams, response: { 200: Envelope(PurchaseEmail) } } },
    async (req) => ok(await mail.setPurchaseEmail(teamOf(req), req.params.id, null)),
  );

  app.post(
    '/v1/campaigns/:id/purchase-email/preview',
    {
      config: { permission: 'catalog:manage' },
      preValidation: campaignFirst,
      schema: {
        tags,
        summary: 'Render the purchase confirmation with a sample order',
        description: 'Renders `subject` and `body` from the request when given (a draft), else the stored template, with a sample order in the campaign currency.',
        params: CampaignParams,
        body: PreviewBody,
        response: { 200: Envelope(MailPreview) },
      },
    },
    async (req) => ok(await mail.previewPurchaseEmail(teamOf(req), req.params.id, req.body ?? {})),
  );

  app.post(
    '/v1/campaigns/:id/abandonment-email/preview',
    {
      config: { permission: 'catalog:manage' },
      preValidation: campaignFirst,
      schema: {
        tags,
        summary: 'Render the abandoned-lead e-mail with a sample lead',
        description:
          "The mail a lead of this campaign gets when it stays unpaid for the campaign's `abandonment.delay_minutes` (with `abandonment.mail.enabled`). " +
          'Renders `subject`, `body` and `checkout_url` from the request when given (a draft), else the campaign\'s `abandonment` settings, else the defaults. ' +
          `Template variables: those of the purchase e-mail and ${Object.entries(ABANDONMENT_VARIABLES)
            .map(([n, d]) => `\`{{${n}}}\` ${d}`)
            .join('; ')}. Checkout URL placeholders: ${Object.keys(CHECKOUT_URL_PLACEHOLDERS)
            .map((n) => `\`{${n}}\``)
            .join(', ')}.`,
        params: CampaignParams,
        body: AbandonmentPreviewBody,
        response: { 200: Envelope(AbandonmentMailPreview) },
      },
    },
    async (req) => ok(await mail.previewAbandonmentEmail(teamOf(req), req.params.id, req.body ?? {}, (t) => renderCheckoutUrl(t, SAMPLE_CHECKOUT_VALUES))),
  );
}
