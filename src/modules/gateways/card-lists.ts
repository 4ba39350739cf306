import { configCache } from '../../app/cache.ts';
import { ApiError, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { ListQuery } from '../../app/schemas.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Executor, Store } from '../../db/database.ts';
import type { Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import { isUniqueViolation } from '../../db/helpers.ts';
import { listViews } from './pages.ts';
import * as repo from './repo.ts';
import type { BinBlock, CreateBinBlock, CreateTestCard, TestCard } from './schemas.ts';

const TEST_CARD_HASH_PURPOSE = 'test-card';
/** A team's card lists are cached whole up to this many entries; a longer list is asked per card (one indexed lookup). */
export const CACHED_CARD_LIST_MAX = 1_000;

/** A team's list as the cache holds it: every entry, or `partial` when the list is too long to hold. */
interface CachedList<T> {
  entries: T;
  partial: boolean;
}

function digitsOf(pan: string): string {
  return pan.replace(/\D/g, '');
}

export function binBlockView(r: Row<'bin_blacklist'>): BinBlock {
  return { object: 'bin_blacklist_entry', id: r.id, prefix: r.prefix, reason: r.reason, created_at: r.created_at.toISOString() };
}

export function testCardView(r: Row<'test_cards'>): TestCard {
  return { object: 'test_card', id: r.id, last4: r.last4, label: r.label, created_at: r.created_at.toISOString() };
}

/** The team's card lists: BIN prefixes it refuses, and card numbers (kept as keyed hashes) it treats as test cards. */
export class CardLists {
  /** Per team, the whole list (every card differs, so a per-card entry would rarely be hit); dropped after each add or delete here. */
  private readonly binLists;
  private readonly testCardLists;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
  ) {
    this.binLists = configCache<CachedList<Map<string, Readonly<Row<'bin_blacklist'>>>>>(store, 'bin_blacklist');
    this.testCardLists = configCache<CachedList<Set<string>>>(store, 'test_cards');
  }

  /** The blacklist entry whose prefix the card number starts with (the longest, when several do). */
  async isBinBlocked(db: Executor, teamId: string, pan: string): Promise<Row<'bin_blacklist'> | undefined> {
    const digits = digitsOf(pan);
    const candidates = [6, 7, 8].filter((n) => digits.length >= n).map((n) => digits.slice(0, n));
    const list = (await this.binLists.get(teamId, async () => {
      const rows = await repo.listBinPrefixes(db, teamId, CACHED_CARD_LIST_MAX + 1);
      return { entries: new Map(rows.slice(0, CACHED_CARD_LIST_MAX).map((r) => [r.prefix, Object.freeze(r)])), partial: rows.length > CACHED_CARD_LIST_MAX };
    }))!;
    if (list.partial) return repo.findBinBlock(db, teamId, candidates);
    return candidates.reverse().map((c) => list.entries.get(c)).find((r) => r !== undefined);
  }

  async isTestCard(db: Executor, teamId: string, pan: string): Promise<boolean> {
    const hash = this.secrets.keyedHash(TEST_CARD_HASH_PURPOSE, digitsOf(pan));
    const list = (await this.testCardLists.get(teamId, async () => {
      const hashes = await repo.listTestCardHashes(db, teamId, CACHED_CARD_LIST_MAX + 1);
      return { entries: new Set(hashes.slice(0, CACHED_CARD_LIST_MAX)), partial: hashes.length > CACHED_CARD_LIST_MAX };
    }))!;
    if (list.entries.has(hash)) return true;
    return list.partial && (await repo.findTestCardByHash(db, teamId, hash)) !== undefined;
  }

  // ---- BIN blacklist

  async addBinBlock(teamId: string, input: CreateBinBlock): Promise<BinBlock> {
    try {
      const row = await this.store.run((db) => repo.insertBinBlock(db, { id: newId('binBlock'), team_id: teamId, prefix: input.prefix, reason: input.reason ?? null }));
      this.binLists.delete(teamId);
      return binBlockView(row);
    } catch (err) {
      if (isUniqueViolation(err, 'bin_blacklist_team_id_prefix_key')) {
        throw new ApiError('conflict', `The prefix ${input.prefix} is already on the BIN blacklist.`, {
          fields: [{ path: 'prefix', message: 'is already on the blacklist' }],
        });
      }
      throw err;
    }
  }

  async deleteBinBlock(teamId: string, id: string): Promise<BinBlock & { deleted: true }> {
    const row = await this.store.run((db) => repo.deleteBinBlock(db, teamId, id));
    this.binLists.delete(teamId);
    if (!row) throw notFound('BIN blacklist entry');
    return { ...binBlockView(row), deleted: true };
  }

  listBinBlocks(teamId: string, query: ListQuery): Promise<Page<BinBlock>> {
    return listViews(this.store, 'bin_blacklist', teamId, query, (db, w) => repo.listBinBlocks(db, teamId, w), binBlockView);
  }

  // ---- test cards

  async addTestCard(teamId: string, input: CreateTestCard): Promise<TestCard> {
    const digits = input.card_number;
    try {
      const row = await this.store.run((db) =>
        repo.insertTestCard(db, {
          id: newId('testCard'),
          team_id: teamId,
          card_hash: this.secrets.keyedHash(TEST_CARD_HASH_PURPOSE, digits),
          last4: digits.slice(-4),
          label: input.label ?? null,
        }),
      );
      this.testCardLists.delete(teamId);
      return testCardView(row);
    } catch (err) {
      // The message never repeats the number, not even its last digits.
      if (isUniqueViolation(err, 'test_cards_team_id_card_hash_key')) {
        throw new ApiError('conflict', 'This card number is already listed as a test card.', {
          fields: [{ path: 'card_number', message: 'is already listed' }],
        });
      }
      throw err;
    }
  }

  async deleteTestCard(teamId: string, id: string): Promise<TestCard & { deleted: true }> {
    const row = await this.store.run((db) => repo.deleteTestCard(db, teamId, id));
    this.testCardLists.delete(teamId);
    if (!row) throw notFound('Test card');
    return { ...testCardView(row), deleted: true };
  }

  listTestCards(teamId: string, query: ListQuery): Promise<Page<TestCard>> {
    return listViews(this.store, 'test_cards', teamId, query, (db, w) => repo.listTestCards(db, teamId, w), testCardView);
  }
}
