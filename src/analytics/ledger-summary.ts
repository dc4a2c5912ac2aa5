/**
 * The ledger in a few lines per organization and currency (the demo's closing table): what was
 * sold, refunded, charged and charged back, funded and deposited, and what is still in transit.
 */
import { sql } from 'kysely';
import type { Db } from '../warehouse/warehouse.js';

export interface LedgerSummaryRow {
  organization_id: string;
  currency: string;
  sales: string;
  refunds: string;
  fees: string;
  chargebacks: string;
  funded: string;
  deposited: string;
  settled_not_funded: string;
  funded_not_deposited: string;
}

export async function ledgerSummary(db: Db): Promise<LedgerSummaryRow[]> {
  const r = await sql<LedgerSummaryRow>`
    select organization_id, currency,
           coalesce(sum(amount) filter (where entry_type = 'sale'), 0)::text as sales,
           coalesce(-sum(amount) filter (where entry_type = 'refund'), 0)::text as refunds,
           coalesce(-sum(amount) filter (where entry_type = 'fee'), 0)::text as fees,
           coalesce(-sum(amount) filter (where entry_type in ('chargeback', 'chargeback_reversal')), 0)::text as chargebacks,
           coalesce(sum(amount) filter (where entry_type = 'funding' and account = 'transit'), 0)::text as funded,
           coalesce(-sum(amount) filter (where entry_type = 'deposit'), 0)::text as deposited,
           coalesce(sum(amount) filter (where account = 'processor'), 0)::text as settled_not_funded,
           coalesce(sum(amount) filter (where account = 'transit'), 0)::text as funded_not_deposited
      from cybs_analytics.ledger
     group by organization_id, currency
     order by organization_id, currency`.execute(db);
  return r.rows;
}

/** The summary as an aligned text table. */
export function formatLedgerSummary(rows: readonly LedgerSummaryRow[]): string {
  const head = [
    'organization',
    'currency',
    'sales',
    'refunds',
    'fees',
    'chargebacks',
    'funded',
    'deposited',
    'not funded',
    'not deposited',
  ];
  const body = rows.map((r) => [
    r.organization_id,
    r.currency,
    r.sales,
    r.refunds,
    r.fees,
    r.chargebacks,
    r.funded,
    r.deposited,
    r.settled_not_funded,
    r.funded_not_deposited,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), ...body.map(line)].join('\n');
}
