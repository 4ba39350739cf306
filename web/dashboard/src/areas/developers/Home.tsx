import { Navigate } from '@tanstack/react-router';
import { useSession } from '../../lib/session.tsx';
import { DEV_PAGES } from './ui.tsx';

/** /developers: the first section the user may open. */
export function DevelopersHome() {
  const { can } = useSession();
  const first = DEV_PAGES.find((p) => can(p.permission)) ?? DEV_PAGES[1]!;
  return <Navigate to={first.to} replace />;
}

