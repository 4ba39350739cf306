/** What we keep of a card: never the number or the CVV. */
export interface CardSummary {
  brand: string;
  bin: string;
  last4: string;
  exp: string;
}

/** The card as it travels from the request to the gateway adapter, in memory only. */
export interface CardInput {
  number: string;
  exp: string;
  cvv: string;
}

export function cardBrand(pan: string): string {
  if (/^4/.test(pan)) return 'visa';
  if (/^(5[1-5]|2(2[2-9]|[3-6]\d|7[01]|720))/.test(pan)) return 'mastercard';
  if (/^3[47]/.test(pan)) return 'amex';
  if (/^(6011|65|64[4-9])/.test(pan)) return 'discover';
  if (/^35(2[89]|[3-8])/.test(pan)) return 'jcb';
  if (/^3(0[0-5]|[68])/.test(pan)) return 'diners';
  return 'unknown';
}

export function summarizeCard(card: CardInput): CardSummary {
  return { brand: cardBrand(card.number), bin: card.number.slice(0, 6), last4: card.number.slice(-4), exp: card.exp };
}
