/**
 * `checkstand token …`. On the embedded database a running `start`/`serve` holds the data dir,
 * so the command asks that process through its control socket (control.ts); with no server
 * running (or on PostgreSQL, which any number of processes share) it opens the database itself.
 * Loads the app only in that second case.
 */
import { loadConfig } from '../app/config.ts';
import { controlRequest } from './control.ts';

interface TokenView {
  id: string;
  team_id: string;
  name: string;
  hint: string;
  revoked_at: string | null;
  expires_at: string | null;
  last_used_at: string | null;
}
type Issued = TokenView & { token: string };

async function viaServer<T>(method: 'GET' | 'POST', pathname: string, body?: unknown): Promise<T | undefined> {
  const config = loadConfig();
  if (config.databaseUrl) return undefined;
  const answer = await controlRequest<T | { error: string }>(config.dataDir, method, pathname, body);
  if (!answer) return undefined;
  if (answer.status >= 400) throw new Error((answer.body as { error: string }).error);
  return answer.body as T;
}

async function direct() {
  return (await import('./commands.ts')).tokensDirect;
}

export async function create(o: { team: string; name: string; json: boolean }): Promise<void> {
  const t = (await viaServer<Issued>('POST', '/tokens', { team_id: o.team, name: o.name })) ?? (await (await direct()).create(o.team, o.name));
  console.log(o.json ? JSON.stringify(t) : `${t.token}\n(id ${t.id}; shown once, stored only as a hash)`);
}

export async function list(o: { team?: string; json: boolean }): Promise<void> {
  const q = o.team ? `?team_id=${encodeURIComponent(o.team)}` : '';
  const rows = (await viaServer<TokenView[]>('GET', `/tokens${q}`)) ?? (await (await direct()).list(o.team));
  if (o.json) return console.log(JSON.stringify(rows));
  if (rows.length === 0) return console.log('no tokens');
  for (const t of rows) {
    const state = t.revoked_at ? `revoked ${t.revoked_at}` : t.expires_at ? `expires ${t.expires_at}` : 'active';
    console.log(`${t.id}  ${t.team_id}  ${t.hint}  ${t.name}  ${state}  last used ${t.last_used_at ?? 'never'}`);
  }
}

export async function revoke(id: string): Promise<void> {
  const t = (await viaServer<TokenView>('POST', `/tokens/${encodeURIComponent(id)}/revoke`)) ?? (await (await direct()).revoke(id));
  console.log(`revoked ${t.id} (${t.name})`);
}

export async function rotate(id: string, o: { graceSeconds: number; json: boolean }): Promise<void> {
  const r =
    (await viaServer<Issued & { replaced: TokenView }>('POST', `/tokens/${encodeURIComponent(id)}/rotate`, { grace_seconds: o.graceSeconds })) ??
    (await (await direct()).rotate(id, o.graceSeconds));
  if (o.json) return console.log(JSON.stringify(r));
  console.log(`${r.token}\n(new id ${r.id}; old token ${id} ${o.graceSeconds === 0 ? 'revoked' : `valid until ${r.replaced.expires_at}`})`);
}
