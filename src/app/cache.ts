import { LRUCache } from 'lru-cache';
import type { Store } from '../db/database.ts';
import { configCacheTtlMsFrom } from './config.ts';

/** Entries per cache: enough for every hot team's configuration, a bound on memory for the rest. */
export const CONFIG_CACHE_MAX_ENTRIES = 5_000;

export interface ConfigCacheSettings {
  /** How long an entry is trusted (CONFIG_CACHE_TTL_MS); 0 turns caching off (every read goes to the database). */
  ttlMs: number;
  maxEntries: number;
}

/**
 * A per-process read-through cache of static configuration rows (tokens, campaigns, offers,
 * gateways, webhook endpoints, fraud rules…). The module that owns the rows owns the cache: it
 * reads through it and invalidates an entry after each of its own writes commits, so this process
 * sees a change on its very next request. Other processes sharing the database see it when their
 * entry expires: after at most `ttlMs`. Counters reserved in the statement that checks them
 * (volume caps, coupon redemptions, velocity counts) are never cached.
 *
 * A load that started before an invalidation does not store what it read: a write committed
 * while the read was in flight is never hidden for a TTL.
 */
export class ConfigCache<V extends object> {
  private readonly lru: LRUCache<string, V> | null;
  /** Bumped by every invalidation; a load stores its value only if none happened meanwhile. */
  private generation = 0;

  constructor(settings: ConfigCacheSettings) {
    this.lru = settings.ttlMs > 0 ? new LRUCache<string, V>({ max: settings.maxEntries, ttl: settings.ttlMs, updateAgeOnGet: false, updateAgeOnHas: false }) : null;
  }

  /** The cached value, or `load()`'s (stored unless undefined: absence is never cached). */
  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    if (!this.lru) return load();
    const hit = this.lru.get(key);
    if (hit !== undefined) return hit;
    const generation = this.generation;
    const value = await load();
    if (value !== undefined && generation === this.generation) this.lru.set(key, value);
    return value;
  }

  /** Several keys at once: the missing ones are loaded together (`load` answers those it found). */
  async getMany(keys: readonly string[], load: (missing: string[]) => Promise<Map<string, V>>): Promise<Map<string, V>> {
    const found = new Map<string, V>();
    const missing: string[] = [];
    for (const key of keys) {
      const hit = this.lru?.get(key);
      if (hit !== undefined) found.set(key, hit);
      else missing.push(key);
    }
    if (missing.length === 0) return found;
    const generation = this.generation;
    const loaded = await load(missing);
    for (const [key, value] of loaded) {
      found.set(key, value);
      if (this.lru && generation === this.generation) this.lru.set(key, value);
    }
    return found;
  }

  delete(key: string): void {
    this.generation++;
    this.lru?.delete(key);
  }

  clear(): void {
    this.generation++;
    this.lru?.clear();
  }
}

interface StoreCaches {
  settings: ConfigCacheSettings;
  caches: Map<string, ConfigCache<object>>;
}

/** Caches belong to the database they mirror: services of one process on one store share them (a token revoked through the API or the CLI's control socket is dropped from the cache authentication reads). */
const byStore = new WeakMap<Store, StoreCaches>();

function cachesOf(store: Store): StoreCaches {
  let entry = byStore.get(store);
  if (!entry) {
    entry = { settings: { ttlMs: configCacheTtlMsFrom(process.env), maxEntries: CONFIG_CACHE_MAX_ENTRIES }, caches: new Map() };
    byStore.set(store, entry);
  }
  return entry;
}

/**
 * Sets the TTL (and size) of the store's configuration caches; call before the services are built
 * (unset: CONFIG_CACHE_TTL_MS from the environment, else 1 s).
 */
export function configureConfigCaches(store: Store, settings: Partial<ConfigCacheSettings>): void {
  const entry = cachesOf(store);
  entry.settings = { ...entry.settings, ...settings };
  entry.caches.clear();
}

/** The store's cache called `name` (one per kind of row), created on first use. */
export function configCache<V extends object>(store: Store, name: string): ConfigCache<V> {
  const entry = cachesOf(store);
  let cache = entry.caches.get(name);
  if (!cache) {
    cache = new ConfigCache<object>(entry.settings);
    entry.caches.set(name, cache);
  }
  return cache as unknown as ConfigCache<V>;
}

/** Forgets every cached row of the store: for tests that change configuration with SQL behind the services' back. */
export function clearConfigCaches(store: Store): void {
  for (const cache of byStore.get(store)?.caches.values() ?? []) cache.clear();
}
