/**
 * The five on-demand reports (facts §2.9–2.13), computed from the same transactions as the report
 * files, so that they reconcile:
 *
 *  - purchase-refund-details: one record per settled request (purchases: sale, capture, eCheck
 *    debit; refunds: refund, eCheck credit) whose request time (viewBy=requestDate, default) or
 *    batch time (viewBy=submissionDate) is in [startTime, endTime). Six parallel sections joined by
 *    requestId: requestDetails, settlements, feeAndFundingDetails, others and settlementStatuses
 *    (one row per record) and authorizations (sales and captures only).
 *  - net-fundings: over the same records (request time), what their funding (money-chain.ts)
 *    paid: totalPurchases = Σ funded purchase amounts, totalRefunds = Σ funded refund amounts,
 *    totalFees = Σ funded fees, totalChargebacks = Σ funded chargebacks of those requests,
 *    netTotal = purchases − refunds − fees − chargebacks (= Σ fundingAmount − chargebacks when
 *    no anomaly is seeded), all per currency. A `net-funding-mismatch` adds one minor unit to
 *    its window's net total.
 *  - payment-batch-summaries: over the same records: sales = purchases, credits = refunds, per
 *    currency and payment type (and per period with rollUp, per merchant with breakdown).
 *  - conversion-details: review decisions whose decision time is in the window.
 *  - notification-of-changes: eCheck notifications of change whose time is in the window.
 */
import type { Dataset, SimOrganization, SimTransaction } from '../data/dataset.js';
import { fundingEvents } from '../data/money-chain.js';
import { MoneyTally, formatMoney, formatScaled } from '../data/money.js';
import { csvField, xmlEscape } from '../render/report-writers.js';
import { addDays, isoUtc, utcDate, weekday } from '../data/time.js';

export interface Window {
  organizationId: string;
  start: number;
  end: number;
  /** Simulated now: nothing after it has happened yet. */
  now: number;
}

export const PAYMENT_SUBTYPES = ['ALL', 'VI', 'MC', 'AX', 'DI', 'DP'] as const;
export type PaymentSubtype = (typeof PAYMENT_SUBTYPES)[number];

function* settledRecords(
  dataset: Dataset,
  w: Window,
  options: { viewBy?: 'requestDate' | 'submissionDate'; paymentSubtype?: PaymentSubtype } = {},
): Generator<SimTransaction> {
  const bySubmission = options.viewBy === 'submissionDate';
  const subtype = options.paymentSubtype ?? 'ALL';
  for (const tx of dataset.between(w.organizationId, w.start, w.end, {
    notAfter: w.now,
    ...(bySubmission ? { at: (t: SimTransaction) => t.batchTime, lookBackDays: 2 } : {}),
  })) {
    if (!tx.settled) continue;
    if (bySubmission && tx.batchTime > w.now) continue;
    if (subtype !== 'ALL' && tx.paymentSubtype !== subtype) continue;
    yield tx;
  }
}

const PAYMENT_METHOD_CODES: Record<string, string> = {
  VI: 'VISA',
  MC: 'MASTERCARD',
  AX: 'AMERICAN EXPRESS',
  DI: 'DISCOVER',
  EC: 'ECHECK',
};

export interface PurchaseRefundPage {
  offset: number;
  limit: number;
  pageResults: number;
  requestDetails?: Record<string, string>[];
  settlements?: Record<string, string>[];
  authorizations?: Record<string, string>[];
  feeAndFundingDetails?: Record<string, string>[];
  others?: Record<string, string>[];
  settlementStatuses?: Record<string, string>[];
}

export const PURCHASE_REFUND_SECTIONS = [
  'requestDetails',
  'settlements',
  'authorizations',
  'feeAndFundingDetails',
  'others',
  'settlementStatuses',
] as const;

export function purchaseRefundSections(
  tx: SimTransaction,
  org: SimOrganization,
): {
  requestDetails: Record<string, string>;
  settlements: Record<string, string>;
  authorizations?: Record<string, string>;
  feeAndFundingDetails: Record<string, string>;
  others: Record<string, string>;
  settlementStatuses: Record<string, string>;
} {
  const money = (units: number): string => formatMoney(units, tx.currency);
  const fee = tx.fee!;
  const echeck = tx.paymentSubtype === 'EC';
  const out: ReturnType<typeof purchaseRefundSections> = {
    requestDetails: {
      requestId: tx.requestId,
      cybersourceMerchantId: tx.organizationId,
      processorMerchantId: tx.processorMerchantId,
      groupName: org.groupName,
      transactionReferenceNumber: tx.transactionReferenceNumber,
      merchantReferenceNumber: tx.merchantReferenceNumber,
    },
    settlements: {
      requestId: tx.requestId,
      transactionType: tx.settlementType,
      submissionTime: isoUtc(tx.batchTime),
      amount: money(tx.amount),
      currencyCode: tx.currency,
      paymentMethod: PAYMENT_METHOD_CODES[tx.paymentSubtype] ?? tx.paymentMethod,
      walletType: '',
      paymentType: echeck ? 'check' : 'credit card',
      accountSuffix: tx.accountSuffix,
      cybersourceBatchTime: isoUtc(tx.batchTime),
      cybersourceBatchId: tx.batchId,
      cardType: echeck ? '' : tx.paymentMethod,
      debitNetwork: '',
    },
    feeAndFundingDetails: {
      requestId: tx.requestId,
      interchangePerItemFee: money(0),
      interchangeDescription: fee.interchangeDescription,
      interchangePercentage: formatScaled(fee.interchangeRateBp, 2),
      interchangePercentageAmount: money(-fee.interchangeAmount),
      discountPercentage: formatScaled(fee.discountRateBp, 2),
      discountAmount: money(fee.discountAmount),
      discountPerItemFee: money(fee.perItemFee),
      totalFee: money(fee.totalFee),
      feeCurrency: tx.currency,
      duesAssessments: money(0),
      fundingAmount: money(tx.fundingAmount),
      fundingCurrency: tx.currency,
    },
    others: {
      requestId: tx.requestId,
      merchantData1: tx.merchantDefinedData[0],
      merchantData2: tx.merchantDefinedData[1],
      merchantData3: tx.merchantDefinedData[2],
      merchantData4: tx.merchantDefinedData[3],
      firstName: tx.billTo.firstName,
      lastName: tx.billTo.lastName,
    },
    settlementStatuses: {
      requestId: tx.requestId,
      status: 'SETTLED',
      settlementTime: isoUtc(tx.batchTime),
      reasonCode: '100',
      errorText: '',
    },
  };
  if (tx.authorizationRequestId) {
    out.authorizations = {
      requestId: tx.requestId,
      transactionReferenceNumber: tx.transactionReferenceNumber,
      time: isoUtc(tx.kind === 'sale' ? tx.time : tx.time - 3_600_000),
      authorizationRequestId: tx.authorizationRequestId,
      amount: money(tx.amount),
      currencyCode: tx.currency,
      code: tx.authCode,
      rcode: '1',
    };
  }
  return out;
}

interface PageCursor {
  records: Generator<SimTransaction>;
  /** Records consumed from `records` so far (the offset the next page starts at). */
  position: number;
}

/**
 * Resumable page cursors, per dataset: a client walking offset/limit pages in order continues the
 * previous page's generator instead of regenerating every record before its offset (which would
 * make a large window quadratic). A cursor is only reused for a window that is complete (its end
 * is not after the simulated now), so its records cannot change between pages.
 */
const cursors = new WeakMap<Dataset, Map<string, PageCursor>>();
const MAX_CURSORS = 32;

function cursorKey(w: Window, options: { viewBy?: string; paymentSubtype?: string }): string | undefined {
  if (w.end > w.now) return undefined;
  return [w.organizationId, w.start, w.end, options.viewBy ?? '', options.paymentSubtype ?? ''].join('|');
}

function pageCursor(
  dataset: Dataset,
  w: Window,
  options: { offset: number; viewBy?: 'requestDate' | 'submissionDate'; paymentSubtype?: PaymentSubtype },
): { records: Generator<SimTransaction>; skipped: number } {
  const key = cursorKey(w, options);
  const map = cursors.get(dataset);
  const cursor = key === undefined ? undefined : map?.get(key);
  if (cursor && cursor.position === options.offset) {
    map!.delete(key!);
    return { records: cursor.records, skipped: options.offset };
  }
  const records = settledRecords(dataset, w, options);
  let skipped = 0;
  while (skipped < options.offset && !records.next().done) skipped++;
  return { records, skipped };
}

function savePageCursor(
  dataset: Dataset,
  w: Window,
  options: { viewBy?: 'requestDate' | 'submissionDate'; paymentSubtype?: PaymentSubtype },
  records: Generator<SimTransaction>,
  position: number,
): void {
  const key = cursorKey(w, options);
  if (key === undefined) return;
  let map = cursors.get(dataset);
  if (!map) cursors.set(dataset, (map = new Map()));
  map.set(key, { records, position });
  while (map.size > MAX_CURSORS) map.delete(map.keys().next().value!);
}

interface PageOptions {
  offset: number;
  limit: number;
  viewBy?: 'requestDate' | 'submissionDate';
  paymentSubtype?: PaymentSubtype;
}

/**
 * Walk the records of one page (continuing a saved cursor when the client pages in order):
 * `each` is called for at most `limit` records; the count of records of the page and whether the
 * window holds any record at all (at or before the offset) are returned.
 */
function walkPage(
  dataset: Dataset,
  w: Window,
  options: PageOptions,
  each: (tx: SimTransaction) => void,
): { pageResults: number; any: boolean } {
  let pageResults = 0;
  const { records, skipped } = pageCursor(dataset, w, options);
  for (let r = records.next(); !r.done;) {
    each(r.value);
    pageResults++;
    if (pageResults >= options.limit) break;
    r = records.next();
  }
  savePageCursor(dataset, w, options, records, options.offset + pageResults);
  return { pageResults, any: skipped + pageResults > 0 };
}

/**
 * One page; undefined when the window holds no record at all (404). A page at an offset past the
 * last record carries no sections ("an offset larger than the number of results returns no
 * embedded object", DOCS on-demand purchase and refund details).
 */
export function purchaseRefundPage(
  dataset: Dataset,
  w: Window,
  options: PageOptions,
): PurchaseRefundPage | undefined {
  const org = dataset.organization(w.organizationId)!;
  const page: Required<PurchaseRefundPage> = {
    offset: options.offset,
    limit: options.limit,
    pageResults: 0,
    requestDetails: [],
    settlements: [],
    authorizations: [],
    feeAndFundingDetails: [],
    others: [],
    settlementStatuses: [],
  };
  const { pageResults, any } = walkPage(dataset, w, options, (tx) => {
    const s = purchaseRefundSections(tx, org);
    page.requestDetails.push(s.requestDetails);
    page.settlements.push(s.settlements);
    if (s.authorizations) page.authorizations.push(s.authorizations);
    page.feeAndFundingDetails.push(s.feeAndFundingDetails);
    page.others.push(s.others);
    page.settlementStatuses.push(s.settlementStatuses);
  });
  page.pageResults = pageResults;
  if (!any) return undefined;
  if (page.pageResults === 0) return { offset: options.offset, limit: options.limit, pageResults: 0 };
  return page;
}

/** Characters JSON.stringify escapes in a string (quote, backslash, controls, lone surrogates). */
// eslint-disable-next-line no-control-regex -- the control characters are what it looks for
const JSON_UNSAFE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON.stringify writes it. */
function jsonString(value: string): string {
  return JSON_UNSAFE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** `,"key":value` as JSON.stringify writes a property of an object; nothing for undefined. */
function jsonProp(key: string, value: string | undefined): string {
  if (value === undefined) return '';
  return `,"${key}":${typeof value === 'string' ? jsonString(value) : JSON.stringify(value)}`;
}

/**
 * Items of a JSON array, joined into one flat string every few dozen items: the strings built by
 * `+` are trees of pieces, and holding a page's worth of them until the end made V8's scavenges
 * copy (and promote) them again and again.
 */
class JsonItems {
  private readonly done: string[] = [];
  private items: string[] = [];

  push(item: string): void {
    this.items.push(item);
    if (this.items.length >= 64) {
      this.done.push(this.items.join(','));
      this.items = [];
    }
  }

  join(): string {
    if (this.items.length > 0) this.done.push(this.items.join(','));
    this.items = [];
    return this.done.join(',');
  }
}

/**
 * The JSON body of one page, byte for byte `JSON.stringify(purchaseRefundPage(…))` (pinned by
 * test/unit/simulator/on-demand-pages.test.ts), written straight from the transactions without
 * building the page's objects: the simulator serves 2,000-record pages several times faster. A
 * change to `purchaseRefundSections` must be made here too.
 */
export function purchaseRefundPageJson(
  dataset: Dataset,
  w: Window,
  options: PageOptions,
): string | undefined {
  return renderPageJson(dataset, w, options)?.body;
}

function renderPageJson(
  dataset: Dataset,
  w: Window,
  options: PageOptions,
): { body: string; pageResults: number } | undefined {
  const org = dataset.organization(w.organizationId)!;
  const groupName = jsonProp('groupName', org.groupName);
  const requestDetails = new JsonItems();
  const settlements = new JsonItems();
  const authorizations = new JsonItems();
  const feeAndFundingDetails = new JsonItems();
  const others = new JsonItems();
  const settlementStatuses = new JsonItems();
  // Values that repeat from record to record: a day's batch time, money(0) of a currency.
  let batchTime = Number.NaN;
  let batchIso = '';
  const zeros = new Map<string, string>();
  const { pageResults, any } = walkPage(dataset, w, options, (tx) => {
    const currency = tx.currency;
    const money = (units: number): string => formatMoney(units, currency);
    let zero = zeros.get(currency);
    if (zero === undefined) zeros.set(currency, (zero = money(0)));
    if (tx.batchTime !== batchTime) {
      batchTime = tx.batchTime;
      batchIso = isoUtc(batchTime);
    }
    const fee = tx.fee!;
    const echeck = tx.paymentSubtype === 'EC';
    const id = `{"requestId":${jsonString(tx.requestId)}`;
    const currencyJson = jsonString(currency);
    requestDetails.push(
      id +
        jsonProp('cybersourceMerchantId', tx.organizationId) +
        jsonProp('processorMerchantId', tx.processorMerchantId) +
        groupName +
        jsonProp('transactionReferenceNumber', tx.transactionReferenceNumber) +
        jsonProp('merchantReferenceNumber', tx.merchantReferenceNumber) +
        '}',
    );
    settlements.push(
      id +
        jsonProp('transactionType', tx.settlementType) +
        `,"submissionTime":"${batchIso}","amount":"${money(tx.amount)}","currencyCode":${currencyJson}` +
        jsonProp('paymentMethod', PAYMENT_METHOD_CODES[tx.paymentSubtype] ?? tx.paymentMethod) +
        `,"walletType":"","paymentType":"${echeck ? 'check' : 'credit card'}"` +
        jsonProp('accountSuffix', tx.accountSuffix) +
        `,"cybersourceBatchTime":"${batchIso}"` +
        jsonProp('cybersourceBatchId', tx.batchId) +
        jsonProp('cardType', echeck ? '' : tx.paymentMethod) +
        ',"debitNetwork":""}',
    );
    feeAndFundingDetails.push(
      id +
        `,"interchangePerItemFee":"${zero}"` +
        jsonProp('interchangeDescription', fee.interchangeDescription) +
        `,"interchangePercentage":"${formatScaled(fee.interchangeRateBp, 2)}"` +
        `,"interchangePercentageAmount":"${money(-fee.interchangeAmount)}"` +
        `,"discountPercentage":"${formatScaled(fee.discountRateBp, 2)}"` +
        `,"discountAmount":"${money(fee.discountAmount)}"` +
        `,"discountPerItemFee":"${money(fee.perItemFee)}"` +
        `,"totalFee":"${money(fee.totalFee)}","feeCurrency":${currencyJson}` +
        `,"duesAssessments":"${zero}","fundingAmount":"${money(tx.fundingAmount)}"` +
        `,"fundingCurrency":${currencyJson}}`,
    );
    others.push(
      id +
        jsonProp('merchantData1', tx.merchantDefinedData[0]) +
        jsonProp('merchantData2', tx.merchantDefinedData[1]) +
        jsonProp('merchantData3', tx.merchantDefinedData[2]) +
        jsonProp('merchantData4', tx.merchantDefinedData[3]) +
        jsonProp('firstName', tx.billTo.firstName) +
        jsonProp('lastName', tx.billTo.lastName) +
        '}',
    );
    settlementStatuses.push(
      `${id},"status":"SETTLED","settlementTime":"${batchIso}","reasonCode":"100","errorText":""}`,
    );
    if (tx.authorizationRequestId) {
      authorizations.push(
        id +
          jsonProp('transactionReferenceNumber', tx.transactionReferenceNumber) +
          `,"time":"${isoUtc(tx.kind === 'sale' ? tx.time : tx.time - 3_600_000)}"` +
          jsonProp('authorizationRequestId', tx.authorizationRequestId) +
          `,"amount":"${money(tx.amount)}","currencyCode":${currencyJson}` +
          jsonProp('code', tx.authCode) +
          ',"rcode":"1"}',
      );
    }
  });
  if (!any) return undefined;
  const head = `{"offset":${JSON.stringify(options.offset)},"limit":${JSON.stringify(options.limit)},"pageResults":${pageResults}`;
  if (pageResults === 0) return { body: `${head}}`, pageResults };
  const body =
    `${head},"requestDetails":[${requestDetails.join()}],"settlements":[${settlements.join()}]` +
    `,"authorizations":[${authorizations.join()}],"feeAndFundingDetails":[${feeAndFundingDetails.join()}]` +
    `,"others":[${others.join()}],"settlementStatuses":[${settlementStatuses.join()}]}`;
  return { body, pageResults };
}

interface PageAhead {
  key: string;
  /** The rendered page (undefined: no data), or not rendered yet (the render is scheduled). */
  page?: { body: string; pageResults: number } | undefined;
  rendered: boolean;
  render: () => void;
  immediate?: NodeJS.Immediate;
}

/** Per dataset, the page after the last one served of a complete window, rendered ahead. */
const pagesAhead = new WeakMap<Dataset, PageAhead>();

function aheadKey(w: Window, options: PageOptions): string | undefined {
  const cursor = cursorKey(w, options);
  return cursor === undefined ? undefined : `${cursor}|${options.offset}|${options.limit}`;
}

/**
 * `purchaseRefundPageJson` for the route: after a page with records of a complete window (whose
 * records cannot change any more), the next page is rendered while the client reads this one, as a server
 * with more than one core would, and served when it is asked for; any other request is rendered
 * when it comes. The bodies are the same bytes either way (the page is a function of the
 * dataset, window, offset and limit).
 */
export function servePurchaseRefundPageJson(
  dataset: Dataset,
  w: Window,
  options: PageOptions,
): string | undefined {
  const key = aheadKey(w, options);
  const ahead = pagesAhead.get(dataset);
  let page: { body: string; pageResults: number } | undefined;
  if (key !== undefined && ahead?.key === key) {
    pagesAhead.delete(dataset);
    if (!ahead.rendered) {
      if (ahead.immediate) clearImmediate(ahead.immediate);
      ahead.render();
    }
    page = ahead.page;
  } else {
    page = renderPageJson(dataset, w, options);
  }
  // Any page with records may have pages after it (a short page is not the end, for a client that
  // does not know what limit counts); the page past the last one is empty and cheap.
  if (key !== undefined && page !== undefined && page.pageResults > 0) {
    const next = { ...options, offset: options.offset + options.limit };
    const slot: PageAhead = {
      key: aheadKey(w, next)!,
      rendered: false,
      render: () => {
        slot.page = renderPageJson(dataset, w, next);
        slot.rendered = true;
      },
    };
    slot.immediate = setImmediate(() => {
      if (!slot.rendered && pagesAhead.get(dataset) === slot) slot.render();
    });
    pagesAhead.set(dataset, slot);
  }
  return page?.body;
}

interface NetFundingBucket {
  type: 'PURCHASES' | 'REFUNDS' | 'FEES' | 'CHARGEBACKS';
  subtype: string;
  currency: string;
  count: number;
  conveyed: bigint;
  funded: bigint;
}

export interface NetFundingBody {
  startTime: string;
  endTime: string;
  netFundingSummaries: {
    type: string;
    paymentSubType: string;
    conveyedCount: number;
    conveyedAmount: string;
    settledCount: number;
    fundedCount: number;
    fundedAmount: string;
    currencyCode: string;
  }[];
  totalPurchases: { currency: string; value: string }[];
  totalRefunds: { currency: string; value: string }[];
  totalFees: { currency: string; value: string }[];
  totalChargebacks: { currency: string; value: string }[];
  netTotal: { currency: string; value: string }[];
}

export function netFundings(dataset: Dataset, w: Window): NetFundingBody | undefined {
  const buckets = new Map<string, NetFundingBucket>();
  const purchases = new MoneyTally();
  const refunds = new MoneyTally();
  const fees = new MoneyTally();
  const chargebacks = new MoneyTally();
  const add = (
    type: NetFundingBucket['type'],
    tx: SimTransaction,
    conveyed: number,
    funded: number,
  ): void => {
    const key = `${type}|${tx.paymentSubtype}|${tx.currency}`;
    let b = buckets.get(key);
    if (!b) {
      b = { type, subtype: tx.paymentSubtype, currency: tx.currency, count: 0, conveyed: 0n, funded: 0n };
      buckets.set(key, b);
    }
    b.count++;
    b.conveyed += BigInt(conveyed);
    b.funded += BigInt(funded);
  };
  let any = false;
  const delta = new Map<string, bigint>();
  for (const tx of settledRecords(dataset, w)) {
    any = true;
    for (const event of fundingEvents(tx)) {
      if (event.kind === 'payment') {
        if (tx.settlementType === 'Purchases') {
          purchases.add(tx.amount, tx.currency);
          add('PURCHASES', tx, tx.amount, tx.amount);
        } else {
          refunds.add(tx.amount, tx.currency);
          add('REFUNDS', tx, tx.amount, -tx.amount);
        }
        fees.add(event.fee, tx.currency);
        if (event.fee !== 0) add('FEES', tx, event.fee, -event.fee);
      } else if (event.requestId === tx.requestId) {
        // A chargeback on a request id no transaction has (an orphan) has no request date here.
        chargebacks.add(-event.gross, tx.currency);
        add('CHARGEBACKS', tx, -event.gross, event.gross);
      }
    }
    if (tx.anomaly === 'net-funding-mismatch') delta.set(tx.currency, (delta.get(tx.currency) ?? 0n) + 1n);
  }
  if (!any) return undefined;
  const currencies = [...new Set([...purchases.byCurrency.keys(), ...refunds.byCurrency.keys()])].sort();
  const list = (t: MoneyTally): { currency: string; value: string }[] =>
    currencies.map((c) => ({ currency: c, value: formatMoney(t.byCurrency.get(c) ?? 0n, c) }));
  const order = ['PURCHASES', 'REFUNDS', 'FEES', 'CHARGEBACKS'];
  return {
    startTime: new Date(w.start).toISOString(),
    endTime: new Date(w.end).toISOString(),
    netFundingSummaries: [...buckets.values()]
      .sort(
        (a, b) =>
          order.indexOf(a.type) - order.indexOf(b.type) ||
          a.subtype.localeCompare(b.subtype) ||
          a.currency.localeCompare(b.currency),
      )
      .map((b) => ({
        type: b.type,
        paymentSubType: b.subtype,
        conveyedCount: b.count,
        conveyedAmount: formatMoney(b.conveyed, b.currency),
        settledCount: b.count,
        fundedCount: b.count,
        fundedAmount: formatMoney(b.funded, b.currency),
        currencyCode: b.currency,
      })),
    totalPurchases: list(purchases),
    totalRefunds: list(refunds),
    totalFees: list(fees),
    totalChargebacks: list(chargebacks),
    netTotal: currencies.map((c) => ({
      currency: c,
      value: formatMoney(
        (purchases.byCurrency.get(c) ?? 0n) -
          (refunds.byCurrency.get(c) ?? 0n) -
          (fees.byCurrency.get(c) ?? 0n) -
          (chargebacks.byCurrency.get(c) ?? 0n) +
          (delta.get(c) ?? 0n),
        c,
      ),
    })),
  };
}

export const ROLL_UPS = ['day', 'week', 'month'] as const;
export const BREAKDOWNS = ['account_rollup', 'all_merchant', 'selected_merchant'] as const;
const SUBTYPE_DESCRIPTIONS: Record<string, string> = {
  VI: 'Visa',
  MC: 'MasterCard',
  AX: 'American Express',
  DI: 'Discover',
  EC: 'eCheck',
};

export interface PaymentBatchSummaryRow {
  currencyCode: string;
  paymentSubTypeDescription: string;
  startTime: string;
  endTime: string;
  salesCount: number;
  salesAmount: string;
  creditCount: number;
  creditAmount: string;
  accountName: string;
  accountId: string;
  merchantId: string;
  merchantName: string;
}

function periodOf(
  ms: number,
  rollUp: (typeof ROLL_UPS)[number] | undefined,
  startDayOfWeek: number,
  w: Window,
): [number, number] {
  if (!rollUp) return [w.start, w.end];
  const day = utcDate(ms);
  let first = day;
  let next: string;
  if (rollUp === 'day') next = addDays(day, 1);
  else if (rollUp === 'week') {
    const back = (weekday(day) - startDayOfWeek + 7) % 7;
    first = addDays(day, -back);
    next = addDays(first, 7);
  } else {
    first = `${day.slice(0, 8)}01`;
    const [y, m] = day.split('-').map(Number) as [number, number];
    next = m === 12 ? `${y + 1}-01-01` : `${y}-${String(m + 1).padStart(2, '0')}-01`;
  }
  return [
    Math.max(Date.parse(`${first}T00:00:00Z`), w.start),
    Math.min(Date.parse(`${next}T00:00:00Z`), w.end),
  ];
}

export function paymentBatchSummaries(
  dataset: Dataset,
  windows: readonly Window[],
  options: { rollUp?: (typeof ROLL_UPS)[number]; startDayOfWeek?: number } = {},
): { startTime: string; endTime: string; paymentBatchSummaries: PaymentBatchSummaryRow[] } | undefined {
  const rows = new Map<
    string,
    {
      org: SimOrganization;
      currency: string;
      subtype: string;
      period: [number, number];
      sc: number;
      sa: bigint;
      cc: number;
      ca: bigint;
    }
  >();
  for (const w of windows) {
    const org = dataset.organization(w.organizationId)!;
    for (const tx of settledRecords(dataset, w)) {
      const period = periodOf(tx.time, options.rollUp, options.startDayOfWeek ?? 1, w);
      const key = `${org.id}|${period[0]}|${tx.currency}|${tx.paymentSubtype}`;
      let r = rows.get(key);
      if (!r) {
        r = { org, currency: tx.currency, subtype: tx.paymentSubtype, period, sc: 0, sa: 0n, cc: 0, ca: 0n };
        rows.set(key, r);
      }
      if (tx.settlementType === 'Purchases') {
        r.sc++;
        // `batch-summary-mismatch`: the summary says one minor unit more than its detail.
        r.sa += BigInt(tx.amount) + (tx.anomaly === 'batch-summary-mismatch' ? 1n : 0n);
      } else {
        r.cc++;
        r.ca += BigInt(tx.amount);
      }
    }
  }
  if (rows.size === 0) return undefined;
  const first = windows[0]!;
  return {
    startTime: new Date(first.start).toISOString(),
    endTime: new Date(first.end).toISOString(),
    paymentBatchSummaries: [...rows.values()]
      .sort(
        (a, b) =>
          a.org.index - b.org.index ||
          a.period[0] - b.period[0] ||
          a.currency.localeCompare(b.currency) ||
          a.subtype.localeCompare(b.subtype),
      )
      .map((r) => ({
        currencyCode: r.currency,
        paymentSubTypeDescription: SUBTYPE_DESCRIPTIONS[r.subtype] ?? r.subtype,
        startTime: new Date(r.period[0]).toISOString(),
        endTime: new Date(r.period[1]).toISOString(),
        salesCount: r.sc,
        salesAmount: formatMoney(r.sa, r.currency),
        creditCount: r.cc,
        creditAmount: formatMoney(r.ca, r.currency),
        accountName: r.org.accountName,
        accountId: r.org.accountId,
        merchantId: r.org.id,
        merchantName: r.org.name,
      })),
  };
}

export function conversionDetails(dataset: Dataset, w: Window): Record<string, unknown> | undefined {
  const list: Record<string, unknown>[] = [];
  for (const tx of dataset.between(w.organizationId, w.start, w.end, {
    at: (t) => t.conversion?.time ?? -1,
    notAfter: w.now,
  })) {
    const c = tx.conversion!;
    if (c.time > w.now) continue;
    list.push({
      merchantReferenceNumber: tx.merchantReferenceNumber,
      conversionTime: isoUtc(c.time),
      requestId: tx.requestId,
      originalDecision: c.originalDecision,
      newDecision: c.newDecision,
      reviewer: c.reviewer,
      reviewerComments: c.reviewerComments,
      queue: c.queue,
      profile: c.profile,
      notes: [{ time: isoUtc(c.time), addedBy: c.reviewer, comments: c.reviewerComments }],
    });
  }
  if (list.length === 0) return undefined;
  return {
    organizationId: w.organizationId,
    startTime: new Date(w.start).toISOString(),
    endTime: new Date(w.end).toISOString(),
    conversionDetails: list,
  };
}

export function notificationOfChanges(
  dataset: Dataset,
  w: Window,
): { notificationOfChanges: Record<string, string>[] } | undefined {
  const list: Record<string, string>[] = [];
  for (const tx of dataset.between(w.organizationId, w.start, w.end, {
    at: (t) => t.notificationOfChange?.time ?? -1,
    notAfter: w.now,
  })) {
    const n = tx.notificationOfChange!;
    if (n.time > w.now) continue;
    list.push({
      merchantReferenceNumber: tx.merchantReferenceNumber,
      transactionReferenceNumber: tx.transactionReferenceNumber,
      time: isoUtc(n.time),
      code: n.code,
      accountType: n.accountType,
      routingNumber: n.routingNumber,
      accountNumber: n.accountNumber,
      consumerName: n.consumerName,
    });
  }
  return list.length === 0 ? undefined : { notificationOfChanges: list };
}

/* ------------------------------------------------------------------------------------------ */
/* CSV and XML renderings of on-demand answers (the simulator's own layout: no public sample). */

/** CSV of a list of flat records: header from the first record's keys, CRLF, RFC 4180. */
export function recordsToCsv(records: readonly Record<string, unknown>[]): string {
  if (records.length === 0) return '';
  const keys = Object.keys(records[0]!);
  const line = (values: unknown[]): string =>
    values.map((v) => csvField(v === undefined || v === null ? '' : String(v))).join(',');
  return [line(keys), ...records.map((r) => line(keys.map((k) => r[k])))].join('\r\n') + '\r\n';
}

/** Purchase-refund page as CSV: one line per record, columns `<section>.<field>`, sections joined by requestId. */
export function purchaseRefundCsv(page: PurchaseRefundPage): string {
  const details = page.requestDetails ?? [];
  const bySection = PURCHASE_REFUND_SECTIONS.map((s) => {
    const map = new Map<string, Record<string, string>>();
    for (const r of page[s] ?? []) map.set(r['requestId'] ?? '', r);
    return { s, map, keys: Object.keys((page[s] ?? [])[0] ?? {}).filter((k) => k !== 'requestId') };
  });
  const records = details.map((d) => {
    const id = d['requestId'] ?? '';
    const out: Record<string, string> = { requestId: id };
    for (const { s, map, keys } of bySection) {
      const row = map.get(id);
      for (const k of keys) out[`${s}.${k}`] = row?.[k] ?? '';
    }
    return out;
  });
  return recordsToCsv(records);
}

function singular(key: string): string {
  const cap = key.charAt(0).toUpperCase() + key.slice(1);
  if (cap.endsWith('ies')) return `${cap.slice(0, -3)}y`;
  if (cap.endsWith('uses') || cap.endsWith('ses')) return cap.slice(0, -2);
  if (cap.endsWith('s')) return cap.slice(0, -1);
  return `${cap}Item`;
}

function toXml(name: string, value: unknown, indent: string): string {
  if (Array.isArray(value)) {
    const item = singular(name);
    const tag = name.charAt(0).toUpperCase() + name.slice(1);
    return `${indent}<${tag}>\n${value.map((v) => toXml(item, v, `${indent}  `)).join('')}${indent}</${tag}>\n`;
  }
  const tag = name.charAt(0).toUpperCase() + name.slice(1);
  if (value !== null && typeof value === 'object') {
    const inner = Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => toXml(k, v, `${indent}  `))
      .join('');
    return `${indent}<${tag}>\n${inner}${indent}</${tag}>\n`;
  }
  return `${indent}<${tag}>${xmlEscape(value === undefined || value === null ? '' : String(value))}</${tag}>\n`;
}

/** XML of a JSON answer: objects become elements, arrays a wrapper with one element per item. */
export function jsonToXml(rootName: string, body: unknown): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n${toXml(rootName, body, '')}`;
}

export function totalsOf(
  records: Iterable<SimTransaction>,
  amount: (tx: SimTransaction) => number,
): MoneyTally {
  const tally = new MoneyTally();
  for (const tx of records) tally.add(amount(tx), tx.currency);
  return tally;
}

export { settledRecords };
