import { scrubPan } from '../../app/logger.ts';
import { parseMajorAmount } from '../../app/currency.ts';
import type { GatewayQueriedTransaction, GatewayQueryAction, GatewayQueryRequest, GatewayQueryResult } from '../card-gateway.ts';
import { classifyNmi } from './status.ts';

/**
 * NMI's Query API answer (`{baseUrl}/api/query.php`, XML): a small XML reader for its flat
 * documents and the mapping of a queried transaction to what the recovery run asks
 * (approved / declined / not found), so the adapter (adapter.ts) keeps only the wire calls.
 */

/** An XML element: its name, child elements and its own text (entities decoded). Attributes are not kept. */
export interface XmlElement {
  name: string;
  children: XmlElement[];
  text: string;
}

const XML_ENTITIES: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeXmlText(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|[a-zA-Z]+);/g, (whole, ent: string) => {
    if (ent.startsWith('#x')) return String.fromCodePoint(parseInt(ent.slice(2), 16));
    if (ent.startsWith('#')) return String.fromCodePoint(parseInt(ent.slice(1), 10));
    return XML_ENTITIES[ent] ?? whole;
  });
}

/** Where the tag opened at `from` ends (its `>`), skipping `>` inside quoted attribute values; -1 if never. */
function tagEnd(s: string, from: number): number {
  let quote = '';
  for (let i = from; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '>') return i;
  }
  return -1;
}

/**
 * A small, strict reader for the plain XML NMI answers with: elements, text, CDATA, comments and the
 * declaration. No DTDs or custom entities are expanded (none are needed, and none can be abused).
 * Answers the document's root element, or null when the text is not well-formed.
 */
export function parseXml(xml: string): XmlElement | null {
  const doc: XmlElement = { name: '#document', children: [], text: '' };
  const stack: XmlElement[] = [doc];
  const s = xml.replace(/^\uFEFF/, '');
  let i = 0;
  const skipTo = (marker: string, from: number) => {
    const end = s.indexOf(marker, from);
    return end < 0 ? -1 : end + marker.length;
  };
  while (i < s.length) {
    const top = stack[stack.length - 1]!;
    const lt = s.indexOf('<', i);
    if (lt < 0) {
      top.text += decodeXmlText(s.slice(i));
      break;
    }
    if (lt > i) top.text += decodeXmlText(s.slice(i, lt));
    let next: number;
    if (s.startsWith('<!--', lt)) next = skipTo('-->', lt + 4);
    else if (s.startsWith('<![CDATA[', lt)) {
      const end = s.indexOf(']]>', lt + 9);
      if (end < 0) return null;
      top.text += s.slice(lt + 9, end);
      next = end + 3;
    } else if (s.startsWith('<?', lt)) next = skipTo('?>', lt + 2);
    else if (s.startsWith('<!', lt)) {
      // A DOCTYPE with an internal subset could define entities: refuse it rather than guess.
      if (s.indexOf('[', lt) >= 0 && s.indexOf('[', lt) < s.indexOf('>', lt)) return null;
      next = skipTo('>', lt + 2);
    } else {
      const gt = tagEnd(s, lt + 1);
      if (gt < 0) return null;
      const raw = s.slice(lt + 1, gt);
      if (raw.startsWith('/')) {
        if (stack.length < 2 || top.name !== raw.slice(1).trim()) return null;
        stack.pop();
      } else {
        const m = /^([A-Za-z_][\w.:-]*)/.exec(raw);
        if (!m) return null;
        const el: XmlElement = { name: m[1]!, children: [], text: '' };
        top.children.push(el);
        if (!raw.endsWith('/')) stack.push(el);
      }
      next = gt + 1;
    }
    if (next < 0) return null;
    i = next;
  }
  if (stack.length !== 1) return null;
  const roots = doc.children;
  return roots.length === 1 && doc.text.trim() === '' ? roots[0]! : null;
}

/** The trimmed text of the first child element `name` that has no elements of its own; null when absent or empty. */
function leaf(el: XmlElement, name: string): string | null {
  const c = el.children.find((x) => x.name === name && x.children.length === 0);
  const t = c?.text.trim() ?? '';
  return t === '' ? null : t;
}

/** NMI's `YYYYMMDDhhmmss` (UTC) → ISO 8601; null when it is something else. */
export function nmiDateToIso(text: string | null): string | null {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(text ?? '');
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

/** The money actions that open a transaction; `settle`, `void`, `capture`… come later in its history. */
const ORIGIN_ACTIONS = new Set(['sale', 'auth', 'refund', 'credit', 'validate', 'offline']);
/** Conditions in which the transaction did not go through, whatever its first action said. */
const FAILED_CONDITIONS = new Set(['failed', 'unknown', 'abandoned', 'in_progress']);

function readAction(el: XmlElement, currency: string): GatewayQueryAction {
  const rawAmount = leaf(el, 'amount');
  // Some reports sign reversals; the direction is in the action type.
  const amountMinor = rawAmount === null ? null : parseMajorAmount(rawAmount.replace(/^-/, ''), currency);
  return {
    type: (leaf(el, 'action_type') ?? '').toLowerCase(),
    amountMinor,
    success: leaf(el, 'success') === '1',
    responseCode: leaf(el, 'response_code'),
    responseText: scrubOrNull(leaf(el, 'response_text') ?? leaf(el, 'processor_response_text')),
    at: nmiDateToIso(leaf(el, 'date')),
  };
}

function scrubOrNull(text: string | null): string | null {
  return text === null ? null : scrubPan(text);
}

/**
 * How the first action ended. Without a response code an unsuccessful action is read as NMI's generic
 * "declined by processor", as a bare `response=2` is; a condition of `failed` or `unknown` overrides a
 * success flag (the transaction did not go through).
 */
function actionStatus(a: GatewayQueryAction | undefined, condition: string | null): GatewayQueriedTransaction['status'] {
  if (a?.success && !FAILED_CONDITIONS.has(condition ?? '')) return 'approved';
  const code = a?.responseCode ?? '';
  if (code === '' || code === '100') return condition === 'unknown' ? 'error' : 'declined';
  const outcome = classifyNmi(code).outcome;
  return outcome === 'soft_decline' || outcome === 'hard_decline' ? 'declined' : 'error';
}

const DEFAULT_CODES = { approved: '100', declined: '200', error: '300' } as const;

export function readQueriedTransaction(el: XmlElement): GatewayQueriedTransaction | null {
  const transactionId = leaf(el, 'transaction_id');
  if (!transactionId) return null;
  const currencyText = leaf(el, 'currency');
  const currency = currencyText && /^[A-Za-z]{3}$/.test(currencyText) ? currencyText.toUpperCase() : null;
  const condition = leaf(el, 'condition')?.toLowerCase() ?? null;
  const actions = el.children.filter((c) => c.name === 'action').map((a) => readAction(a, currency ?? 'USD'));
  const origin = actions.find((a) => ORIGIN_ACTIONS.has(a.type)) ?? actions[0];
  const refunds = actions.filter((a) => a !== origin && (a.type === 'refund' || a.type === 'credit'));
  const cc = leaf(el, 'cc_number');
  const last4 = cc ? (/(\d{4})$/.exec(cc)?.[1] ?? null) : null;
  const status = actionStatus(origin, condition);
  return {
    transactionId,
    orderId: leaf(el, 'order_id'),
    type: origin?.type || 'unknown',
    status,
    condition,
    responseCode: origin?.responseCode ?? DEFAULT_CODES[status],
    responseText: origin?.responseText ?? '',
    amountMinor: origin?.amountMinor ?? null,
    currency,
    authCode: leaf(el, 'authorization_code'),
    // The transaction report names the vault id `customerid`; other reports say `customer_vault_id`.
    vaultRef: leaf(el, 'customer_vault_id') ?? leaf(el, 'customerid'),
    cardLast4: last4,
    refunds,
    voided: condition === 'canceled' || actions.some((a) => a.type === 'void' && a.success),
    actions,
    createdAt: origin?.at ?? null,
  };
}

export function queryFailure(code: Extract<GatewayQueryResult, { kind: 'error' }>['code'], message: string): GatewayQueryResult {
  return { kind: 'error', code, message: scrubPan(message) };
}

/**
 * A Query API answer → found / not found / error. Only transactions matching the filter exactly are
 * kept (a gateway that matched loosely must not hand us someone else's order); none left is
 * `not_found`, like NMI's empty `<nm_response/>`.
 */
export function interpretNmiQuery(body: string, filter: GatewayQueryRequest): GatewayQueryResult {
  const root = parseXml(body);
  if (!root || root.name !== 'nm_response') return queryFailure('bad_response', 'The gateway answered the query with something other than <nm_response>.');
  const error = root.children.find((c) => c.name === 'error_response');
  if (error) {
    const message = error.text.trim() || 'The gateway refused the query.';
    const auth = /security key|username|password|authenticat|permission|unauthori[sz]ed/i.test(message);
    return queryFailure(auth ? 'authentication_failed' : 'rejected', message);
  }
  const transactions: GatewayQueriedTransaction[] = [];
  for (const el of root.children) {
    if (el.name !== 'transaction') continue;
    const t = readQueriedTransaction(el);
    if (!t) return queryFailure('bad_response', 'The gateway listed a transaction without a transaction_id.');
    if (filter.orderId !== undefined && t.orderId !== filter.orderId) continue;
    if (filter.transactionId !== undefined && t.transactionId !== filter.transactionId) continue;
    transactions.push(t);
  }
  return transactions.length === 0 ? { kind: 'not_found' } : { kind: 'found', transactions };
}
