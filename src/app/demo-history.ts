/**
 * Demo history (issue 17): about two hundred orders over the last 60 days for the demo team, so every
 * page of the dashboard and every report has something to show. Everything goes through the use
 * cases against the provider sandbox — leads, card payments (approved, and declined with several of
 * the sandbox's decline cards), upsells, completions, shipments, full and partial refunds, a void, rebills,
 * dunning, cancellations, extpay payments and their disputes (opened at the sandbox, arriving as its
 * signed webhooks) — so every transaction has its counterpart in the sandbox's ledger. Nothing is
 * inserted behind the services' back; the only direct SQL is the back-dating below (and one read).
 *
 * Dates: the code takes no clock for orders (the database stamps `created_at`), so each story runs
 * now and its rows are then moved to the story's day (see `backdate`). The stories, their days
 * (in the team's time zone) and their outcomes come from a fixed seed: every run plans the same ones.
 *
 * Idempotent and resumable: each story's customer has its own e-mail address; a story whose
 * customer exists is not run again, so a second run adds nothing and a run stopped half-way
 * (`signal`) is finished by the next. The sandbox keeps its ledger in memory: a story is run whole
 * (its refunds and rebills with its charge) in one run.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { TZDate } from '@date-fns/tz';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { CreateOrderBody } from '../modules/orders/schemas.ts';
import { sandboxApiBaseUrl } from '../providers/extpay/types.ts';
import { SANDBOX_CARDS } from '../sandbox/cards.ts';
import { EXTPAY_CARDS } from '../sandbox/extpay-provider.ts';
import type { AppContext } from './context.ts';
import { randomToken } from './ids.ts';
import { configureExtpaySandboxCompany, type DemoSeed } from './seed.ts';

/** What the history needs of the demo seed (what `data/demo.json` keeps). */
export type DemoHistoryIds = Pick<DemoSeed, 'team_id' | 'campaign_id' | 'gateway_id' | 'currency' | 'offers' | 'upsells' | 'coupon_code'>;

export interface DemoHistoryOptions {
  /** The provider sandbox the demo gateways point at. */
  sandboxUrl: string;
  log?: Pick<Logger, 'info' | 'warn'>;
  /** Before the first story to run and after each: how many of the plan's stories exist now (not called when there is nothing to do). */
  progress?: (done: number, total: number) => void;
  /** Stops between stories (a server shutting down); the next run goes on from there. */
  signal?: AbortSignal;
  /** false: no pause between steps (a test that has the process to itself); by default the history leaves the API half the event loop. */
  pace?: boolean;
  /** How long to wait for the sandbox's dispute webhooks to be applied (default 15 s). */
  webhookWaitMs?: number;
}

export interface DemoHistoryResult {
  /** Stories in the plan (one order each, plus their rebill orders). */
  total: number;
  /** Stories run now. */
  created: number;
  /** Stories found from an earlier run. */
  existing: number;
  stopped: boolean;
}

/** `--no-demo-history` or CHECKSTAND_DEMO_HISTORY=0 (false, off, no) turns it off. */
export function demoHistoryWanted(flag: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (flag === false) return false;
  return !/^(0|false|off|no)$/i.test(env.CHECKSTAND_DEMO_HISTORY ?? '');
}

const DAYS = 60;
/** The history backs off while the event loop's mean delay is above this (load shedding starts at 100 ms by default). */
const LOOP_DELAY_BACKOFF_MS = 40;
const DAY_MS = 86_400_000;
const SEED = 17;

/** Names for the history's own setup, found by name on a later run. */
const GATEWAY_NAMES = ['Sandbox card gateway A (live mode, demo history)', 'Sandbox card gateway B (live mode, demo history)'] as const;
const EXTPAY_NAME = 'Sandbox extpay, production environment (demo history)';
const AFFILIATES = [
  { id: 'glowpartners', name: 'Glow Partners Network', commission: { type: 'percent' as const, percent: 20, on_rebills: true } },
  { id: 'skinblog-ava', name: 'Ava’s Skin Blog', commission: { type: 'fixed' as const, amount: 800 } },
  { id: 'fb-media-buyer', name: 'Social Media Buyer', commission: { type: 'percent' as const, percent: 15 } },
];

const DECLINE_CARDS = [SANDBOX_CARDS.doNotHonor, SANDBOX_CARDS.insufficientFunds, SANDBOX_CARDS.insufficientFunds, SANDBOX_CARDS.overLimit, SANDBOX_CARDS.lost, SANDBOX_CARDS.stolen, SANDBOX_CARDS.fraud, SANDBOX_CARDS.pickUp, SANDBOX_CARDS.processingError];
const FIRST = ['Ava', 'Liam', 'Mia', 'Noah', 'Emma', 'Lucas', 'Sofia', 'Ethan', 'Chloe', 'Mason', 'Grace', 'Leo', 'Zoe', 'Owen', 'Ruby', 'Kai', 'Nora', 'Eli', 'Ivy', 'Jack'];
const LAST = ['Nguyen', 'Garcia', 'Smith', 'Patel', 'Kim', 'Brown', 'Rossi', 'Müller', 'Silva', 'Cohen', 'Walker', 'Dubois', 'Ito', 'Khan', 'Novak', 'Larsen'];
const CITIES = [
  { city: 'Austin', state: 'TX', postal_code: '78701' },
  { city: 'Portland', state: 'OR', postal_code: '97205' },
  { city: 'Denver', state: 'CO', postal_code: '80202' },
  { city: 'Madison', state: 'WI', postal_code: '53703' },
  { city: 'Tampa', state: 'FL', postal_code: '33602' },
  { city: 'Columbus', state: 'OH', postal_code: '43215' },
];
const NOTES = [
  'Called to ask when the serum ships; told 3–5 business days.',
  'Asked to change the shipping address before dispatch: updated.',
  'Prefers e-mail over phone.',
  'Loved the serum, asked about the refill club price.',
  'Bottle arrived with a broken pump: sent a replacement.',
  'Wants the routine guide resent: forwarded the purchase e-mail.',
];

type Sub = 'trial' | 'active' | 'past_due' | 'cancelled' | 'cancelled_in_trial';

interface Story {
  n: number;
  /** Days before today (the team's time zone). */
  ago: number;
  email: string;
  first: string;
  last: string;
  at: Date;
  kind: 'card' | 'decline' | 'recovered' | 'lead' | 'test' | 'extpay';
  card: string;
  gateway: 0 | 1;
  qty: number;
  club: boolean;
  upsell: boolean;
  coupon: boolean;
  affiliate: number | null;
  refund: 'full' | 'partial' | null;
  void: boolean;
  sub: Sub | null;
  dispute: 'chargeback' | 'warning' | null;
  note: string | null;
}

/** mulberry32: a small seeded generator, so every run plans the same history. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The plan: 2–6 orders a day (more lately), each day's times in the team's time zone, none after `now`. */
export function planHistory(now: Date, timeZone: string): Story[] {
  const r = rng(SEED);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const today = new TZDate(now.getTime(), timeZone);
  const stories: Story[] = [];
  for (let ago = DAYS - 1; ago >= 0; ago--) {
    const count = 2 + Math.floor(r() * 3) + (ago < 25 ? 1 : 0) + (r() < 0.2 ? 1 : 0);
    for (let k = 0; k < count; k++) {
      const n = stories.length;
      const local = new TZDate(today.getFullYear(), today.getMonth(), today.getDate() - ago, 8 + Math.floor(r() * 14), Math.floor(r() * 60), Math.floor(r() * 60), timeZone);
      const at = new Date(Math.min(local.getTime(), now.getTime() - (60 + n) * 1000));
      const first = pick(FIRST);
      const last = pick(LAST);
      const roll = r();
      const kind: Story['kind'] = roll < 0.1 ? 'decline' : roll < 0.14 ? 'recovered' : roll < 0.17 ? 'lead' : 'card';
      const approved = kind === 'card' || kind === 'recovered';
      const club = approved && r() < 0.22;
      const refundRoll = r();
      stories.push({
        n,
        ago,
        email: `${first}.${last}.${String(n).padStart(3, '0')}@example.com`.toLowerCase().replace('ü', 'ue'),
        first,
        last,
        at,
        kind,
        card: kind === 'decline' || kind === 'recovered' ? DECLINE_CARDS[n % DECLINE_CARDS.length]! : SANDBOX_CARDS.approve,
        gateway: r() < 0.6 ? 0 : 1,
        qty: r() < 0.1 ? 2 : 1,
        club,
        upsell: approved && r() < 0.35,
        coupon: r() < 0.15,
        affiliate: r() < 0.3 ? (r() < 0.5 ? 0 : r() < 0.6 ? 1 : 2) : null,
        refund: approved && !club ? (refundRoll < 0.05 ? 'full' : refundRoll < 0.1 ? 'partial' : null) : null,
        void: false,
        sub: club ? (ago >= 14 ? 'active' : 'trial') : null,
        dispute: null,
        note: r() < 0.08 ? pick(NOTES) : null,
      });
    }
  }
  // The cases every report needs at least once, on fixed days.
  const on = (ago: number, i = 0) => stories.filter((s) => s.ago === ago)[i] ?? stories.filter((s) => s.ago === ago)[0]!;
  const force = (s: Story, patch: Partial<Story>) => Object.assign(s, { kind: 'card', card: SANDBOX_CARDS.approve, club: false, sub: null, refund: null, ...patch });
  force(on(0), { void: true, upsell: false, note: 'Ordered twice by mistake: voided the second order.' });
  force(on(6), { void: true, upsell: false });
  force(on(41), { kind: 'extpay', dispute: 'chargeback', affiliate: 0, upsell: false, note: 'Chargeback (fraudulent): evidence sent to the provider.' });
  force(on(23), { kind: 'extpay', dispute: 'warning', upsell: false });
  for (const ago of [52, 33, 12]) force(on(ago, 1), { kind: 'extpay', upsell: false });
  force(on(38, 1), { club: true, sub: 'past_due', card: SANDBOX_CARDS.rebillSoftDecline, upsell: false });
  force(on(47, 1), { club: true, sub: 'cancelled', note: 'Asked to cancel the refill club: too much product.' });
  force(on(9, 1), { club: true, sub: 'cancelled_in_trial' });
  force(on(55), { club: true, sub: 'active', affiliate: 0 });
  for (const ago of [44, 29, 17, 3]) force(on(ago, 2), { kind: 'test', upsell: false, affiliate: null });
  force(on(20, 1), { refund: 'partial', note: 'Partial refund: the bottle arrived late.' });
  force(on(35, 1), { refund: 'full' });
  return stories;
}

interface Phase {
  /** The first instant (database clock) of this phase's rows; null: since forever. */
  from: Date | null;
  /** When the phase ran, and when it is to look as if it had. */
  ran: Date;
  target: Date;
}

interface Done {
  orderIds: string[];
  customerId: string;
  phases: Phase[];
}

/** The database's clock, where `created_at` comes from: phase boundaries are read from it. */
async function dbNow(ctx: AppContext): Promise<Date> {
  const r = await ctx.store.run((db) => sql<{ t: Date }>`select clock_timestamp() as t`.execute(db));
  return new Date(r.rows[0]!.t);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function addDays(d: Date, days: number, now: Date): Date {
  return new Date(Math.min(d.getTime() + days * DAY_MS, now.getTime() - 30_000));
}

class HistoryRun {
  private gateways: string[] = [];
  private extpay: { id: string; control: string } | null = null;
  private author = 'system';
  private busySince = Date.now();
  /** The story in hand, once its order exists: back-dated even when a later step of it fails. */
  current: Done | null = null;
  private readonly loop = monitorEventLoopDelay({ resolution: 20 });

  constructor(
    private readonly ctx: AppContext,
    private readonly ids: DemoHistoryIds,
    private readonly opts: DemoHistoryOptions,
    private readonly now: Date,
  ) {
    if (opts.pace !== false) this.loop.enable();
  }

  /**
   * Between steps: a pause as long as the step (at least 20 ms), so the history takes at most about
   * half of the event loop, and longer while the loop is slow anyway. Without it the embedded
   * database's synchronous work starves the API: its event-loop delay passes
   * OVERLOAD_MAX_EVENT_LOOP_DELAY_MS and requests get 503 `overloaded` until the history is done.
   */
  async pause(): Promise<void> {
    if (this.opts.pace === false) return;
    await sleep(Math.max(20, Date.now() - this.busySince));
    // Still a slow loop (requests being served, a loaded machine): wait for a calmer one, up to 2 s.
    for (let i = 0; i < 8 && this.loop.mean / 1e6 > LOOP_DELAY_BACKOFF_MS; i++) {
      this.loop.reset();
      await sleep(250);
    }
    this.loop.reset();
    this.busySince = Date.now();
  }

  close(): void {
    this.loop.disable();
  }

  private get team() {
    return this.ids.team_id;
  }

  /** The history's own setup: two live-mode card gateways and a production-environment extpay connection on the sandbox, three affiliates. */
  async setUp(): Promise<void> {
    const { gateways, connections, affiliates, users } = this.ctx.services;
    const existing = (await gateways.listGateways(this.team, { limit: 100 })).items;
    for (const name of GATEWAY_NAMES) {
      const found = existing.find((g) => g.name === name);
      this.gateways.push(
        found?.id ??
          (await gateways.createGateway(this.team, { name, kind: 'nmi', base_url: this.opts.sandboxUrl, credentials: { security_key: `demo_${randomToken(24)}` }, test_mode: false, is_active: true })).id,
      );
    }
    const conns = (await connections.list(this.team, { limit: 100 })).items;
    const conn =
      conns.find((c) => c.name === EXTPAY_NAME) ??
      (await connections.create(this.team, {
        name: EXTPAY_NAME,
        api_key: `apik_demo_${randomToken(32)}`,
        company_id: `biz_demo${randomToken(14)}`,
        environment: 'production',
        webhook_secret: `ws_${randomToken(40)}`,
        base_url: sandboxApiBaseUrl(this.opts.sandboxUrl, 'production'),
      }));
    // The sandbox keeps companies in memory: told again on every run, as `npm start` does for the demo's own.
    if (await configureExtpaySandboxCompany(this.ctx, this.team, conn.id, { warn: (o, m) => this.opts.log?.warn(o, m) })) {
      this.extpay = { id: conn.id, control: `${this.opts.sandboxUrl.replace(/\/+$/, '')}/extpay/production/sandbox` };
    }
    for (const a of AFFILIATES) {
      const known = await affiliates.get(this.team, a.id, null).catch(() => null);
      if (!known) await affiliates.create(this.team, { ...a, status: 'active', throttle_rate: null, campaign_throttle_rates: {}, automatic_throttling: false, postback_url: null, postback_events: ['conversion'], pixel_html: null });
    }
    const owner = (await users.listMembers(this.team)).find((m) => m.role === 'owner');
    if (owner) this.author = `user:${owner.id}`;
  }

  /** One story, whole: its order, payments, reversals, rebills, dispute and note; then what to back-date. */
  async run(s: Story): Promise<Done | null> {
    const { orders, checkout, customers } = this.ctx.services;
    const address = { line1: `${100 + s.n} Main St`, ...CITIES[s.n % CITIES.length]!, country: 'US' };
    const products = [{ offer_id: this.ids.offers.serum!, quantity: s.qty }, ...(s.club ? [{ offer_id: this.ids.offers.club_trial!, quantity: 1 }] : [])];
    const affiliate = s.affiliate === null ? undefined : { affiliate_id: AFFILIATES[s.affiliate]!.id, click_id: `clk_${s.n}${s.email.length}`, sub1: s.n % 2 ? 'spring-promo' : 'retargeting' };
    const customer = { email: s.email, first_name: s.first, last_name: s.last };
    this.current = null;
    const phases: Phase[] = [{ from: null, ran: new Date(), target: s.at }];
    const later = async (days: number): Promise<void> => {
      const from = await dbNow(this.ctx);
      phases.push({ from, ran: from, target: addDays(s.at, days, this.now) });
    };

    if (s.kind === 'extpay') {
      if (!this.extpay) return null;
      return this.extpayStory(s, customer, address, affiliate, phases, later);
    }
    const lead = await orders.createLead(this.team, {
      campaign_id: this.ids.campaign_id,
      customer,
      shipping_address: address,
      products,
      ...(s.coupon ? { coupon_code: this.ids.coupon_code } : {}),
      ...(affiliate ? { affiliate } : {}),
    });
    await this.pause();
    const order = lead.order.order_number;
    const done: Done = (this.current = { orderIds: [order], customerId: lead.order.customer.customer_number, phases });
    if (s.kind === 'lead') return done;
    const card = (number: string) => ({ method: 'card' as const, card_number: number, card_exp: '09/29', card_cvv: '123' });
    // Test orders: the campaign's own gateway (test mode); the others through the live-mode ones.
    const route = s.kind === 'test' ? {} : { gateway_id: this.gateways[s.gateway]! };
    let paid = await checkout.pay.processPayment(this.team, { order_number: order, billing: address, ...route, payment: card(s.card) });
    await this.pause();
    if (s.kind === 'decline') return done;
    if (s.kind === 'recovered') {
      await later(0);
      paid = await checkout.pay.processPayment(this.team, { order_number: order, billing: address, ...route, payment: card(SANDBOX_CARDS.approve) }, 'reprocess');
      await this.pause();
    }
    if (paid.outcome !== 'approved') return done;
    const charge = paid.data.transaction_id!;
    if (s.upsell) await checkout.upsell.processUpsell(this.team, { order_number: order, upsell_id: this.ids.upsells[1]!.upsell_id, quantity: 1 });
    await this.pause();
    await checkout.finalize.completeOrder(this.team, order);
    await this.pause();

    if (!s.void && this.now.getTime() - s.at.getTime() > 2 * DAY_MS) await this.ship(s, order, later);
    if (s.void) {
      await later(0);
      await checkout.reverse.void(this.team, order, { transaction_id: charge, reason: 'Customer ordered twice' });
      await this.pause();
    } else if (s.refund) {
      await later(3 + (s.n % 8));
      const amount = s.refund === 'partial' ? 1500 : undefined;
      await checkout.reverse.refund(this.team, order, { transaction_id: charge, ...(amount ? { amount } : {}), reason: s.refund === 'partial' ? 'Arrived late: partial refund' : 'Did not suit her skin' });
      await this.pause();
    }
    if (s.sub) await this.subscription(s, order, done, later);
    if (s.note) {
      await later(1 + (s.n % 4));
      await customers.addNote(this.team, done.customerId, s.note, this.author);
      await this.pause();
    }
    return done;
  }

  /** The warehouse ships an order a day or two after it: carrier and tracking on its fulfillment (orders of the last two days stay pending). */
  private async ship(s: Story, order: string, later: (days: number) => Promise<void>): Promise<void> {
    const { fulfillments } = this.ctx.services;
    const days = 1 + (s.n % 2);
    await later(days);
    const carrier = ['USPS', 'UPS', 'FedEx'][s.n % 3]!;
    for (const f of (await fulfillments.list(this.team, { limit: 5, order_number: order, status: 'pending' })).items) {
      await fulfillments.ship(this.team, f.id, { carrier, tracking_number: `DEMO${String(s.n).padStart(6, '0')}${s.email.length}`, shipped_at: addDays(s.at, days, this.now) });
      await this.pause();
    }
  }

  /** The refill club: rebills for the cycles already due, dunning on the soft-decline card, cancellations. */
  private async subscription(s: Story, order: string, done: Done, later: (days: number) => Promise<void>): Promise<void> {
    const { subscriptions, checkout } = this.ctx.services;
    const [sub] = (await subscriptions.list(this.team, { limit: 5, order_number: order })).items;
    if (!sub) return;
    if (s.sub === 'cancelled_in_trial') {
      await later(3);
      await subscriptions.cancelSubscription(this.team, sub.id, { atPeriodEnd: false });
      await this.pause();
      return;
    }
    const ageDays = (this.now.getTime() - s.at.getTime()) / DAY_MS;
    // Cycle 1 falls due when the 14-day trial ends, cycle 2 a month later: charged as Rebill Now.
    for (const due of [14, 44]) {
      if (ageDays <= due) break;
      await later(due);
      const r = await checkout.rebill.rebillNow(this.team, sub.id);
      await this.pause();
      const rebillOrder = (r.body as { data?: { order_number?: string } }).data?.order_number;
      if (rebillOrder) done.orderIds.push(rebillOrder);
      if (r.httpStatus !== 200) break;
      if (s.sub === 'cancelled') {
        await later(due + 6);
        await subscriptions.cancelSubscription(this.team, sub.id, { atPeriodEnd: false });
        await this.pause();
        break;
      }
    }
  }

  /** A card payment on the provider's hosted page (production environment), captured; a dispute opened at the sandbox reaches us as its webhooks. */
  private async extpayStory(
    s: Story,
    customer: { email: string; first_name: string; last_name: string },
    address: NonNullable<CreateOrderBody['shipping_address']>,
    affiliate: { affiliate_id: string; click_id: string; sub1: string } | undefined,
    phases: Phase[],
    later: (days: number) => Promise<void>,
  ): Promise<Done | null> {
    const { checkout, orders, customers } = this.ctx.services;
    const ext = this.extpay!;
    const created = await checkout.pay.createOrder(this.team, {
      campaign_id: this.ids.campaign_id,
      currency: this.ids.currency,
      customer,
      shipping_address: address,
      products: [{ offer_id: this.ids.offers.serum!, quantity: s.qty }],
      ...(affiliate ? { affiliate } : {}),
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: ext.id },
    });
    await this.pause();
    const order = created.data.order_number;
    const done: Done = (this.current = { orderIds: [order], customerId: created.data.customer.customer_number, phases });
    const purchase = created.data.checkout?.purchase_url;
    if (!purchase) return done;
    const u = new URL(purchase);
    const form = new URLSearchParams({ session: u.searchParams.get('session')!, email: s.email, name: `${s.first} ${s.last}`, card_number: EXTPAY_CARDS.paid, return_url: 'https://shop.example/thanks' });
    const res = await fetch(`${u.origin}${u.pathname}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    await res.arrayBuffer();
    const receipt = res.headers.get('location') ? new URL(res.headers.get('location')!).searchParams.get('payment_id') : null;
    if (!receipt) return done;
    await checkout.capture.capture(this.team, { order_number: order, payment_id: receipt });
    await this.pause();
    if (s.dispute) {
      await later(12 + (s.n % 10));
      const opened = await fetch(`${ext.control}/payments/${receipt}/disputes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status: s.dispute === 'chargeback' ? 'needs_response' : 'warning_needs_response', reason: s.dispute === 'chargeback' ? 'fraudulent' : 'product_not_received' }),
      });
      await opened.arrayBuffer();
      // The dispute arrives as the sandbox's signed webhook (to this server's /webhooks/extpay).
      const deadline = Date.now() + (this.opts.webhookWaitMs ?? 15_000);
      while (!(await orders.get(this.team, order)).needs_qa) {
        if (Date.now() > deadline) {
          this.opts.log?.warn({ order_number: order }, 'demo history: the sandbox\'s dispute webhook was not applied in time (is the API reachable at PUBLIC_BASE_URL or HOST:PORT?)');
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (s.note) {
      await later(13 + (s.n % 10));
      await customers.addNote(this.team, done.customerId, s.note, this.author);
      await this.pause();
    }
    return done;
  }
}

/**
 * Moves the rows of finished stories to their stories' days: one UPDATE per table, in one
 * transaction, only for the demo team and only for the orders and customers these stories made.
 * The tables are every table with `team_id` and `created_at` and an `order_id` or `customer_id`
 * (orders and customers by `id`); a row moves by the shift of the phase whose window (by the
 * database clock) holds its `created_at`. `completed_at`, `payment_started_at` and `payable_at` move
 * with it; schedules ahead (`next_billing_at`, `retry_at`) and `updated_at` do not.
 */
async function backdate(ctx: AppContext, teamId: string, stories: Done[]): Promise<void> {
  if (stories.length === 0) return;
  const rows = (key: 'order' | 'customer') =>
    stories.flatMap((d) =>
      d.phases.map((p, i) => ({
        ids: key === 'order' ? d.orderIds : [d.customerId],
        from: p.from?.toISOString() ?? '-infinity',
        to: d.phases[i + 1]?.from?.toISOString() ?? 'infinity',
        shift: Math.max(0, p.ran.getTime() - p.target.getTime()),
      })),
    );
  const values = (key: 'order' | 'customer') =>
    sql.join(rows(key).flatMap((r) => r.ids.map((id) => sql`(${id}::text, ${r.from}::timestamptz, ${r.to}::timestamptz, ${r.shift}::bigint)`)));
  await ctx.store.transaction(async (trx) => {
    const cols = await sql<{ table_name: string; cols: string[] }>`
      select table_name::text, array_agg(column_name::text) as cols from information_schema.columns
      where table_schema = current_schema() group by table_name
      having bool_or(column_name = 'team_id') and bool_or(column_name = 'created_at')`.execute(trx);
    for (const { table_name: table, cols: c } of cols.rows) {
      const key = table === 'orders' ? ['id', 'order'] : table === 'customers' ? ['id', 'customer'] : c.includes('order_id') ? ['order_id', 'order'] : c.includes('customer_id') ? ['customer_id', 'customer'] : null;
      if (!key) continue;
      const shifted = ['created_at', 'completed_at', 'payment_started_at', 'payable_at'].filter((x) => c.includes(x));
      const set = sql.join(shifted.map((x) => sql`${sql.ref(x)} = t.${sql.ref(x)} - v.shift * interval '1 millisecond'`));
      await sql`update ${sql.table(table)} as t set ${set}
        from (values ${values(key[1] as 'order' | 'customer')}) as v(id, f, u, shift)
        where t.team_id = ${teamId} and t.${sql.ref(key[0]!)} = v.id and t.created_at >= v.f and t.created_at < v.u and v.shift > 0`.execute(trx);
    }
  });
}

/**
 * The demo history, created now or finished (see the top of this file). Without a card gateway in
 * the demo (no sandbox) there is nothing to pay with: nothing is done.
 */
export async function seedDemoHistory(ctx: AppContext, ids: DemoHistoryIds, opts: DemoHistoryOptions): Promise<DemoHistoryResult> {
  const timeZone = await ctx.store.run((db) => ctx.services.teams.timeZoneOf(db, ids.team_id));
  const now = new Date();
  const plan = planHistory(now, timeZone);
  if (!ids.gateway_id) return { total: plan.length, created: 0, existing: 0, stopped: false };
  // One read of which stories' customers exist (an index scan of the team's customers by e-mail).
  const known = new Set(
    (await ctx.store.run((db) => db.selectFrom('customers').select('email').where('team_id', '=', ids.team_id).where('email', 'in', plan.map((s) => s.email)).execute())).map((c) => c.email),
  );
  const todo = plan.filter((s) => !known.has(s.email));
  const result: DemoHistoryResult = { total: plan.length, created: 0, existing: plan.length - todo.length, stopped: false };
  if (todo.length === 0) return result;
  opts.progress?.(result.existing, plan.length);
  const run = new HistoryRun(ctx, ids, opts, now);
  await run.setUp();
  try {
    let batch: Done[] = [];
    for (const s of todo) {
      if (opts.signal?.aborted) {
        result.stopped = true;
        break;
      }
      try {
        const done = await run.run(s);
        if (done) batch.push(done);
      } catch (err) {
        // One story failing (a sandbox hiccup) does not stop the others; its customer exists, so it is not retried.
        if (run.current) batch.push(run.current);
        opts.log?.warn({ err: { message: (err as Error).message }, story: s.n }, 'demo history: a story failed');
      }
      result.created++;
      if (batch.length >= 25) {
        await backdate(ctx, ids.team_id, batch);
        batch = [];
        await run.pause();
      }
      opts.progress?.(result.existing + result.created, plan.length);
    }
    await backdate(ctx, ids.team_id, batch);
  } finally {
    run.close();
  }
  return result;
}

/** `npm start`: the history in the background once the server listens; `stop()` waits for the story in hand. */
export function startDemoHistory(ctx: AppContext, ids: DemoHistoryIds, opts: DemoHistoryOptions): { done: Promise<DemoHistoryResult | null>; stop(): Promise<void> } {
  const abort = new AbortController();
  const done = seedDemoHistory(ctx, ids, { ...opts, signal: abort.signal }).catch((err: unknown) => {
    opts.log?.warn({ err: { message: (err as Error).message } }, 'demo history: stopped by an error; the next start goes on');
    return null;
  });
  return {
    done,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}
