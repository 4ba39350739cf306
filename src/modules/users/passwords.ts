import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../../app/errors.ts';

/**
 * Passwords are hashed with Node's built-in scrypt (RFC 7914), a memory-hard KDF: no native
 * dependency. The stored string carries its parameters and salt, so they can be raised later
 * and old hashes still verify: `scrypt$ln=15,r=8,p=1$<salt base64>$<hash base64>`.
 */
const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const SALT_BYTES = 16;
export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 200;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  // Node's default maxmem (32 MiB) is exactly 128·N·r at N=2^15, r=8: leave headroom.
  const opts: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, LOG_N, R, P);
  return `scrypt$ln=${LOG_N},r=${R},p=${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = /^scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/.exec(stored);
  if (!m) return false;
  const expected = Buffer.from(m[5]!, 'base64');
  const key = await derive(password, Buffer.from(m[4]!, 'base64'), Number(m[1]), Number(m[2]), Number(m[3]));
  return key.length === expected.length && timingSafeEqual(key, expected);
}

let dummy: Promise<string> | undefined;

/** Makes the throwaway hash before the first login needs it, so that first unknown address costs no extra hash. */
export async function warmPasswordCheck(): Promise<void> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  await dummy;
}

/**
 * Verifies against a throwaway hash: a login for an unknown e-mail costs the same scrypt work as
 * a wrong password, so the answer's timing does not tell whether the address has an account.
 */
export async function burnPasswordCheck(password: string): Promise<void> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(password, await dummy);
}

/** A short list of the most used passwords (of ten characters or more, the only ones the length rule lets through). */
const COMMON = new Set([
  '1234567890',
  '12345678910',
  '123456789a',
  '0123456789',
  '1q2w3e4r5t',
  '1qaz2wsx3edc',
  'qwertyuiop',
  'qwerty1234',
  'qwerty12345',
  'asdfghjkl;',
  'password12',
  'password123',
  'password1234',
  'passw0rd123',
  'iloveyou12',
  'letmein123',
  'welcome123',
  'changeme123',
  'administrator',
  'admin12345',
  'qazwsxedcrfv',
  'football123',
  'baseball123',
  'princess123',
  'sunshine123',
  'trustno1234',
  'checkstand',
  'checkstand1',
  'checkstand123',
  'aaaaaaaaaa',
]);

/** ≥ 10 characters, not the e-mail (or its name part), not a common password: else 422 weak_password. */
export function checkPasswordPolicy(password: string, email: string): void {
  const p = password.toLowerCase();
  const e = email.trim().toLowerCase();
  const reason =
    password.length < MIN_PASSWORD_LENGTH ? `at least ${MIN_PASSWORD_LENGTH} characters`
    : password.length > MAX_PASSWORD_LENGTH ? `at most ${MAX_PASSWORD_LENGTH} characters`
    : p === e || p === e.split('@')[0] ? 'not your e-mail address'
    : COMMON.has(p) || /^(.)\1+$/.test(p) ? 'not one of the most common passwords'
    : null;
  if (reason) {
    throw new ApiError('weak_password', `The password is too weak: it must be ${reason}.`, { fields: [{ path: 'password', message: `must be ${reason}` }] });
  }
}
