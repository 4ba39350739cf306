import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Random bytes are drawn from the CSPRNG 4 KiB at a time and each byte is used once (as nanoid
 * does): one `randomBytes()` call per id was a synchronous crypto job each, ≈ 2% of the server's
 * CPU in the funnel (a dozen ids per order). A used byte is zeroed.
 */
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

function randomByte(): number {
  if (poolAt === POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const b = POOL[poolAt]!;
  POOL[poolAt++] = 0;
  return b;
}

/** Unguessable random string over [0-9A-Za-z]; 22 characters carry ~131 bits. */
export function randomToken(length = 22): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    // rejection sampling keeps every character equally likely
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
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
