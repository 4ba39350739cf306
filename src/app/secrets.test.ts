import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { SealedValues, Secrets } from './secrets.ts';

describe('SealedValues', () => {
  const secrets = new Secrets(randomBytes(32));

  it('opens a sealed value once, and a value sealed anew (a rotation) afresh', () => {
    const decrypt = vi.spyOn(secrets, 'decrypt');
    const values = new SealedValues(secrets, (plaintext) => ({ opened: plaintext }));
    const first = secrets.encrypt('key-1');
    const a = values.get(first);
    expect(a).toEqual({ opened: 'key-1' });
    expect(values.get(first)).toBe(a);
    expect(decrypt).toHaveBeenCalledTimes(1);

    // The same plaintext sealed again is another sealed text (a random IV): opened again, its own entry.
    const rotated = secrets.encrypt('key-2');
    expect(values.get(rotated)).toEqual({ opened: 'key-2' });
    expect(values.get(first)).toBe(a);
    expect(decrypt).toHaveBeenCalledTimes(2);
    decrypt.mockRestore();
  });

  it('keeps none that does not open, and throws as decrypt() does', () => {
    const values = new SealedValues(secrets, (plaintext) => plaintext);
    const other = new Secrets(randomBytes(32)).encrypt('sealed elsewhere');
    expect(() => values.get(other)).toThrow();
    expect(() => values.get('not-sealed')).toThrow(/unrecognised sealed secret/);
    expect(values.size).toBe(0);
  });

  it('keeps at most max values, dropping the least recently used first', () => {
    const values = new SealedValues(secrets, (plaintext) => ({ plaintext }), 3);
    const sealed = ['a', 'b', 'c', 'd'].map((p) => secrets.encrypt(p));
    const opened = sealed.map((s) => values.get(s));
    expect(values.size).toBe(3);
    expect(values.get(sealed[3]!)).toBe(opened[3]);
    // 'a' fell out: opened again, a new object.
    const again = values.get(sealed[0]!);
    expect(again).toEqual({ plaintext: 'a' });
    expect(again).not.toBe(opened[0]);
    expect(values.size).toBe(3);
  });
});
