import { randomInt } from 'node:crypto';
import { formatMajorAmount, parseMajorAmount } from '../app/currency.ts';
import { NMI_RESPONSE_CODES, isKnownNmiCode } from '../providers/nmi/status.ts';
import { isSlowCard, luhnValid, sandboxCardCode, sandboxVaultChargeCode } from './cards.ts';

/**
 * The state and rules of the NMI stand-in, apart from HTTP: merchant accounts (one per
 * security_key), their ledgers and customer vaults. In memory only; card numbers kept in the vault
 * never touch the disk.
 */
export type NmiTransactionType = 'sale' | 'auth' | 'validate' | 'capture' | 'refund' | 'void';
const TYPES: readonly string[] = ['sale', 'auth', 'validate', 'capture', 'refund', 'void'] satisfies NmiTransactionType[];

export interface NmiLedgerEntry {
  /** null when the gateway refused the request before processing it (response 3, code 300). */
  transactionid: string | null;
  type: NmiTransactionType;
  /** The decimal string as received; null when none was sent (void, a refund of the full amount). */
  amount: string | null;
  amount_minor: number | null;
  currency: string | null;
  status: 'approved' | 'declined' | 'error';
  response: '1' | '2' | '3';
  response_code: string;
  responsetext: string;
  orderid: string | null;
  last4: string | null;
  customer_vault_id: string | null;
  parent_transactionid: string | null;
  created_at: string;
}

/**
 * What the Query API shows of a processed sale or auth beyond its ledger entry: the order description,
 * the customer and billing fields as sent, the card's BIN and expiry (never its number), the vault id
 * it saved or charged, and the AVS/CVV results.
 */
interface QueryDetails {
  order_description: string;
  first_name: string;
  last_name: string;
  address_1: string;
  city: string;
  state: string;
  postal_code: string;
  country: string;
  email: string;
  customerid: string;
  authorization_code: string;
  cc_bin: string;
  cc_exp: string;
  avs_response: string;
  csc_response: string;
}

/** An approved sale or auth and what has happened to it since. */
interface Charge {
  entry: NmiLedgerEntry;
  type: 'sale' | 'auth';
  amountMinor: number;
  currency: string;
  capturedMinor: number;
  refundedMinor: number;
  voided: boolean;
}

interface VaultCard {
  pan: string;
  exp: string;
}

interface Account {
  forceResponseCode: string | null;
  /** NMI enables the Customer Vault per merchant account; without it vault requests are refused. */
  vaultEnabled: boolean;
  ledger: NmiLedgerEntry[];
  charges: Map<string, Charge>;
  vault: Map<string, VaultCard>;
}

/** The answer's fields, in the order NMI writes them. */
export type NmiAnswer = Record<string, string>;

export interface NmiLedgerView {
  transactions: (NmiLedgerEntry & { voided?: boolean; refunded_minor?: number; captured_minor?: number })[];
  summary: { approved_sales: number; charged_minor: number; refunded_minor: number; voided: number };
}

export interface NmiAccountView {
  force_response_code: string | null;
  customer_vault_enabled: boolean;
  transactions: number;
  vaulted_cards: number;
}

export interface NmiSandboxGatewayOptions {
  slowMs: number;
  delay?: (ms: number) => Promise<void>;
}

function responseTextFor(code: string): string {
  return code === '100' ? 'SUCCESS' : isKnownNmiCode(code) ? NMI_RESPONSE_CODES[code].text : code.startsWith('2') ? 'DECLINE' : 'ERROR';
}

function responseOf(code: string): '1' | '2' | '3' {
  return code === '100' ? '1' : code.startsWith('2') ? '2' : '3';
}

const STATUS = { '1': 'approved', '2': 'declined', '3': 'error' } as const;

/** NMI writes times as `YYYYMMDDhhmmss`, UTC. */
function nmiDate(iso: string): string {
  return iso.replace(/[-:T]/g, '').slice(0, 14);
}

function xmlEscape(v: string): string {
  return v.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

function xmlElement(name: string, fields: [string, string][], children: string[] = [], indent = '\t'): string {
  const inner = indent + '\t';
  const lines = fields.map(([k, v]) => (v === '' ? `${inner}<${k}></${k}>` : `${inner}<${k}>${xmlEscape(v)}</${k}>`));
  return `${indent}<${name}>\n${[...lines, ...children].join('\n')}\n${indent}</${name}>`;
}

const QUERY_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<nm_response>\n';
const QUERY_TAIL = '</nm_response>\n';

export class NmiSandboxGateway {
  private accounts = new Map<string, Account>();
  private details = new WeakMap<NmiLedgerEntry, QueryDetails>();
  // Ten digits like NMI's; a random start keeps ids from two sandbox runs apart in a kept database.
  private nextTransactionId = 1_000_000_000 + randomInt(0, 7_000_000_000);
  private readonly slowMs: number;
  private readonly delay: (ms: number) => Promise<void>;

  constructor(opts: NmiSandboxGatewayOptions) {
    this.slowMs = opts.slowMs;
    this.delay = opts.delay ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  static isInvalidKey(key: string): boolean {
    return key === '' || key.startsWith('invalid');
  }

  private account(key: string): Account {
    let a = this.accounts.get(key);
    if (!a) {
      a = { forceResponseCode: null, vaultEnabled: true, ledger: [], charges: new Map(), vault: new Map() };
      this.accounts.set(key, a);
    }
    return a;
  }

  configureAccount(key: string, forceResponseCode: string | null, vaultEnabled?: boolean): NmiAccountView {
    const a = this.account(key);
    a.forceResponseCode = forceResponseCode;
    if (vaultEnabled !== undefined) a.vaultEnabled = vaultEnabled;
    return this.accountView(a);
  }

  private accountView(a: Account): NmiAccountView {
    return { force_response_code: a.forceResponseCode, customer_vault_enabled: a.vaultEnabled, transactions: a.ledger.length, vaulted_cards: a.vault.size };
  }

  reset(key?: string): void {
    if (key === undefined) this.accounts.clear();
    else this.accounts.delete(key);
  }

  ledger(key: string): NmiLedgerView {
    const a = this.accounts.get(key);
    const view: NmiLedgerView = { transactions: [], summary: { approved_sales: 0, charged_minor: 0, refunded_minor: 0, voided: 0 } };
    if (!a) return view;
    for (const entry of a.ledger) {
      const charge = entry.transactionid ? a.charges.get(entry.transactionid) : undefined;
      if (charge && charge.entry === entry) {
        view.transactions.push({
          ...entry,
          voided: charge.voided,
          refunded_minor: charge.refundedMinor,
          ...(charge.type === 'auth' ? { captured_minor: charge.capturedMinor } : {}),
        });
        if (charge.type === 'sale') {
          view.summary.approved_sales += 1;
          view.summary.charged_minor += charge.amountMinor;
        }
        view.summary.refunded_minor += charge.refundedMinor;
        if (charge.voided) view.summary.voided += 1;
      } else {
        view.transactions.push({ ...entry });
      }
    }
    return view;
  }

  /**
   * NMI's Query API (`/api/query.php`) over this account's ledger, as NMI's XML. Sales, auths and
   * refunds that were processed (approved, declined or failed at the processor) are transactions of
   * their own; voids and captures are actions of the transaction they act on, as on NMI. Requests
   * refused before processing got no transaction id and are not listed. Filters: `order_id` (exact)
   * and `transaction_id` (one, or several separated by commas); a `report_type` other than
   * `transaction` is refused; other variables are ignored. An unknown account answers an empty list.
   */
  query(fields: Record<string, string>): string {
    const key = fields.security_key ?? '';
    if (NmiSandboxGateway.isInvalidKey(key)) return this.queryError('Invalid Security Key');
    const reportType = fields.report_type ?? '';
    if (reportType === 'customer_vault') return this.queryVault(this.accounts.get(key), fields.customer_vault_id || null);
    if (reportType !== '' && reportType !== 'transaction') return this.queryError(`Invalid report_type: the sandbox answers only transaction reports`);
    const acct = this.accounts.get(key);
    if (!acct) return QUERY_HEAD + QUERY_TAIL;
    const orderId = fields.order_id || null;
    const ids = fields.transaction_id ? new Set(fields.transaction_id.split(',').map((x) => x.trim()).filter(Boolean)) : null;
    const later = new Map<string, NmiLedgerEntry[]>();
    for (const e of acct.ledger) {
      if ((e.type !== 'void' && e.type !== 'capture') || !e.parent_transactionid) continue;
      const list = later.get(e.parent_transactionid) ?? [];
      list.push(e);
      later.set(e.parent_transactionid, list);
    }
    let out = '';
    for (const e of acct.ledger) {
      if (!e.transactionid || e.type === 'void' || e.type === 'capture') continue;
      if (orderId !== null && e.orderid !== orderId) continue;
      if (ids && !ids.has(e.transactionid)) continue;
      out += `${this.queryTransaction(acct, e, later.get(e.transactionid) ?? [])}\n`;
    }
    return QUERY_HEAD + out + QUERY_TAIL;
  }

  /**
   * `report_type=customer_vault`: the vault's records (id and masked card only), filtered by
   * `customer_vault_id`; refused when the account's Customer Vault is not enabled.
   */
  private queryVault(acct: Account | undefined, id: string | null): string {
    if (acct && !acct.vaultEnabled) return this.queryError('Customer Vault is not enabled for this merchant account');
    let out = '';
    for (const [vaultId, card] of acct?.vault ?? []) {
      if (id !== null && vaultId !== id) continue;
      out += `\t<customer_vault>\n\t\t<customer id="${xmlEscape(vaultId)}">\n\t\t\t<customer_vault_id>${xmlEscape(vaultId)}</customer_vault_id>\n\t\t\t<cc_number>${xmlEscape(`${card.pan.slice(0, 6)}******${card.pan.slice(-4)}`)}</cc_number>\n\t\t</customer>\n\t</customer_vault>\n`;
    }
    return QUERY_HEAD + out + QUERY_TAIL;
  }

  /** A query refused as a whole: `<nm_response><error_response>…</error_response></nm_response>`. */
  queryError(text: string): string {
    return `${QUERY_HEAD}\t<error_response>${xmlEscape(text)}</error_response>\n${QUERY_TAIL}`;
  }

  private queryTransaction(acct: Account, e: NmiLedgerEntry, later: NmiLedgerEntry[]): string {
    const own = e.transactionid ? acct.charges.get(e.transactionid) : undefined;
    const charge = own?.entry === e ? own : undefined;
    const parent = e.parent_transactionid ? acct.charges.get(e.parent_transactionid) : undefined;
    // A refund shows the card and customer of the sale it refunds, but saved and authorised nothing itself.
    const d = this.details.get(e) ?? (parent ? { ...this.details.get(parent.entry)!, order_description: '', customerid: '', authorization_code: '', avs_response: '', csc_response: '' } : undefined);
    let condition: string;
    if (e.status !== 'approved') condition = 'failed';
    else if (e.type === 'validate') condition = 'complete';
    else if (charge?.voided) condition = 'canceled';
    else if (charge?.type === 'auth' && charge.capturedMinor === 0) condition = 'pending';
    else condition = 'pendingsettlement';
    const amountOf = (x: NmiLedgerEntry): string => (x.amount_minor !== null && x.currency ? formatMajorAmount(x.amount_minor, x.currency) : (x.amount ?? ''));
    const action = (x: NmiLedgerEntry) =>
      xmlElement(
        'action',
        [
          // A void reverses the whole transaction: its action carries the transaction's amount.
          ['amount', x.type === 'void' ? amountOf(e) : amountOf(x)],
          ['action_type', x.type],
          ['date', nmiDate(x.created_at)],
          ['success', x.status === 'approved' ? '1' : '0'],
          ['ip_address', ''],
          ['source', 'api'],
          ['username', ''],
          ['response_text', x.responsetext],
          ['batch_id', '0'],
          ['processor_batch_id', ''],
          ['response_code', x.response_code],
          ['processor_response_text', ''],
          ['processor_response_code', ''],
        ],
        [],
        '\t\t',
      );
    const bin = d?.cc_bin ?? '';
    const masked = e.last4 ? `${bin.slice(0, 1) || 'x'}xxxxxxxxxxx${e.last4}` : '';
    return xmlElement('transaction', [
      ['transaction_id', e.transactionid ?? ''],
      ['partial_payment_id', ''],
      ['partial_payment_balance', ''],
      ['platform_id', ''],
      ['transaction_type', 'cc'],
      ['condition', condition],
      ['order_id', e.orderid ?? ''],
      ['authorization_code', d?.authorization_code ?? ''],
      ['ponumber', ''],
      ['order_description', d?.order_description ?? ''],
      ['first_name', d?.first_name ?? ''],
      ['last_name', d?.last_name ?? ''],
      ['address_1', d?.address_1 ?? ''],
      ['address_2', ''],
      ['company', ''],
      ['city', d?.city ?? ''],
      ['state', d?.state ?? ''],
      ['postal_code', d?.postal_code ?? ''],
      ['country', d?.country ?? ''],
      ['email', d?.email ?? ''],
      ['phone', ''],
      ['fax', ''],
      ['cell_phone', ''],
      ['customertaxid', ''],
      ['customerid', d?.customerid ?? ''],
      ['website', ''],
      ['cc_number', masked],
      ['cc_hash', ''],
      ['cc_exp', d?.cc_exp ?? ''],
      ['cavv', ''],
      ['cavv_result', ''],
      ['xid', ''],
      ['avs_response', d?.avs_response ?? ''],
      ['csc_response', d?.csc_response ?? ''],
      ['cardholder_auth', ''],
      ['processor_id', 'sandbox'],
      ['tax', '0.00'],
      ['currency', e.currency ?? ''],
      ['cc_bin', bin],
    ], [action(e), ...later.map(action)]);
  }

  /** A request turned away before any account is touched (response 3, code 300). */
  refuse(text: string, type = ''): NmiAnswer {
    return this.answer({ code: '300', text, type });
  }

  /** One POST to /api/transact.php. Never throws for anything a client can send. */
  async transact(fields: Record<string, string>): Promise<NmiAnswer> {
    const key = fields.security_key ?? '';
    const type = fields.type ?? '';
    if (NmiSandboxGateway.isInvalidKey(key)) return this.refuse('Authentication Failed', type);
    if (!this.account(key).vaultEnabled && (fields.customer_vault || fields.customer_vault_id)) return this.refuse('Customer Vault is not enabled for this merchant account', type);
    if (type === '' && fields.customer_vault) return this.vaultRecord(this.account(key), fields);
    if (!TYPES.includes(type)) return this.refuse(`Invalid Transaction Type: ${type.slice(0, 20)}`, type);
    const acct = this.account(key);
    const t = type as NmiTransactionType;
    switch (t) {
      case 'sale':
      case 'auth':
      case 'validate':
        return this.charge(acct, t, fields);
      case 'capture':
        return this.capture(acct, fields);
      case 'refund':
        return this.refund(acct, fields);
      case 'void':
        return this.void(acct, fields);
    }
  }

  private answer(a: {
    code: string;
    text?: string;
    type: string;
    transactionid?: string | null;
    authcode?: string;
    avs?: string;
    cvv?: string;
    orderid?: string | null;
    vaultId?: string | null;
  }): NmiAnswer {
    const out: NmiAnswer = {
      response: responseOf(a.code),
      responsetext: a.text ?? responseTextFor(a.code),
      authcode: a.authcode ?? '',
      transactionid: a.transactionid ?? '',
      avsresponse: a.avs ?? '',
      cvvresponse: a.cvv ?? '',
      orderid: a.orderid ?? '',
      type: a.type,
      response_code: a.code,
    };
    if (a.vaultId) out.customer_vault_id = a.vaultId;
    return out;
  }

  private newTransactionId(): string {
    return String(this.nextTransactionId++);
  }

  private record(acct: Account, e: Omit<NmiLedgerEntry, 'created_at' | 'status' | 'response'>): NmiLedgerEntry {
    const response = responseOf(e.response_code);
    const entry: NmiLedgerEntry = { ...e, status: STATUS[response], response, created_at: new Date().toISOString() };
    acct.ledger.push(entry);
    return entry;
  }

  /**
   * A Customer Vault request without a transaction (no `type`): `add_customer` stores a card,
   * `update_customer` replaces the card of an existing `customer_vault_id` — a card update, after
   * which charges of that vault id answer as the new card. No card is checked with an issuer here.
   */
  private vaultRecord(acct: Account, f: Record<string, string>): NmiAnswer {
    const action = f.customer_vault ?? '';
    const vaultAnswer = (code: '100' | '300', text: string, vaultId: string | null): NmiAnswer => this.answer({ code, text, type: '', orderid: f.orderid || null, vaultId });
    if (action !== 'add_customer' && action !== 'update_customer') return vaultAnswer('300', `customer_vault=${action.slice(0, 20)} is not supported by the sandbox`, null);
    const id = f.customer_vault_id || null;
    if (action === 'update_customer' && (!id || !acct.vault.has(id))) return vaultAnswer('300', 'Invalid Customer Vault Id', null);
    if (action === 'add_customer' && id && acct.vault.has(id)) return vaultAnswer('300', 'Duplicate Customer Vault Id', null);
    const pan = (f.ccnumber ?? '').replace(/[\s-]/g, '');
    if (action === 'update_customer' && pan === '') return vaultAnswer('100', 'Customer Update Successful', id);
    if (!/^\d{12,19}$/.test(pan) || !luhnValid(pan)) return vaultAnswer('300', 'Invalid Credit Card Number', null);
    const exp = f.ccexp ?? '';
    if (!/^(0[1-9]|1[0-2])\d{2}$/.test(exp)) return vaultAnswer('300', 'Invalid Credit Card Expiration Date, format MMYY', null);
    const vaultId = id ?? this.newVaultId(acct);
    acct.vault.set(vaultId, { pan, exp });
    return vaultAnswer('100', action === 'add_customer' ? 'Customer Added' : 'Customer Update Successful', vaultId);
  }

  /**
   * A sale, an auth, or a `validate`: NMI's account verification, which checks the card with its
   * issuer and charges nothing (its amount is omitted or 0.00); with `customer_vault=add_customer`
   * an approved one saves the card, so a $0 trial can be rebilled later through the vault id.
   */
  private async charge(acct: Account, type: 'sale' | 'auth' | 'validate', f: Record<string, string>): Promise<NmiAnswer> {
    const orderid = f.orderid || null;
    const currency = (f.currency || 'USD').toUpperCase();
    const amount = f.amount ?? null;
    let last4: string | null = null;
    let vaultId: string | null = null;
    const reject = (text: string): NmiAnswer => {
      this.record(acct, {
        transactionid: null,
        type,
        amount,
        amount_minor: null,
        currency,
        response_code: '300',
        responsetext: text,
        orderid,
        last4,
        customer_vault_id: vaultId,
        parent_transactionid: null,
      });
      return this.answer({ code: '300', text, type, orderid });
    };

    if (!/^[A-Z]{3}$/.test(currency)) return reject('Invalid currency');
    const parsedAmount = amount === null ? null : parseMajorAmount(amount, currency);
    if (type === 'validate' && amount !== null && parsedAmount !== 0) return reject('Invalid amount: a validate must have an amount of 0.00 or none');
    const amountMinor = type === 'validate' ? 0 : parsedAmount;
    if (amountMinor === null || (type !== 'validate' && amountMinor <= 0)) return reject('Invalid amount');

    let card: { pan: string; exp: string; cvv: string | null };
    const vaultAction = f.customer_vault ?? '';
    if (vaultAction !== '' && vaultAction !== 'add_customer') return reject(`customer_vault=${vaultAction.slice(0, 20)} is not supported by the sandbox`);
    if (vaultAction === '' && f.customer_vault_id) {
      vaultId = f.customer_vault_id;
      if (f.ccnumber) return reject('Pass either ccnumber or customer_vault_id, not both');
      const saved = acct.vault.get(vaultId);
      if (!saved) {
        vaultId = null;
        return reject('Invalid Customer Vault Id');
      }
      card = { pan: saved.pan, exp: saved.exp, cvv: null };
      last4 = saved.pan.slice(-4);
    } else {
      const pan = (f.ccnumber ?? '').replace(/[\s-]/g, '');
      if (!/^\d{12,19}$/.test(pan) || !luhnValid(pan)) return reject('Invalid Credit Card Number');
      last4 = pan.slice(-4);
      const exp = f.ccexp ?? '';
      if (!/^(0[1-9]|1[0-2])\d{2}$/.test(exp)) return reject('Invalid Credit Card Expiration Date, format MMYY');
      const cvv = f.cvv || null;
      if (cvv !== null && !/^\d{3,4}$/.test(cvv)) return reject('Invalid CVV');
      card = { pan, exp, cvv };
      if (vaultAction === 'add_customer' && f.customer_vault_id && acct.vault.has(f.customer_vault_id)) return reject('Duplicate Customer Vault Id');
    }

    // A forced code is the whole account's answer, whatever the card: it stands in for an acquirer
    // that declines everything today, so salvage on another gateway can be tested with one card.
    const fromVault = vaultAction === '' && Boolean(f.customer_vault_id);
    let code = acct.forceResponseCode;
    if (code === null) {
      // A charge of a saved card is merchant-initiated: the rebill cards decline there.
      code = fromVault ? sandboxVaultChargeCode(card.pan) : sandboxCardCode(card.pan);
      if (isSlowCard(card.pan)) await this.delay(this.slowMs);
    }

    const transactionid = this.newTransactionId();
    const approved = code === '100';
    if (approved && vaultAction === 'add_customer') {
      vaultId = f.customer_vault_id || this.newVaultId(acct);
      acct.vault.set(vaultId, { pan: card.pan, exp: card.exp });
    }
    const avs = f.address1 && f.zip ? 'Y' : f.zip ? 'Z' : f.address1 ? 'A' : '';
    const cvvResult = card.cvv ? 'M' : '';
    const authcode = approved ? String(randomInt(0, 1_000_000)).padStart(6, '0') : '';
    const text = responseTextFor(code);
    const answerVaultId = approved ? vaultId : null;
    const entry = this.record(acct, {
      transactionid,
      type,
      amount,
      amount_minor: amountMinor,
      currency,
      response_code: code,
      responsetext: text,
      orderid,
      last4,
      customer_vault_id: answerVaultId,
      parent_transactionid: null,
    });
    // A validate moved no money: nothing to capture, refund or void.
    if (approved && type !== 'validate') acct.charges.set(transactionid, { entry, type, amountMinor, currency, capturedMinor: 0, refundedMinor: 0, voided: false });
    this.details.set(entry, {
      order_description: f.order_description ?? '',
      first_name: f.first_name ?? '',
      last_name: f.last_name ?? '',
      address_1: f.address1 ?? '',
      city: f.city ?? '',
      state: f.state ?? '',
      postal_code: f.zip ?? '',
      country: f.country ?? '',
      email: f.email ?? '',
      // The vault id it charged, or the one an approved sale saved; a declined sale saves nothing.
      customerid: vaultId ?? '',
      authorization_code: authcode,
      cc_bin: card.pan.slice(0, 6),
      cc_exp: card.exp,
      avs_response: avs,
      csc_response: cvvResult,
    });
    return this.answer({ code, text, type, transactionid, authcode, avs, cvv: cvvResult, orderid, vaultId: answerVaultId });
  }

  private newVaultId(acct: Account): string {
    for (;;) {
      const id = String(randomInt(100_000_000, 2_000_000_000));
      if (!acct.vault.has(id)) return id;
    }
  }

  /** Follow-ups (capture, refund, void) act on an approved charge of the same account. */
  private followUp(acct: Account, type: 'capture' | 'refund' | 'void', f: Record<string, string>) {
    const parentId = f.transactionid ?? '';
    const charge = parentId ? acct.charges.get(parentId) : undefined;
    const amount = type === 'void' ? null : f.amount || null;
    const base = {
      type,
      amount,
      currency: charge?.currency ?? null,
      orderid: f.orderid || charge?.entry.orderid || null,
      last4: charge?.entry.last4 ?? null,
      customer_vault_id: null,
      parent_transactionid: parentId || null,
    };
    const reject = (text: string): NmiAnswer => {
      this.record(acct, { ...base, transactionid: null, amount_minor: null, response_code: '300', responsetext: text });
      return this.answer({ code: '300', text, type, orderid: base.orderid });
    };
    const approve = (amountMinor: number | null): NmiAnswer => {
      const transactionid = this.newTransactionId();
      this.record(acct, { ...base, transactionid, amount_minor: amountMinor, response_code: '100', responsetext: 'SUCCESS' });
      return this.answer({ code: '100', type, transactionid, orderid: base.orderid });
    };
    const parseAmount = (fallback: number): number | null => {
      if (amount === null) return fallback;
      const minor = parseMajorAmount(amount, charge?.currency ?? 'USD');
      return minor === null || minor <= 0 ? null : minor;
    };
    return { parentId, charge, reject, approve, parseAmount };
  }

  private capture(acct: Account, f: Record<string, string>): NmiAnswer {
    const { parentId, charge, reject, approve, parseAmount } = this.followUp(acct, 'capture', f);
    if (!parentId) return reject('Field required: transactionid');
    if (!charge) return reject('Transaction not found');
    if (charge.type !== 'auth') return reject('Only authorizations can be captured');
    if (charge.voided) return reject('Transaction already voided/refunded');
    if (charge.capturedMinor > 0) return reject('Transaction already captured');
    const minor = parseAmount(charge.amountMinor);
    if (minor === null) return reject('Invalid amount');
    if (minor > charge.amountMinor) return reject('Capture amount may not exceed the authorized amount');
    charge.capturedMinor = minor;
    return approve(minor);
  }

  private refund(acct: Account, f: Record<string, string>): NmiAnswer {
    const { parentId, charge, reject, approve, parseAmount } = this.followUp(acct, 'refund', f);
    if (!parentId) return reject('Field required: transactionid');
    if (!charge) return reject('Transaction not found');
    if (charge.voided) return reject('Transaction already voided/refunded');
    const settled = charge.type === 'sale' ? charge.amountMinor : charge.capturedMinor;
    if (settled === 0) return reject('Only captured transactions can be refunded');
    // Without an amount NMI refunds the whole transaction, which fails once part of it is refunded.
    const minor = parseAmount(settled);
    if (minor === null) return reject('Invalid amount');
    if (charge.refundedMinor + minor > settled) return reject('Refund amount may not exceed the transaction balance');
    charge.refundedMinor += minor;
    return approve(minor);
  }

  private void(acct: Account, f: Record<string, string>): NmiAnswer {
    const { parentId, charge, reject, approve } = this.followUp(acct, 'void', f);
    if (!parentId) return reject('Field required: transactionid');
    if (!charge) return reject('Transaction not found');
    if (charge.voided || charge.refundedMinor > 0) return reject('Transaction already voided/refunded');
    charge.voided = true;
    return approve(null);
  }
}
