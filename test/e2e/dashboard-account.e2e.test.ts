/**
 * The dashboard's public account pages in headless Chromium against the real server with the demo
 * seed: the link of an invitation mail opens the accept page (no session needed), the invitee sets a
 * name and password and lands signed in with the invited role, then signs in again with that
 * password; "Forgot password?" on the login page mails a reset link whose page sets a new password,
 * after which the new password signs in and the old one is refused.
 *
 * Needs Chromium (CHROMIUM_PATH, default /usr/bin/chromium).
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mailedLink } from '../support/account-mail.ts';
import { email } from '../support/fixtures.ts';
import { login, type SessionClient } from '../support/harness.ts';
import { bootDashboard, type DashboardEnv, invitedMember, launchChromium, loginAs, newPage, PASSWORD } from './dashboard-support.ts';

let env: DashboardEnv;
let owner: SessionClient;
let browser: Browser;
let context: BrowserContext | undefined;

beforeAll(async () => {
  env = await bootDashboard();
  owner = await login(env.url, { email: env.seed.owner_email, password: env.seed.owner_password });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
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

/** The refusal a step expected (and the browser's console line about it), nothing else. */
function expectOnly(seen: string[], refusal: string): void {
  const url = refusal.slice(refusal.indexOf('http'));
  expect(seen).toContain(refusal);
  expect(seen.filter((p) => !p.includes(url))).toEqual([]);
}

describe('dashboard: accept an invitation', () => {
  it('opens the invitation link signed out, accepts with a name and password, lands signed in with the role, and signs in again with that password', async () => {
    const address = email('lee');
    const invited = await owner.post('/v1/invitations', { email: address, role: 'support_l1' });
    expect(invited.status, invited.text).toBe(201);
    const link = await mailedLink(env.dataDir, address, 'accept-invitation');

    const { page, problems } = await open();
    await page.goto(env.url + link.pathAndQuery);
    await page.getByRole('heading', { name: 'Accept the invitation', level: 1 }).waitFor();
    await page.getByLabel('Your name').fill('Lee One');
    await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/v1/invitations/accept') && r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Accept and sign in' }).click(),
    ]);
    expect(answer.status()).toBe(201);
    await page.getByRole('navigation', { name: 'Main navigation' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/');
    const account = page.getByRole('button', { name: /^Lee One\b/ });
    await account.waitFor();
    await expect.poll(() => account.textContent()).toContain('Support Level 1');

    const members = (await owner.get('/v1/members')).body.data as { email: string; role: string; name: string }[];
    expect(members.find((m) => m.email === address)).toMatchObject({ role: 'support_l1', name: 'Lee One' });

    // The link works once: opened again, the page says so.
    // A fresh browser state (no session cookie): the link again.
    await page.context().clearCookies();
    await page.goto(env.url + link.pathAndQuery);
    await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and sign in' }).click();
    await page.getByRole('alert').getByText('This invitation cannot be used').waitFor();
    expectOnly(problems.splice(0), `HTTP 410: POST ${env.url}/v1/invitations/accept`);

    await loginAs(page, env.url, address, PASSWORD);
    await page.getByRole('button', { name: /^Lee One\b/ }).waitFor();
    expect(problems).toEqual([]);
  });
});

describe('dashboard: forgot password', () => {
  it('"Forgot password?" mails a link; its page sets a new password; the new one signs in, the old one is refused', async () => {
    const member = await invitedMember(env, 'support_l2', 'Sam Two');
    const { page, problems } = await open();
    await page.goto(`${env.url}/dashboard`);
    await page.getByRole('button', { name: 'Forgot password?' }).click();
    await page.getByRole('heading', { name: 'Reset your password', level: 1 }).waitFor();
    await page.getByLabel('E-mail').fill(member.email);
    const [asked] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/v1/password-resets') && r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Mail me a reset link' }).click(),
    ]);
    expect(asked.status()).toBe(202);
    await page.getByText('a reset link is on its way').waitFor();

    const link = await mailedLink(env.dataDir, member.email, 'reset-password');
    await page.goto(env.url + link.pathAndQuery);
    await page.getByRole('heading', { name: 'Choose a new password', level: 1 }).waitFor();
    const fresh = 'a brand new passphrase';
    await page.getByRole('textbox', { name: 'New password', exact: true }).fill(fresh);
    await page.getByRole('textbox', { name: 'Repeat the new password', exact: true }).fill(`${fresh}!`);
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByText('The two passwords differ').waitFor();
    await page.getByRole('textbox', { name: 'Repeat the new password', exact: true }).fill(fresh);
    const [confirmed] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/v1/password-resets/confirm') && r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Set the new password' }).click(),
    ]);
    expect(confirmed.status()).toBe(200);
    await page.getByRole('heading', { name: 'Password changed', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Sign in' }).click();

    // The old password is refused on the login page.
    await page.getByLabel('E-mail').fill(member.email);
    await page.getByRole('textbox', { name: 'Password' }).fill(member.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').getByText('Could not sign in').waitFor();
    expectOnly(problems.splice(0), `HTTP 401: POST ${env.url}/v1/sessions`);

    // The new one signs in.
    await page.getByRole('textbox', { name: 'Password' }).fill(fresh);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main navigation' }).waitFor();
    await page.getByRole('button', { name: /^Sam Two\b/ }).waitFor();
    expect(problems).toEqual([]);
  });
});
