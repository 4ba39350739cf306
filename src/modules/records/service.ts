import type { Store } from '../../db/database.ts';

export class RecordsService {
  constructor(private readonly store: Store) {}
}
