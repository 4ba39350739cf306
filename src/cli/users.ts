/**
 * `checkstand user create`: the operator's way to give a team its first user, its Team Owner
 * (later members join by invitation, POST /v1/invitations). Opens the database itself: on the
 * embedded database, stop a running `start`/`serve` first (or use PostgreSQL).
 */
import pino from 'pino';
import { loadConfig } from '../app/config.ts';
import { createLogger } from '../app/logger.ts';
import { openRuntime } from '../app/runtime.ts';
import { type Role, ROLE_NAMES, ROLES } from '../modules/access/permissions.ts';

export interface CreateUserOptions {
  team: string;
  email: string;
  password: string;
  name?: string;
  role?: string;
  json: boolean;
}

export async function create(o: CreateUserOptions): Promise<void> {
  if (o.role !== undefined && !(ROLES as readonly string[]).includes(o.role)) throw new Error(`--role must be one of ${ROLES.join(', ')}`);
  const config = loadConfig();
  // Logs to stderr: stdout is the answer (--json prints only JSON there).
  const rt = await openRuntime({ config, log: createLogger(config.logLevel, pino.destination(2)) });
  try {
    const u = await rt.ctx.services.users.createUser({ teamId: o.team, email: o.email, password: o.password, name: o.name, role: o.role as Role | undefined });
    console.log(o.json ? JSON.stringify(u) : `user ${u.id} (${u.email}) is the ${ROLE_NAMES[u.role]} of ${u.team_id}: log in with POST /v1/sessions`);
  } finally {
    await rt.close();
  }
}
