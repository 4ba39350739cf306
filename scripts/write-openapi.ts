/**
 * Writes the API's OpenAPI document (what GET /openapi.json serves) to a file, from a server
 * built in process on an empty in-memory database: nothing listens, nothing is migrated.
 * Usage: tsx scripts/write-openapi.ts <out.json>
 */
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { loadConfig } from '../src/app/config.ts';
import { createContext } from '../src/app/context.ts';
import { createLogger } from '../src/app/logger.ts';
import { Secrets } from '../src/app/secrets.ts';
import { buildServer } from '../src/app/server.ts';
import { openStore } from '../src/db/database.ts';

const out = process.argv[2];
if (!out) {
  console.error('usage: tsx scripts/write-openapi.ts <out.json>');
  process.exit(2);
}
const pglite = new PGlite();
const store = await openStore({ dataDir: 'node_modules/.cache/checkstand', pglite });
const ctx = createContext(loadConfig({}), store, new Secrets(Buffer.alloc(32, 0)));
const app = await buildServer(ctx, createLogger('silent'));
await app.ready();
const doc = app.swagger();
fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
fs.writeFileSync(out, `${JSON.stringify(doc, null, 2)}\n`);
await app.close();
await ctx.services.mail.close();
await store.close();
