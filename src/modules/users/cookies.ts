import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Row } from '../../db/schema.ts';
import { cookieMaxAge, type RequestMeta, SESSION_COOKIE } from './sessions.ts';

/** The CSRF secret's cookie (@fastify/csrf-protection); the token derived from it is bound to the session id. */
export const CSRF_COOKIE = 'checkstand_csrf';

/** Secure cookies when the request came over HTTPS (req.protocol honours TRUST_PROXY) or COOKIE_SECURE=true. */
export function secureRequest(req: FastifyRequest, cookieSecure: boolean): boolean {
  return cookieSecure || req.protocol === 'https';
}

export function sessionSecretOf(req: FastifyRequest): string | undefined {
  const v = req.cookies?.[SESSION_COOKIE];
  return v ? v : undefined;
}

export function requestMeta(req: FastifyRequest): RequestMeta {
  const ua = req.headers['user-agent'];
  return { ip: req.ip ?? null, userAgent: typeof ua === 'string' ? ua : null };
}

/** HttpOnly, SameSite=Lax, Path=/, Secure over HTTPS; Max-Age: the idle limit, never past the absolute one. */
export function setSessionCookie(req: FastifyRequest, reply: FastifyReply, secret: string, session: Row<'sessions'>, cookieSecure: boolean): void {
  reply.setCookie(SESSION_COOKIE, secret, { httpOnly: true, sameSite: 'lax', secure: secureRequest(req, cookieSecure), path: '/', maxAge: cookieMaxAge(session) });
}

export function clearSessionCookies(req: FastifyRequest, reply: FastifyReply, cookieSecure: boolean): void {
  const opts = { httpOnly: true, sameSite: 'lax' as const, secure: secureRequest(req, cookieSecure), path: '/' };
  reply.clearCookie(SESSION_COOKIE, opts).clearCookie(CSRF_COOKIE, opts);
}

/**
 * A CSRF token for this session (sent back as the `x-csrf-token` header on every unsafe request);
 * sets the secret's cookie when the browser has none yet.
 */
export function csrfTokenFor(req: FastifyRequest, reply: FastifyReply, sessionId: string, cookieSecure: boolean): string {
  return reply.generateCsrf({ userInfo: sessionId, secure: secureRequest(req, cookieSecure), httpOnly: true, sameSite: 'lax', path: '/' });
}

/** Unsafe methods authenticated by the session cookie need the CSRF header; bearer tokens carry no ambient authority. */
export function needsCsrf(req: FastifyRequest): boolean {
  return req.team?.sessionId != null && req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS';
}
