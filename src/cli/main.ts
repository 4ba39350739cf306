/**
 * How the `checkstand` command line (bin/checkstand.js) reports a failed command: one line on
 * stderr, no stack trace, and an exit code. A StartupError names the setting to fix; a data dir
 * held by a running server says which server, and that `checkstand token …` still works.
 */
import { loadConfig } from '../app/config.ts';
import { controlRequest } from './control.ts';

/** The data dir is held by another process: say which one (its control socket answers) and what still works. */
async function lockedMessage(message: string): Promise<string> {
  try {
    const info = await controlRequest<{ pid: number; url: string }>(loadConfig().dataDir, 'GET', '/info');
    if (info && info.status === 200) {
      return `${message} A Checkstand server (pid ${info.body.pid}, ${info.body.url}) runs on it: \`checkstand token …\` works while it runs; for this command, stop it first.`;
    }
  } catch {
    // the plain message then
  }
  return message;
}

/** Prints the error as one line on stderr; the exit code: 2 when the embedded data dir is in use, else 1. */
export async function reportError(err: unknown): Promise<number> {
  const message = (err as { message?: string }).message ?? String(err);
  if (err instanceof Error && err.constructor.name === 'DataDirLockedError') {
    console.error(`checkstand: ${await lockedMessage(message)}`);
    return 2;
  }
  console.error(`checkstand: ${message.split('\n')[0]}`);
  return 1;
}
