import type { Permission, ProviderKind, Role } from './permissions.ts';

export type ActorKind = 'token' | 'user' | 'provider_user' | 'system';

/**
 * Who is calling, on which team, with which permissions. Set by the authentication hook on every
 * /checkout and /v1 route (a bearer API token or a browser session); services scope by `teamId`.
 */
export interface Principal {
  teamId: string;
  kind: ActorKind;
  /** The token's id, or the user's. */
  actorId: string;
  /** How the audit log names the actor: the token's name and hint, or the user's e-mail. */
  label: string;
  tokenId: string | null;
  userId: string | null;
  sessionId: string | null;
  /** The provider organisation (a team of kind 'provider') a provider user acts for. */
  providerId: string | null;
  role: Role | ProviderKind | null;
  permissions: ReadonlySet<Permission>;
  /**
   * null: every affiliate. A list: the Affiliate role or an Affiliate Provider, who see only
   * these affiliate ids and never a throttled order.
   */
  affiliateIds: readonly string[] | null;
}

export function can(principal: Principal, permission: Permission): boolean {
  return principal.permissions.has(permission);
}
