/**
 * NMI's `response_code` values (Direct Post API, "Response Codes" appendix), each mapped once to
 * what the payment core does with it.
 *
 * - soft_decline: the issuer said no this time; another gateway (another acquirer) may say yes,
 *   so `retryable` is true and the router may salvage the sale.
 * - hard_decline: the card itself is the problem (lost, stolen, bad data, expired); never retried.
 * - error: the gateway or processor failed. Retryable where nothing can have been charged and
 *   another gateway may succeed; not retryable where a retry could double charge (duplicate) or
 *   the request itself is refused (300 covers authentication, validation and duplicates).
 */
export type NmiOutcome = 'approved' | 'soft_decline' | 'hard_decline' | 'error';

export interface NmiStatus {
  outcome: NmiOutcome;
  retryable: boolean;
  text: string;
}

export const NMI_RESPONSE_CODES = {
  '100': { outcome: 'approved', retryable: false, text: 'Transaction was approved.' },

  '200': { outcome: 'soft_decline', retryable: true, text: 'Transaction was declined by processor.' },
  '201': { outcome: 'soft_decline', retryable: true, text: 'Do not honor.' },
  '202': { outcome: 'soft_decline', retryable: true, text: 'Insufficient funds.' },
  '203': { outcome: 'soft_decline', retryable: true, text: 'Over limit.' },
  '204': { outcome: 'soft_decline', retryable: true, text: 'Transaction not allowed.' },

  '220': { outcome: 'hard_decline', retryable: false, text: 'Incorrect payment information.' },
  '221': { outcome: 'hard_decline', retryable: false, text: 'No such card issuer.' },
  '222': { outcome: 'hard_decline', retryable: false, text: 'No card number on file with issuer.' },
  '223': { outcome: 'hard_decline', retryable: false, text: 'Expired card.' },
  '224': { outcome: 'hard_decline', retryable: false, text: 'Invalid expiration date.' },
  '225': { outcome: 'hard_decline', retryable: false, text: 'Invalid card security code.' },

  // A referral: the issuer wants a call, which a funnel cannot make; another acquirer may approve.
  '240': { outcome: 'soft_decline', retryable: true, text: 'Call issuer for further information.' },

  '250': { outcome: 'hard_decline', retryable: false, text: 'Pick up card.' },
  '251': { outcome: 'hard_decline', retryable: false, text: 'Lost card.' },
  '252': { outcome: 'hard_decline', retryable: false, text: 'Stolen card.' },
  '253': { outcome: 'hard_decline', retryable: false, text: 'Fraudulent card.' },

  '260': { outcome: 'soft_decline', retryable: true, text: 'Declined with further instructions available. (See response text)' },
  // The cardholder revoked the merchant's authority to charge (Visa R0/R1, Mastercard "do not try
  // again"): card-network rules forbid re-presenting the charge anywhere, so these are hard.
  '261': { outcome: 'hard_decline', retryable: false, text: 'Declined-Stop all recurring payments.' },
  '262': { outcome: 'hard_decline', retryable: false, text: 'Declined-Stop this recurring program.' },
  '263': { outcome: 'soft_decline', retryable: true, text: 'Declined-Update cardholder data available.' },
  '264': { outcome: 'soft_decline', retryable: true, text: 'Declined-Retry in a few days.' },

  '300': { outcome: 'error', retryable: false, text: 'Transaction was rejected by gateway.' },

  '400': { outcome: 'error', retryable: true, text: 'Transaction error returned by processor.' },
  '410': { outcome: 'error', retryable: true, text: 'Invalid merchant configuration.' },
  '411': { outcome: 'error', retryable: true, text: 'Merchant account is inactive.' },
  '420': { outcome: 'error', retryable: true, text: 'Communication error.' },
  '421': { outcome: 'error', retryable: true, text: 'Communication error with issuer.' },
  // The processor saw this charge before: trying elsewhere could charge the card twice.
  '430': { outcome: 'error', retryable: false, text: 'Duplicate transaction at processor.' },
  '440': { outcome: 'error', retryable: true, text: 'Processor format error.' },
  '441': { outcome: 'error', retryable: true, text: 'Invalid transaction information.' },
  '460': { outcome: 'error', retryable: true, text: 'Processor feature not available.' },
  '461': { outcome: 'error', retryable: true, text: 'Unsupported card type.' },
} as const satisfies Record<string, NmiStatus>;

export type NmiResponseCode = keyof typeof NMI_RESPONSE_CODES;

export function isKnownNmiCode(code: string): code is NmiResponseCode {
  return Object.hasOwn(NMI_RESPONSE_CODES, code);
}

/**
 * The one place an NMI response code becomes an outcome. Codes NMI adds later still land somewhere
 * safe: an unknown 2xx is a decline we do not salvage, anything else unknown an error we do not retry.
 */
export function classifyNmi(code: string): NmiStatus {
  const c = code.trim();
  if (isKnownNmiCode(c)) return NMI_RESPONSE_CODES[c];
  if (/^2\d\d$/.test(c)) return { outcome: 'soft_decline', retryable: false, text: 'Transaction was declined.' };
  return { outcome: 'error', retryable: false, text: 'Unknown gateway response.' };
}
