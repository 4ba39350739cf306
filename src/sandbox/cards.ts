/**
 * The sandbox's magic cards. All pass the Luhn check (so our own validation lets them through to the
 * gateway); the decline cards read as 4000 0000 0000 <response code><check digit>, the rebill cards
 * (approved when typed, declined when charged through the vault) as 4000 0000 0001 <code><check
 * digit>. Any other Luhn-valid number is approved.
 */
export const SANDBOX_CARDS = {
  approve: '4111111111111111',
  doNotHonor: '4000000000002016',
  insufficientFunds: '4000000000002024',
  overLimit: '4000000000002032',
  pickUp: '4000000000002503',
  lost: '4000000000002511',
  stolen: '4000000000002529',
  fraud: '4000000000002537',
  processingError: '4000000000004004',
  slow: '4000000000009995',
  /** Approved when typed (first payment, validate); a charge of its vault id declines 202 Insufficient funds (soft). */
  rebillSoftDecline: '4000000000012023',
  /** Approved when typed (first payment, validate); a charge of its vault id declines 261 Stop all recurring payments (hard). */
  rebillHardDecline: '4000000000012619',
} as const;

export type SandboxCardName = keyof typeof SANDBOX_CARDS;

/** The NMI response code each magic card answers with (the slow card is approved, late). */
export const SANDBOX_CARD_CODES: Readonly<Record<SandboxCardName, string>> = {
  approve: '100',
  doNotHonor: '201',
  insufficientFunds: '202',
  overLimit: '203',
  pickUp: '250',
  lost: '251',
  stolen: '252',
  fraud: '253',
  processingError: '400',
  slow: '100',
  rebillSoftDecline: '100',
  rebillHardDecline: '100',
};

/**
 * How the rebill cards answer a merchant-initiated charge (a sale on their `customer_vault_id`):
 * they read as 4000 0000 0001 <code><check digit>. Any other vaulted card answers as when typed.
 */
export const SANDBOX_REBILL_CODES: Readonly<Partial<Record<SandboxCardName, string>>> = {
  rebillSoftDecline: '202',
  rebillHardDecline: '261',
};

const CODE_BY_NUMBER = new Map<string, string>(
  (Object.keys(SANDBOX_CARDS) as SandboxCardName[]).map((name) => [SANDBOX_CARDS[name], SANDBOX_CARD_CODES[name]]),
);

export function sandboxCardCode(pan: string): string {
  return CODE_BY_NUMBER.get(pan) ?? '100';
}

const REBILL_CODE_BY_NUMBER = new Map<string, string>(
  (Object.keys(SANDBOX_REBILL_CODES) as SandboxCardName[]).map((name) => [SANDBOX_CARDS[name], SANDBOX_REBILL_CODES[name]!]),
);

/** The answer to a charge of a saved card (its vault id): the rebill cards decline here, every other card answers as when typed. */
export function sandboxVaultChargeCode(pan: string): string {
  return REBILL_CODE_BY_NUMBER.get(pan) ?? sandboxCardCode(pan);
}

export function isSlowCard(pan: string): boolean {
  return pan === SANDBOX_CARDS.slow;
}

export { luhnValid } from '../app/luhn.ts';
