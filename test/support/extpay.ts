/**
 * Paying an extpay checkout the way a customer does: the form of the sandbox's hosted purchase page
 * at the checkout's `purchase_url`. Answers the receipt id the provider hands back on the return
 * URL, or null when the page did not send the customer back (a declined card stays on the page).
 */
export async function payOnHostedPage(purchaseUrl: string, card: string, opts: { saveForLater?: boolean; email?: string } = {}): Promise<string | null> {
  const u = new URL(purchaseUrl);
  const form = new URLSearchParams({
    session: u.searchParams.get('session')!,
    email: opts.email ?? 'ada@example.com',
    name: 'Ada Lovelace',
    card_number: card,
    return_url: 'https://shop.example/thanks',
  });
  if (opts.saveForLater ?? true) form.set('setup_future_usage', 'off_session');
  const res = await fetch(`${u.origin}${u.pathname}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
  const loc = res.headers.get('location');
  return loc ? new URL(loc).searchParams.get('payment_id') : null;
}
