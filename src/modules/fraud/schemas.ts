import { z } from 'zod';
import { Timestamp } from '../../app/schemas.ts';

export const FRAUD_METRICS = ['attempts', 'declines'] as const;
export const FRAUD_DIMENSIONS = ['card_fingerprint', 'bin', 'email', 'ip_address', 'order'] as const;
export const MAX_WINDOW_SECONDS = 30 * 24 * 3600;
export const DEFAULT_BIN_LENGTH = 6;

const requiredOr = (message: string) => (iss: { input?: unknown }) => (iss.input === undefined ? 'is required' : message);
const wholeNumber = (min: number, max: number) =>
  z
    .number({ error: requiredOr('must be a whole number') })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

const Name = z.string({ error: requiredOr('must be a string') }).trim().min(1, 'must not be empty').max(200);
const Threshold = wholeNumber(1, 1_000_000).describe('The rule blocks once this many events fall within the window');
const WindowSeconds = wholeNumber(1, MAX_WINDOW_SECONDS).describe('Length of the sliding window, in seconds (at most 30 days)');
const IsEnabled = z.boolean({ error: 'must be true or false' });

export const CreateFraudRule = z
  .object({
    name: Name.describe("Shown in the decline message: Blocked by fraud rule '<name>'"),
    metric: z
      .enum(FRAUD_METRICS, { error: requiredOr('must be attempts or declines') })
      .describe('`attempts`: card first payments the rules let through; `declines`: those a gateway declined'),
    dimension: z
      .enum(FRAUD_DIMENSIONS, { error: requiredOr('must be card_fingerprint, bin, email, ip_address or order') })
      .describe(
        'What the events are counted per: `card_fingerprint` (a keyed hash of the card number), `bin` (its first `bin_length` digits), ' +
          '`email` (the customer\'s, lower-case), `ip_address` (`customer.ip_address`; payments without one are not counted), `order`',
      ),
    bin_length: wholeNumber(6, 8).optional().describe('Dimension `bin` only: how many leading digits make the BIN, 6 (default) to 8'),
    threshold: Threshold,
    window_seconds: WindowSeconds,
    is_enabled: IsEnabled.default(true),
  })
  .strict()
  .superRefine((r, ctx) => {
    if (r.bin_length !== undefined && r.dimension !== 'bin') ctx.addIssue({ code: 'custom', path: ['bin_length'], message: 'applies only to the bin dimension' });
  })
  .meta({ id: 'CreateFraudRule' });
export type CreateFraudRule = z.infer<typeof CreateFraudRule>;

/** What a rule counts is fixed once created (its history would mean something else): delete it and create another. */
export const UpdateFraudRule = z
  .object({
    name: Name.optional(),
    threshold: Threshold.optional(),
    window_seconds: WindowSeconds.optional(),
    is_enabled: IsEnabled.optional(),
  })
  .strict()
  .meta({ id: 'UpdateFraudRule' });
export type UpdateFraudRule = z.infer<typeof UpdateFraudRule>;

export const FraudRule = z
  .object({
    object: z.literal('fraud_rule'),
    id: z.string(),
    name: z.string(),
    metric: z.enum(FRAUD_METRICS),
    dimension: z.enum(FRAUD_DIMENSIONS),
    bin_length: z.number().int().nullable().describe('Dimension `bin` only; null otherwise'),
    threshold: z.number().int(),
    window_seconds: z.number().int(),
    is_enabled: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'FraudRule' });
export type FraudRule = z.infer<typeof FraudRule>;

export const DeletedFraudRule = FraudRule.extend({ deleted: z.literal(true) }).meta({ id: 'DeletedFraudRule' });

export const FraudRuleParams = z.object({ id: z.string().max(100).describe('The fraud rule id (`fr_…`)') }).strict();
