/**
 * The simulator's deterministic dataset. Every transaction is a pure function of
 * (seed, organization, UTC day, index): transaction `i` of a day can be rebuilt on its own, so a
 * day of a million transactions streams without being held in memory, and small days are memoised
 * in a bounded cache. The same transactions feed every endpoint and every report file, so that
 * summaries (Payment Batch Summary, Net Funding) reconcile exactly with the detail rows.
 *
 * Amounts are integers in minor units (JPY has none, KWD three decimals) and become decimal
 * strings only when written (see money.ts).
 *
 * The money chain is consistent from request to deposit: an authorization drawn on an even day
 * number is captured the next day by the transaction of the same index (so captures follow on odd
 * days; an authorization no capture could follow is a sale instead); a refund refunds, at most in
 * full, the card purchase of the same index the day before, when there is one (else it is a
 * stand-alone credit); settled requests are batched the next morning, funded the day after
 * (money-chain.ts) and deposited a day later; a chargeback is accepted at once. Anomalies
 * (anomalies.ts) break the chain at known places.
 */
import { ANOMALY_NAMES } from './anomalies.js';
import type { AnomalyName, SeededAnomaly } from './anomalies.js';
import { Rng, createRng, hash32 } from './prng.js';
import { DAY_MS, HOUR_MS, addDays, utcDate } from './time.js';

export const TRANSACTION_KINDS = [
  'sale',
  'auth',
  'capture',
  'refund',
  'void',
  'decline',
  'echeck_debit',
  'echeck_credit',
] as const;
export type TransactionKind = (typeof TRANSACTION_KINDS)[number];

export interface SimOrganization {
  id: string;
  index: number;
  name: string;
  accountId: string;
  accountName: string;
  /** The merchant group name used by on-demand reports (groupName). */
  groupName: string;
}

export interface SimBillTo {
  firstName: string;
  lastName: string;
  companyName: string;
  address1: string;
  city: string;
  state: string;
  zip: string;
  country: string;
  email: string;
  phone: string;
  ipAddress: string;
}

export interface SimFee {
  /** Minor units of the transaction currency. */
  discountAmount: number;
  perItemFee: number;
  totalFee: number;
  /** Basis points (239 = 2.39 %). */
  discountRateBp: number;
  interchangeRateBp: number;
  interchangeAmount: number;
  interchangeDescription: string;
}

export interface SimTransaction {
  organizationId: string;
  orgIndex: number;
  /** UTC day the request was made. */
  day: string;
  index: number;
  requestId: string;
  /** Request time, epoch ms. */
  time: number;
  kind: TransactionKind;
  /** `ics_auth,ics_bill` style application list. */
  applications: string;
  rcode: string;
  rflag: string;
  rmsg: string;
  reasonCode: string;
  merchantReferenceNumber: string;
  transactionReferenceNumber: string;
  currency: string;
  /** Minor units, always positive (sign comes from the kind). */
  amount: number;
  paymentMethod: string;
  /** VI, MC, AX, DI or EC (eCheck). */
  paymentSubtype: string;
  cardType: string;
  accountSuffix: string;
  authCode: string;
  billTo: SimBillTo;
  avsResult: string;
  cvvResult: string;
  merchantDefinedData: [string, string, string, string];
  deviceId: string;
  processorMerchantId: string;
  /** Settles in a batch (sale, capture, refund, eCheck debit/credit that succeeded). */
  settled: boolean;
  batchId: string;
  batchTime: number;
  /** Purchases (sale, capture, eCheck debit) or Refunds (refund, eCheck credit); '' when not settled. */
  settlementType: '' | 'Purchases' | 'Refunds';
  fee?: SimFee;
  /** Net funded amount in minor units (purchase − fee; refund negative); 0 when not settled. */
  fundingAmount: number;
  /** For sales and captures: the authorization's request id. */
  authorizationRequestId?: string;
  conversion?: {
    time: number;
    originalDecision: string;
    newDecision: string;
    reviewer: string;
    reviewerComments: string;
    queue: string;
    profile: string;
  };
  notificationOfChange?: {
    time: number;
    code: string;
    accountType: string;
    routingNumber: string;
    accountNumber: string;
    consumerName: string;
  };
  chargeback?: SimChargeback;
  /** Recurring billing: the customer subscription id. */
  subscriptionId?: string;
  /** The request this one follows up: a capture's authorization, a refund's capture. */
  predecessorRequestId?: string;
  /** The anomaly seeded on this transaction (anomalies.ts). */
  anomaly?: AnomalyName;
}

export interface SimChargeback {
  time: number;
  /** Minor units of the transaction currency. */
  amount: number;
  reasonCode: string;
  caseNumber: string;
  /** The request id the chargeback names: the transaction's (an orphan's names none that exists). */
  requestId: string;
  /** Date (UTC) by which the merchant must respond: ten days after the case. */
  respondBy: string;
  /** When the case was resolved (accepted by the merchant at once); undefined while it is open. */
  resolutionTime?: number;
}

export interface DatasetOptions {
  seed: number;
  organizations: readonly SimOrganization[];
  transactionsPerDay: number;
  /** First UTC day with data (YYYY-MM-DD). */
  startDate: string;
  /** Share of (organization, day) pairs without any transaction (NO_DATA days); default 0.05. */
  quietDayRate?: number;
  /** Anomalies to seed (anomalies.ts), on the first organization. */
  anomalies?: readonly AnomalyName[];
  /** Simulated now when the dataset is made: an open chargeback is due two days after it. */
  now?: number;
}

const FIRST_NAMES = [
  'James',
  'Maria',
  'Wei',
  'Aisha',
  'Lars',
  'Sofia',
  'Kenji',
  'Olu',
  'Chloé',
  'Rahul',
  'Emma',
  'Diego',
];
const LAST_NAMES = [
  'Smith',
  "O'Brien",
  'Nguyen',
  'García',
  'Müller',
  'Tanaka',
  'Okafor',
  'Johnson',
  'Rossi',
  'Kowalski',
];
/** Some names carry commas, quotes and line breaks on purpose: files must quote them (RFC 4180). */
const COMPANIES = [
  '',
  '',
  'Acme Corp',
  'Smith, Jones & Co.',
  'The "Best" Widgets Ltd',
  'Globex <Intl>',
  'Initech',
  'Müller GmbH',
  'Umbrella, Inc.',
  'Nakatomi Trading',
];
const STREETS = [
  '1295 Charleston Rd',
  '900 Metro Center Blvd',
  '12 High Street, Flat 3',
  '4 Rue de la Paix',
  'Suite 500\nOne Market Plaza',
  '77 "Old Mill" Lane',
  '1-2-3 Shibuya',
  '221B Baker St',
];
const CITIES: readonly [string, string, string, string][] = [
  ['Mountain View', 'CA', '94043', 'US'],
  ['Foster City', 'CA', '94404', 'US'],
  ['Austin', 'TX', '78701', 'US'],
  ['London', '', 'NW1 6XE', 'GB'],
  ['Paris', '', '75002', 'FR'],
  ['Tokyo', '', '150-0002', 'JP'],
  ['Toronto', 'ON', 'M5H 2N2', 'CA'],
  ['Berlin', '', '10115', 'DE'],
];
const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY', 'CAD', 'KWD'] as const;
const CURRENCY_WEIGHTS = [55, 14, 10, 9, 7, 5];
const CARDS: readonly { method: string; subtype: string; cardType: string; interchange: string }[] = [
  { method: 'Visa', subtype: 'VI', cardType: '001', interchange: 'Visa CPS/e-Commerce Basic' },
  { method: 'MasterCard', subtype: 'MC', cardType: '002', interchange: 'MasterCard Merit I' },
  { method: 'American Express', subtype: 'AX', cardType: '003', interchange: 'Amex OptBlue' },
  { method: 'Discover', subtype: 'DI', cardType: '004', interchange: 'Discover Card Not Present' },
];
const CARD_WEIGHTS = [50, 30, 12, 8];
const KINDS: readonly TransactionKind[] = TRANSACTION_KINDS;
const KIND_WEIGHTS = [45, 11, 16, 8, 3, 8, 7, 2];
const AVS = ['Y', 'X', 'Z', 'A', 'N', 'U'];
const CVV = ['M', 'M', 'M', 'N', 'P'];
const DECLINES: readonly [string, string, string][] = [
  ['203', 'DCARDREFUSED', 'General decline of the card'],
  ['204', 'DCARDREFUSED', 'Insufficient funds in the account'],
  ['233', 'DINVALIDDATA', 'General decline by the processor'],
];
const REVIEWERS = ['jdoe', 'asmith', 'riskbot'];
const QUEUES = ['Review Queue', 'High Value Queue'];
const PROFILES = ['Default Profile', 'High Risk Profile'];
const NOC_CODES: readonly [string, string][] = [
  ['C01', 'Incorrect account number'],
  ['C02', 'Incorrect routing number'],
  ['C05', 'Incorrect transaction code'],
];

/** Per-currency amount range in minor units and the per-item fee. */
function amountRange(currency: string): { min: number; max: number; perItem: number } {
  switch (currency) {
    case 'JPY':
      return { min: 100, max: 60_000, perItem: 15 };
    case 'KWD':
      return { min: 500, max: 150_000, perItem: 30 };
    default:
      return { min: 100, max: 50_000, perItem: 10 };
  }
}

export interface Dataset {
  readonly seed: number;
  readonly organizations: readonly SimOrganization[];
  readonly startDate: string;
  readonly transactionsPerDay: number;
  organization(id: string): SimOrganization | undefined;
  /** Number of transactions of an organization on a UTC day (0 before startDate and on quiet days). */
  dayCount(orgId: string, day: string): number;
  /** Transaction `index` of a UTC day. */
  transaction(org: SimOrganization, day: string, index: number): SimTransaction;
  /** A day's transactions in time order (memoised for small days, generated on the fly for big ones). */
  day(orgId: string, day: string): Iterable<SimTransaction>;
  /**
   * Transactions whose `at(tx)` falls in [from, to), in order of `at` as long as `at` is monotonic
   * within and across days (request time and batch time both are). `notAfter` cuts transactions
   * that have not happened yet (request time after the simulated now).
   */
  between(orgId: string, from: number, to: number, options?: BetweenOptions): Generator<SimTransaction>;
  /** Close time of an organization's batch of a UTC day (every settled request of the day is in it). */
  batchTime(orgId: string, day: string): number;
  /** Where the requested anomalies were seeded. */
  readonly anomalies: readonly SeededAnomaly[];
}

export interface BetweenOptions {
  /** The instant that places a transaction in the window (default: request time). */
  at?: (tx: SimTransaction) => number;
  /** Transactions with a request time after this have not happened yet. */
  notAfter?: number;
  /** Days before the window's first UTC day to scan (default 0, or 2 with a custom `at`). */
  lookBackDays?: number;
  /** Skip whole UTC days that cannot hold a match (e.g. by batch time). */
  skipDay?: (day: string) => boolean;
}

const MEMO_LIMIT_PER_DAY = 5_000;
const MEMO_DAYS = 48;

export function createDataset(options: DatasetOptions): Dataset {
  const { seed, organizations, transactionsPerDay, startDate } = options;
  const quietRate = options.quietDayRate ?? 0.05;
  const byId = new Map(organizations.map((o) => [o.id, o]));
  const memo = new Map<string, SimTransaction[]>();

  const dayCount = (orgId: string, day: string): number => {
    if (day < startDate) return 0;
    const quiet = hash32(`${seed}|quiet|${orgId}|${day}`) / 4294967296 < quietRate;
    return quiet ? 0 : transactionsPerDay;
  };

  const ctx: BuildContext = { seed, dayCount, plan: new Map() };
  const first = organizations[0];
  const anomalies =
    options.anomalies && options.anomalies.length > 0 && first
      ? placeAnomalies(ctx, first, startDate, options.anomalies, options.now ?? Date.now())
      : [];

  const transaction = (org: SimOrganization, day: string, index: number): SimTransaction =>
    buildTransaction(ctx, org, day, index);

  function* generateDay(org: SimOrganization, day: string, from = 0): Generator<SimTransaction> {
    const n = dayCount(org.id, day);
    for (let i = from; i < n; i++) yield buildTransaction(ctx, org, day, i);
  }

  /** A day's transactions; big days start at `fromTime` (request times are spread by index). */
  const dayIterable = (orgId: string, day: string, fromTime?: number): Iterable<SimTransaction> => {
    const org = byId.get(orgId);
    if (!org) return [];
    const n = dayCount(orgId, day);
    if (n === 0) return [];
    if (n > MEMO_LIMIT_PER_DAY) {
      const dayStart = Date.parse(`${day}T00:00:00Z`);
      const first =
        fromTime === undefined ? 0 : Math.max(0, Math.floor(((fromTime - dayStart) * n) / DAY_MS) - 1);
      return { [Symbol.iterator]: () => generateDay(org, day, Math.min(first, n)) };
    }
    const key = `${orgId}|${day}`;
    let list = memo.get(key);
    if (list) {
      memo.delete(key);
      memo.set(key, list);
      return list;
    }
    list = [...generateDay(org, day)];
    memo.set(key, list);
    if (memo.size > MEMO_DAYS) memo.delete(memo.keys().next().value!);
    return list;
  };

  function* between(
    orgId: string,
    from: number,
    to: number,
    opts: BetweenOptions = {},
  ): Generator<SimTransaction> {
    if (!(to > from)) return;
    const byRequestTime = opts.at === undefined;
    const at = opts.at ?? ((tx: SimTransaction) => tx.time);
    const lookBack = opts.lookBackDays ?? (opts.at ? 2 : 0);
    let day = addDays(utcDate(from), -lookBack);
    const lastDay = utcDate(to - 1);
    const firstDay = day < startDate ? startDate : day;
    day = firstDay;
    while (day <= lastDay) {
      if (opts.notAfter !== undefined && Date.parse(`${day}T00:00:00Z`) > opts.notAfter) return;
      if (!opts.skipDay?.(day)) {
        for (const tx of dayIterable(orgId, day, byRequestTime ? from : undefined)) {
          if (opts.notAfter !== undefined && tx.time > opts.notAfter) return;
          const t = at(tx);
          if (t >= from && t < to) yield tx;
          else if (byRequestTime && t >= to) return;
        }
      }
      day = addDays(day, 1);
    }
  }

  return {
    seed,
    organizations,
    startDate,
    transactionsPerDay,
    organization: (id) => byId.get(id),
    dayCount,
    transaction,
    day: (orgId, day) => dayIterable(orgId, day),
    between,
    batchTime: (orgId, day) => {
      const org = byId.get(orgId);
      return org ? batchOf(seed, org, day).time : 0;
    },
    anomalies,
  };
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

const dayHashes = new Map<string, number>();

/** hash32 of (seed, org, day), memoised: the base of every transaction generator of that day. */
function dayHash(seed: number, orgId: string, day: string): number {
  const key = `${seed}|tx|${orgId}|${day}`;
  let h = dayHashes.get(key);
  if (h === undefined) {
    h = hash32(key);
    if (dayHashes.size > 10_000) dayHashes.clear();
    dayHashes.set(key, h);
  }
  return h;
}

const batches = new Map<string, { id: string; time: number }>();

function batchOf(seed: number, org: SimOrganization, day: string): { id: string; time: number } {
  const key = `${seed}|${org.id}|${day}`;
  const known = batches.get(key);
  if (known) return known;
  const r = createRng(`${seed}|batch|${org.id}|${day}`);
  const dayStart = Date.parse(`${day}T00:00:00Z`);
  const id = `${pad(org.index + 1, 2)}${day.replace(/-/g, '').slice(2)}${r.digits(3)}`;
  // Batches close the next morning (UTC), like the real classic file: 04:15 on the next day.
  const batch = { id, time: dayStart + DAY_MS + 4 * HOUR_MS + r.int(0, 59) * 60_000 + r.int(0, 59) * 1000 };
  if (batches.size > 10_000) batches.clear();
  batches.set(key, batch);
  return batch;
}

const dayStarts = new Map<string, number>();

function dayStartOf(day: string): number {
  let t = dayStarts.get(day);
  if (t === undefined) {
    t = Date.parse(`${day}T00:00:00Z`);
    if (dayStarts.size > 10_000) dayStarts.clear();
    dayStarts.set(day, t);
  }
  return t;
}

/** What building a transaction needs besides its coordinates. */
interface BuildContext {
  seed: number;
  dayCount: (orgId: string, day: string) => number;
  /** Seeded anomalies by `organization|day|index`, and the due date of `chargeback-due`. */
  plan: Map<string, { name: AnomalyName; dueDate?: string }>;
}

const planKey = (orgId: string, day: string, index: number): string => `${orgId}|${day}|${index}`;

/** Days since 1970-01-01 of a UTC day: its parity says whether authorizations or captures fall on it. */
function dayNumberOf(day: string): number {
  return Math.round(dayStartOf(day) / DAY_MS);
}

const APPLICATIONS: Record<TransactionKind, string> = {
  sale: 'ics_auth,ics_bill',
  auth: 'ics_auth',
  decline: 'ics_auth',
  capture: 'ics_bill',
  refund: 'ics_credit',
  void: 'ics_void',
  echeck_debit: 'ecp_debit',
  echeck_credit: 'ecp_credit',
};

function settlementTypeOf(kind: TransactionKind): SimTransaction['settlementType'] {
  if (kind === 'sale' || kind === 'capture' || kind === 'echeck_debit') return 'Purchases';
  if (kind === 'refund' || kind === 'echeck_credit') return 'Refunds';
  return '';
}

/**
 * Transaction `index` of `organization` on `day`: the drawn request (baseTransaction), linked to
 * the requests before it (a capture of yesterday's authorization, a refund of yesterday's
 * purchase), then settled, batched, charged its fees and, rarely, charged back (settle), with its
 * seeded anomaly if it has one.
 */
export function buildTransaction(
  ctx: BuildContext,
  org: SimOrganization,
  day: string,
  index: number,
): SimTransaction {
  const tx = baseTransaction(ctx.seed, org, day, index, ctx.dayCount(org.id, day));
  const planned = ctx.plan.get(planKey(org.id, day, index));
  if (!linkCapture(ctx, org, tx) && tx.kind === 'refund') linkRefund(ctx, org, tx, planned?.name);
  settle(ctx.seed, org, tx, planned);
  return tx;
}

/**
 * An authorization of an even day is captured the next day (by the transaction of the same index);
 * one that no capture can follow (the next day is quiet, or has fewer transactions, or the day is
 * odd) is a sale. Returns true when `tx` became the capture of yesterday's authorization.
 */
function linkCapture(ctx: BuildContext, org: SimOrganization, tx: SimTransaction): boolean {
  const even = dayNumberOf(tx.day) % 2 === 0;
  if (!even) {
    const prevDay = addDays(tx.day, -1);
    const n = ctx.dayCount(org.id, prevDay);
    if (tx.index < n && ctx.plan.get(planKey(org.id, prevDay, tx.index))?.name !== 'open-authorization') {
      // The kind first: the whole request is built only for an authorization (a big day's
      // generator would otherwise build every request of the day before as well).
      if (baseKind(ctx.seed, org, prevDay, tx.index) === 'auth') {
        captureOf(tx, baseTransaction(ctx.seed, org, prevDay, tx.index, n));
        return true;
      }
    }
  }
  if (tx.kind === 'auth' && !(even && tx.index < ctx.dayCount(org.id, addDays(tx.day, 1)))) {
    tx.kind = 'sale';
    tx.applications = APPLICATIONS.sale;
    tx.authorizationRequestId = tx.requestId;
  }
  return false;
}

/** `tx` becomes the capture of `auth`, in full, with the authorization's card and customer. */
function captureOf(tx: SimTransaction, auth: SimTransaction): void {
  tx.kind = 'capture';
  tx.applications = APPLICATIONS.capture;
  tx.rcode = '1';
  tx.rflag = 'SOK';
  tx.rmsg = 'Request was processed successfully.';
  tx.reasonCode = '100';
  sameCard(tx, auth);
  tx.amount = auth.amount;
  tx.authCode = auth.authCode;
  tx.authorizationRequestId = auth.requestId;
  tx.predecessorRequestId = auth.requestId;
  delete tx.conversion;
  delete tx.notificationOfChange;
}

function sameCard(tx: SimTransaction, other: SimTransaction): void {
  tx.currency = other.currency;
  tx.paymentMethod = other.paymentMethod;
  tx.paymentSubtype = other.paymentSubtype;
  tx.cardType = other.cardType;
  tx.accountSuffix = other.accountSuffix;
  tx.avsResult = other.avsResult;
  tx.cvvResult = other.cvvResult;
  tx.billTo = other.billTo;
  tx.merchantReferenceNumber = other.merchantReferenceNumber;
}

/**
 * A refund refunds the card purchase (sale or capture) of the same index the day before, at most in
 * full (each purchase has at most this one refund), in its currency and on its card; without one
 * it stays a stand-alone credit. `refund-exceeds-capture` refunds one minor unit more.
 */
function linkRefund(
  ctx: BuildContext,
  org: SimOrganization,
  tx: SimTransaction,
  anomaly: AnomalyName | undefined,
): void {
  const prevDay = addDays(tx.day, -1);
  const n = ctx.dayCount(org.id, prevDay);
  if (tx.index >= n) return;
  const purchase = baseTransaction(ctx.seed, org, prevDay, tx.index, n);
  linkCapture(ctx, org, purchase);
  if (purchase.kind !== 'sale' && purchase.kind !== 'capture') return;
  const amount = Math.min(tx.amount, purchase.amount);
  sameCard(tx, purchase);
  tx.amount = anomaly === 'refund-exceeds-capture' ? purchase.amount + 1 : amount;
  tx.predecessorRequestId = purchase.requestId;
}

/**
 * Settlement, batch, fees, net funded amount and chargeback of a linked transaction (from a
 * generator of its own, so that linking does not move the draws of the request). An
 * `unbatched-capture` is accepted but never settled.
 */
function settle(
  seed: number,
  org: SimOrganization,
  tx: SimTransaction,
  planned: { name: AnomalyName; dueDate?: string } | undefined,
): void {
  const r = createRng(`${seed}|settle|${org.id}|${tx.day}|${tx.index}`);
  const echeck = tx.paymentSubtype === 'EC';
  const settlementType = settlementTypeOf(tx.kind);
  const settled = settlementType !== '' && planned?.name !== 'unbatched-capture';
  tx.settlementType = settled ? settlementType : '';
  tx.settled = settled;
  if (planned) tx.anomaly = planned.name;
  if (!settled) return;
  const batch = batchOf(seed, org, tx.day);
  tx.batchId = batch.id;
  tx.batchTime = batch.time;
  const { perItem } = amountRange(tx.currency);
  if (settlementType === 'Purchases') {
    const discountRateBp = echeck ? 50 : r.int(150, 320);
    const interchangeRateBp = Math.max(discountRateBp - r.int(20, 60), 5);
    const discountAmount = Math.round((tx.amount * discountRateBp) / 10_000);
    const interchangeAmount = Math.round((tx.amount * interchangeRateBp) / 10_000);
    const card = CARDS.find((c) => c.subtype === tx.paymentSubtype);
    tx.fee = {
      discountAmount,
      perItemFee: perItem,
      totalFee: discountAmount + perItem,
      discountRateBp,
      interchangeRateBp,
      interchangeAmount,
      interchangeDescription: echeck ? 'ACH Debit' : (card?.interchange ?? 'Standard'),
    };
    tx.fundingAmount = tx.amount - tx.fee.totalFee;
  } else {
    tx.fee = {
      discountAmount: 0,
      perItemFee: 0,
      totalFee: 0,
      discountRateBp: 0,
      interchangeRateBp: 0,
      interchangeAmount: 0,
      interchangeDescription: echeck ? 'ACH Credit' : 'Credit Voucher',
    };
    tx.fundingAmount = -tx.amount;
  }
  const forced = planned?.name === 'orphan-chargeback' || planned?.name === 'chargeback-due';
  if (settlementType === 'Purchases' && !echeck && (r.chance(0.01) || forced)) {
    const dayEnd = dayStartOf(tx.day) + DAY_MS - 1;
    const time = Math.min(tx.time + r.int(60, 600) * 60_000, dayEnd);
    tx.chargeback = {
      time,
      amount: tx.amount,
      reasonCode: r.pick(['10.4', '13.1', '4837', '4853']),
      caseNumber: r.digits(10),
      requestId: planned?.name === 'orphan-chargeback' ? `9${tx.requestId.slice(1)}` : tx.requestId,
      respondBy: planned?.dueDate ?? utcDate(time + 10 * DAY_MS),
      ...(planned?.name === 'chargeback-due' ? {} : { resolutionTime: time }),
    };
  }
}

/**
 * Seed each anomaly on `org`, on day startDate + 1 + k (k its position in ANOMALY_NAMES; the next
 * even day number for `open-authorization`), at the first transaction it fits, in order, each
 * placement seeing the ones before it.
 */
function placeAnomalies(
  ctx: BuildContext,
  org: SimOrganization,
  startDate: string,
  names: readonly AnomalyName[],
  now: number,
): SeededAnomaly[] {
  const out: SeededAnomaly[] = [];
  const taken = new Set<string>();
  for (const name of ANOMALY_NAMES.filter((n) => names.includes(n))) {
    let day = addDays(startDate, 1 + ANOMALY_NAMES.indexOf(name));
    for (let tries = 0; tries < 60; tries++, day = addDays(day, 1)) {
      if (name === 'open-authorization' && dayNumberOf(day) % 2 !== 0) continue;
      const n = ctx.dayCount(org.id, day);
      let found: SimTransaction | undefined;
      for (let i = 0; i < n && !found; i++) {
        if (taken.has(planKey(org.id, day, i)) || taken.has(planKey(org.id, addDays(day, 1), i))) continue;
        const tx = buildTransaction(ctx, org, day, i);
        if (fits(name, tx)) found = tx;
      }
      if (!found) continue;
      const key = planKey(org.id, day, found.index);
      ctx.plan.set(key, {
        name,
        ...(name === 'chargeback-due' ? { dueDate: utcDate(now + 2 * DAY_MS) } : {}),
      });
      taken.add(key);
      const seeded = buildTransaction(ctx, org, day, found.index);
      out.push(describeAnomaly(name, seeded));
      break;
    }
  }
  return out;
}

function fits(name: AnomalyName, tx: SimTransaction): boolean {
  if (name === 'open-authorization') return tx.kind === 'auth';
  if (name === 'refund-exceeds-capture') return tx.kind === 'refund' && tx.predecessorRequestId !== undefined;
  return (
    (tx.kind === 'sale' || tx.kind === 'capture') &&
    tx.settled &&
    tx.paymentSubtype !== 'EC' &&
    tx.chargeback === undefined
  );
}

function describeAnomaly(name: AnomalyName, tx: SimTransaction): SeededAnomaly {
  const payment = tx.settled ? paymentFundingIds(tx) : undefined;
  return {
    name,
    organizationId: tx.organizationId,
    day: tx.day,
    index: tx.index,
    requestId: tx.requestId,
    currency: tx.currency,
    ...(tx.predecessorRequestId ? { predecessorRequestId: tx.predecessorRequestId } : {}),
    ...(payment && name !== 'unfunded-settlement' ? payment : {}),
    ...(tx.chargeback && (name === 'orphan-chargeback' || name === 'chargeback-due')
      ? { caseNumber: tx.chargeback.caseNumber, chargebackRequestId: tx.chargeback.requestId }
      : {}),
  };
}

/** The funding and deposit ids of an organization's funding of a UTC day in a currency. */
export function fundingIdsOf(
  orgIndex: number,
  fundingDate: string,
  currency: string,
): { fundingId: string; depositId: string } {
  const suffix = `${pad(orgIndex + 1, 4)}${fundingDate.replace(/-/g, '')}${currency}`;
  return { fundingId: `F${suffix}`, depositId: `D${suffix}` };
}

/** The UTC day a settled request is funded: the day after its batch closes. */
export function paymentFundingDate(tx: SimTransaction): string {
  return utcDate(tx.batchTime + DAY_MS);
}

function paymentFundingIds(tx: SimTransaction): { fundingId: string; depositId: string } {
  return fundingIdsOf(tx.orgIndex, paymentFundingDate(tx), tx.currency);
}

/** The request as drawn: its kind, card, amount, customer and replies, before any linking. */
/** The kind baseTransaction draws for the request, without building it (the same first draws). */
function baseKind(seed: number, org: SimOrganization, day: string, index: number): TransactionKind {
  const r = Rng.fromInts(dayHash(seed, org.id, day), index);
  r.next();
  r.digits(2);
  return r.weighted(KINDS, KIND_WEIGHTS);
}

function baseTransaction(
  seed: number,
  org: SimOrganization,
  day: string,
  index: number,
  count: number,
): SimTransaction {
  const r = Rng.fromInts(dayHash(seed, org.id, day), index);
  const dayStart = dayStartOf(day);
  const slot = DAY_MS / Math.max(count, 1);
  const time = dayStart + Math.floor((index + r.next()) * slot);
  const deci = String(Math.floor(time / 100))
    .slice(-10)
    .padStart(10, '0');
  const requestId = `${deci}${pad(org.index % 1000, 3)}${pad(index % 10_000_000, 7)}${r.digits(2)}`;
  const kind = r.weighted(KINDS, KIND_WEIGHTS);
  const echeck = kind === 'echeck_debit' || kind === 'echeck_credit';
  const card = r.weighted(CARDS, CARD_WEIGHTS);
  const currency = echeck ? 'USD' : r.weighted(CURRENCIES, CURRENCY_WEIGHTS);
  const range = amountRange(currency);
  const amount = r.int(range.min, range.max);
  const first = r.pick(FIRST_NAMES);
  const last = r.pick(LAST_NAMES);
  const [city, state, zip, country] = r.pick(CITIES);
  const billTo: SimBillTo = {
    firstName: first,
    lastName: last,
    companyName: r.pick(COMPANIES),
    address1: r.pick(STREETS),
    city,
    state,
    zip,
    country,
    email: `${first.toLowerCase().replace(/[^a-z]/g, '')}.${last.toLowerCase().replace(/[^a-z]/g, '')}${r.int(1, 99)}@example.com`,
    phone: `+1-555-${r.digits(3)}-${r.digits(4)}`,
    ipAddress: `10.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`,
  };
  const declined = kind === 'decline';
  const decline = declined ? r.pick(DECLINES) : undefined;
  const dayEnd = dayStart + DAY_MS - 1;
  const tx: SimTransaction = {
    organizationId: org.id,
    orgIndex: org.index,
    day,
    index,
    requestId,
    time,
    kind,
    applications: APPLICATIONS[kind],
    rcode: declined ? '0' : '1',
    rflag: decline ? decline[1] : 'SOK',
    rmsg: decline ? decline[2] : 'Request was processed successfully.',
    reasonCode: decline ? decline[0] : '100',
    merchantReferenceNumber: `${org.index + 1}-${day.replace(/-/g, '')}-${pad(index, 7)}`,
    transactionReferenceNumber: r.digits(8),
    currency,
    amount,
    paymentMethod: echeck ? 'eCheck' : card.method,
    paymentSubtype: echeck ? 'EC' : card.subtype,
    cardType: echeck ? '' : card.cardType,
    accountSuffix: r.digits(4),
    authCode: kind === 'sale' || kind === 'auth' || kind === 'capture' ? r.digits(6) : '',
    billTo,
    avsResult: echeck ? '' : r.pick(AVS),
    cvvResult: echeck ? '' : r.pick(CVV),
    merchantDefinedData: [
      `promo-${r.int(1, 9)}`,
      r.pick(['web', 'mobile', 'call center']),
      `campaign, ${r.int(2020, 2026)}`,
      '',
    ],
    deviceId: r.hex(16),
    processorMerchantId: `4${pad(org.index + 1, 3)}${pad(dayHash(seed, org.id, '') % 1_000_000, 6)}`,
    settled: false,
    batchId: '',
    batchTime: 0,
    settlementType: '',
    fundingAmount: 0,
  };
  if (kind === 'sale' || kind === 'capture') {
    tx.authorizationRequestId =
      kind === 'sale' ? requestId : `${deci}${pad(org.index % 1000, 3)}9${r.digits(8)}`;
    // A capture drawn as such captures an authorization made before the data begins.
    if (kind === 'capture') tx.predecessorRequestId = tx.authorizationRequestId;
  }
  if ((kind === 'sale' || kind === 'auth') && r.chance(0.05)) {
    tx.conversion = {
      time: Math.min(time + r.int(5, 240) * 60_000, dayEnd),
      originalDecision: 'REVIEW',
      newDecision: r.chance(0.8) ? 'ACCEPT' : 'REJECT',
      reviewer: r.pick(REVIEWERS),
      reviewerComments: r.pick([
        'Verified order.',
        'Customer confirmed by phone, "OK"',
        'Address mismatch, rejected',
      ]),
      queue: r.pick(QUEUES),
      profile: r.pick(PROFILES),
    };
  }
  if (echeck && r.chance(0.1)) {
    const [code] = r.pick(NOC_CODES);
    tx.notificationOfChange = {
      time: Math.min(time + r.int(30, 600) * 60_000, dayEnd),
      code,
      accountType: r.pick(['Checking Account', 'Savings Account']),
      routingNumber: r.digits(9),
      accountNumber: `############${tx.accountSuffix}`,
      consumerName: `${first} ${last}`,
    };
  }
  if (r.chance(0.1) && (kind === 'sale' || kind === 'capture')) tx.subscriptionId = r.digits(16);
  return tx;
}
