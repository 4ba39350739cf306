import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../lib/api.ts';
import { useSession } from '../../lib/session.tsx';

/** The team's members (GET /v1/members, needs `users:view`): for the assignee pickers. */
export function useMembers() {
  const { can } = useSession();
  const q = useQuery({
    queryKey: ['members'],
    enabled: can('users:view'),
    staleTime: 5 * 60_000,
    queryFn: async () => unwrap(await api.GET('/v1/members')).data,
  });
  const members = q.data ?? [];
  return {
    members,
    /** Whether the list could be read (otherwise assignees show as ids). */
    available: q.isSuccess,
    nameOf: (id: string | null | undefined) => {
      if (!id) return 'Unassigned';
      const m = members.find((x) => x.id === id);
      return m ? `${m.name} (${m.role_name})` : id;
    },
    options: members.filter((m) => m.role !== 'affiliate').map((m) => ({ value: m.id, label: `${m.name} · ${m.role_name}` })),
  };
}
