/**
 * What `npm run bench:compare` reads from each run's JSON report and how it sets the two sides
 * against each other. Pure functions: compare.ts runs the benches, this only counts.
 */

/** A figure compare prints: where it is in a report, and which way is better. */
export interface FigureDef {
  key: string;
  label: string;
  /** 'higher' (funnels/s), 'lower' (CPU, latency), or null (counts: shown, no verdict). */
  better: 'higher' | 'lower' | null;
  read: (report: any) => number | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The figures every report of version 2 has (a field an older bench did not write reads as null). */
export const FIGURES: readonly FigureDef[] = [
  { key: 'funnels_per_s', label: 'funnels/s', better: 'higher', read: (r) => num(r?.results?.flows?.per_s) },
  { key: 'server_cpu_ms', label: 'server CPU ms/funnel', better: 'lower', read: (r) => num(r?.results?.server?.server_cpu_ms_per_flow) },
  // Only with --callgrind (bench/callgrind.ts): the figure the machine's noise does not move.
  { key: 'server_instructions_m', label: 'server instructions M/funnel (callgrind)', better: 'lower', read: (r) => num(r?.results?.server?.server_instructions_per_flow_m) },
  { key: 'postgres_cpu_ms', label: 'PostgreSQL CPU ms/funnel', better: 'lower', read: (r) => num(r?.results?.server?.postgres_cpu_ms_per_flow) },
  { key: 'machine_cpu_ms', label: 'machine CPU ms/funnel', better: 'lower', read: (r) => num(r?.results?.server?.machine_cpu_ms_per_flow) },
  { key: 'server_wait_ms', label: 'server waiting for a core ms/funnel', better: null, read: (r) => num(r?.results?.server?.run_queue?.server_wait_ms_per_flow) },
  { key: 'funnel_p99_ms', label: 'funnel p99 ms', better: 'lower', read: (r) => num(r?.results?.flows?.latency?.p99_ms) },
  { key: 'statements_api', label: 'SQL statements/funnel (API)', better: null, read: (r) => num(r?.results?.server?.db_statements_per_flow_by_source?.api) },
  { key: 'statements_worker', label: 'SQL statements/funnel (worker)', better: null, read: (r) => num(r?.results?.server?.db_statements_per_flow_by_source?.worker) },
  { key: 'commits', label: 'commits/funnel', better: null, read: (r) => num(r?.results?.server?.db_commits_per_flow?.total) },
  { key: 'wal_kb', label: 'WAL kB/funnel', better: null, read: (r) => (num(r?.results?.server?.wal?.bytes_per_flow) === null ? null : r.results.server.wal.bytes_per_flow / 1000) },
  { key: 'index_entries', label: 'index entries/funnel', better: null, read: (r) => num(r?.results?.server?.wal?.records_per_flow?.index_entries) },
  // The outbox keeping up: a worker that falls behind leaves work out of the measured window.
  { key: 'webhook_lag_p99_ms', label: 'webhook lag p99 ms', better: 'lower', read: (r) => num(r?.results?.side_effects?.webhooks?.lag_ms?.p99) },
  { key: 'mail_lag_p99_ms', label: 'mail lag p99 ms', better: 'lower', read: (r) => num(r?.results?.side_effects?.mail?.lag_ms?.p99) },
  { key: 'rss_max_mb', label: 'RSS MB (largest process)', better: null, read: (r) => num(r?.results?.server?.rss_mb?.max) },
];

/** Each endpoint's p99 (ms), by the report's endpoint label (the scenario decides which). */
export function endpointP99s(report: any): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [label, e] of Object.entries<any>(report?.results?.endpoints ?? {})) {
    const p99 = num(e?.p99_ms);
    if (p99 !== null) out[label] = p99;
  }
  return out;
}

export interface FigureComparison {
  key: string;
  label: string;
  better: FigureDef['better'];
  base: (number | null)[];
  next: (number | null)[];
  baseMean: number | null;
  nextMean: number | null;
  /** nextMean / baseMean. */
  ratio: number | null;
  /** Each pair's own ratio (pairs where both sides have the figure). */
  pairRatios: number[];
  /** Pairs in which the new side was better (only for figures with a direction). */
  aheadIn: number | null;
  /** Pairs in which the new side was worse (only for figures with a direction). */
  behindIn: number | null;
  /**
   * The sign test's two-sided p: how likely pairs at least this one-sided would be if the change
   * made no difference (each pair then a coin toss). Null without a direction or without a pair
   * that differs. Three pairs all one way give 0.25, five 0.0625, six 0.03125.
   */
  signP: number | null;
}

export function mean(values: readonly (number | null)[]): number | null {
  const xs = values.filter((v): v is number => v !== null);
  return xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** One figure across the pairs: `base[i]` and `next[i]` ran in the same minutes. */
export function compareFigure(def: Pick<FigureDef, 'key' | 'label' | 'better'>, base: (number | null)[], next: (number | null)[]): FigureComparison {
  const baseMean = mean(base);
  const nextMean = mean(next);
  const pairRatios: number[] = [];
  let ahead = 0;
  let behind = 0;
  for (let i = 0; i < Math.min(base.length, next.length); i++) {
    const b = base[i]!;
    const n = next[i]!;
    if (b === null || n === null || b === 0) continue;
    pairRatios.push(n / b);
    if (def.better === 'higher' ? n > b : n < b) ahead++;
    else if (n !== b) behind++;
  }
  return {
    ...def,
    base,
    next,
    baseMean,
    nextMean,
    ratio: baseMean !== null && nextMean !== null && baseMean !== 0 ? nextMean / baseMean : null,
    pairRatios,
    aheadIn: def.better === null ? null : ahead,
    behindIn: def.better === null ? null : behind,
    signP: def.better === null || ahead + behind === 0 ? null : signTestP(ahead, behind),
  };
}

/** The two-sided sign test: P(a split at least as uneven as `ahead` : `behind`) under Binomial(n, ½). */
export function signTestP(ahead: number, behind: number): number {
  const n = ahead + behind;
  const k = Math.min(ahead, behind);
  let tail = 0;
  let choose = 1; // n choose i
  for (let i = 0; i <= k; i++) {
    tail += choose;
    choose = (choose * (n - i)) / (i + 1);
  }
  return Math.min(1, (2 * tail) / 2 ** n);
}

/** Every figure of the runs, base and new side by side, pair by pair. */
export function compareReports(base: readonly any[], next: readonly any[]): FigureComparison[] {
  const figures = FIGURES.map((def) =>
    compareFigure(
      def,
      base.map((r) => def.read(r)),
      next.map((r) => def.read(r)),
    ),
  );
  const labels = new Set([...base, ...next].flatMap((r) => Object.keys(endpointP99s(r))));
  for (const label of labels) {
    figures.push(
      compareFigure(
        { key: `p99:${label}`, label: `p99 ms ${label}`, better: 'lower' },
        base.map((r) => endpointP99s(r)[label] ?? null),
        next.map((r) => endpointP99s(r)[label] ?? null),
      ),
    );
  }
  return figures.filter((f) => f.baseMean !== null || f.nextMean !== null);
}

const fmt = (v: number | null, digits = 1) => (v === null ? '–' : v.toFixed(digits));

function verdictText(f: FigureComparison): string {
  if (f.aheadIn === null || f.pairRatios.length === 0) return '';
  const pairs = f.pairRatios.length;
  const p = f.signP === null ? '' : `, sign test p = ${f.signP < 0.01 ? f.signP.toFixed(3) : f.signP.toFixed(2)}`;
  return `new better in ${f.aheadIn}/${pairs} pair${pairs === 1 ? '' : 's'}${p}`;
}

/** The summary table, one line per figure. */
export function comparisonTable(figures: readonly FigureComparison[], baseName: string, nextName: string): string[] {
  const rows = figures.map((f) => {
    const span = f.pairRatios.length > 1 ? ` (pairs ${fmt(Math.min(...f.pairRatios), 2)}–${fmt(Math.max(...f.pairRatios), 2)})` : '';
    return [
      f.label,
      f.base.map((v) => fmt(v)).join(', '),
      f.next.map((v) => fmt(v)).join(', '),
      `${fmt(f.baseMean)} → ${fmt(f.nextMean)}`,
      f.ratio === null ? '–' : `${f.ratio.toFixed(2)}×${span}`,
      verdictText(f),
    ];
  });
  const head = ['figure', baseName, nextName, 'mean', 'ratio new/base', ''];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(head), ...rows.map(line)];
}
