import * as OTPAuth from 'otpauth';
import { ApiError, invalid } from '../../app/errors.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';
import type { UsersDeps } from './deps.ts';

const ISSUER = 'Checkstand';

function totpOf(secretBase32: string, email: string): OTPAuth.TOTP {
  return new OTPAuth.TOTP({ issuer: ISSUER, label: email, algorithm: 'SHA1', digits: 6, period: 30, secret: OTPAuth.Secret.fromBase32(secretBase32) });
}

const PERIOD_SECONDS = 30;

/**
 * A 6-digit code of the user's (pending or enabled) secret, one 30-second step either side allowed,
 * and used once: accepting it takes its time step, so the same code (or an older one) is refused after.
 */
export async function totpCodeAccepted(db: Executor, secrets: Secrets, user: Row<'users'>, code: string | undefined): Promise<boolean> {
  if (!user.totp_secret_enc || !code || !/^\d{6}$/.test(code)) return false;
  const delta = totpOf(secrets.decrypt(user.totp_secret_enc), user.email).validate({ token: code, window: 1 });
  if (delta === null) return false;
  return repo.claimTotpStep(db, user.id, Math.floor(Date.now() / 1000 / PERIOD_SECONDS) + delta);
}

/** In a session a wrong code is bad input (422), not a failed login. */
const wrongCode = () => invalid('code', 'is not the current code of the authenticator app');

async function sessionUser(d: UsersDeps, userId: string): Promise<Row<'users'>> {
  const user = await d.store.run((db) => repo.findUser(db, userId));
  if (!user) throw new ApiError('unauthenticated');
  return user;
}

/**
 * Starts enrolment: a new secret, stored encrypted (like provider secrets) but not yet required;
 * the authenticator app scans the otpauth URI. Starting again replaces a pending secret.
 */
export async function startTotp(d: UsersDeps, userId: string): Promise<{ secret: string; otpauth_uri: string }> {
  const user = await sessionUser(d, userId);
  if (user.totp_enabled_at) throw new ApiError('conflict', 'Two-factor authentication is already on: turn it off first (with a code) to enrol a new device.');
  const secret = new OTPAuth.Secret({ size: 20 }).base32;
  await d.store.run((db) => repo.updateUser(db, userId, { totp_secret_enc: d.secrets.encrypt(secret), totp_last_step: null }));
  return { secret, otpauth_uri: totpOf(secret, user.email).toString() };
}

/** A code from the app proves it holds the secret: from now on, logging in needs a code. */
export async function confirmTotp(d: UsersDeps, userId: string, code: string): Promise<void> {
  const user = await sessionUser(d, userId);
  if (user.totp_enabled_at) throw new ApiError('conflict', 'Two-factor authentication is already on.');
  if (!user.totp_secret_enc) throw new ApiError('conflict', 'Start enrolment first: POST /v1/session/totp.');
  if (!(await d.store.run((db) => totpCodeAccepted(db, d.secrets, user, code)))) throw wrongCode();
  await d.store.run((db) => repo.updateUser(db, userId, { totp_enabled_at: new Date() }));
}

/** Turning it off needs a current code, so a hijacked session alone cannot. */
export async function disableTotp(d: UsersDeps, userId: string, code: string): Promise<void> {
  const user = await sessionUser(d, userId);
  if (!user.totp_enabled_at) throw new ApiError('conflict', 'Two-factor authentication is not on.');
  if (!(await d.store.run((db) => totpCodeAccepted(db, d.secrets, user, code)))) throw wrongCode();
  await d.store.run((db) => repo.updateUser(db, userId, { totp_enabled_at: null, totp_secret_enc: null, totp_last_step: null }));
}
