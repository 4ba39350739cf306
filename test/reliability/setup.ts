/** What the reliability tests share: their size settings, the API calls of their setup, the CLI's JSON tally. */

/** A whole-number setting from the environment (at least `min`), or `fallback` when unset. */
export function intFromEnv(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}`);
  return n;
}

/** One setup call to the API; anything but 2xx fails the test with the answer. Returns `data`. */
export async function api(base: string, token: string, method: 'POST' | 'PATCH', p: string, body: unknown): Promise<any> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p} → ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text).data;
}

/** The JSON tally a CLI command prints: its whole stdout, or else its last line that is a JSON object. */
export function parseTally(stdout: string): unknown {
  const text = stdout.trim();
  try {
    return JSON.parse(text);
  } catch {
    for (const line of text.split('\n').reverse()) {
      if (!line.trim().startsWith('{')) continue;
      try {
        return JSON.parse(line);
      } catch {
        /* keep looking */
      }
    }
  }
  return undefined;
}
