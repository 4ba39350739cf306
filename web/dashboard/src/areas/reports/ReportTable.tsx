import { Table, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { formatMoney, minorDigits } from '../../lib/money.ts';

export type ColumnKind = 'text' | 'int' | 'money' | 'pct';
export interface Column {
  key: string;
  label: string;
  kind: ColumnKind;
  /** Render the cell yourself (text columns). */
  render?: (row: Record<string, unknown>) => ReactNode;
}

/** A cell: money in the row's currency, percents with two decimals, counts as integers. */
export function formatCell(kind: ColumnKind, value: unknown, currency: string | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  if (kind === 'money') return formatMoney(Number(value), currency ?? 'USD');
  if (kind === 'pct') return `${Number(value).toFixed(2)} %`;
  if (kind === 'int') return new Intl.NumberFormat().format(Number(value));
  return String(value);
}

/** Minor units as a chart's number (major units of the currency). */
export function major(minor: number, currency: string): number {
  return minor / 10 ** minorDigits(currency);
}

/** A chart's number (major units) as money again. */
export function formatMajor(value: number, currency: string): string {
  return formatMoney(Math.round(value * 10 ** minorDigits(currency)), currency);
}

/**
 * A report's rows and its totals (one footer line per total, e.g. per currency): the numbers the
 * API answered, formatted. `label` names the table for screen readers and the tests.
 */
export function ReportTable({ label, columns, rows, totals }: { label: string; columns: Column[]; rows: readonly object[]; totals: readonly object[] }) {
  const numeric = (c: Column) => c.kind !== 'text';
  const cell = (c: Column, r: Record<string, unknown>) => (c.render ? c.render(r) : formatCell(c.kind, r[c.key], r.currency as string | undefined));
  return (
    <>
      <Table.ScrollContainer minWidth={600}>
        <Table striped highlightOnHover aria-label={label}>
          <Table.Thead>
            <Table.Tr>
              {columns.map((c) => (
                <Table.Th key={c.key} scope="col" style={numeric(c) ? { textAlign: 'right' } : undefined}>
                  {c.label}
                </Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((row, i) => {
              const r = row as Record<string, unknown>;
              return (
                <Table.Tr key={i}>
                  {columns.map((c) => (
                    <Table.Td key={c.key} style={numeric(c) ? { textAlign: 'right', whiteSpace: 'nowrap' } : undefined}>
                      {cell(c, r)}
                    </Table.Td>
                  ))}
                </Table.Tr>
              );
            })}
          </Table.Tbody>
          {totals.length > 0 && (
            <Table.Tfoot>
              {totals.map((total, i) => {
                const t = total as Record<string, unknown>;
                return (
                  <Table.Tr key={i} data-total={String(t.currency ?? i)} style={{ fontWeight: 600 }}>
                    {columns.map((c, j) => (
                      <Table.Td key={c.key} style={numeric(c) ? { textAlign: 'right', whiteSpace: 'nowrap' } : undefined}>
                        {j === 0 ? `Total${t.currency ? ` (${String(t.currency)})` : ''}` : c.key in t ? formatCell(c.kind, t[c.key], t.currency as string | undefined) : ''}
                      </Table.Td>
                    ))}
                  </Table.Tr>
                );
              })}
            </Table.Tfoot>
          )}
        </Table>
      </Table.ScrollContainer>
      {rows.length === 0 && (
        <Text c="dimmed" role="status">
          Nothing in this period.
        </Text>
      )}
    </>
  );
}
