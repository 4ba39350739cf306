/**
 * The sandbox's magic cards. All pass the Luhn check (so our own validation lets them through to the
 * gateway); the decline cards read as 4000 0000 0000 <response code><check digit>. Any other
 * Luhn-valid number is approved.
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
};

const CODE_BY_NUMBER = new Map<string, string>(
  (Object.keys(SANDBOX_CARDS) as SandboxCardName[]).map((name) => [SANDBOX_CARDS[name], SANDBOX_CARD_CODES[name]]),
);

export function sandboxCardCode(pan: string): string {
  return CODE_BY_NUMBER.get(pan) ?? '100';
}

export function isSlowCard(pan: string): boolean {
  return pan === SANDBOX_CARDS.slow;
}

export { luhnValid } from '../app/luhn.ts';
