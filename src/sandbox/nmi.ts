import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { z } from 'zod';
import { NmiSandboxGateway } from './nmi-gateway.ts';

export interface NmiSandboxOptions {
  /** How long the slow card takes to answer. */
  slowMs: number;
}

const AccountBody = z
  .object({
    security_key: z.string().min(1).max(200),
    force_response_code: z
      .string()
      .regex(/^\d{3}$/, 'must be a three-digit NMI response code')
      .nullable()
      .optional(),
    /** Whether the account's Customer Vault is enabled (default true); off, vault requests and vault queries are refused. */
    customer_vault_enabled: z.boolean().optional(),
  })
  .strict();

const ResetBody = z.object({ security_key: z.string().min(1).max(200).optional() }).strict();
const LedgerQuery = z.object({ security_key: z.string().min(1).max(200) }).strict();

/** Form fields as strings; repeated fields keep the last value, as NMI does. */
function formFields(body: unknown): Record<string, string> {
  if (!body || typeof body !== 'object') return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
  }
  return out;
}

function badRequest(reply: FastifyReply, error: z.ZodError) {
  // The issue messages name fields, never echo values (a security key stays out of the answer).
  return reply.code(400).send({ error: 'invalid_request', issues: error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) });
}

/**
 * NMI's Direct Post API on `POST /api/transact.php` (form in, query string out), its Query API on
 * `/api/query.php` (XML out) and the test controls under `/sandbox/nmi/`. Mounted by `src/sandbox/server.ts` next to the other stand-ins.
 */
export const nmiSandbox: FastifyPluginAsync<NmiSandboxOptions> = async (app, opts) => {
  // Slow answers are cut short when the server closes, so `close()` never waits out a delay.
  const pending = new Set<() => void>();
  const delay = (ms: number) =>
    new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        pending.delete(finish);
        resolve();
      };
      const timer = setTimeout(finish, ms);
      pending.add(finish);
    });
  app.addHook('preClose', async () => {
    for (const finish of [...pending]) finish();
  });

  const gateway = new NmiSandboxGateway({ slowMs: opts.slowMs, delay });

  // Scoped to this plugin: the other stand-ins keep Fastify's defaults.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  // The path is NMI's own, written out here rather than shared with the adapter so a wrong path
  // in either one fails the tests.
  app.post('/api/transact.php', async (req, reply) => {
    // Only a form is NMI's wire format; anything else is refused so a client that drifts (JSON) fails here too.
    const isForm = (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
    const answer = isForm
      ? await gateway.transact(formFields(req.body))
      : gateway.refuse('Requests must be application/x-www-form-urlencoded');
    return reply.type('text/plain; charset=utf-8').send(new URLSearchParams(answer).toString());
  });

  // NMI's Query API: POST a form (NMI's way) or GET with the same variables; XML out.
  app.post('/api/query.php', async (req, reply) => {
    const isForm = (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
    const xml = isForm ? gateway.query(formFields(req.body)) : gateway.queryError('Requests must be application/x-www-form-urlencoded');
    return reply.type('text/xml; charset=UTF-8').send(xml);
  });
  app.get('/api/query.php', async (req, reply) => reply.type('text/xml; charset=UTF-8').send(gateway.query(formFields(req.query))));

  app.get('/sandbox/nmi/ledger', async (req, reply) => {
    const q = LedgerQuery.safeParse(req.query);
    if (!q.success) return badRequest(reply, q.error);
    return gateway.ledger(q.data.security_key);
  });

  app.post('/sandbox/nmi/accounts', async (req, reply) => {
    const b = AccountBody.safeParse(req.body ?? {});
    if (!b.success) return badRequest(reply, b.error);
    if (NmiSandboxGateway.isInvalidKey(b.data.security_key))
      return reply.code(400).send({ error: 'invalid_request', issues: [{ path: 'security_key', message: "keys starting with 'invalid' always fail authentication" }] });
    return gateway.configureAccount(b.data.security_key, b.data.force_response_code ?? null, b.data.customer_vault_enabled);
  });

  app.post('/sandbox/nmi/reset', async (req, reply) => {
    const b = ResetBody.safeParse(req.body ?? {});
    if (!b.success) return badRequest(reply, b.error);
    gateway.reset(b.data.security_key);
    return { ok: true };
  });
};
