import type { AnyRoute } from '@tanstack/react-router';
import type { ComponentType } from 'react';

/**
 * One area of the dashboard (Orders, Customers, …): a folder `src/areas/<name>/` whose index.ts
 * exports one of these, listed in `src/areas/index.ts`. The navigation shows it only to users
 * holding `permission`; its routes answer "no access" to the others.
 */
export interface Area {
  /** Unique, lower case: `orders`. */
  key: string;
  /** The navigation's label: `Orders`. */
  label: string;
  /** A @tabler/icons-react icon (`IconReceipt`). */
  icon?: ComponentType<{ size?: number | string; stroke?: number; 'aria-hidden'?: boolean }>;
  /** The permission the area needs (src/modules/access/permissions.ts): `orders:view`. */
  permission: string;
  /** The area's landing path under /dashboard, default `/<key>`; its routes should live under it. */
  path?: string;
  /**
   * The area's routes, children of the app's root route (code-based TanStack Router routes):
   *   routes: (parent) => [createRoute({ getParentRoute: () => parent, path: 'orders', component: OrdersList }), …]
   */
  routes: (parent: AnyRoute) => AnyRoute[];
}

export function areaPath(area: Area): string {
  return area.path ?? `/${area.key}`;
}

/** A type helper so an area's index.ts gets checked: `export default defineArea({ … })`. */
export function defineArea(area: Area): Area {
  return area;
}
