import type { ColumnType, Generated, Insertable, Kysely, Selectable, SelectQueryBuilder, Updateable } from 'kysely';

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
  kind: Defaulted<'merchant' | 'provider'>;
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
  seq: Generated<number>;
  role: string | null;
  permissions: string[] | null;
  affiliate_ids: Defaulted<string[]>;
  created_by: string | null;
  replaced_by: string | null;
}

export interface UsersTable {
  seq: Generated<number>;
  id: string;
  email: string;
  name: Defaulted<string>;
  password_hash: string;
  totp_secret_enc: string | null;
  totp_enabled_at: Date | null;
  /** The time step of the last accepted TOTP code (codes are single-use). */
  totp_last_step: number | null;
  failed_logins: Defaulted<number>;
  locked_until: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MembershipsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  user_id: string;
  role: string;
  affiliate_ids: Defaulted<string[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  team_id: string;
  ip_address: string | null;
  user_agent: string | null;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Date;
  revoked_at: Date | null;
}

export interface InvitationsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  email: string;
  role: string;
  affiliate_ids: Defaulted<string[]>;
  token_hash: string;
  invited_by: string | null;
  created_at: Timestamp;
  expires_at: Date;
  accepted_at: Date | null;
  revoked_at: Date | null;
}

export interface PasswordResetsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: Timestamp;
  expires_at: Date;
  used_at: Date | null;
}

export interface ProviderGrantsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  provider_id: string;
  kind: string;
  permissions: Defaulted<string[]>;
  affiliate_ids: Defaulted<string[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
  revoked_at: Date | null;
}

export interface AuditLogTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  actor_kind: string;
  actor_id: string;
  actor_label: string;
  provider_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  data: ColumnType<Record<string, unknown>, string | undefined, string>;
  ip_address: string | null;
  request_id: string | null;
  created_at: Timestamp;
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
  abandonment_enabled: Defaulted<boolean>;
  abandonment_enabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  abandonment_delay_minutes: Defaulted<number>;
  abandonment_checkout_url: ColumnType<string | null, string | null | undefined, string | null>;
  abandonment_mail_enabled: Defaulted<boolean>;
  abandonment_email_subject: ColumnType<string | null, string | null | undefined, string | null>;
  abandonment_email_body: ColumnType<string | null, string | null | undefined, string | null>;
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
  /** The order the note is about (an order note is also a note of the order's customer). */
  order_id: ColumnType<string | null, string | null | undefined, string | null>;
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
  status: 'pending' | 'sent' | 'failed' | 'cancelled';
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

/** One follow-up of an abandoned lead (abandoned-lead module): the primary key keeps it to one per lead. */
export interface LeadFollowupsTable {
  seq: Generated<number>;
  order_id: string;
  team_id: string;
  campaign_id: string;
  event_id: string;
  idle_since: Date;
  delay_minutes: number;
  mail_enabled: boolean;
  checkout_url: string | null;
  abandoned_at: Date;
  created_at: Timestamp;
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
  /** Pinned Whop `Api-Version-Date` (migration 0015); null: the adapter's default. */
  api_version_date: Generated<string | null>;
}

export interface DB {
  teams: TeamsTable;
  api_tokens: ApiTokensTable;
  users: UsersTable;
  memberships: MembershipsTable;
  sessions: SessionsTable;
  invitations: InvitationsTable;
  password_resets: PasswordResetsTable;
  provider_grants: ProviderGrantsTable;
  audit_log: AuditLogTable;
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
  lead_followups: LeadFollowupsTable;
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
/**
 * A subquery of ids one module builds on its own table for another module's query (the orders
 * search's customer matches; a new lead's customer, by e-mail, for the order's insert).
 */
export type IdSubquery = SelectQueryBuilder<DB, any, Record<string, string>>;
/**
 * A module's subquery of one id by a key of its own row (an order's customer or saved payment
 * method, by the order's id; null when there is none), for another module's read of that id's row
 * in the same round trip. It must only put its values into the query (a template builds it once: templates.ts).
 */
export type KeyedIdSubquery = (db: Kysely<DB>, teamId: string, key: string) => SelectQueryBuilder<DB, any, Record<string, string | null>>;

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

/** Affiliates (migration 0013): merged into DB here, appended. */
export interface DB {
  affiliate_settings: AffiliateSettingsTable;
  affiliates: AffiliatesTable;
  affiliate_throttle_counters: AffiliateThrottleCountersTable;
  affiliate_conversions: AffiliateConversionsTable;
  affiliate_activity: AffiliateActivityTable;
  affiliate_commissions: AffiliateCommissionsTable;
  affiliate_postbacks: AffiliatePostbacksTable;
  affiliate_postback_attempts: AffiliatePostbackAttemptsTable;
}

/** The affiliate block stored on an order (orders.affiliate_*). */
export interface OrdersTable {
  affiliate_id: ColumnType<string | null, string | null | undefined, string | null>;
  affiliate_click_id: ColumnType<string | null, string | null | undefined, string | null>;
  affiliate_sub1: ColumnType<string | null, string | null | undefined, string | null>;
  affiliate_sub2: ColumnType<string | null, string | null | undefined, string | null>;
  affiliate_sub3: ColumnType<string | null, string | null | undefined, string | null>;
  affiliate_sub4: ColumnType<string | null, string | null | undefined, string | null>;
  affiliate_sub5: ColumnType<string | null, string | null | undefined, string | null>;
}

type Nullable<T> = ColumnType<T | null, T | null | undefined, T | null>;

interface SubIds {
  sub1: Nullable<string>;
  sub2: Nullable<string>;
  sub3: Nullable<string>;
  sub4: Nullable<string>;
  sub5: Nullable<string>;
}

export interface AffiliateSettingsTable {
  team_id: string;
  attribution: Defaulted<'first_touch' | 'last_touch'>;
  commission_hold_days: Defaulted<number>;
  updated_at: Timestamp;
}

export interface AffiliatesTable {
  seq: Generated<number>;
  team_id: string;
  id: string;
  name: string;
  status: Defaulted<'active' | 'paused'>;
  throttle_rate_bp: Nullable<number>;
  campaign_throttle_bp: ColumnType<Record<string, number>, string | undefined, string>;
  automatic_throttling: Defaulted<boolean>;
  commission_type: Defaulted<'none' | 'fixed' | 'percent'>;
  commission_amount: Nullable<number>;
  commission_percent_bp: Nullable<number>;
  commission_on_upsells: Defaulted<boolean>;
  commission_on_rebills: Defaulted<boolean>;
  commission_hold_days: Nullable<number>;
  postback_url: Nullable<string>;
  postback_events: ColumnType<string[], string | undefined, string>;
  pixel_html: Nullable<string>;
  deleted_at: Nullable<Date>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AffiliateThrottleCountersTable {
  team_id: string;
  affiliate_id: string;
  scope: string;
  conversions: Defaulted<number>;
  throttled: Defaulted<number>;
}

export interface AffiliateConversionsTable extends SubIds {
  seq: Generated<number>;
  id: string;
  team_id: string;
  affiliate_id: string;
  order_id: string;
  campaign_id: string;
  transaction_id: Nullable<string>;
  scope: string;
  conversions_before: number;
  throttled_before: number;
  rate_bp: Nullable<number>;
  automatic: boolean;
  requested: boolean;
  throttled: boolean;
  reason: 'requested' | 'automatic' | 'none';
  amount: number;
  currency: string;
  click_id: Nullable<string>;
  created_at: Timestamp;
}

export type AffiliateActivityKind = 'upsell' | 'rebill' | 'refund' | 'void' | 'chargeback';

export interface AffiliateActivityTable extends SubIds {
  seq: Generated<number>;
  id: string;
  team_id: string;
  affiliate_id: string;
  order_id: string;
  kind: AffiliateActivityKind;
  transaction_id: string;
  amount: number;
  currency: string;
  throttled: boolean;
  created_at: Timestamp;
}

export interface AffiliateCommissionsTable extends SubIds {
  seq: Generated<number>;
  id: string;
  team_id: string;
  affiliate_id: string;
  order_id: string;
  kind: 'conversion' | 'upsell' | 'rebill';
  transaction_id: string;
  amount: number;
  currency: string;
  status: 'pending' | 'payable' | 'reversed';
  payable_at: Timestamp;
  reversed_at: Nullable<Date>;
  reversal_reason: Nullable<string>;
  created_at: Timestamp;
}

export interface AffiliatePostbacksTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  affiliate_id: string;
  order_id: string;
  event: 'conversion' | 'upsell' | 'rebill' | 'refund';
  source_id: string;
  url: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempt_count: Defaulted<number>;
  next_attempt_at: Nullable<Date>;
  locked_until: Nullable<Date>;
  last_status_code: Nullable<number>;
  last_error: Nullable<string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AffiliatePostbackAttemptsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  postback_id: string;
  attempt: number;
  status_code: Nullable<number>;
  duration_ms: number;
  response_body: Nullable<string>;
  error: Nullable<string>;
  created_at: Timestamp;
}
