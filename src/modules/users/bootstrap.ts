import { ApiError } from '../../app/errors.ts';
import { randomToken } from '../../app/ids.ts';
import { isUniqueViolation } from '../../db/helpers.ts';
import type { Role } from '../access/permissions.ts';
import { findTeam } from '../teams/repo.ts';
import type { UsersDeps } from './deps.ts';
import { checkPasswordPolicy, hashPassword } from './passwords.ts';
import * as repo from './repo.ts';
import { userView } from './views.ts';

export interface CreateUserInput {
  teamId: string;
  email: string;
  password: string;
  name?: string | undefined;
  /** Default: 'owner' for a team without one (its first user is its Team Owner). */
  role?: Role | undefined;
}

/**
 * The operator's way in (`checkstand user create`, the demo seed): a new account and its
 * membership in one transaction. The first user of a team becomes its Team Owner; after that a
 * role must be named (members normally join by invitation).
 */
export async function createUser(d: UsersDeps, input: CreateUserInput) {
  const email = input.email.trim();
  if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw new ApiError('validation_failed', `Not an e-mail address: ${email}`);
  checkPasswordPolicy(input.password, email);
  const passwordHash = await hashPassword(input.password);
  try {
    return await d.store.transaction(async (trx) => {
      if (!(await findTeam(trx, input.teamId))) throw new ApiError('not_found', `Team ${input.teamId} not found.`);
      if (await repo.findUserByEmail(trx, email)) throw new ApiError('email_taken', `${email} already has an account: invite it to the team instead.`);
      const owner = await repo.findOwner(trx, input.teamId);
      const role = input.role ?? (owner ? null : 'owner');
      if (!role) throw new ApiError('owner_required', `Team ${input.teamId} already has its Team Owner: name the new user's role (--role).`);
      if (role === 'owner' && owner) throw new ApiError('owner_required', `Team ${input.teamId} already has its Team Owner; ownership moves only by a transfer.`);
      const user = await repo.insertUser(trx, { id: `usr_${randomToken()}`, email, name: input.name?.trim() ?? '', password_hash: passwordHash });
      await repo.insertMembership(trx, { id: `mem_${randomToken()}`, team_id: input.teamId, user_id: user.id, role });
      return { ...userView(user), team_id: input.teamId, role };
    });
  } catch (err) {
    if (isUniqueViolation(err, 'users_email')) throw new ApiError('email_taken', `${email} already has an account.`);
    if (isUniqueViolation(err, 'memberships_one_owner')) throw new ApiError('owner_required', `Team ${input.teamId} already has its Team Owner.`);
    throw err;
  }
}
