import fs from 'node:fs/promises';
import path from 'node:path';
import { type Kysely, type Migration, type MigrationProvider, type MigrationResultSet, Migrator, sql } from 'kysely';
import { fromRoot } from '../app/project-root.ts';

const MIGRATIONS_DIR = fromRoot('src/db/migrations');

/** Plain SQL files in src/db/migrations, applied in name order. */
class SqlFileMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await fs.readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
    const out: Record<string, Migration> = {};
    for (const file of files) {
      const text = await fs.readFile(path.join(MIGRATIONS_DIR, file), 'utf8');
      out[file.replace(/\.sql$/, '')] = {
        // No bind parameters: the driver sends it as one simple query, several statements allowed.
        up: async (db) => {
          await sql.raw(text).execute(db);
        },
      };
    }
    return out;
  }
}

function migrator(db: Kysely<any>): Migrator {
  return new Migrator({ db, provider: new SqlFileMigrationProvider() });
}

export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const result: MigrationResultSet = await migrator(db).migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`migration ${failed ?? '(unknown)'} failed: ${String((result.error as Error).message ?? result.error)}`);
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Names of migrations not yet applied (empty when the schema is current). */
export async function pendingMigrations(db: Kysely<any>): Promise<string[]> {
  const all = await migrator(db).getMigrations();
  return all.filter((m) => !m.executedAt).map((m) => m.name);
}
