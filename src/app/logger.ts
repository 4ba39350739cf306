import pino, { type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';
import { CENSOR, logCensor } from './log-censor.ts';
import { luhnValid } from './luhn.ts';

/** Card fields and credentials never reach a log line, wherever they are nested, as object keys or query parameters. */
export const REDACT_KEYS = [
  'card_number',
  'card_cvv',
  'card_exp',
  'ccnumber',
  'cvv',
  'cvv2',
  'cvc',
  'cvc2',
  'security_code',
  'card_security_code',
  'ccexp',
  'security_key',
  'api_key',
  'webhook_secret',
  'password',
  'token',
];

/** Credentials a request or response carries in its headers: masked by name wherever they appear in a log call. */
const HEADER_KEYS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie'];

/** Masks REDACT_KEYS and HEADER_KEYS at any depth of what a log call is given (log-censor.ts). */
const censor = logCensor([...REDACT_KEYS, ...HEADER_KEYS]);

const KEYS = REDACT_KEYS.join('|');

/**
 * `cvv=987`, `payment[card_cvv]=987`, `payment.cvv=987`, and the same inside a URL-encoded URL
 * (`%3Fcvv%3D987`): the value is masked up to the next parameter, fragment, quote or space.
 */
const QUERY_SECRET = new RegExp(
  String.raw`((?:(?<![\w%-])|(?<=%3[fF]|%26))(?:[\w-]+(?:\]|%5[dD])?(?:\[|%5[bB]|\.))*(?:${KEYS})(?:\]|%5[dD])?(?:=|%3[dD]))(?!\[REDACTED)(?:[^&#\s"'\\%]|%(?!26)[0-9A-Fa-f]{2})+`,
  'gi',
);

/**
 * `"card_cvv":"987"` in JSON text a log line carries as a string (escaped quotes or not), and keys
 * nested deeper than the redact paths reach: pino's redaction only sees the object's own keys.
 */
const JSON_SECRET = new RegExp(String.raw`(?<key>(?<![\w-])(?:${KEYS})(?<esc>\\?)"\s*:\s*)(?<open>\\?")?(?!\[REDACTED)[^"\\,{}[\]\s]+`, 'gi');

/** The masked value stays a string of the JSON around it: quoted as its key is. */
function maskJsonValue(...args: unknown[]): string {
  const { key, esc, open } = args.at(-1) as { key: string; esc: string; open: string | undefined };
  return open ? `${key}${open}[REDACTED]` : `${key}${esc}"[REDACTED]${esc}"`;
}

/** Separators a card number is written or encoded with: space, dash, `+` and their URL escapes. */
const SEP = String.raw`(?:[ +-]|%20|%2[bBdD])`;

/**
 * A run of digit groups standing alone: not glued to letters, digits or `_` (hex and prefixed ids,
 * `ord_…`), not continuing or continued by a dashed identifier (a uuid's groups), not the decimals
 * of a number. A percent escape (`%20`) or a JSON escape (`\n`) before it counts as a boundary.
 */
const DIGIT_RUN = new RegExp(
  String.raw`(?<=^|\W|\\[nrt]|%[0-9A-Fa-f]{2})(?<!%|%[0-9A-Fa-f]|[A-Za-z0-9_]-|\d\.)\d+(?:${SEP}\d+)*(?!\w|-[A-Za-z0-9]|\.\d)`,
  'g',
);

/**
 * Numbers as cards are issued: 13 to 19 digits passing Luhn, 13 digits only on Visa (4…), a
 * leading 1 only on 15-digit (UATP) cards, never a leading 0 — so epoch timestamps in ms, µs and
 * ns (13, 16 and 19 digits starting with 1) are never taken for one.
 */
function isCardNumber(digits: string): boolean {
  if (digits.length < 13 || digits.length > 19 || digits[0] === '0') return false;
  if (digits.length === 13 && digits[0] !== '4') return false;
  if (digits[0] === '1' && digits.length !== 15) return false;
  return luhnValid(digits);
}

/**
 * The words of a run: digit groups joined by dashes stay one word, as an identifier's groups do (a
 * uuid of digits only is 32 digits, never a card); spaces, `+` and `%20` separate words.
 */
const WORD = /%[0-9A-Fa-f]{2}|\d+(?:(?:-|%2[dD])\d+)*/g;

/** Within one run, the longest stretch of whole words from each position that is a card number is masked. */
function maskRun(run: string): string {
  const words = [...run.matchAll(WORD)].filter((w) => w[0][0] !== '%').map((w) => ({ at: w.index, text: w[0], digits: w[0].replace(/-|%2[dD]/g, '') }));
  let out = '';
  let copied = 0;
  for (let i = 0; i < words.length; i++) {
    let end = -1;
    let digits = '';
    for (let j = i; j < words.length && digits.length <= 19; j++) {
      digits += words[j]!.digits;
      if (isCardNumber(digits)) end = j;
    }
    if (end < 0) continue;
    const last = words[end]!;
    out += `${run.slice(copied, words[i]!.at)}[REDACTED-PAN]`;
    copied = last.at + last.text.length;
    i = end;
  }
  return out + run.slice(copied);
}

/**
 * What any card number DIGIT_RUN finds contains: 13 digits, one separator at most between two.
 * Most log lines have none (a timestamp's longest run is 8 digits), and this test is a fraction
 * of the cost of DIGIT_RUN's lookbehinds at every position.
 */
const PAN_CANDIDATE = new RegExp(String.raw`\d(?:${SEP}?\d){12}`);

/** What QUERY_SECRET and JSON_SECRET both need: one of the keys' names, in any case. */
const ANY_SECRET_KEY = new RegExp(KEYS, 'i');

/** Masks card numbers written plain, spaced, dashed or URL-encoded; ids, timestamps and other numbers stay as they are. */
export function scrubPan(text: string): string {
  return PAN_CANDIDATE.test(text) ? text.replace(DIGIT_RUN, maskRun) : text;
}

/** Masks card fields and credentials named in query strings or embedded JSON text. */
export function scrubSecrets(text: string): string {
  return ANY_SECRET_KEY.test(text) ? text.replace(QUERY_SECRET, '$1[REDACTED]').replace(JSON_SECRET, maskJsonValue) : text;
}

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    // ISO time, not epoch milliseconds, so a log line reads the same everywhere.
    timestamp: pino.stdTimeFunctions.isoTime,
    // Card fields and credentials by name, at any depth, in one walk per line (log-censor.ts).
    formatters: { log: censor },
    // A child logger's own bindings skip formatters.log: their top-level keys are masked here
    // (no wildcard paths: pino would run those over every value of every line).
    redact: { paths: [...REDACT_KEYS, ...HEADER_KEYS], censor: CENSOR },
    // Last line of defence: card data inside a free-text field (an error message, a URL) is masked too.
    hooks: {
      streamWrite: (line: string) => scrubPan(scrubSecrets(line)),
    },
  };
}

export type LogFormat = 'json' | 'pretty';

/** Where log lines go and how they read: `fd` 1 (stdout) or 2 (stderr); `format` unset is pretty on a terminal, JSON otherwise. */
export interface LogOutput {
  fd?: 1 | 2;
  format?: LogFormat | undefined;
}

/**
 * A terminal gets one readable line per entry (pino-pretty, in this process: no worker thread);
 * anything else (a pipe, a file, a log collector) gets pino's JSON lines. Redaction and the PAN
 * scrub run before either (`streamWrite`), so the pretty lines are masked the same way.
 */
export function logDestination(out: LogOutput = {}): pino.DestinationStream {
  const fd = out.fd ?? 1;
  const tty = (fd === 1 ? process.stdout : process.stderr).isTTY === true;
  if ((out.format ?? (tty ? 'pretty' : 'json')) === 'json') return pino.destination({ fd });
  return pretty({ destination: fd, colorize: tty, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, sync: true });
}

export function createLogger(level = process.env.LOG_LEVEL || 'info', destination?: pino.DestinationStream) {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
