/**
 * The dashboard's Developers and Team areas in headless Chromium against the real server with the
 * demo seed: the Team Owner rotates an API token (the new secret shown once; the old one refused by
 * the API afterwards), adds a webhook endpoint and replays one of its deliveries (the API then
 * shows a second attempt and the receiver a second request with the same webhook-id), and invites
 * a Customer Support Level 1 member (the API lists the invitation with that role). A last test
 * opens every page of both areas (screenshots).
 *
 * Needs Chromium (CHROMIUM_PATH, default /usr/bin/chromium). DASHBOARD_SCREENSHOTS=1 writes the
 * screenshots linked from the README to docs/screenshots/ (otherwise to $TMPDIR/checkstand-e2e/).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, login, type SessionClient } from '../support/harness.ts';
import { bootDashboardWith, completedOrder, drainAllUntil, drainWebhooksUntil, type Receiver, webhookReceiver } from './dashboard-developers-support.ts';
import { type DashboardEnv, launchChromium, loginAs, newPage } from './dashboard-support.ts';

const SCREENSHOTS = process.env.DASHBOARD_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : path.join(os.tmpdir(), 'checkstand-e2e');

let env: DashboardEnv;
let owner: SessionClient;
let browser: Browser;
let receiver: Receiver;
let context: BrowserContext | undefined;

beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  // Webhook deliveries go to a receiver on a loopback port: allowed here, explicitly.
  env = await bootDashboardWith({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_TIMEOUT_MS: '5000' });
  owner = await login(env.url, { email: env.seed.owner_email, password: env.seed.owner_password });
  receiver = await webhookReceiver();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await env?.close();
});
afterEach(async () => {
  await context?.close();
  context = undefined;
});

async function open(): Promise<{ page: Page; problems: string[] }> {
  const p = await newPage(browser);
  context = p.context;
  return p;
}

/** Picks `option` in the Mantine Select labelled `label` inside `scope`. */
async function choose(page: Page, scope: ReturnType<Page['getByRole']> | Page, label: string, option: string): Promise<void> {
  await scope.getByLabel(label, { exact: true }).first().click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

describe('dashboard: developers', () => {
  it('rotates an API token: the new secret is shown once, the API refuses the old one and lists the replacement', async () => {
    const created = await owner.post('/v1/api-tokens', { name: 'Warehouse sync', role: 'support_l1' });
    expect(created.status, created.text).toBe(201);
    const old = created.body.data as { id: string; secret: string };
    expect((await new ApiClient(env.url, old.secret).get('/v1/team')).status).toBe(200);

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/developers/tokens');
    const row = page.getByRole('table', { name: 'API tokens' }).locator(`tr[data-token="${old.id}"]`);
    await row.waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-api-tokens.png') });

    await row.getByRole('button', { name: 'Rotate Warehouse sync' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rotate “Warehouse sync”' });
    await choose(page, dialog, 'Grace period for the old secret', 'None: the old one stops at once');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/api-tokens/${old.id}/rotate`) && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: 'Rotate token' }).click(),
    ]);
    expect(answer.status()).toBe(201);
    expect(answer.request().postDataJSON()).toEqual({ grace_seconds: 0 });

    // The secret dialog: the new secret, a Copy button, and "you will not see it again".
    const secretDialog = page.getByRole('dialog', { name: 'Token “Warehouse sync” rotated' });
    await secretDialog.getByText('you will not see it again').waitFor();
    await secretDialog.getByRole('button', { name: 'Copy' }).waitFor();
    const secret = await secretDialog.getByLabel('Token', { exact: true }).inputValue();
    expect(secret).not.toBe(old.secret);
    expect(secret.length).toBeGreaterThan(20);
    expect(await secretDialog.getByTestId('rotation-note').textContent()).toContain('no longer works');
    await secretDialog.getByRole('button', { name: 'I have stored it' }).click();
    await secretDialog.waitFor({ state: 'hidden' });
    // Shown once: nowhere on the page once the dialog is closed.
    expect(await page.content()).not.toContain(secret);

    // The API: the old token is refused, the new one works, and the old one names its replacement.
    expect((await new ApiClient(env.url, old.secret).get('/v1/team')).status).toBe(401);
    expect((await new ApiClient(env.url, secret).get('/v1/team')).status).toBe(200);
    const oldNow = (await owner.get(`/v1/api-tokens/${old.id}`)).body.data;
    expect(oldNow.replaced_by).toBeTruthy();
    const replacement = (await owner.get(`/v1/api-tokens/${oldNow.replaced_by}`)).body.data;
    expect(replacement).toMatchObject({ name: 'Warehouse sync', role: 'support_l1', status: 'active' });
    expect(secret.endsWith(replacement.hint.slice(-4))).toBe(true);
    // The table shows both: the replacement active, the old one rotated.
    await page.getByRole('table', { name: 'API tokens' }).locator(`tr[data-token="${replacement.id}"]`).waitFor();
    await row.getByText('rotated: replaced by').waitFor();
    expect(problems).toEqual([]);
  });

  it('adds a webhook endpoint and replays a delivery: the API shows a second attempt, the receiver a second request', async () => {
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/developers/webhooks');
    await page.getByRole('heading', { name: 'Webhook endpoints', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a webhook endpoint' });
    await dialog.getByLabel('Endpoint URL').fill(receiver.url);
    await dialog.getByLabel('Description (optional)').fill('Order sync');
    await dialog.getByRole('switch', { name: 'All events, including types added later' }).uncheck();
    await dialog.getByRole('checkbox', { name: /^order\.completed/ }).check();
    const [created] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/v1/webhook-endpoints') && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: 'Add endpoint' }).click(),
    ]);
    expect(created.status()).toBe(201);
    const endpointId = (await created.json()).data.id as string;
    const secretDialog = page.getByRole('dialog', { name: 'Endpoint added: its signing secret' });
    expect(await secretDialog.getByLabel('Signing secret').inputValue()).toMatch(/^whsec_/);
    await secretDialog.getByRole('button', { name: 'I have stored it' }).click();
    await page.waitForURL(`${env.url}/dashboard/developers/webhooks/${endpointId}`);

    const endpoint = (await owner.get(`/v1/webhook-endpoints/${endpointId}`)).body.data;
    expect(endpoint).toMatchObject({ url: receiver.url, description: 'Order sync', event_types: ['order.completed'], is_active: true });

    // An order completes: one delivery, sent once.
    const orderNumber = await completedOrder(env);
    const deliveries = async () => (await owner.get(`/v1/webhook-endpoints/${endpointId}/deliveries`)).body.data as { id: string; status: string; event_id: string; attempt_count: number }[];
    await drainWebhooksUntil(env, async () => (await deliveries()).some((d) => d.status === 'succeeded'));
    const [delivery] = await deliveries();
    expect(delivery!.attempt_count).toBe(1);
    const event = (await owner.get(`/v1/events/${delivery!.event_id}`)).body.data;
    expect(event.data.object.order_number).toBe(orderNumber);
    expect(receiver.received.filter((id) => id === delivery!.event_id)).toHaveLength(1);

    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.getByRole('table', { name: 'Deliveries' }).locator(`tr[data-delivery="${delivery!.id}"]`);
    await expect.poll(() => row.getByTestId('attempt-count').textContent()).toBe('1');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-webhook-endpoint.png'), fullPage: true });

    const [replayed] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/webhook-deliveries/${delivery!.id}/replay`) && r.request().method() === 'POST'),
      row.getByRole('button', { name: `Replay ${delivery!.id}` }).click(),
    ]);
    expect(replayed.status()).toBe(202);
    await page.getByText('will be sent again now').waitFor();

    // The worker sends it again: a second attempt with the same webhook-id.
    await drainWebhooksUntil(env, async () => (await owner.get(`/v1/webhook-deliveries/${delivery!.id}`)).body.data.attempts.length === 2);
    const after = (await owner.get(`/v1/webhook-deliveries/${delivery!.id}`)).body.data;
    expect(after).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    expect(after.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([200, 200]);
    expect(receiver.received.filter((id) => id === delivery!.event_id)).toHaveLength(2);

    // The page shows it: two attempts in the log and in the attempts dialog.
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => row.getByTestId('attempt-count').textContent()).toBe('2');
    await row.getByRole('button', { name: `Attempts of ${delivery!.id}` }).click();
    const attempts = page.getByRole('dialog', { name: `Delivery ${delivery!.id}` }).getByRole('table', { name: 'Attempts' });
    await expect.poll(() => attempts.locator('tbody tr').count()).toBe(2);
    expect(problems).toEqual([]);
  });
});

describe('dashboard: team', () => {
  it('invites a Customer Support Level 1 member: the API lists the invitation with that role', async () => {
    const address = `lee.one.${Date.now()}@example.com`;
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/team/invitations');
    await page.getByRole('heading', { name: 'Invitations', level: 1 }).waitFor();
    await page.getByLabel('E-mail').fill(address);
    await choose(page, page, 'Role', 'Customer Support Level 1');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/v1/invitations') && r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Send invitation' }).click(),
    ]);
    expect(answer.status()).toBe(201);
    await page.locator(`tr[data-invitation="${address}"]`).getByText('Customer Support Level 1').waitFor();

    const invitations = (await owner.get('/v1/invitations')).body.data as { email: string; role: string; status: string }[];
    expect(invitations.filter((i) => i.email === address)).toEqual([expect.objectContaining({ email: address, role: 'support_l1', status: 'pending' })]);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-team-invitations.png') });
    expect(problems).toEqual([]);
  });

  it('opens every page of the Developers and Team areas without an error', async () => {
    await completedOrder(env); // a purchase confirmation in the mail outbox (an .eml file: no SMTP here)
    const mailList = async () => (await owner.get('/v1/mail?status=sent')).body.data as { id: string }[];
    await drainAllUntil(env, async () => (await mailList()).length > 0);
    const mails = await mailList();
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/developers/events');
    const pages: [string, string, string | null][] = [
      ['/developers/events', 'Events', 'dashboard-events.png'],
      ['/developers/mail', 'Mail outbox', 'dashboard-mail.png'],
      ['/developers/audit', 'Audit log', 'dashboard-audit-log.png'],
      ['/team', 'Members', 'dashboard-team-members.png'],
      ['/team/roles', 'Roles', 'dashboard-team-roles.png'],
      ['/team/providers', 'Providers', null],
      ['/team/settings', 'Team settings', null],
    ];
    for (const [to, heading, shot] of pages) {
      await page.goto(`${env.url}/dashboard${to}`);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await page.getByRole('link', { name: heading === 'Team settings' ? 'Settings' : heading, exact: true }).and(page.locator('[aria-current="page"]')).waitFor();
      if (shot) await page.screenshot({ path: path.join(SCREENSHOTS, shot), fullPage: shot !== 'dashboard-team-roles.png' });
    }
    // A message of the outbox: its .eml file on the server and its preview.
    await page.goto(`${env.url}/dashboard/developers/mail/${mails[0]!.id}`);
    await page.getByText('.eml file on the server').waitFor();
    const detail = (await owner.get(`/v1/mail/${mails[0]!.id}`)).body.data;
    expect(detail.eml_path).toMatch(/\.eml$/);
    await page.getByText(detail.eml_path).waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-mail-message.png'), fullPage: true });
    // An event's payload.
    const events = (await owner.get('/v1/events?limit=1')).body.data as { id: string }[];
    await page.goto(`${env.url}/dashboard/developers/events/${events[0]!.id}`);
    await page.getByRole('heading', { name: events[0]!.id, level: 1 }).waitFor();
    await page.getByLabel('Event payload').getByText(events[0]!.id).first().waitFor();
    expect(problems).toEqual([]);
  });
});
