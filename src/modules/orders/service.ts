import type { Store } from '../../db/database.ts';
import type { CatalogService } from '../catalog/service.ts';

export class OrdersService {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
  ) {}
}
