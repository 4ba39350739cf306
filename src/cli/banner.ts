import type { DemoSeed } from '../app/seed.ts';

/** A token `start` prints: the first one of a fresh demo, or one minted because the start that made the first never printed it. */
export interface PrintedToken {
  secret: string;
  teamId: string;
  /** The demo Team Owner made with it (first start only): its password is shown once. */
  owner?: { email: string; password: string } | undefined;
  /** The token a start made and never printed (now revoked). */
  replaces?: string | undefined;
}

export interface BannerInput {
  baseUrl: string;
  /** `embedded database in …` or `PostgreSQL at …`. */
  database: string;
  sandboxUrl?: string | undefined;
  demo: boolean;
  /** The demo team, when there is one: the token advice names it. */
  demoTeamId?: string | undefined;
  token?: PrintedToken | undefined;
  /** The control socket `checkstand token create` reaches while this runs (embedded database). */
  controlSocket?: string | undefined;
  /** Ids for the "Try it" lines, on the start that printed a token. */
  seed?: Pick<DemoSeed, 'campaign_id' | 'offers'> | undefined;
}

/** What `start` and `serve` print on stdout once listening, on every start: where everything is and how to get a token. */
export function banner(b: BannerInput): string {
  const team = b.token?.teamId ?? b.demoTeamId;
  const create = `npx checkstand token create --team ${team ?? '<team_id>'}`;
  const lines = ['', `  Checkstand is running (${b.database}).`, '', `  API          ${b.baseUrl}`, `  API docs     ${b.baseUrl}/docs`];
  if (b.demo) lines.push(`  Demo shop    ${b.baseUrl}/demo   (a funnel calling this API: checkout, upsell, thank-you)`);
  lines.push(`  Dashboard    ${b.baseUrl}/dashboard   (the merchant dashboard: log in with a team member's e-mail and password)`);
  lines.push(`  Metrics      ${b.baseUrl}/metrics   (Prometheus; /healthz, /readyz)`);
  if (b.sandboxUrl) lines.push(`  Sandbox      ${b.sandboxUrl}   (card gateway; test cards in docs/sandbox.md, 4111 1111 1111 1111 approves)`);
  lines.push('');
  if (b.token) {
    lines.push(`  API token    ${b.token.secret}`);
    if (b.token.replaces) {
      lines.push(`               NEW TOKEN: the previous start stopped before printing its token, so that one (${b.token.replaces}) is revoked.`);
    }
    lines.push(`               (team ${b.token.teamId}; shown once, stored only as a hash. Another one, while this runs: ${create})`);
  } else {
    lines.push(`  API token    not shown again (tokens are stored only as a hash). Make one while this runs:`);
    lines.push(`               ${create}`);
  }
  if (b.token?.owner) lines.push(`  Log in       ${b.token.owner.email} / ${b.token.owner.password}   (the demo Team Owner: POST /v1/sessions; shown once)`);
  if (b.controlSocket) lines.push(`               (the CLI reaches this process through ${b.controlSocket}, readable by this user only)`);
  if (b.token && b.seed) {
    const auth = `-H "Authorization: Bearer ${b.token.secret}" -H "Content-Type: application/json"`;
    lines.push(
      '',
      '  Try it:',
      `    curl -s ${auth} \\`,
      `      -d '{"campaign_id":"${b.seed.campaign_id}","customer":{"email":"ada@example.com","first_name":"Ada","last_name":"Lovelace"},"products":[{"offer_id":"${b.seed.offers.serum}","quantity":1}]}' \\`,
      `      ${b.baseUrl}/checkout/leads; echo`,
      `    TOKEN=${b.token.secret} bash scripts/quickstart.sh   (the whole funnel, one line per answer)`,
    );
  }
  lines.push('');
  return lines.join('\n');
}

/** `seed --demo` without --json: the ids and the token, and where to go next. */
export function seedSummary(baseUrl: string, seed: DemoSeed): string {
  return [
    '',
    `  Demo team    ${seed.team_id}`,
    `  API token    ${seed.token}`,
    '               (shown once: it is stored only as a hash)',
    `  Log in       ${seed.owner_email} / ${seed.owner_password}   (the demo Team Owner: POST /v1/sessions; shown once)`,
    `  Campaign     ${seed.campaign_id} (${seed.currency})`,
    `  Offers       ${Object.entries(seed.offers).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    `  Upsells      ${seed.upsells.map((u) => `step ${u.step} ${u.upsell_id}`).join(', ')}`,
    `  Coupon       ${seed.coupon_code}`,
    ...(seed.gateway_id ? [`  Gateway      ${seed.gateway_id} (the sandbox; test cards in docs/sandbox.md)`] : []),
    '',
    `  Then: npx checkstand serve, and the API at ${baseUrl}`,
    '',
  ].join('\n');
}
