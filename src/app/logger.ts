import pino, { type LoggerOptions } from 'pino';

/** Card fields and credentials never reach a log line, wherever they are nested. */
export const REDACT_KEYS = ['card_number', 'card_cvv', 'card_exp', 'ccnumber', 'cvv', 'ccexp', 'security_key', 'api_key', 'webhook_secret', 'password', 'token'];

const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  ...REDACT_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`, `*.*.*.${k}`, `*.*.*.*.${k}`]),
];

// Any run of 13–19 digits (optionally spaced or dashed) is treated as a card number; digits after a
// decimal point (a latency like 10.1234567890123) are not.
const PAN_PATTERN = /(?<![\d.])(?:\d[ -]?){12,18}\d(?!\d)/g;

/** Masks anything that looks like a primary account number, keeping none of its digits. */
export function scrubPan(text: string): string {
  return text.replace(PAN_PATTERN, '[REDACTED-PAN]');
}

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    // ISO time, not epoch milliseconds: a 13-digit number would look like a card number to the scrubber.
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: redactPaths, censor: '[REDACTED]' },
    // Last line of defence: a PAN inside a free-text field (an error message, a URL) is masked too.
    hooks: {
      streamWrite: (line: string) => scrubPan(line),
    },
  };
}

export function createLogger(level = process.env.LOG_LEVEL || 'info', destination?: pino.DestinationStream) {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
