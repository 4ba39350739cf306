import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';
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
      schema: {
        tags,
        summary: 'List autoresponder mail, newest first',
        description: 'Every purchase confirmation the team sent or is sending: status `pending` (retrying with backoff), `sent` or `failed` (see `last_error`).',
        querystring: MailQuery,
      },
    },
    async (req) => {
      const page = await mail.list(teamOf(req), req.query);
      return { success: true, message: 'OK', data: page.items, has_more: page.has_more };
    },
  );

  app.get(
    '/v1/mail/:id',
    {
      schema: {
        tags,
        summary: 'Retrieve a mail with its text and HTML body',
        description: 'Without SMTP_URL each mail is written to a file on the server; `eml_path` says where.',
        params: z.object({ id: Id('mail') }).strict(),
      },
    },
    async (req) => ok(await mail.get(teamOf(req), req.params.id)),
  );

  const templateDoc =
    'The purchase confirmation sent when an order of this campaign completes. Plain text with placeholders: ' +
    `${variablesDoc}. Unknown placeholders render as nothing (listed in \`unknown_variables\`). The HTML part is built from the same text, everything escaped.`;

  app.get(
    '/v1/campaigns/:id/purchase-email',
    { schema: { tags, summary: "The campaign's purchase-confirmation template", description: templateDoc, params: CampaignParams } },
    async (req) => ok(await mail.getPurchaseEmail(teamOf(req), req.params.id)),
  );

  app.put(
    '/v1/campaigns/:id/purchase-email',
    {
      preValidation: campaignFirst,
      schema: { tags, summary: "Set the campaign's purchase-confirmation template", description: templateDoc, params: CampaignParams, body: PurchaseEmailBody },
    },
    async (req) => ok(await mail.setPurchaseEmail(teamOf(req), req.params.id, req.body)),
  );

  app.delete(
    '/v1/campaigns/:id/purchase-email',
    { schema: { tags, summary: 'Reset the campaign to the default purchase-confirmation template', params: CampaignParams } },
    async (req) => ok(await mail.setPurchaseEmail(teamOf(req), req.params.id, null)),
  );

  app.post(
    '/v1/campaigns/:id/purchase-email/preview',
    {
      preValidation: campaignFirst,
      schema: {
        tags,
        summary: 'Render the purchase confirmation with a sample order',
        description: 'Renders `subject` and `body` from the request when given (a draft), else the stored template, with a sample order in the campaign currency.',
        params: CampaignParams,
        body: PreviewBody,
      },
    },
    async (req) => ok(await mail.previewPurchaseEmail(teamOf(req), req.params.id, req.body ?? {})),
  );
}
