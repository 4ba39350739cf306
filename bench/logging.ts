/**
 * `npm run bench:logging`: what the server's logger costs per request, on this thread, against
 * pino with no options. A request logs two lines at `info` (the server's default level: Fastify's
 * "incoming request" and "request completed") through a child logger Fastify makes for it.
 *
 * Prints µs per child logger and per line for: the project's logger (src/app/logger.ts: masking
 * by name, the text scrub of card numbers and secrets), the same without the text scrub, and pino
 * alone. Lines go to /dev/null through pino's own synchronous destination, as to a file.
 *
 *   npm run bench:logging [-- --lines <n>]   (default 50000 request line pairs per round, 3 rounds)
 */
import pino from 'pino';
import { createLogger, loggerOptions } from '../src/app/logger.ts';
import { runMain } from './common.ts';

const REQ = { method: 'POST', url: '/v1/checkout/orders/payment', host: '127.0.0.1:3000', remoteAddress: '127.0.0.1', remotePort: 51234 };
const REQ_ID = 'b0c4a9f2-1d5e-4a7b-9c3e-0f1a2b3c4d5e';

function perCall(n: number, fn: (i: number) => void): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  return Number(process.hrtime.bigint() - t0) / n / 1000;
}

async function main(argv: string[]): Promise<number> {
  const at = argv.indexOf('--lines');
  const n = at === -1 ? 50_000 : Number(argv[at + 1]);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`bench:logging: --lines must be a positive integer, got "${argv[at + 1]}"\n`);
    return 2;
  }
  const { hooks: _scrub, ...unscrubbed } = loggerOptions('info');
  const loggers: Array<[string, pino.Logger]> = [
    ['project logger (src/app/logger.ts)', createLogger('info', pino.destination({ dest: '/dev/null', sync: true }))],
    ['  without the text scrub', pino(unscrubbed, pino.destination({ dest: '/dev/null', sync: true }))],
    ['pino, no options', pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: true }))],
  ];
  console.log(`logging: ${n} request line pairs per round, 3 rounds, best round shown; node ${process.version}`);
  for (const [name, log] of loggers) {
    let child = Infinity;
    let line = Infinity;
    for (let round = 0; round < 3; round++) {
      child = Math.min(child, perCall(n, (i) => log.child({ reqId: REQ_ID + (i & 7) })));
      const c = log.child({ reqId: REQ_ID });
      line = Math.min(line, perCall(n, () => {
        c.info({ req: REQ }, 'incoming request');
        c.info({ res: { statusCode: 200 }, responseTime: 12.34 }, 'request completed');
      }) / 2);
    }
    console.log(`${name.padEnd(36)} child logger ${child.toFixed(2).padStart(6)} µs   line ${line.toFixed(2).padStart(6)} µs   per request (child + 2 lines) ${(child + 2 * line).toFixed(1).padStart(6)} µs`);
  }
  return 0;
}

runMain('bench:logging', () => main(process.argv.slice(2)));
