import { z } from 'zod';
import { Timestamp } from '../../app/schemas.ts';

/** What ConnectionsService.view answers: never the key or the webhook secret, only a hint of the key. */
export const ExtpayConnection = z
  .object({
    object: z.literal('extpay_connection'),
    id: z.string().describe('`xc_…`'),
    type: z.literal('extpay'),
    name: z.string(),
    environment: z.enum(['sandbox', 'production']),
    test_mode: z.boolean(),
    company_id: z.string(),
    base_url: z.string(),
    api_key_hint: z.string().describe('The last characters of the key'),
    webhook_secret_configured: z.boolean(),
    api_version_date: z.string().optional().describe("The provider's Api-Version-Date the connection sends"),
    status: z.enum(['active', 'inactive']),
    capabilities: z.object({ refunds: z.boolean(), voids: z.boolean(), upsells: z.boolean() }),
    created_at: Timestamp.nullable(),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'ExtpayConnection' });

export const DeletedExtpayConnection = z.object({ ...ExtpayConnection.shape, deleted: z.boolean() }).meta({ id: 'DeletedExtpayConnection' });

export const ConnectionTest = z
  .object({
    status: z.enum(['connected', 'cannot_create_checkouts', 'failed_to_authenticate']),
    result: z.enum(['connected', 'cannot_create_checkouts', 'failed_to_authenticate']).describe('The older name of `status`'),
    message: z.string(),
    missing_permissions: z.array(z.string()).describe('`cannot_create_checkouts`: the permissions the key lacks'),
  })
  .meta({ id: 'ExtpayConnectionTest' });
