/**
 * Named anomalies the simulator can seed into its otherwise consistent money chain, each at a known
 * place, so that a test knows exactly which rows a reconciliation must find:
 *
 *  - `unbatched-capture`: a card sale reported as accepted that never reaches a batch (no Payment
 *    Batch Detail, settlement, funding, deposit or on-demand row);
 *  - `batch-summary-mismatch`: Payment Batch Summary's sales amount of the sale's bucket (window,
 *    currency, payment type) is one minor unit more than its detail;
 *  - `unsettled-batch`: a batched sale missing from the Processor Settlement Detail report;
 *  - `unfunded-settlement`: a settled sale never funded (no Funding Detail, deposit or Net Funding);
 *  - `fee-mismatch`: the Funding Detail's fee of a sale is one minor unit more than the Fee Detail's
 *    (its funded amount one less; the deposit and Net Funding follow the funding);
 *  - `net-funding-mismatch`: Net Funding's net total of the sale's window is one minor unit more;
 *  - `deposit-mismatch`: the deposit of a sale's funding is one minor unit less than the funding;
 *  - `refund-exceeds-capture`: a refund of one minor unit more than the capture it refunds;
 *  - `open-authorization`: an authorization whose next-day capture never comes;
 *  - `orphan-chargeback`: a chargeback (funded and deposited) on a request id no transaction has;
 *  - `chargeback-due`: an open chargeback whose respond-by date is two days after the simulated now;
 *  - `two-currencies`: a sale whose Processor Settlement Detail row names another currency.
 *
 * Anomaly k (its position in ANOMALY_NAMES) is seeded on the first organization, on day
 * startDate + 1 + k (the next even day number for `open-authorization`, whose captures follow on odd
 * days), at the first transaction of that day it fits. Everything else stays consistent.
 */
export const ANOMALY_NAMES = [
  'unbatched-capture',
  'batch-summary-mismatch',
  'unsettled-batch',
  'unfunded-settlement',
  'fee-mismatch',
  'net-funding-mismatch',
  'deposit-mismatch',
  'refund-exceeds-capture',
  'open-authorization',
  'orphan-chargeback',
  'chargeback-due',
  'two-currencies',
] as const;
export type AnomalyName = (typeof ANOMALY_NAMES)[number];

export function isAnomalyName(name: string): name is AnomalyName {
  return (ANOMALY_NAMES as readonly string[]).includes(name);
}

/** Where an anomaly was seeded (the ids a reconciliation must report). */
export interface SeededAnomaly {
  name: AnomalyName;
  organizationId: string;
  /** UTC day of the transaction it was seeded on. */
  day: string;
  index: number;
  requestId: string;
  currency: string;
  /** The funding (and its deposit) the anomalous amount belongs to, where there is one. */
  fundingId?: string;
  depositId?: string;
  /** The request it follows up (the capture `refund-exceeds-capture` refunds). */
  predecessorRequestId?: string;
  /** The chargeback case of `orphan-chargeback` and `chargeback-due`. */
  caseNumber?: string;
  /** The request id the orphan chargeback names (no transaction has it). */
  chargebackRequestId?: string;
}

/**
 * Parse `--anomalies a,b` (or `all`); an unknown name is an error naming the known ones.
 */
export function parseAnomalyList(text: string): AnomalyName[] | string {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 1 && names[0] === 'all') return [...ANOMALY_NAMES];
  const unknown = names.filter((n) => !isAnomalyName(n));
  if (unknown.length > 0)
    return `unknown anomaly ${unknown.map((n) => `"${n}"`).join(', ')}; known: ${ANOMALY_NAMES.join(', ')} (or all)`;
  return [...new Set(names)] as AnomalyName[];
}
