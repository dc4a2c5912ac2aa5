/**
 * The simulator's money after settlement: what the processor funds and deposits, one event per
 * money movement, computed from a transaction alone so that the Funding Detail, Deposit Detail and
 * Net Funding answers agree with each other and with the Fee and Chargeback reports.
 *
 *  - payment: a settled request is funded the day after its batch closes (UTC), its amount net of
 *    its fee (a refund negative), in the funding of (organization, funding day, currency);
 *  - chargeback: a chargeback is funded (debited) the day after its case opens, in that day's
 *    funding of its currency, under the request id and case number the chargeback names.
 *
 * Each funding is deposited whole the next day at 10:00 UTC, under its own deposit id; the
 * Deposit Detail report has one line per funded event. Anomalies move single amounts: a
 * `fee-mismatch` funds one minor unit less (its fee one more), a `deposit-mismatch` deposits one
 * minor unit less, an `unfunded-settlement` is never funded.
 */
import type { SimTransaction } from './dataset.js';
import { fundingIdsOf, paymentFundingDate } from './dataset.js';
import { DAY_MS, HOUR_MS, utcDate } from './time.js';

export interface FundingEvent {
  kind: 'payment' | 'chargeback';
  /** The request id the funding row names. */
  requestId: string;
  /** PaymentData.TransactionType of the funding row. */
  transactionType: string;
  currency: string;
  /** Minor units: a purchase positive, a refund or chargeback negative. */
  gross: number;
  /** Fee charged, minor units (a debit to the merchant). */
  fee: number;
  /** gross − fee: what the funding pays (negative: what it takes back). */
  net: number;
  /** UTC day of the funding, and its midnight. */
  fundingDate: string;
  fundingTime: number;
  fundingId: string;
  depositId: string;
  depositTime: number;
  /** What the deposit pays for this event (net, unless an anomaly says otherwise). */
  depositAmount: number;
  caseNumber: string;
}

const TRANSACTION_TYPES: Record<SimTransaction['kind'], string> = {
  sale: 'sale',
  auth: 'authorization',
  capture: 'capture',
  refund: 'refund',
  void: 'void',
  decline: 'authorization',
  echeck_debit: 'debit',
  echeck_credit: 'credit',
};

/** PaymentData.TransactionType of a request. */
export function transactionTypeOf(tx: SimTransaction): string {
  return TRANSACTION_TYPES[tx.kind];
}

function event(
  tx: SimTransaction,
  kind: FundingEvent['kind'],
  fundingDate: string,
  fields: Pick<FundingEvent, 'requestId' | 'transactionType' | 'gross' | 'fee' | 'caseNumber'>,
): FundingEvent {
  const { fundingId, depositId } = fundingIdsOf(tx.orgIndex, fundingDate, tx.currency);
  const fundingTime = Date.parse(`${fundingDate}T00:00:00Z`);
  const net = fields.gross - fields.fee;
  return {
    kind,
    ...fields,
    currency: tx.currency,
    net,
    fundingDate,
    fundingTime,
    fundingId,
    depositId,
    depositTime: fundingTime + DAY_MS + 10 * HOUR_MS,
    depositAmount: net - (kind === 'payment' && tx.anomaly === 'deposit-mismatch' ? 1 : 0),
  };
}

/** The funded events of a transaction, in time order (none when it was not settled). */
export function fundingEvents(tx: SimTransaction): FundingEvent[] {
  const out: FundingEvent[] = [];
  if (tx.settled && tx.anomaly !== 'unfunded-settlement') {
    const purchase = tx.settlementType === 'Purchases';
    out.push(
      event(tx, 'payment', paymentFundingDate(tx), {
        requestId: tx.requestId,
        transactionType: transactionTypeOf(tx),
        gross: purchase ? tx.amount : -tx.amount,
        fee: (tx.fee?.totalFee ?? 0) + (tx.anomaly === 'fee-mismatch' ? 1 : 0),
        caseNumber: '',
      }),
    );
  }
  const cb = tx.chargeback;
  if (tx.settled && cb) {
    out.push(
      event(tx, 'chargeback', utcDate(cb.time + DAY_MS), {
        requestId: cb.requestId,
        transactionType: 'chargeback',
        gross: -cb.amount,
        fee: 0,
        caseNumber: cb.caseNumber,
      }),
    );
  }
  return out;
}

/** The payment event of a transaction, when it was funded. */
export function paymentEvent(tx: SimTransaction): FundingEvent | undefined {
  return fundingEvents(tx).find((e) => e.kind === 'payment');
}

/** The latest a funding or deposit event comes after the request: the lookback of their reports. */
export const FUNDING_LAG_DAYS = 4;
