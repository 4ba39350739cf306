/**
 * @checkstand/client: a typed client for the Checkstand API, generated from its OpenAPI document
 * (openapi.json → schema.ts with openapi-typescript; `npm run sdk:generate`) and called through
 * openapi-fetch, with what an integration needs on top: base URL and token, automatic
 * Idempotency-Keys on money-moving calls, typed errors, list iteration, the funnel's outcomes by
 * HTTP status, and webhook verification.
 */
export {
  Checkstand,
  MONEY_MOVING_POSTS,
  ok,
  type CallOptions,
  type CaptureInput,
  type CaptureOutcome,
  type CheckstandOptions,
  type CreateLeadInput,
  type CreateOrderInput,
  type ListOptions,
  type ListPath,
  type Order,
  type OrderDetail,
  type PaymentOutcome,
  type PaymentResult,
  type ProcessPaymentInput,
  type RefundInput,
  type Schemas,
  type Transaction,
  type UpsellInput,
  type UpsellOutcome,
  type UpsellResult,
  type VoidInput,
} from './client.ts';
export { CheckstandError, type ErrorBody, type FieldError } from './errors.ts';
export { CURRENCY_EXPONENTS, currencyExponent } from './money.ts';
export { verifyWebhook, WebhookVerificationError, WebhookVerifier, type WebhookEvent } from './webhooks.ts';
export type { components, operations, paths } from './schema.ts';
