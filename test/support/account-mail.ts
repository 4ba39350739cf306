/**
 * The account mail the server wrote (invitations, password resets): in embedded mode one .eml file
 * per mail under <data dir>/mail. Start the app with CHECKSTAND_DATA_DIR to read them.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

function decodeQuotedPrintable(s: string): string {
  return s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** The newest mail to `to` whose text matches `pattern`; waits for it (a password reset is mailed after the answer). */
export async function mailTo(dataDir: string, to: string, pattern: RegExp): Promise<{ subject: string; text: string; match: RegExpMatchArray }> {
  const dir = path.join(dataDir, 'mail');
  for (let i = 0; i < 400; i++) {
    const files = await fs.readdir(dir).catch(() => [] as string[]);
    const mails = await Promise.all(files.filter((f) => f.endsWith('.eml')).map(async (f) => ({ raw: await fs.readFile(path.join(dir, f), 'utf8'), at: (await fs.stat(path.join(dir, f))).mtimeMs })));
    for (const m of mails.sort((a, b) => b.at - a.at)) {
      if (!new RegExp(`^To: .*${to.replace(/[.+]/g, '\\$&')}`, 'mi').test(m.raw)) continue;
      const text = decodeQuotedPrintable(m.raw);
      const match = text.match(pattern);
      if (match) return { subject: /^Subject: (.*)$/m.exec(m.raw)?.[1] ?? '', text, match };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no mail to ${to} matching ${pattern}`);
}

/** The link a mail names (`https://…/dashboard/accept-invitation?token=csi_…`): its path and query, to open on the test server. */
export async function mailedLink(dataDir: string, to: string, page: 'accept-invitation' | 'reset-password'): Promise<{ href: string; pathAndQuery: string; token: string }> {
  const { match } = await mailTo(dataDir, to, new RegExp(`(https?://\\S+)(/dashboard/${page}\\?token=(cs[ir]_[0-9A-Za-z]+))`));
  return { href: match[1]! + match[2]!, pathAndQuery: match[2]!, token: match[3]! };
}
