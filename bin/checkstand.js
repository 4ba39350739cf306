#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
/**
 * The `checkstand` command line. Run as a command (`npx checkstand`, an installed package's bin),
 * node starts as the shebang says:
 * - `--max-semi-space-size=4`: V8's young generation at 4 MB per semi-space instead of 16, as
 *   serve's API children have it (API_SEMI_SPACE_MB in src/cli/cluster.ts; a test holds the two
 *   equal). V8 reads it only at start, so a process cannot give it to itself: without it a
 *   `serve --processes 1` on PostgreSQL ended the bench at 224 MB RSS (README, "Memory").
 * - `MALLOC_ARENA_MAX=2`: glibc's malloc keeps at most two arenas instead of eight per core, one
 *   per thread that allocated (the mail writer, libuv's pool, V8's own threads), each holding what
 *   it freed. `serve --processes 1` ended the bench at 192-203 MB RSS with it, 204-211 without,
 *   for no CPU the bench could see (bench/README.md, thirtieth round). serve's children inherit it.
 * `node bin/checkstand.js …` takes neither (this line is a comment then): node's flags come from
 * its own command line, the environment from the shell. This line's flag comes after NODE_OPTIONS
 * and its variable replaces the shell's, so both win over a value given there.
 *
 * The command table is plain JavaScript and loads only commander, so `--help` and `--version`
 * answer at once; a command that runs imports its module when it runs, and that module loads only
 * what the command needs: from the bundle in build/ (made by `npm install`, `npm run
 * build:server`) while it is up to date with the sources, else from src/cli/ through tsx (the
 * TypeScript sources run as they are: a clone that changed them needs no build).
 */
/* global URL */
import fs from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';

const VERSION = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

/** 'build' or 'sources', decided once per process by the first command module loaded. */
let code;
/**
 * build/cli/<name>.js when the bundle is up to date with the sources (bin/build-state.js), else
 * src/cli/<name>.ts through tsx (registered on first use). CHECKSTAND_CODE says which ran.
 */
async function load(name) {
  if (code === undefined) {
    const { bundleIsCurrent } = await import('./build-state.js');
    code = bundleIsCurrent(new URL('..', import.meta.url)) ? 'build' : 'sources';
    process.env.CHECKSTAND_CODE = code;
    if (code === 'sources') (await import('tsx/esm/api')).register();
  }
  return import(new URL(code === 'build' ? `../build/cli/${name}.js` : `../src/cli/${name}.ts`, import.meta.url).href);
}

/** `npm start` runs the provider sandbox beside the API unless CHECKSTAND_SANDBOX=off. */
function sandboxWanted() {
  return (process.env.CHECKSTAND_SANDBOX ?? 'on') !== 'off';
}

function int(value) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a non-negative integer');
  return n;
}

function positiveInt(value) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number of 1 or more');
  return n;
}

function teamKind(value) {
  if (value !== 'merchant' && value !== 'provider') throw new InvalidArgumentError('must be merchant or provider');
  return value;
}

function buildCli() {
  const program = new Command('checkstand')
    .description('Checkstand: self-hostable checkout and order-management API.\nConfiguration is read from the environment: see the README.')
    .version(VERSION, '-V, --version', 'print the version and exit')
    .showHelpAfterError();

  program
    .command('start')
    .description(
      'Everything on one machine: API server, worker and the provider sandbox (CHECKSTAND_SANDBOX=off to skip); on an empty database, a demo team, funnel, sandbox gateway and token. Prints where everything is on every start.',
    )
    .option('--no-demo-history', 'seed no demo history (60 days of orders for the demo team); also CHECKSTAND_DEMO_HISTORY=0')
    .action(async (o) => (await load('serve')).serve({ worker: true, seedIfEmpty: true, sandbox: sandboxWanted(), demoHistory: o.demoHistory }));

  program
    .command('serve')
    .description('Run the HTTP API (applies migrations first)')
    .option('--with-worker', 'also run the worker in this process (with --processes N: once, in the supervising process)', false)
    .option(
      '--processes <n>',
      'API processes sharing the port, PostgreSQL only (default: SERVE_PROCESSES, else one per CPU core when NODE_ENV=production, else 1)',
      positiveInt,
    )
    .action(async (o) => (await load('serve')).serve({ worker: o.withWorker, seedIfEmpty: false, sandbox: false, processes: o.processes ?? 'auto' }));

  program
    .command('sandbox')
    .description('Run the provider sandbox (an NMI-compatible card gateway) on its own port: SANDBOX_HOST, SANDBOX_PORT (3100), SANDBOX_SLOW_MS')
    .action(async () => (await load('commands')).sandbox());

  program
    .command('worker')
    .description('Run the background worker: scheduled housekeeping (any number of copies may run)')
    .action(async () => (await load('commands')).worker());

  program
    .command('reconcile')
    .description(
      'Run the payment recovery once and exit: ask the providers about every attempt whose answer was never recorded ' +
        '(older than the grace period) and finalize it, then re-check redirected payments nobody settled. Prints a JSON tally.',
    )
    .option('--grace-seconds <n>', 'only attempts older than this (default 120: longer than any provider call)', '120')
    .action(async (o) => (await load('commands')).reconcile(o.graceSeconds));

  program
    .command('migrate')
    .description('Apply pending database migrations and exit')
    .action(async () => (await load('commands')).migrate());

  program
    .command('seed')
    .description('Create data. --demo: a demo team, token, campaign, offers and upsells')
    .option('--demo', 'create the demo team and funnel', false)
    .option('--json', 'print the created ids and token as one JSON object (and nothing else on stdout; logs go to stderr)', false)
    .option('--team-name <name>', 'name of the team to create', 'Demo Store')
    .option('--sandbox-url <url>', 'with --demo: the sandbox the demo gateway points at (default from SANDBOX_HOST/SANDBOX_PORT)')
    .option('--no-gateway', 'with --demo: create no demo gateway')
    .action(async (o) => (await load('commands')).seed(o));

  program
    .command('user')
    .description('Team members')
    .command('create')
    .description("Create a team's user: its first is the Team Owner (others normally join by invitation); opens the database itself")
    .requiredOption('--team <team_id>', 'team id (team_…)')
    .requiredOption('--email <email>', 'e-mail address (the login)')
    .requiredOption('--password <password>', 'at least 10 characters, not the e-mail, not a common password')
    .option('--name <name>', 'display name')
    .option('--role <role>', 'a role other than owner, for a team that already has its owner')
    .option('--json', 'print JSON', false)
    .action(async (o) => (await load('users')).create(o));

  program
    .command('team')
    .description('Teams: merchants and provider organisations')
    .command('create')
    .description(
      'Create a team and print its id: a merchant (default), or with --kind provider a Customer Service or Affiliate Provider organisation that merchants grant access (POST /v1/provider-grants); opens the database itself',
    )
    .requiredOption('--name <name>', 'the team (or organisation) name')
    .option('--kind <kind>', 'merchant or provider', teamKind, 'merchant')
    .option('--json', 'print the team as one JSON object (and nothing else on stdout)', false)
    .action(async (o) => (await load('commands')).teamCreate(o));

  const token = program
    .command('token')
    .description('Manage API tokens. On the embedded database these work while `start`/`serve` runs: they ask it through <data dir>/control.sock');
  token
    .command('create')
    .description('Create a token for a team; the secret is printed once')
    .requiredOption('--team <team_id>', 'team id (team_…)')
    .option('--name <name>', 'a name to recognise the token by', 'default')
    .option('--json', 'print JSON', false)
    .action(async (o) => (await load('tokens')).create(o));
  token
    .command('list')
    .description('List tokens (never their secrets)')
    .option('--team <team_id>', 'only this team')
    .option('--json', 'print JSON', false)
    .action(async (o) => (await load('tokens')).list(o));
  token
    .command('revoke')
    .description('Revoke a token at once')
    .argument('<token_id>', 'token id (tok_…)')
    .action(async (id) => (await load('tokens')).revoke(id));
  token
    .command('rotate')
    .description('Issue a replacement token; the old one keeps working for --grace-seconds')
    .argument('<token_id>', 'token id (tok_…)')
    .option('--grace-seconds <n>', 'how long the old token stays valid (0 revokes it now)', int, 3600)
    .option('--json', 'print JSON', false)
    .action(async (id, o) => (await load('tokens')).rotate(id, o));

  return program;
}

try {
  await buildCli().parseAsync(process.argv);
} catch (err) {
  // One line, no stack trace (src/cli/main.ts says which setting to fix, or who holds the data dir).
  const { reportError } = await load('main');
  process.exit(await reportError(err));
}
