import { z } from 'zod';
import { ID_PREFIX } from '../../app/ids.ts';
import { Id, ListQuery, Money, Timestamp } from '../../app/schemas.ts';
import { luhnValid } from '../../app/luhn.ts';

export const MAX_ROUTER_MEMBERS = 20;
export const DEFAULT_NMI_BASE_URL = 'https://secure.nmi.com';

const Name = z.string().trim().min(1).max(200);
const requiredOr = (message: string) => (iss: { input?: unknown }) => (iss.input === undefined ? 'is required' : message);
const Cap = Money.min(1, 'must be at least 1').describe('Most this may charge in a calendar month (UTC), in minor units');
const Descriptor = z.string().trim().min(1).max(100).describe('Soft descriptor shown on the statement, when the gateway supports one');

export const IdParams = z.object({ id: z.string().max(100).describe('The object id') });

/** Unknown query parameters are refused, as on the other /v1 lists. */
export const StrictListQuery = ListQuery.strict();

// ---- gateways

/** A trailing slash is dropped so adapters can append paths. */
const BaseUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(2000)
  .transform((u) => u.replace(/\/+$/, ''));

export const NmiCredentials = z
  .object({
    security_key: z.string({ error: requiredOr('must be a string') }).trim().min(1, 'is required').max(500),
  })
  .strict()
  .describe('Stored encrypted and never returned: responses show `credentials_hint` instead')
  .meta({ id: 'NmiCredentials' });
export type NmiCredentials = z.infer<typeof NmiCredentials>;

export const ThreeDsCredentials = z
  .object({
    api_key: z.string({ error: requiredOr('must be a string') }).trim().min(1, 'is required').max(500).describe('The only required credential; `sk_test_…` means test mode'),
    risk_sdk_key: z.string().trim().min(1).max(500).optional().describe('Loaded by the checkout page for the risk session; stored, never validated'),
    webhook_secret: z.string().trim().min(1).max(500).optional().describe('Without it the gateway\'s webhooks are refused with 403'),
  })
  .strict()
  .describe('Stored encrypted and never returned: responses show `credentials_hint` instead')
  .meta({ id: 'ThreeDsCredentials' });
export type ThreeDsCredentials = z.infer<typeof ThreeDsCredentials>;

export const GATEWAY_KINDS = ['nmi', 'threeds'] as const;

const CommonGatewayFields = {
  name: Name,
  is_active: z.boolean().default(true),
  monthly_cap: Cap.nullable().optional(),
  descriptor: Descriptor.nullable().optional(),
};

export const CreateGateway = z
  .discriminatedUnion(
    'kind',
    [
      z
        .object({
          kind: z.literal('nmi').describe('A synchronous card gateway speaking NMI Direct Post'),
          base_url: BaseUrl.default(DEFAULT_NMI_BASE_URL).describe(`The gateway API base URL; default ${DEFAULT_NMI_BASE_URL}`),
          credentials: NmiCredentials,
          test_mode: z.boolean().default(false),
          ...CommonGatewayFields,
        })
        .strict(),
      z
        .object({
          kind: z.literal('threeds').describe('The card gateway that requires 3-D Secure on the first payment'),
          base_url: BaseUrl.describe('The gateway API base URL (the sandbox: `<sandbox url>/3ds`)'),
          credentials: ThreeDsCredentials,
          test_mode: z.boolean().optional().describe('Defaults to true for an `sk_test_` API key'),
          ...CommonGatewayFields,
        })
        .strict(),
    ],
    { error: requiredOr('must be nmi or threeds') },
  )
  .meta({ id: 'CreateGateway' });
export type CreateGateway = z.infer<typeof CreateGateway>;

export const UpdateGateway = z
  .object({
    name: Name.optional(),
    base_url: BaseUrl.optional(),
    credentials: z
      .object({
        security_key: NmiCredentials.shape.security_key.optional(),
        api_key: ThreeDsCredentials.shape.api_key.optional(),
        risk_sdk_key: ThreeDsCredentials.shape.risk_sdk_key,
        webhook_secret: ThreeDsCredentials.shape.webhook_secret,
      })
      .strict()
      .superRefine((c, ctx) => {
        if (!c.security_key && !c.api_key) ctx.addIssue({ code: 'custom', path: ['security_key'], message: 'is required (api_key for a threeds gateway)' });
      })
      .optional()
      .describe("Replaces the stored credentials as a whole, in the shape of the gateway's kind"),
    test_mode: z.boolean().optional(),
    is_active: z.boolean().optional(),
    monthly_cap: Cap.nullable().optional(),
    descriptor: Descriptor.nullable().optional(),
  })
  .strict()
  .meta({ id: 'UpdateGateway' });
export type UpdateGateway = z.infer<typeof UpdateGateway>;

export const Gateway = z
  .object({
    object: z.literal('gateway'),
    id: z.string(),
    name: z.string(),
    kind: z.enum(GATEWAY_KINDS),
    base_url: z.string(),
    test_mode: z.boolean(),
    is_active: z.boolean(),
    monthly_cap: z.number().int().nullable(),
    descriptor: z.string().nullable(),
    credentials_hint: z
      .record(z.string(), z.string())
      .describe('Each credential field masked to its last 4 characters (all masked when shorter than 12)'),
    webhook_url: z.string().optional().describe('3-D Secure gateways: paste this into the gateway dashboard as the webhook address'),
    risk_sdk_key: z.string().nullable().optional().describe('3-D Secure gateways: the publishable key the checkout page loads the risk SDK with'),
    webhook_secret_configured: z.boolean().optional().describe('3-D Secure gateways: false means its webhooks are refused (403)'),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Gateway' });
export type Gateway = z.infer<typeof Gateway>;

// ---- payment routers ("payment orchestrators" on the wire)

const Rank = z.number({ error: requiredOr('must be a whole number') }).int('must be a whole number').min(1, 'must be at least 1').max(1000);

export const RouterMemberInput = z
  .object({
    gateway_id: Id(ID_PREFIX.gateway).describe('A gateway of the team'),
    priority: Rank.default(1).describe('Lower is tried first (strategy `priority`)'),
    weight: Rank.default(1).describe('Relative share of first attempts (strategy `weighted`)'),
    monthly_cap: Cap.nullable().optional().describe("Most this router may send to the gateway in a calendar month (UTC); the gateway's own cap applies as well"),
  })
  .strict()
  .meta({ id: 'PaymentOrchestratorMemberSpec' });

const Members = z
  .array(RouterMemberInput)
  .min(1, 'must list at least one gateway')
  .max(MAX_ROUTER_MEMBERS, `may list at most ${MAX_ROUTER_MEMBERS} gateways`)
  .superRefine((members, ctx) => {
    const seen = new Set<string>();
    members.forEach((m, i) => {
      if (seen.has(m.gateway_id)) ctx.addIssue({ code: 'custom', path: [i, 'gateway_id'], message: 'lists the same gateway twice' });
      seen.add(m.gateway_id);
    });
  });
export type RouterMemberInput = z.infer<typeof RouterMemberInput>;

const Strategy = z.enum(['priority', 'weighted'], { error: requiredOr('must be priority or weighted') });
const MaxAttempts = z
  .number({ error: requiredOr('must be a whole number') })
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(10, 'must be at most 10')
  .describe('Gateways tried for one payment before it is declined');

export const CreateRouter = z
  .object({
    name: Name,
    strategy: Strategy.default('priority').describe('`priority`: by ascending priority; `weighted`: random by weight, without repeats'),
    max_attempts: MaxAttempts.default(3),
    is_active: z.boolean().default(true),
    members: Members,
  })
  .strict()
  .meta({ id: 'CreatePaymentOrchestrator' });
export type CreateRouter = z.infer<typeof CreateRouter>;

export const UpdateRouter = z
  .object({
    name: Name.optional(),
    strategy: Strategy.optional(),
    max_attempts: MaxAttempts.optional(),
    is_active: z.boolean().optional(),
    members: Members.optional().describe('Replaces the whole member list'),
  })
  .strict()
  .meta({ id: 'UpdatePaymentOrchestrator' });
export type UpdateRouter = z.infer<typeof UpdateRouter>;

export const RouterMember = z
  .object({
    id: z.string(),
    gateway_id: z.string(),
    priority: z.number().int(),
    weight: z.number().int(),
    monthly_cap: z.number().int().nullable(),
    month_to_date_volume: z
      .number()
      .int()
      .min(0)
      .describe("Approved sales through the member's gateway this calendar month (UTC, the month the caps count in), in minor units; refunds are not subtracted, and the gateway's sales through other routers or directly count as well"),
  })
  .meta({ id: 'PaymentOrchestratorMember' });

export const Router = z
  .object({
    object: z.literal('payment_orchestrator'),
    id: z.string(),
    name: z.string(),
    strategy: z.enum(['priority', 'weighted']),
    max_attempts: z.number().int(),
    is_active: z.boolean(),
    members: z.array(RouterMember).describe('By ascending priority, then id'),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'PaymentOrchestrator' });
export type Router = z.infer<typeof Router>;

// ---- BIN blacklist

export const CreateBinBlock = z
  .object({
    prefix: z
      .string({ error: requiredOr('must be a string of 6 to 8 digits') })
      .regex(/^\d{6,8}$/, 'must be 6 to 8 digits')
      .describe('Card numbers starting with these digits are refused'),
    reason: z.string().trim().min(1).max(500).nullable().optional(),
  })
  .strict()
  .meta({ id: 'CreateBinBlacklistEntry' });
export type CreateBinBlock = z.infer<typeof CreateBinBlock>;

export const BinBlock = z
  .object({
    object: z.literal('bin_blacklist_entry'),
    id: z.string(),
    prefix: z.string(),
    reason: z.string().nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'BinBlacklistEntry' });
export type BinBlock = z.infer<typeof BinBlock>;

export const DeletedBinBlock = BinBlock.extend({ deleted: z.literal(true) }).meta({ id: 'DeletedBinBlacklistEntry' });

// ---- test cards

// Messages never repeat the value: the card number must not come back in an error body.
export const CreateTestCard = z
  .object({
    card_number: z
      .string({ error: requiredOr('must be a string of digits') })
      .transform((v) => v.replace(/[\s-]/g, ''))
      .refine((v) => /^\d{12,19}$/.test(v) && luhnValid(v), 'is not a valid card number')
      .describe('Stored only as a keyed hash and its last 4 digits'),
    label: z.string().trim().min(1).max(200).nullable().optional(),
  })
  .strict()
  .meta({ id: 'CreateTestCard' });
export type CreateTestCard = z.infer<typeof CreateTestCard>;

export const TestCard = z
  .object({
    object: z.literal('test_card'),
    id: z.string(),
    last4: z.string(),
    label: z.string().nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'TestCard' });
export type TestCard = z.infer<typeof TestCard>;

export const DeletedTestCard = TestCard.extend({ deleted: z.literal(true) }).meta({ id: 'DeletedTestCard' });
