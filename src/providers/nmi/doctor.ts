import type { GatewayAccount } from '../card-gateway.ts';
import type { DiagnoseContext, DoctorCheck } from '../provider.ts';
import { NMI_QUERY_PATH } from './adapter.ts';
import { parseXml } from './query.ts';

/**
 * The NMI gateway doctor: the security key authenticates against the Query API, and the merchant
 * account's Customer Vault is enabled (saved cards, one-click upsells and rebills need it). Both are
 * Query API reads (`report_type=customer_vault` for a vault id that does not exist); nothing is charged
 * or saved. NMI sends this integration no webhooks, so there is nothing of them to check.
 */
type QueryAnswer = { kind: 'ok' } | { kind: 'refused'; message: string } | { kind: 'unreachable'; message: string };

async function query(account: GatewayAccount, fields: Record<string, string>, fetchImpl: typeof fetch): Promise<QueryAnswer> {
  const form = new URLSearchParams({ security_key: account.credentials.security_key ?? '', ...fields });
  let body: string;
  try {
    const res = await fetchImpl(account.baseUrl.replace(/\/+$/, '') + NMI_QUERY_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/xml, application/xml, */*' },
      body: form.toString(),
      redirect: 'manual',
      signal: AbortSignal.timeout(15_000),
    });
    if (res.status !== 200) return { kind: 'unreachable', message: `The gateway answered HTTP ${res.status}.` };
    body = await res.text();
  } catch (e) {
    const code = (e as { cause?: { code?: unknown } }).cause?.code;
    return { kind: 'unreachable', message: `Could not reach the gateway${typeof code === 'string' ? ` (${code})` : ''}.` };
  }
  const root = parseXml(body);
  if (!root || root.name !== 'nm_response') return { kind: 'unreachable', message: 'The gateway answered with something other than <nm_response>.' };
  const error = root.children.find((c) => c.name === 'error_response');
  return error ? { kind: 'refused', message: error.text.trim() || 'The gateway refused the query.' } : { kind: 'ok' };
}

const AUTH = /security key|username|password|authenticat|unauthori[sz]ed/i;

export async function diagnoseNmi(account: GatewayAccount, _ctx: DiagnoseContext, opts: { fetch?: typeof fetch } = {}): Promise<DoctorCheck[]> {
  const fetchImpl = opts.fetch ?? fetch;
  const checks: DoctorCheck[] = [];
  const key = await query(account, { transaction_id: 'doctor_probe' }, fetchImpl);
  if (key.kind === 'unreachable') {
    checks.push({ name: 'key_authenticates', status: 'fail', message: `${key.message} (${account.baseUrl})`, fix: "Check the gateway's base URL and that this server can reach it." });
    checks.push({ name: 'customer_vault', status: 'warn', message: 'Not checked: the gateway could not be reached.', fix: 'Fix the connection first.' });
    return checks;
  }
  if (key.kind === 'refused' && AUTH.test(key.message)) {
    checks.push({ name: 'key_authenticates', status: 'fail', message: `The Query API refused the security key: ${key.message}`, fix: 'In the NMI merchant portal (Settings → Security Keys) create a key with API and Query permissions and save it as security_key.' });
    checks.push({ name: 'customer_vault', status: 'warn', message: 'Not checked: the security key does not authenticate.', fix: 'Fix the security key first.' });
    return checks;
  }
  checks.push({ name: 'key_authenticates', status: 'pass', message: 'The security key authenticates against the Query API.', fix: null });
  const vault = await query(account, { report_type: 'customer_vault', customer_vault_id: 'doctor_probe' }, fetchImpl);
  if (vault.kind === 'ok') checks.push({ name: 'customer_vault', status: 'pass', message: 'The Customer Vault is enabled: cards can be saved for upsells and rebills.', fix: null });
  else if (vault.kind === 'refused')
    checks.push({ name: 'customer_vault', status: 'fail', message: `The Customer Vault is not available: ${vault.message}`, fix: 'Ask your NMI reseller to enable the Customer Vault service on the merchant account; without it upsells and rebills cannot charge a saved card.' });
  else checks.push({ name: 'customer_vault', status: 'warn', message: vault.message, fix: 'Run the doctor again.' });
  return checks;
}
