import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Unguessable random string over [0-9A-Za-z]; 22 characters carry ~131 bits. */
export function randomToken(length = 22): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; i < bytes.length && out.length < length; i++) {
    const b = bytes[i]!;
    // rejection sampling keeps every character equally likely
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out.length === length ? out : out + randomToken(length - out.length);
}

export const ID_PREFIX = {
  team: 'team',
  token: 'tok',
  campaign: 'cmp',
  product: 'prod',
  offer: 'offer',
  upsell: 'ups',
  coupon: 'cpn',
  customer: 'cus',
  note: 'note',
  order: 'ord',
  orderLine: 'li',
  orderEvent: 'evt',
  transaction: 'txn',
  fulfillment: 'ful',
  subscription: 'sub',
  gateway: 'gw',
  router: 'po',
  routerMember: 'pom',
  binBlock: 'bin',
  testCard: 'tc',
  paymentMethod: 'pm',
  orderUpsell: 'oup',
  event: 'ev',
  webhookEndpoint: 'we',
  webhookDelivery: 'msg',
  webhookAttempt: 'watt',
  mail: 'mail',
  couponRedemption: 'red',
  inboundWebhook: 'iwh',
  extpayConnection: 'xc',
  dispute: 'dp',
  user: 'usr',
  membership: 'mem',
  session: 'ses',
  invitation: 'inv',
  passwordReset: 'pwr',
  grant: 'grt',
  audit: 'aud',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

export function newId(kind: IdKind): string {
  return `${ID_PREFIX[kind]}_${randomToken()}`;
}
