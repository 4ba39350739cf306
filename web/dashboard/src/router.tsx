import { createRootRoute, createRoute, createRouter } from '@tanstack/react-router';
import { areas } from './areas/index.ts';
import { Home } from './shell/Home.tsx';
import { Layout } from './shell/Layout.tsx';
import { NotFound } from './shell/NotFound.tsx';

/** Code-based routes: the root (the shell, behind the login), Home, then every area's routes. */
export const rootRoute = createRootRoute({ component: Layout, notFoundComponent: NotFound });
const homeRoute = createRoute({ getParentRoute: () => rootRoute, path: '/', component: Home });

export const router = createRouter({
  routeTree: rootRoute.addChildren([homeRoute, ...areas.flatMap((a) => a.routes(rootRoute))]),
  basepath: '/dashboard',
  defaultPreload: 'intent',
  scrollRestoration: true,
});
