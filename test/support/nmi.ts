import { expect } from 'vitest';
import type { TestTeam } from './harness.ts';

/** One entry of the NMI sandbox's ledger (GET /sandbox/nmi/ledger): what the gateway itself recorded. */
export interface NmiLedgerEntry {
  transactionid: string | null;
  type: string;
  status: string;
  response_code?: string;
  amount_minor: number | null;
  orderid: string | null;
  customer_vault_id: string | null;
  last4: string | null;
}

let seq = 0;

/** A fresh sandbox merchant account as one of the team's NMI gateways: its ledger is the caller's alone. */
export async function nmiSandboxGateway(team: TestTeam, sandboxUrl: string, opts: { prefix?: string; baseUrl?: string } = {}): Promise<{ id: string; key: string }> {
  const key = `${opts.prefix ?? 'nmi'}_${process.pid}_${++seq}`;
  const r = await team.api.post('/v1/gateways', { name: `nmi ${key}`, kind: 'nmi', base_url: opts.baseUrl ?? sandboxUrl, credentials: { security_key: key }, test_mode: true });
  expect(r.status, r.text).toBe(201);
  return { id: r.body.data.id as string, key };
}

export async function nmiLedger(sandboxUrl: string, key: string): Promise<NmiLedgerEntry[]> {
  const r = await fetch(`${sandboxUrl}/sandbox/nmi/ledger?security_key=${encodeURIComponent(key)}`);
  return ((await r.json()) as { transactions: NmiLedgerEntry[] }).transactions;
}
