/**
 * The permission catalogue and the predefined roles (spec §5.6). Every /v1 and /checkout route
 * declares one permission (`config: { permission }`); one hook checks the caller has it.
 * The README's matrix is this file written out; the matrix test reads both from /openapi.json.
 */
export const PERMISSIONS = {
  'billing:manage': "Manage Billing (spec §5.6): the team's own plan and usage billing with the operator of this install",
  'users:view': 'View Users (spec §5.6): members, invitations and the providers granted to the team',
  'users:manage': 'Invite members, change their roles, remove them',
  'providers:manage': 'Manage Providers (spec §5.6): grant, change and revoke Customer Service and Affiliate Providers',
  'revenue:view': 'View Revenue (spec §5.6): transactions, revenue reports, gateway volume',
  'orders:view': 'View Orders (spec §5.6): orders, customers, fulfillments, subscriptions and their timelines',
  'orders:create': 'Run the checkout: leads, orders, payments, upsells, captures, completion',
  'orders:annotate': 'Add notes to orders and customers, set and clear the QA flag',
  'orders:refund': 'Refund orders (full or partial)',
  'orders:void': 'Void orders',
  'orders:fulfill': 'Record shipments',
  'subscriptions:manage': 'Cancel, pause, resume, reactivate, sync, rebill now and replace the card of subscriptions',
  'catalog:view': 'Read campaigns, products, offers, upsells, coupons and mail templates',
  'catalog:manage': 'Create and change campaigns, products, offers, upsells and mail templates',
  'coupons:manage': 'Create and change coupons',
  'gateways:manage': 'Card gateways (credentials are write-only), payment orchestrators, BIN blacklist, test cards, fraud rules',
  'connections:manage': 'External checkout (extpay) connections and their keys',
  'webhooks:manage': 'Webhook endpoints, their deliveries and replays, events, the mail outbox',
  'api_tokens:manage': 'Create, rotate and revoke API tokens',
  'affiliates:view': 'Affiliate dashboards and reports (only the assigned affiliate ids for the Affiliate role and Affiliate Providers)',
  'affiliates:manage': 'Affiliates, their throttle rates and commission rules',
  'settings:manage': "The team's name and time zone",
  'audit:view': 'Read the audit log',
  'team:view': 'Read the team itself (every member has it)',
} as const;

export type Permission = keyof typeof PERMISSIONS;
export const ALL_PERMISSIONS = Object.keys(PERMISSIONS) as Permission[];

/** Routes anyone authenticated may call (their answers are scoped by the caller anyway). */
export const EVERYONE: Permission = 'team:view';

export const ROLES = ['owner', 'account_admin', 'account_manager', 'support_l1', 'support_l2', 'affiliate'] as const;
export type Role = (typeof ROLES)[number];

const SUPPORT_L1: Permission[] = ['team:view', 'orders:view', 'orders:annotate', 'catalog:view'];
const SUPPORT_L2: Permission[] = [...SUPPORT_L1, 'orders:create', 'orders:refund', 'orders:void', 'orders:fulfill', 'subscriptions:manage'];

/** The predefined roles. Team Owner has everything; ownership itself (transfer) is not a permission. */
export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: ALL_PERMISSIONS,
  account_admin: ALL_PERMISSIONS.filter((p) => p !== 'billing:manage'),
  account_manager: [
    ...SUPPORT_L2,
    'catalog:manage',
    'coupons:manage',
    'revenue:view',
    'affiliates:view',
    'affiliates:manage',
    'users:view',
  ],
  support_l2: SUPPORT_L2,
  support_l1: SUPPORT_L1,
  // Scoped: only routes that narrow to the assigned affiliate ids answer them (config.affiliateScope).
  affiliate: ['team:view', 'affiliates:view', 'orders:view'],
};

export const ROLE_NAMES: Record<Role, string> = {
  owner: 'Team Owner',
  account_admin: 'Account Admin',
  account_manager: 'Account Manager',
  support_l2: 'Customer Support Level 2',
  support_l1: 'Customer Support Level 1',
  affiliate: 'Affiliate',
};

export const PROVIDER_KINDS = ['customer_service', 'affiliate'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/**
 * What a provider can be granted. A Customer Service Provider always gets the base set and may be
 * given the optional ones (spec: "optionally campaigns, coupons, webhooks"); an Affiliate Provider
 * only sees its assigned affiliates. Neither can ever hold billing, settings, credentials, tokens or users.
 */
export const PROVIDER_PERMISSIONS: Record<ProviderKind, { base: readonly Permission[]; optional: readonly Permission[] }> = {
  customer_service: {
    base: ['team:view', 'orders:view', 'orders:create', 'orders:annotate', 'orders:refund', 'orders:void', 'subscriptions:manage', 'catalog:view'],
    optional: ['orders:fulfill', 'catalog:manage', 'coupons:manage', 'webhooks:manage'],
  },
  affiliate: { base: ['team:view', 'affiliates:view', 'orders:view'], optional: [] },
};

/** Roles whose view of orders and reports is narrowed to assigned affiliate ids (never throttled orders). */
export function isAffiliateScoped(role: Role | ProviderKind): boolean {
  return role === 'affiliate';
}
