/**
 * Where attachment bytes live: one small interface, two stores. Embedded mode (PGlite) keeps files
 * under `<data dir>/attachments/<team>/<key>` so the in-process database stays small; PostgreSQL mode
 * keeps them in `attachment_blobs` (bytea), so every `serve` process sees them and a database backup
 * holds them. An S3-compatible store would be a third implementation of this interface (put the
 * object, get it, delete it), chosen here; nothing else changes.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { DatabaseKind, Executor, Tx } from '../../db/database.ts';
import './tables.ts';

export interface AttachmentStorage {
  readonly kind: 'database' | 'file';
  /** Runs inside the transaction that records the attachment row. */
  put(trx: Tx, teamId: string, key: string, bytes: Buffer): Promise<void>;
  get(db: Executor, teamId: string, key: string): Promise<Buffer | undefined>;
  /** After that transaction failed: removes what `put` wrote outside it (nothing for the database store). */
  discard(teamId: string, key: string): Promise<void>;
}

export class DatabaseAttachmentStorage implements AttachmentStorage {
  readonly kind = 'database' as const;

  async put(trx: Tx, teamId: string, key: string, bytes: Buffer): Promise<void> {
    await trx.insertInto('attachment_blobs').values({ key, team_id: teamId, data: bytes }).execute();
  }

  async get(db: Executor, teamId: string, key: string): Promise<Buffer | undefined> {
    const row = await db.selectFrom('attachment_blobs').select('data').where('team_id', '=', teamId).where('key', '=', key).executeTakeFirst();
    return row ? Buffer.from(row.data) : undefined;
  }

  async discard(): Promise<void> {}
}

export class FileAttachmentStorage implements AttachmentStorage {
  readonly kind = 'file' as const;

  constructor(private readonly root: string) {}

  /** Team ids and keys are ours ([0-9A-Za-z_]); anything else is a bug, never a path. */
  private fileOf(teamId: string, key: string): string {
    if (!/^\w+$/.test(teamId) || !/^\w+$/.test(key)) throw new Error('attachment storage: unexpected key');
    return path.join(this.root, teamId, key);
  }

  /** Written beside its final name and renamed: a reader never sees half a file. */
  async put(_trx: Tx, teamId: string, key: string, bytes: Buffer): Promise<void> {
    const file = this.fileOf(teamId, key);
    await fs.mkdir(path.dirname(file), { recursive: true });
    const partial = `${file}.${randomBytes(6).toString('hex')}.part`;
    await fs.writeFile(partial, bytes, { mode: 0o600 });
    await fs.rename(partial, file);
  }

  async get(_db: Executor, teamId: string, key: string): Promise<Buffer | undefined> {
    try {
      return await fs.readFile(this.fileOf(teamId, key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async discard(teamId: string, key: string): Promise<void> {
    await fs.rm(this.fileOf(teamId, key), { force: true });
  }
}

export function attachmentStorageFor(kind: DatabaseKind, dataDir: string): AttachmentStorage {
  return kind === 'pglite' ? new FileAttachmentStorage(path.join(dataDir, 'attachments')) : new DatabaseAttachmentStorage();
}
