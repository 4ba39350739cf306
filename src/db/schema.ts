import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** Columns with a database default: optional on insert, always present on select. */
type Defaulted<T> = ColumnType<T, T | undefined, T>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string, string>;

export interface Address {
  line1?: string | undefined;
  line2?: string | undefined;
  city?: string | undefined;
  state?: string | undefined;
  postal_code?: string | undefined;
  country?: string | undefined;
  first_name?: string | undefined;
  last_name?: string | undefined;
}

export interface TeamsTable {
  id: string;
  name: string;
  created_at: Timestamp;
  time_zone: Defaulted<string>;
}

export interface ApiTokensTable {
  id: string;
  team_id: string;
  name: string;
  token_hash: string;
  token_hint: string;
  created_at: Timestamp;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}

export interface CampaignsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  name: string;
  currency: string;
  gateway_id: string | null;
  payment_orchestrator_id: string | null;
  is_active: Defaulted<boolean>;
  purchase_email_subject: ColumnType<string | null, string | null | undefined, string | null>;
  purchase_email_body: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProductsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  name: string;
  sku: string | null;
  description: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type BillingType = 'one_time' | 'recurring' | 'trial';
export type IntervalUnit = 'day' | 'week' | 'month' | 'year';
export type FulfillmentType = 'physical' | 'digital';

export interface OffersTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  campaign_id: string;
  product_id: string;
  name: string;
  price: number;
  shipping: Defaulted<number>;
  billing_type: BillingType;
  interval_unit: IntervalUnit | null;
  interval_count: number | null;
  trial_days: number | null;
  recurring_price: number | null;
  recurring_shipping: number | null;
  fulfillment_type: FulfillmentType;
  is_active: Defaulted<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface UpsellsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  campaign_id: string;
  offer_id: string;
  step: number;
  name: string;
  is_active: Defaulted<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CouponsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  code: string;
  campaign_id: string | null;
  percent_off: number | null;
  amount_off: number | null;
  currency: string | null;
  max_redemptions: number | null;
  times_redeemed: Defaulted<number>;
  expires_at: Date | null;
  is_active: Defaulted<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CustomersTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  phone: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CustomerNotesTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  customer_id: string;
  body: string;
  author: string;
  created_at: Timestamp;
}

export interface OrdersTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  campaign_id: string;
  customer_id: string;
  status: string;
  payment_status: string | null;
  currency: string;
  subtotal: Defaulted<number>;
  shipping_total: Defaulted<number>;
  discount_total: Defaulted<number>;
  total: Defaulted<number>;
  is_test: Defaulted<boolean>;
  is_throttle: Defaulted<boolean>;
  phone: string | null;
  shipping_address: Json<Address> | null;
  billing_address: Json<Address> | null;
  payment_method_id: ColumnType<string | null, string | null | undefined, string | null>;
  payment_started_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  refunded_total: Defaulted<number>;
  coupon_id: ColumnType<string | null, string | null | undefined, string | null>;
  completed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  subscription_id: ColumnType<string | null, string | null | undefined, string | null>;
  rebill_of: ColumnType<string | null, string | null | undefined, string | null>;
  rebill_cycle: ColumnType<number | null, number | null | undefined, number | null>;
  needs_qa: Defaulted<boolean>;
  qa_reason: ColumnType<string | null, string | null | undefined, string | null>;
  ip_address: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OrderLinesTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  order_id: string;
  offer_id: string;
  product_id: string;
  upsell_id: string | null;
  name: string;
  quantity: number;
  unit_price: number;
  shipping: number;
  line_total: number;
  billing_type: BillingType;
  fulfillment_type: FulfillmentType;
  created_at: Timestamp;
}

export interface OrderEventsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  order_id: string;
  type: string;
  data: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface TransactionsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  order_id: string;
  type: string;
  status: string;
  amount: number;
  currency: string;
  gateway_id: string | null;
  provider_ref: string | null;
  response_code: string | null;
  response_text: string | null;
  card_brand: string | null;
  card_bin: string | null;
  card_last4: string | null;
  card_exp: string | null;
  is_test: Defaulted<boolean>;
  router_id: ColumnType<string | null, string | null | undefined, string | null>;
  attempt: Defaulted<number>;
  parent_id: ColumnType<string | null, string | null | undefined, string | null>;
  payment_method_id: ColumnType<string | null, string | null | undefined, string | null>;
  auth_code: ColumnType<string | null, string | null | undefined, string | null>;
  upsell_id: ColumnType<string | null, string | null | undefined, string | null>;
  connection_id: ColumnType<string | null, string | null | undefined, string | null>;
  checkout_ref: ColumnType<string | null, string | null | undefined, string | null>;
  plan_ref: ColumnType<string | null, string | null | undefined, string | null>;
  provisional: Defaulted<boolean>;
  requested_amount: ColumnType<number | null, number | null | undefined, number | null>;
  step: ColumnType<string | null, string | null | undefined, string | null>;
  in_flight: Defaulted<boolean>;
  volume_month: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export interface GatewayVolumeTable {
  gateway_id: string;
  month: string;
  team_id: string;
  amount: Defaulted<number>;
}

export interface FulfillmentsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  order_id: string;
  status: string;
  lines: Json<unknown[]>;
  tracking_number: string | null;
  carrier: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SubscriptionsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  order_id: string;
  customer_id: string;
  offer_id: string;
  status: string;
  interval_unit: string;
  interval_count: number;
  recurring_price: number;
  currency: string;
  next_billing_at: Date | null;
  externally_managed: Defaulted<boolean>;
  membership_ref: string | null;
  connection_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  // Card rebills (migration 0011).
  payment_method_id: ColumnType<string | null, string | null | undefined, string | null>;
  quantity: Defaulted<number>;
  cycle: Defaulted<number>;
  billing_anchor: ColumnType<Date | null, Date | null | undefined, Date | null>;
  anchor_cycle: Defaulted<number>;
  retry_count: Defaulted<number>;
  retry_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  billing_lease_until: ColumnType<Date | null, Date | null | undefined, Date | null>;
  ended_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  end_reason: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface IdempotencyKeysTable {
  team_id: string;
  key: string;
  fingerprint: string;
  method: string;
  path: string;
  state: 'in_flight' | 'done';
  response_status: number | null;
  response_body: string | null;
  created_at: Timestamp;
  expires_at: Date | string;
}

export type GatewayKind = 'nmi' | 'threeds';

export interface GatewaysTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  name: string;
  kind: GatewayKind;
  base_url: string;
  credentials: string;
  test_mode: Defaulted<boolean>;
  is_active: Defaulted<boolean>;
  monthly_cap: number | null;
  descriptor: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PaymentRoutersTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  name: string;
  strategy: 'priority' | 'weighted';
  max_attempts: Defaulted<number>;
  is_active: Defaulted<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PaymentRouterMembersTable {
  id: string;
  team_id: string;
  router_id: string;
  gateway_id: string;
  priority: Defaulted<number>;
  weight: Defaulted<number>;
  monthly_cap: number | null;
}

export interface BinBlacklistTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  prefix: string;
  reason: string | null;
  created_at: Timestamp;
}

export interface TestCardsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  card_hash: string;
  last4: string;
  label: string | null;
  created_at: Timestamp;
}

export interface PaymentMethodsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  customer_id: string;
  gateway_id: string | null;
  vault_ref: string | null;
  original_ref: string | null;
  brand: string;
  bin: string;
  last4: string;
  exp: string;
  is_test: Defaulted<boolean>;
  connection_id: ColumnType<string | null, string | null | undefined, string | null>;
  member_ref: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export interface OrderUpsellsTable {
  id: string;
  team_id: string;
  order_id: string;
  upsell_id: string;
  quantity: number;
  status: 'in_flight' | 'approved' | 'declined' | 'pending';
  transaction_id: string | null;
  response_status: number | null;
  response_body: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface EventsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  type: string;
  order_id: string | null;
  payload: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface WebhookEndpointsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  url: string;
  description: string | null;
  event_types: Json<string[]>;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  is_active: Defaulted<boolean>;
  disabled_at: Date | null;
  disabled_reason: string | null;
  consecutive_failures: Defaulted<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  endpoint_id: string;
  event_id: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempt_count: Defaulted<number>;
  next_attempt_at: Date | null;
  locked_until: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookAttemptsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  delivery_id: string;
  attempt: number;
  status_code: number | null;
  duration_ms: number;
  response_body: string | null;
  error: string | null;
  created_at: Timestamp;
}

export interface MailMessagesTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  event_id: string;
  order_id: string | null;
  kind: string;
  to_address: string;
  subject: string;
  text_body: string;
  html_body: string | null;
  status: 'pending' | 'sent' | 'failed';
  attempt_count: Defaulted<number>;
  next_attempt_at: Date | null;
  locked_until: Date | null;
  transport: string | null;
  transport_ref: string | null;
  last_error: string | null;
  sent_at: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CouponRedemptionsTable {
  id: string;
  team_id: string;
  coupon_id: string;
  order_id: string;
  amount: number;
  created_at: Timestamp;
}

export interface InboundWebhooksTable {
  id: string;
  source: string;
  event_id: string;
  team_id: string | null;
  type: string;
  payload: Json<Record<string, unknown>>;
  received_at: Timestamp;
}

export interface DisputesTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  order_id: string;
  transaction_id: string;
  provider_ref: string;
  status: string;
  reason: string | null;
  amount: number;
  currency: string;
  chargeback_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ExtpayConnectionsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  name: string;
  environment: 'sandbox' | 'production';
  company_id: string;
  base_url: string;
  api_key: string;
  webhook_secret: string | null;
  is_active: Defaulted<boolean>;
  deleted_at: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface DB {
  teams: TeamsTable;
  api_tokens: ApiTokensTable;
  campaigns: CampaignsTable;
  products: ProductsTable;
  offers: OffersTable;
  upsells: UpsellsTable;
  coupons: CouponsTable;
  customers: CustomersTable;
  customer_notes: CustomerNotesTable;
  orders: OrdersTable;
  order_lines: OrderLinesTable;
  order_events: OrderEventsTable;
  transactions: TransactionsTable;
  gateway_volume: GatewayVolumeTable;
  fulfillments: FulfillmentsTable;
  subscriptions: SubscriptionsTable;
  idempotency_keys: IdempotencyKeysTable;
  gateways: GatewaysTable;
  payment_routers: PaymentRoutersTable;
  payment_router_members: PaymentRouterMembersTable;
  bin_blacklist: BinBlacklistTable;
  test_cards: TestCardsTable;
  payment_methods: PaymentMethodsTable;
  order_upsells: OrderUpsellsTable;
  events: EventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  mail_messages: MailMessagesTable;
  coupon_redemptions: CouponRedemptionsTable;
  inbound_webhooks: InboundWebhooksTable;
  extpay_connections: ExtpayConnectionsTable;
  disputes: DisputesTable;
  fraud_rules: FraudRulesTable;
  fraud_rule_keys: FraudRuleKeysTable;
  fraud_events: FraudEventsTable;
}

export type Row<T extends keyof DB> = Selectable<DB[T]>;
export type NewRow<T extends keyof DB> = Insertable<DB[T]>;
export type RowPatch<T extends keyof DB> = Updateable<DB[T]>;

export type FraudMetric = 'attempts' | 'declines';
export type FraudDimension = 'card_fingerprint' | 'bin' | 'email' | 'ip_address' | 'order';

export interface FraudRulesTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  name: string;
  metric: FraudMetric;
  dimension: FraudDimension;
  bin_length: number | null;
  threshold: number;
  window_seconds: number;
  is_enabled: Defaulted<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface FraudRuleKeysTable {
  rule_id: string;
  key_hash: string;
  team_id: string;
  checked_at: Timestamp;
}

export interface FraudEventsTable {
  id: Generated<number>;
  team_id: string;
  rule_id: string;
  key_hash: string;
  order_id: string;
  kind: 'attempt' | 'hold' | 'decline';
  created_at: Timestamp;
}

/** Request budgets shared through the database (src/app/limits/pg-store.ts); merged into DB here, appended. */
export interface DB {
  rate_limits: RateLimitsTable;
}

export interface RateLimitsTable {
  key: string;
  count: number;
  expires_at: Date;
}
