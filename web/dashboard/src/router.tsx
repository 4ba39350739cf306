import { createRootRoute, createRoute, createRouter } from '@tanstack/react-router';
import { areas } from './areas/index.ts';
import { Home } from './shell/Home.tsx';
import { Layout } from './shell/Layout.tsx';
import { NotFound } from './shell/NotFound.tsx';
import { PUBLIC_PAGES } from './shell/PublicPages.tsx';

/** Code-based routes: the root (the shell, behind the login), Home, the account mails' pages, then every area's routes. */
export const rootRoute = createRootRoute({ component: Layout, notFoundComponent: NotFound });
const homeRoute = createRoute({ getParentRoute: () => rootRoute, path: '/', component: Home });
// The pages account mails link to; signed out, the login page shows them instead (shell/Login.tsx).
const publicRoutes = Object.entries(PUBLIC_PAGES).map(([path, page]) => createRoute({ getParentRoute: () => rootRoute, path, component: () => <>{page()}</> }));

export const router = createRouter({
  routeTree: rootRoute.addChildren([homeRoute, ...publicRoutes, ...areas.flatMap((a) => a.routes(rootRoute))]),
  basepath: '/dashboard',
  defaultPreload: 'intent',
  scrollRestoration: true,
});
