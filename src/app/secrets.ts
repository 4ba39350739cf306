import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';

/**
 * The service's master key: AES-256-GCM for provider credentials at rest, and the key of
 * keyed hashes (test cards, idempotency fingerprints). Embedded mode keeps one in the data dir.
 */
export class Secrets {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('CHECKSTAND_SECRET_KEY must decode to 32 bytes (64 hex characters or 44 base64)');
  }

  static fromString(value: string): Secrets {
    const buf = /^[0-9a-f]{64}$/i.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
    return new Secrets(buf);
  }

  /** Reads `<dataDir>/secret.key`, creating it (mode 0600) on first start. */
  static loadOrCreate(dataDir: string): Secrets {
    const file = path.join(dataDir, 'secret.key');
    fs.mkdirSync(dataDir, { recursive: true });
    if (!fs.existsSync(file)) {
      fs.writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    }
    return Secrets.fromString(fs.readFileSync(file, 'utf8').trim());
  }

  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
  }

  decrypt(sealed: string): string {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unrecognised sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }

  /** HMAC-SHA256 under a purpose-specific subkey, hex. */
  keyedHash(purpose: string, value: string): string {
    const subkey = createHmac('sha256', this.key).update(`checkstand:${purpose}`).digest();
    return createHmac('sha256', subkey).update(value).digest('hex');
  }
}

/** How many opened values a SealedValues keeps: every gateway and webhook endpoint a process serves, with room to spare. */
export const SEALED_VALUES_MAX = 2_000;

/**
 * What sealed secrets open to, opened once per sealed value instead of on every use: a gateway's
 * credentials on every charge, a webhook endpoint's signer on every delivery (AES-GCM, a JSON
 * parse or the signer's key decoding: 2–3 % of the API thread in the bench's profile, issue 13).
 * Keyed by the sealed text itself, which `encrypt()` makes anew (a random IV) for every value
 * stored: a rotated secret or changed credentials are another key, opened afresh; the old entry
 * is never used again and falls out when the cache is full (least recently used first). A value that does not
 * open (sealed under another key) throws as `decrypt()` does and is not kept. The plaintexts stay
 * in this process's memory, as the master key that opens them does.
 */
export class SealedValues<T extends NonNullable<unknown>> {
  private readonly opened: LRUCache<string, T>;

  constructor(
    private readonly secrets: Secrets,
    private readonly open: (plaintext: string) => T,
    max = SEALED_VALUES_MAX,
  ) {
    this.opened = new LRUCache<string, T>({ max });
  }

  get(sealed: string): T {
    const kept = this.opened.get(sealed);
    if (kept !== undefined) return kept;
    const value = this.open(this.secrets.decrypt(sealed));
    this.opened.set(sealed, value);
    return value;
  }

  /** How many are kept (the tests read it). */
  get size(): number {
    return this.opened.size;
  }
}

/** Unkeyed SHA-256 for values that are already high-entropy (API tokens). */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
