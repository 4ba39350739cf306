import { ACCOUNT_ID_SINCE, SANDBOX_API_VERSION_DATES } from './extpay-webhooks.ts';

/**
 * Whop's dated API versions as the stand-in serves them (docs.whop.com/developer/api/versioning): a
 * request names its version in `Api-Version-Date`; none is the original (2025-01-01) behaviour; an
 * unknown date is a 400 listing the supported ones. From `ACCOUNT_ID_SINCE` on, list parameters name
 * the account (`account_id`) and `company_id` is refused there, and a checkout configuration takes
 * its `company_id` at the top level rather than inside the inline plan. The provider's rules run on
 * one shape: this file turns a dated request into it, so a drift in the adapter's wire shape fails.
 */

interface Answer {
  status: number;
  body: unknown;
}

const refuse = (code: string, message: string): Answer => ({ status: 400, body: { error: { type: 'invalid_request_error', code, message } } });

export type ApiVersion = { date: string | null; accountScoped: boolean };

/** The request's version, or the 400 for a date the sandbox does not know. */
export function apiVersionOf(header: string | string[] | undefined): ApiVersion | Answer {
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw === undefined || raw.trim() === '') return { date: null, accountScoped: false };
  const date = raw.trim();
  if (!(SANDBOX_API_VERSION_DATES as readonly string[]).includes(date))
    return refuse('api_version_invalid', `Unknown Api-Version-Date '${date.slice(0, 40)}'. Supported versions: ${SANDBOX_API_VERSION_DATES.join(', ')}.`);
  return { date, accountScoped: date >= ACCOUNT_ID_SINCE };
}

/**
 * A list's query in the provider's terms: in an account-scoped version, `account_id` names the
 * company and `company_id` is refused; before it, `company_id` as always.
 */
export function listQuery(v: ApiVersion, query: Record<string, unknown>): Record<string, unknown> | Answer {
  if (!v.accountScoped) return query;
  if (query.company_id !== undefined) return refuse('parameter_unknown', `company_id: replaced by account_id in Api-Version-Date ${ACCOUNT_ID_SINCE} and later.`);
  const { account_id, ...rest } = query;
  return account_id === undefined ? rest : { ...rest, company_id: account_id };
}

/** A checkout configuration body in the provider's terms: the dated shape has `company_id` at the top level. */
export function checkoutBody(v: ApiVersion, body: unknown): { body: unknown } | Answer {
  if (!v.accountScoped || !body || typeof body !== 'object') return { body };
  const { company_id, ...rest } = body as Record<string, unknown>;
  const plan = rest.plan as Record<string, unknown> | undefined;
  if (!plan || typeof plan !== 'object') return { body: rest };
  if (plan.company_id !== undefined) return refuse('parameter_unknown', `plan.company_id: not accepted in Api-Version-Date ${ACCOUNT_ID_SINCE} and later; send company_id at the top level.`);
  if (company_id === undefined) return refuse('parameter_missing', 'company_id: required');
  return { body: { ...rest, plan: { ...plan, company_id } } };
}

export const isAnswer = (x: unknown): x is Answer => typeof x === 'object' && x !== null && 'status' in x && 'body' in x;
