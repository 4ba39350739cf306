import type { AppContext } from '../../app/context.ts';
import type { Http } from '../../app/http.ts';

export function registerCatalogRoutes(_app: Http, _ctx: AppContext): void {}
