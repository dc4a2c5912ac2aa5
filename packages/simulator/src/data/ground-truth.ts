/**
 * Ground truth: what the simulator's reports and on-demand answers contain, computed straight from
 * the dataset, so that tests and benchmarks can check an ETL's warehouse against it.
 *
 * GET /__simulator/ground-truth?organizationId=…&startDate=YYYY-MM-DD&endDate=YYYY-MM-DD
 * (no authentication; endDate inclusive). Shape: {@link GroundTruth}.
 *
 *  - `reports`: per subscription (active or deleted) and per report period whose start falls on a
 *    local date in [startDate, endDate] in the subscription's zone and that has been queued by now:
 *    its reportDate and reportTime, status, the number of data rows and the sum of the definition's amount column
 *    (signed per reportPreferences) per currency, plus a cross-currency checksum total (3 places).
 *  - `onDemand`: for the UTC window [startDate 00:00Z, endDate+1 00:00Z), cut at the simulated now:
 *    row counts and amount sums per section of purchase-refund-details (viewBy requestDate,
 *    paymentSubtype ALL), the totals of net-fundings, the sums of payment-batch-summaries (no rollUp),
 *    and the row counts of conversion-details and notification-of-changes.
 *
 * Amounts are exact decimal strings.
 */
import type { Dataset, SimTransaction } from './dataset.js';
import { FUNDING_LAG_DAYS, fundingEvents } from './money-chain.js';
import { MoneyTally, currencyExponent, formatMoney, parseScaled } from './money.js';
import { netFundings, paymentBatchSummaries, settledRecords } from '../routes/on-demand.js';
import type { Window } from '../routes/on-demand.js';
import { fieldGetter } from '../render/report-fields.js';
import { reportDefinition } from '../render/report-layouts.js';
import type { ReportStore } from './report-store.js';
import { reportTimeOf, subscriptionPeriods } from './report-store.js';
import { DAY_MS, addDays, isoInZone, localDate } from './time.js';

export interface AmountSums {
  /** Exact decimal per currency, e.g. `{ "EUR": "120.50", "JPY": "3400" }`. */
  byCurrency: Record<string, string>;
  /** Sum over currencies at three decimals (a checksum, not money). */
  total: string;
}

export interface GroundTruthReportDay {
  reportId: string;
  reportDate: string;
  /** Local end time with offset (`hh:mm:ss±hh:mm`): with reportDate, names one of a day's reports. */
  reportTime: string;
  reportStartTime: string;
  reportEndTime: string;
  status: string;
  rowCount: number;
  amountField: string;
  amounts: AmountSums;
}

export interface GroundTruthReport {
  reportName: string;
  reportDefinitionName: string;
  reportDefinitionId: number;
  reportMimeType: string;
  reportFrequency: string;
  timezone: string;
  days: GroundTruthReportDay[];
}

export interface GroundTruthSection {
  rowCount: number;
  /** Named amount sums of the section (e.g. `amount`, `totalFee`, `fundingAmount`). */
  amounts: Record<string, AmountSums>;
}

export interface GroundTruth {
  organizationId: string;
  startDate: string;
  endDate: string;
  /** Simulated now when computed. */
  now: string;
  reports: GroundTruthReport[];
  onDemand: {
    startTime: string;
    endTime: string;
    purchaseRefundDetails: {
      records: number;
      sections: Record<
        | 'requestDetails'
        | 'settlements'
        | 'authorizations'
        | 'feeAndFundingDetails'
        | 'others'
        | 'settlementStatuses',
        GroundTruthSection
      >;
    };
    netFundings: {
      totalPurchases: AmountSums;
      totalRefunds: AmountSums;
      totalFees: AmountSums;
      totalChargebacks: AmountSums;
      netTotal: AmountSums;
    };
    paymentBatchSummaries: {
      salesCount: number;
      salesAmount: AmountSums;
      creditCount: number;
      creditAmount: AmountSums;
    };
    conversionDetails: { rowCount: number };
    notificationOfChanges: { rowCount: number };
  };
  /**
   * The money chain (money-chain.ts): each funding whose UTC funding day is in [startDate,
   * endDate] and not after now, with what it funded and what its deposit paid, exact decimals in
   * its currency. `gross` is purchases − refunds − chargebacks, `fees` the fees it took, `net` =
   * gross − fees = what was funded.
   */
  fundings: GroundTruthFunding[];
}

export interface GroundTruthFunding {
  fundingId: string;
  depositId: string;
  currency: string;
  fundingDate: string;
  events: number;
  gross: string;
  fees: string;
  net: string;
  deposited: string;
}

function sums(t: MoneyTally): AmountSums {
  return { byCurrency: t.currencies(), total: t.total() };
}

/** Sums of an answer's `{ currency, value }` list (a Net Funding total). */
function listSums(list: readonly { currency: string; value: string }[] | undefined): AmountSums {
  const t = new MoneyTally();
  for (const { currency, value } of list ?? [])
    t.add(parseScaled(value, currencyExponent(currency)), currency);
  return sums(t);
}

export function computeGroundTruth(
  deps: { dataset: Dataset; store: ReportStore; now: number },
  organizationId: string,
  startDate: string,
  endDate: string,
): GroundTruth {
  const { dataset, store, now } = deps;
  const reports: GroundTruthReport[] = [];
  const lo = Date.parse(`${startDate}T00:00:00Z`) - 2 * DAY_MS;
  const hi = Date.parse(`${addDays(endDate, 1)}T00:00:00Z`) + 2 * DAY_MS;
  for (const sub of store.allSubscriptions().filter((s) => s.organizationId === organizationId)) {
    const days: GroundTruthReportDay[] = [];
    for (const [start, end] of subscriptionPeriods(sub, lo, Math.min(hi, now))) {
      const day = localDate(start, sub.timezone);
      if (day < startDate || day > endDate) continue;
      const r = store.reportOfPeriod(sub, start, end);
      if (r.queuedTime > now) continue;
      const amountGetter = fieldGetter(r.definition.amountField);
      const currencyGetter = fieldGetter(r.definition.currencyField);
      const tally = new MoneyTally();
      let rows = 0;
      for (const tx of store.rows(r)) {
        rows++;
        const text = amountGetter(tx, { signedAmounts: r.preferences.signedAmounts });
        const currency = currencyGetter(tx, { signedAmounts: false }) || tx.currency;
        if (text !== '') tally.add(parseScaled(text, currencyExponent(currency)), currency);
      }
      days.push({
        reportId: r.reportId,
        reportDate: r.reportDate,
        reportTime: reportTimeOf(r),
        reportStartTime: isoInZone(r.start, r.timezone),
        reportEndTime: isoInZone(r.end, r.timezone),
        status: store.status(r),
        rowCount: rows,
        amountField: r.definition.amountField,
        amounts: sums(tally),
      });
    }
    reports.push({
      reportName: sub.reportName,
      reportDefinitionName: sub.reportDefinitionName,
      reportDefinitionId: reportDefinition(sub.reportDefinitionName)?.id ?? 0,
      reportMimeType: sub.reportMimeType,
      reportFrequency: sub.reportFrequency,
      timezone: sub.timezone,
      days,
    });
  }

  const w: Window = {
    organizationId,
    start: Date.parse(`${startDate}T00:00:00Z`),
    end: Date.parse(`${addDays(endDate, 1)}T00:00:00Z`),
    now,
  };
  const amount = new MoneyTally();
  const auth = new MoneyTally();
  const totalFee = new MoneyTally();
  const funding = new MoneyTally();
  const purchases = new MoneyTally();
  const refunds = new MoneyTally();
  let records = 0;
  for (const tx of settledRecords(dataset, w)) {
    records++;
    amount.add(tx.amount, tx.currency);
    if (tx.authorizationRequestId) auth.add(tx.amount, tx.currency);
    totalFee.add(tx.fee!.totalFee, tx.currency);
    funding.add(tx.fundingAmount, tx.currency);
    (tx.settlementType === 'Purchases' ? purchases : refunds).add(tx.amount, tx.currency);
  }
  let conversions = 0;
  let nocs = 0;
  for (const tx of dataset.between(organizationId, w.start, w.end, {
    notAfter: now,
    at: (t: SimTransaction) => t.time,
  })) {
    if (
      tx.conversion &&
      tx.conversion.time >= w.start &&
      tx.conversion.time < w.end &&
      tx.conversion.time <= now
    )
      conversions++;
    const n = tx.notificationOfChange;
    if (n && n.time >= w.start && n.time < w.end && n.time <= now) nocs++;
  }
  const plain = (rows: number): GroundTruthSection => ({ rowCount: rows, amounts: {} });
  const fundings = new Map<
    string,
    { f: GroundTruthFunding; gross: bigint; fees: bigint; net: bigint; deposited: bigint }
  >();
  for (const tx of dataset.between(organizationId, w.start - FUNDING_LAG_DAYS * DAY_MS, w.end)) {
    for (const e of fundingEvents(tx)) {
      if (e.fundingTime < w.start || e.fundingTime >= w.end || e.fundingTime > now) continue;
      let acc = fundings.get(e.fundingId);
      if (!acc) {
        acc = {
          f: {
            fundingId: e.fundingId,
            depositId: e.depositId,
            currency: e.currency,
            fundingDate: e.fundingDate,
            events: 0,
            gross: '',
            fees: '',
            net: '',
            deposited: '',
          },
          gross: 0n,
          fees: 0n,
          net: 0n,
          deposited: 0n,
        };
        fundings.set(e.fundingId, acc);
      }
      acc.f.events++;
      acc.gross += BigInt(e.gross);
      acc.fees += BigInt(e.fee);
      acc.net += BigInt(e.net);
      acc.deposited += BigInt(e.depositAmount);
    }
  }
  const nf = netFundings(dataset, w);
  const pbs = paymentBatchSummaries(dataset, [w])?.paymentBatchSummaries ?? [];
  return {
    organizationId,
    startDate,
    endDate,
    now: new Date(now).toISOString(),
    reports,
    onDemand: {
      startTime: new Date(w.start).toISOString(),
      endTime: new Date(w.end).toISOString(),
      purchaseRefundDetails: {
        records,
        sections: {
          requestDetails: plain(records),
          settlements: { rowCount: records, amounts: { amount: sums(amount) } },
          authorizations: { rowCount: auth.count, amounts: { amount: sums(auth) } },
          feeAndFundingDetails: {
            rowCount: records,
            amounts: { totalFee: sums(totalFee), fundingAmount: sums(funding) },
          },
          others: plain(records),
          settlementStatuses: plain(records),
        },
      },
      // What the endpoints answer: the funded amounts, with any seeded anomaly.
      netFundings: {
        totalPurchases: listSums(nf?.totalPurchases),
        totalRefunds: listSums(nf?.totalRefunds),
        totalFees: listSums(nf?.totalFees),
        totalChargebacks: listSums(nf?.totalChargebacks),
        netTotal: listSums(nf?.netTotal),
      },
      paymentBatchSummaries: {
        salesCount: purchases.count,
        salesAmount: listSums(pbs.map((r) => ({ currency: r.currencyCode, value: r.salesAmount }))),
        creditCount: refunds.count,
        creditAmount: sums(refunds),
      },
      conversionDetails: { rowCount: conversions },
      notificationOfChanges: { rowCount: nocs },
    },
    fundings: [...fundings.values()]
      .map(({ f, gross, fees, net, deposited }) => ({
        ...f,
        gross: formatMoney(gross, f.currency),
        fees: formatMoney(fees, f.currency),
        net: formatMoney(net, f.currency),
        deposited: formatMoney(deposited, f.currency),
      }))
      .sort((a, b) => a.fundingId.localeCompare(b.fundingId)),
  };
}
