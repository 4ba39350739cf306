import type { ReactNode } from 'react';
import { AcceptInvitationPage } from './AcceptInvitation.tsx';
import { ResetPasswordPage } from './ResetPassword.tsx';

/**
 * The pages the account mails link to (`/dashboard/accept-invitation?token=…`,
 * `/dashboard/reset-password?token=…`): they work without a session, so the login page lets them
 * through (Login.tsx), and with one they show without the app shell (Layout.tsx).
 */
export const PUBLIC_PAGES: Record<string, () => ReactNode> = {
  '/accept-invitation': () => <AcceptInvitationPage />,
  '/reset-password': () => <ResetPasswordPage />,
};

/** The public page for a router path (`/accept-invitation`) or a browser path (`/dashboard/accept-invitation`), if it is one. */
export function publicPageFor(pathname: string): (() => ReactNode) | null {
  const path = pathname.replace(/^\/dashboard(?=\/)/, '').replace(/\/+$/, '');
  return PUBLIC_PAGES[path] ?? null;
}
