/**
 * The simulator's deterministic dataset. Every transaction is a pure function of
 * (seed, organization, UTC day, index): transaction `i` of a day can be rebuilt on its own, so a
 * day of a million transactions streams without being held in memory, and small days are memoised
 * in a bounded cache. The same transactions feed every endpoint and every report file, so that
 * summaries (Payment Batch Summary, Net Funding) reconcile exactly with the detail rows.
 *
 * Amounts are integers in minor units (JPY has none, KWD three decimals) and become decimal
 * strings only when written (see money.ts).
 */
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
  chargeback?: { time: number; amount: number; reasonCode: string; caseNumber: string };
  /** Recurring billing: the customer subscription id. */
  subscriptionId?: string;
}

export interface DatasetOptions {
  seed: number;
  organizations: readonly SimOrganization[];
  transactionsPerDay: number;
  /** First UTC day with data (YYYY-MM-DD). */
  startDate: string;
  /** Share of (organization, day) pairs without any transaction (NO_DATA days); default 0.05. */
  quietDayRate?: number;
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

  const transaction = (org: SimOrganization, day: string, index: number): SimTransaction =>
    buildTransaction(seed, org, day, index, dayCount(org.id, day));

  function* generateDay(org: SimOrganization, day: string, from = 0): Generator<SimTransaction> {
    const n = dayCount(org.id, day);
    for (let i = from; i < n; i++) yield buildTransaction(seed, org, day, i, n);
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

/** Transaction `index` of `count` on `day`: request times are spread over the day in index order. */
export function buildTransaction(
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
  let applications: string;
  let settlementType: SimTransaction['settlementType'] = '';
  switch (kind) {
    case 'sale':
      applications = 'ics_auth,ics_bill';
      settlementType = 'Purchases';
      break;
    case 'auth':
    case 'decline':
      applications = 'ics_auth';
      break;
    case 'capture':
      applications = 'ics_bill';
      settlementType = 'Purchases';
      break;
    case 'refund':
      applications = 'ics_credit';
      settlementType = 'Refunds';
      break;
    case 'void':
      applications = 'ics_void';
      break;
    case 'echeck_debit':
      applications = 'ecp_debit';
      settlementType = 'Purchases';
      break;
    case 'echeck_credit':
      applications = 'ecp_credit';
      settlementType = 'Refunds';
      break;
  }
  const declined = kind === 'decline';
  const decline = declined ? r.pick(DECLINES) : undefined;
  const settled = settlementType !== '';
  const batch = settled ? batchOf(seed, org, day) : { id: '', time: 0 };
  let fee: SimFee | undefined;
  let fundingAmount = 0;
  if (settled) {
    if (settlementType === 'Purchases') {
      const discountRateBp = echeck ? 50 : r.int(150, 320);
      const interchangeRateBp = Math.max(discountRateBp - r.int(20, 60), 5);
      const discountAmount = Math.round((amount * discountRateBp) / 10_000);
      const interchangeAmount = Math.round((amount * interchangeRateBp) / 10_000);
      const perItemFee = range.perItem;
      fee = {
        discountAmount,
        perItemFee,
        totalFee: discountAmount + perItemFee,
        discountRateBp,
        interchangeRateBp,
        interchangeAmount,
        interchangeDescription: echeck ? 'ACH Debit' : card.interchange,
      };
      fundingAmount = amount - fee.totalFee;
    } else {
      fee = {
        discountAmount: 0,
        perItemFee: 0,
        totalFee: 0,
        discountRateBp: 0,
        interchangeRateBp: 0,
        interchangeAmount: 0,
        interchangeDescription: echeck ? 'ACH Credit' : 'Credit Voucher',
      };
      fundingAmount = -amount;
    }
  }
  const dayEnd = dayStart + DAY_MS - 1;
  const tx: SimTransaction = {
    organizationId: org.id,
    orgIndex: org.index,
    day,
    index,
    requestId,
    time,
    kind,
    applications,
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
    settled,
    batchId: batch.id,
    batchTime: batch.time,
    settlementType,
    fundingAmount,
  };
  if (fee) tx.fee = fee;
  if (kind === 'sale' || kind === 'capture') {
    tx.authorizationRequestId =
      kind === 'sale' ? requestId : `${deci}${pad(org.index % 1000, 3)}9${r.digits(8)}`;
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
  if (settlementType === 'Purchases' && !echeck && r.chance(0.01)) {
    tx.chargeback = {
      time: Math.min(time + r.int(60, 600) * 60_000, dayEnd),
      amount,
      reasonCode: r.pick(['10.4', '13.1', '4837', '4853']),
      caseNumber: r.digits(10),
    };
  }
  if (r.chance(0.1) && (kind === 'sale' || kind === 'capture')) tx.subscriptionId = r.digits(16);
  return tx;
}
