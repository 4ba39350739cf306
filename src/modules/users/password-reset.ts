import type { MailLog } from './mailer.ts';
import { ApiError } from '../../app/errors.ts';
import { randomToken } from '../../app/ids.ts';
import { sha256Hex } from '../../app/secrets.ts';
import { baseUrlOf, TOKEN_LENGTH, type UsersDeps } from './deps.ts';
import { checkPasswordPolicy, hashPassword } from './passwords.ts';
import * as repo from './repo.ts';

export const RESET_TTL_MINUTES = 60;
const RESET_PREFIX = 'csr_';

/**
 * Answers before any work (the route says 202 whatever happens): the address is looked up, the link
 * written and mailed after the answer, so neither the answer nor its timing tells whether the
 * address has an account. Only an account gets a link; a new link voids the earlier ones. A failure
 * of that later work is logged, never answered.
 */
export function requestPasswordReset(d: UsersDeps, email: string, log?: MailLog): void {
  setImmediate(() => {
    mailPasswordReset(d, email, log).catch((err: unknown) => log?.warn({ err: { message: (err as Error).message } }, 'password reset could not be prepared'));
  });
}

async function mailPasswordReset(d: UsersDeps, email: string, log?: MailLog): Promise<void> {
  const user = await d.store.run((db) => repo.findUserByEmail(db, email));
  if (!user) return;
  const token = RESET_PREFIX + randomToken(TOKEN_LENGTH);
  await d.store.transaction(async (trx) => {
    await repo.voidPasswordResets(trx, user.id);
    await repo.insertPasswordReset(trx, {
      id: `pwr_${randomToken()}`,
      user_id: user.id,
      token_hash: sha256Hex(token),
      expires_at: new Date(Date.now() + RESET_TTL_MINUTES * 60_000),
    });
  });
  const base = baseUrlOf(d.config);
  await d.mailer.send(
    {
      to: user.email,
      subject: 'Reset your Checkstand password',
      text: [
        'Someone (hopefully you) asked to reset the password of your Checkstand account.',
        '',
        `Choose a new password: ${base}/dashboard/reset-password?token=${token}`,
        '',
        `(Or POST ${base}/v1/password-resets/confirm with {"token": "${token}", "password": "…"}.)`,
        `The link works once, for ${RESET_TTL_MINUTES} minutes. Every session of the account is logged out when it is used.`,
        'If you did not ask for it, ignore this mail: your password stays as it is.',
      ].join('\n'),
    },
    log,
  );
}

/** The token (once, within its time) sets a new password, ends every session of the user and lifts a login lock. */
export async function confirmPasswordReset(d: UsersDeps, token: string, password: string): Promise<{ sessions_revoked: number }> {
  const hash = sha256Hex(token);
  const reset = await d.store.run((db) => repo.lockPasswordResetByHash(db, hash));
  if (!reset) throw new ApiError('not_found', 'Password reset link not found.');
  const user = await d.store.run((db) => repo.findUser(db, reset.user_id));
  if (!user) throw new ApiError('not_found', 'Password reset link not found.');
  checkPasswordPolicy(password, user.email);
  const passwordHash = await hashPassword(password);
  return d.store.transaction(async (trx) => {
    const locked = await repo.lockPasswordResetByHash(trx, hash);
    if (!locked || locked.used_at || locked.expires_at.getTime() <= Date.now()) {
      throw new ApiError('reset_expired', 'This password reset link has expired or was already used: ask for a new one.');
    }
    await repo.markPasswordResetUsed(trx, locked.id);
    await repo.updateUser(trx, user.id, { password_hash: passwordHash, failed_logins: 0, locked_until: null });
    return { sessions_revoked: await repo.revokeUserSessions(trx, user.id) };
  });
}
