import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useCallback, useContext, useMemo } from 'react';
import { api, CheckstandError, type Schemas, setCsrfToken, unwrap } from './api.ts';

export type Session = Schemas['Session'];
export type Team = Schemas['Team'];

export interface SessionState {
  session: Session;
  /** The active team (name, time zone). */
  team: Team | null;
  /** The team's IANA time zone (UTC until the team is loaded). */
  timeZone: string;
  /** Whether the user holds a permission (`orders:refund`, …) on the active team. */
  can: (permission: string) => boolean;
  logout: () => Promise<void>;
  switchTeam: (teamId: string) => Promise<void>;
}

const SessionContext = createContext<SessionState | null>(null);

/** The signed-in user's session: inside the app shell only (the login page has none). */
export function useSession(): SessionState {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside <SessionProvider>');
  return s;
}

/** Shorthand: `const canRefund = useCan('orders:refund')`. */
export function useCan(permission: string): boolean {
  return useSession().can(permission);
}

export const SESSION_KEY = ['session'] as const;

/** GET /v1/session: the session, or null when there is none (401). */
export async function fetchSession(): Promise<Session | null> {
  const r = await api.GET('/v1/session');
  if (r.response.status === 401) {
    setCsrfToken(null);
    return null;
  }
  const session = unwrap(r).data;
  setCsrfToken(session.csrf_token);
  return session;
}

/** Loads the session; renders `signedOut` without one, else `children` with the session in context. */
export function SessionProvider({ children, signedOut, loading }: { children: ReactNode; signedOut: ReactNode; loading: ReactNode }) {
  const qc = useQueryClient();
  const sessionQuery = useQuery({ queryKey: SESSION_KEY, queryFn: fetchSession, staleTime: 60_000, retry: false });
  const session = sessionQuery.data ?? null;
  const teamQuery = useQuery({
    queryKey: ['team', session?.team.id],
    queryFn: async () => unwrap(await api.GET('/v1/team')).data,
    enabled: !!session,
    staleTime: 5 * 60_000,
  });

  const logout = useCallback(async () => {
    try {
      await api.DELETE('/v1/session');
    } finally {
      setCsrfToken(null);
      qc.clear();
      qc.setQueryData(SESSION_KEY, null);
    }
  }, [qc]);

  const switchTeam = useCallback(
    async (teamId: string) => {
      const next = unwrap(await api.POST('/v1/session/team', { body: { team_id: teamId } })).data;
      setCsrfToken(next.csrf_token);
      qc.clear();
      qc.setQueryData(SESSION_KEY, next);
    },
    [qc],
  );

  const value = useMemo<SessionState | null>(() => {
    if (!session) return null;
    const permissions = new Set(session.permissions);
    return {
      session,
      team: teamQuery.data ?? null,
      timeZone: teamQuery.data?.time_zone ?? 'UTC',
      can: (p) => permissions.has(p),
      logout,
      switchTeam,
    };
  }, [session, teamQuery.data, logout, switchTeam]);

  if (sessionQuery.isPending) return <>{loading}</>;
  if (sessionQuery.isError && !(sessionQuery.error instanceof CheckstandError && sessionQuery.error.status === 401)) {
    throw sessionQuery.error;
  }
  if (!value) return <>{signedOut}</>;
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}
