import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openStore } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    snapshotPath: string;
    templateDatabase: string;
  }
}

/**
 * Migrates once. Embedded: a migrated PGlite data dir is dumped to a tarball that each test
 * file loads into memory. PostgreSQL (TEST_DATABASE_URL): a migrated template database that
 * each test file clones with CREATE DATABASE … TEMPLATE.
 */
export default async function setup(project: TestProject) {
  const tmp = path.resolve('.vitest-tmp');
  fs.mkdirSync(tmp, { recursive: true });
  const url = process.env.TEST_DATABASE_URL;

  if (!url) {
    const pglite = new PGlite();
    const store = await openStore({ dataDir: tmp, pglite });
    await migrateToLatest(store.rootHandle);
    await store.close();
    const dump = await pglite.dumpDataDir('none');
    await pglite.close();
    const snapshotPath = path.join(tmp, `snapshot-${process.pid}.tar`);
    fs.writeFileSync(snapshotPath, Buffer.from(await dump.arrayBuffer()));
    project.provide('snapshotPath', snapshotPath);
    project.provide('templateDatabase', '');
    return () => fs.rmSync(snapshotPath, { force: true });
  }

  const template = `checkstand_tpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  const store = await openStore({ databaseUrl: withDatabase(url, template), dataDir: tmp, poolMax: 2 });
  await migrateToLatest(store.rootHandle);
  await store.close();
  project.provide('snapshotPath', '');
  project.provide('templateDatabase', template);
  return async () => {
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`${template}%`]);
    for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`);
    await admin.end();
  };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
