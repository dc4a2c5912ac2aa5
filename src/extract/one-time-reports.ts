/**
 * One-time reports (POST /reporting/v3/reports, facts §2.6) for the days a subscription report does
 * not cover — days before the subscription existed, or a report the service never generated.
 *
 * A backfill cuts the report periods of its range into chunks of at most 30 days (the service allows
 * 31; 30 local days stay within 31 × 24 h across a DST change), anchored on the first period of the
 * range and made of whole periods. Each chunk has one report with a deterministic name,
 * `cybs-etl_<pipeline>_<organization>_<first period>_<last period>`, with the subscription's fields,
 * format, time zone, filters and preferences. Before creating one, the search is asked for any
 * cybs-etl one-time report of the pipeline and organization that already covers the window, so a
 * re-run — even over a different range — reuses what exists instead of creating a second report.
 *
 * A chunk's report is followed by a job of its own (src/queue/chunk-jobs.ts): it looks at the
 * report through the search, and while the report is not COMPLETED, NO_DATA or ERROR it puts itself
 * back in the queue for later (exponential backoff) instead of waiting in a worker. The status is
 * kept in the warehouse (etl.one_time_reports), where every window of the chunk, on any machine,
 * reads it; a COMPLETED report is downloaded once per process and shared by its windows there (the
 * windows load only their own period's rows, see `filterToWindow`).
 */
import { rm } from 'node:fs/promises';
import type { ReportingClient } from '../api/reporting-client.js';
import { isApiError } from '../api/errors.js';
import type { ReportSearchResult, ReportSubscription } from '../api/types.js';
import { CybsError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { ColumnSpec, RecordBatch, RecordSource } from '../parse/records.js';
import { makeSpoolDir, spoolFilePath } from '../spool/spool-dirs.js';
import { localDate } from '../time/time-zones.js';
import { periodsStartingOn } from '../time/report-periods.js';
import type { ReportPeriod, ReportSchedule } from '../time/report-periods.js';
import { formatOf } from './find-report.js';
import type { ReportFormat } from './find-report.js';

/** Days per one-time report: whole report periods, at most 30 local days. */
export const ONE_TIME_MAX_DAYS = 30;
export const ONE_TIME_NAME_PREFIX = 'cybs-etl';

/**
 * The field whose time places a row in a report period, per report definition: the window's rows
 * are the rows of a one-time report whose value of this field lies in the window.
 */
export const PERIOD_FIELDS: Readonly<Record<string, string>> = {
  TransactionRequestClass: 'Request.TransactionDate',
  GatewayTransactionRequestClass: 'Request.TransactionDate',
  ExceptionDetailClass: 'Request.TransactionDate',
  PayerAuthDetailClass: 'Request.TransactionDate',
  JPTransactionDetailClass: 'Request.TransactionDate',
  SubscriptionDetailClass: 'Request.TransactionDate',
  RecurringBillingDetailClass: 'Request.TransactionDate',
  DecisionManagerEventDetailClass: 'Request.TransactionDate',
  BillableTransactionsDetailClass: 'Request.TransactionDate',
  PaymentBatchDetailClass: 'Batch.BatchDate',
  ProcessorSettlementDetailClass: 'Batch.BatchDate',
  FundingDetailClass: 'Batch.BatchDate',
  FeeDetailClass: 'Batch.BatchDate',
  ConversionDetailClass: 'Conversion.ConversionDate',
  ChargebackAndRetrievalDetailClass: 'ChargebackAndRetrieval.ChargebackTime',
};

export interface OneTimeChunk {
  /** Labels of its first and last report period (their window keys, as a report name allows). */
  first: string;
  last: string;
  start: Date;
  end: Date;
}

/**
 * The longest span of a one-time report's chunk: the service allows 31 days; 30 days and the hour
 * a DST change may add keep 30 local days whole and within 31 × 24 h.
 */
const ONE_TIME_MAX_MS = ONE_TIME_MAX_DAYS * 86_400_000 + 3_600_000;

/** A window key as a report name may carry it (`2024-03-05T09:00` → `2024-03-05T0900`). */
function nameLabel(key: string): string {
  return key.replace(/:/g, '').replace(/\+/g, 'p');
}

/**
 * The chunk of a backfill range that holds a window (pure): whole report periods of the schedule,
 * from the first period that starts in the range, as many as fit in ONE_TIME_MAX_MS (at least one),
 * only periods that start in the range and have ended by `endedBy` (a one-time report covers the
 * past only). A window outside those periods is a chunk of its own.
 */
export function chunkOfWindow(
  window: { windowKey: string; start: Date; end: Date },
  schedule: ReportSchedule,
  range: { from: string; to: string },
  endedBy: Date,
): OneTimeChunk {
  const periods = periodsStartingOn(schedule, range.from, range.to).filter(
    (p) => p.end.getTime() <= endedBy.getTime(),
  );
  let chunk: ReportPeriod[] = [];
  for (const p of periods) {
    const first = chunk[0];
    if (first && p.end.getTime() - first.start.getTime() > ONE_TIME_MAX_MS) {
      if (chunk.some((c) => c.start.getTime() === window.start.getTime())) break;
      chunk = [];
    }
    chunk.push(p);
  }
  const first = chunk[0];
  const last = chunk.at(-1);
  if (!first || !last || !chunk.some((c) => c.start.getTime() === window.start.getTime())) {
    return {
      first: nameLabel(window.windowKey),
      last: nameLabel(window.windowKey),
      start: window.start,
      end: window.end,
    };
  }
  return { first: nameLabel(first.key), last: nameLabel(last.key), start: first.start, end: last.end };
}

/** The deterministic name of the one-time report of a chunk (`[a-zA-Z0-9-_ ]{1,128}`, facts §2.6). */
export function oneTimeReportName(pipeline: string, organizationId: string, chunk: OneTimeChunk): string {
  return `${ONE_TIME_NAME_PREFIX}_${pipeline}_${organizationId}_${chunk.first}_${chunk.last}`;
}

/**
 * Keep the records whose period field lies in [start, end): the window's share of a multi-day report.
 * Rejected rows have no trustworthy time; they are kept by the window that starts the report
 * (`keepRejects`), so each reject is recorded once.
 */
export function filterToWindow(
  records: RecordSource,
  fieldId: string,
  window: { start: Date; end: Date },
  keepRejects: boolean,
): RecordSource {
  const start = window.start.getTime();
  const end = window.end.getTime();
  let index = -1;
  const findIndex = (columns: readonly ColumnSpec[]) =>
    columns.findIndex((c) => c.field.kind === 'catalog' && c.field.id === fieldId);
  async function* batches(): AsyncGenerator<RecordBatch> {
    for await (const batch of records.batches) {
      if (index < 0) index = findIndex(records.columns);
      if (index < 0) {
        throw new CybsError(
          'EXTRACT_ONE_TIME_NO_PERIOD_FIELD',
          `the one-time report has no ${fieldId} column, so its rows cannot be assigned to windows; add ${fieldId} to the subscription's reportFields`,
          { stage: 'extract' },
        );
      }
      const kept = batch.records.filter((r) => {
        const v = r.values[index];
        const t = typeof v === 'string' ? Date.parse(v) : NaN;
        return t >= start && t < end;
      });
      yield { ...batch, records: kept, rejects: keepRejects ? batch.rejects : [] };
    }
  }
  const filtered = batches();
  return {
    metadata: records.metadata,
    get columns() {
      return records.columns;
    },
    get unknownColumns() {
      return records.unknownColumns;
    },
    batches: filtered,
    summary: () => records.summary(),
  };
}

/** A COMPLETED one-time report downloaded to this process's spool, shared by its windows. */
export interface OneTimeFile {
  path: string;
  format: ReportFormat;
  reportName: string;
  reportId: string;
  /** Start of the report's period: the window that starts there keeps the rejects. */
  start: Date;
  /** End of the report's period. */
  end: Date;
}

export interface OneTimeReportsOptions {
  now: () => Date;
  /** The first wait of a report's job between two looks at a report not ready yet; it doubles up to pollMaxMs. */
  pollInitialMs?: number;
  pollMaxMs?: number;
  /** A report not final this long after its job first looked at it is given up on (FAILED). */
  timeoutMs?: number;
}

/**
 * What a report's job needs to create and follow one one-time report of a backfill chunk (plain
 * data: the job carries it; times as ISO text).
 */
export interface OneTimeReportRequest {
  pipeline: string;
  organizationId: string;
  reportDefinitionName: string;
  /** The subscription whose settings the one-time report copies. */
  subscriptionName: string;
  timeZone: string;
  /** The organizationId parameter (partners only). */
  organizationParam?: string;
  reportName: string;
  start: string;
  end: string;
}

/** A one-time report as the search shows it. */
export interface OneTimeReportSeen {
  reportName: string;
  start: Date;
  end: Date;
  status: string;
  reportId?: string;
  mimeType?: string;
  timeZone?: string;
  /** What the service said of a report in ERROR. */
  message?: string;
}

/** How many downloaded files no window uses a process keeps, and for how long. */
const IDLE_FILES = 4;
const IDLE_FILE_MS = 10 * 60_000;

/** Polls of a report not ready yet: the first wait, the longest, and when to give up. */
export interface OneTimeBackoff {
  initialMs: number;
  maxMs: number;
  timeoutMs: number;
}

/**
 * Talking to the service about one-time reports: find the cybs-etl reports over a period, create
 * a chunk's report, look at one report's status (one search: the waits between looks are its job's,
 * src/queue/chunk-jobs.ts, which gives its worker back meanwhile), and download a COMPLETED report
 * once per process for every window of it that runs here. A file no window uses is kept a while
 * for the chunk's windows still to come here (a few files, for minutes), then removed: a worker
 * runs for days and sees thousands of chunks.
 */
export class OneTimeReports {
  private readonly subscriptions = new Map<string, Promise<ReportSubscription>>();
  /** Per report name: downloaded (once per process), with the windows using it now. */
  private readonly downloads = new Map<
    string,
    { file: Promise<OneTimeFile>; users: number; idleSince: number }
  >();
  private dir: Promise<string> | undefined;

  constructor(
    private readonly deps: { client: ReportingClient; logger: Logger },
    private readonly options: OneTimeReportsOptions,
  ) {}

  now(): Date {
    return this.options.now();
  }

  get backoff(): OneTimeBackoff {
    return {
      initialMs: this.options.pollInitialMs ?? 1_000,
      maxMs: this.options.pollMaxMs ?? 30_000,
      timeoutMs: this.options.timeoutMs ?? 30 * 60_000,
    };
  }

  /** Whether a report definition's rows can be cut into windows (its period field is known). */
  supports(reportDefinitionName: string): boolean {
    return PERIOD_FIELDS[reportDefinitionName] !== undefined;
  }

  async close(): Promise<void> {
    const dir = await this.dir?.catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  }

  private params(request: { organizationParam?: string | undefined }): { organizationId?: string } {
    return request.organizationParam ? { organizationId: request.organizationParam } : {};
  }

  private subscription(request: OneTimeReportRequest): Promise<ReportSubscription> {
    const key = `${request.organizationId}|${request.subscriptionName}`;
    let s = this.subscriptions.get(key);
    if (!s) {
      s = this.deps.client.getSubscription(request.subscriptionName, this.params(request));
      this.subscriptions.set(key, s);
      s.catch(() => this.subscriptions.delete(key));
    }
    return s;
  }

  /**
   * The cybs-etl one-time reports of the request's pipeline and organization over its period (a
   * re-run finds them by their names, even those of a different range).
   */
  async discover(request: OneTimeReportRequest): Promise<OneTimeReportSeen[]> {
    const prefix = `${ONE_TIME_NAME_PREFIX}_${request.pipeline}_${request.organizationId}_`;
    const results = await this.search({
      startTime: new Date(request.start),
      endTime: new Date(request.end),
      timeQueryType: 'reportTimeFrame',
      reportFrequency: 'ADHOC',
      ...this.params(request),
    });
    return results.flatMap((r) => {
      const seen = seenOf(r);
      return seen && r.reportName.startsWith(prefix) ? [seen] : [];
    });
  }

  /** The report as the search shows it now; undefined while the search does not show it yet. */
  async look(request: OneTimeReportRequest): Promise<OneTimeReportSeen | undefined> {
    const results = await this.search({
      startTime: new Date(request.start),
      endTime: new Date(request.end),
      timeQueryType: 'reportTimeFrame',
      reportName: request.reportName,
      ...this.params(request),
    });
    const found = results.find((r) => r.reportName === request.reportName);
    return found ? seenOf(found) : undefined;
  }

  private async search(
    params: Parameters<ReportingClient['searchReports']>[0],
  ): Promise<ReportSearchResult[]> {
    try {
      return (await this.deps.client.searchReports(params)).reportSearchResults;
    } catch (error) {
      if (isApiError(error) && error.status === 404) return [];
      throw error;
    }
  }

  /** Create the request's report, with its subscription's fields, format, zone, filters and preferences. */
  async create(request: OneTimeReportRequest): Promise<void> {
    const sub = await this.subscription(request);
    const fields = [...(sub.reportFields ?? [])];
    const periodField = PERIOD_FIELDS[request.reportDefinitionName];
    if (periodField && !fields.includes(periodField)) {
      throw new CybsError(
        'EXTRACT_ONE_TIME_NO_PERIOD_FIELD',
        `subscription "${request.subscriptionName}" does not report ${periodField}, so a one-time report's rows cannot be assigned to windows; add it to the subscription's reportFields`,
        { stage: 'extract' },
      );
    }
    const filters = Object.fromEntries(
      Object.entries(sub.reportFilters ?? {}).filter((e): e is [string, string[]] => Array.isArray(e[1])),
    );
    const preferences = sub.reportPreferences ?? {};
    const convention = preferences.fieldNameConvention;
    const outcome = await this.deps.client.createReport(
      {
        reportDefinitionName: sub.reportDefinitionName ?? request.reportDefinitionName,
        reportFields: fields,
        reportMimeType: formatOf(sub.reportMimeType) === 'xml' ? 'application/xml' : 'text/csv',
        reportName: request.reportName,
        timezone: sub.timezone ?? request.timeZone,
        reportStartTime: request.start,
        reportEndTime: request.end,
        reportFilters: filters,
        reportPreferences: {
          signedAmounts: preferences.signedAmounts === true,
          ...(convention === 'SOAPI' || convention === 'SCMP' ? { fieldNameConvention: convention } : {}),
        },
      },
      this.params(request),
    );
    this.deps.logger.info(
      {
        pipeline: request.pipeline,
        organizationId: request.organizationId,
        reportName: request.reportName,
        outcome,
      },
      outcome === 'created' ? 'one-time report created' : 'one-time report already requested (304)',
    );
  }

  /**
   * Use a COMPLETED report's file, downloaded once by this process for all its windows here; the
   * file stays while `use` runs.
   */
  async withFile<T>(
    report: {
      reportName: string;
      reportId: string;
      start: Date;
      end: Date;
      mimeType: string | null;
      timeZone: string;
      organizationParam: string | undefined;
    },
    signal: AbortSignal | undefined,
    use: (file: OneTimeFile) => Promise<T>,
  ): Promise<T> {
    const name = report.reportName;
    let entry = this.downloads.get(name);
    if (!entry) {
      const file = this.fetchFile(report, signal);
      entry = { file, users: 0, idleSince: 0 };
      this.downloads.set(name, entry);
      file.catch(() => this.downloads.delete(name));
    }
    entry.users++;
    try {
      return await use(await entry.file);
    } finally {
      entry.users--;
      entry.idleSince = Date.now();
      await this.removeIdleFiles();
    }
  }

  /** Remove the files no window has used for IDLE_FILE_MS, and the oldest idle ones beyond IDLE_FILES. */
  private async removeIdleFiles(): Promise<void> {
    const idle = [...this.downloads]
      .filter(([, e]) => e.users === 0)
      .sort((a, b) => b[1].idleSince - a[1].idleSince);
    const now = Date.now();
    for (const [i, [name, entry]] of idle.entries()) {
      if (i < IDLE_FILES && now - entry.idleSince < IDLE_FILE_MS) continue;
      this.downloads.delete(name);
      const file = await entry.file.catch(() => undefined);
      if (file) await rm(file.path, { force: true });
    }
  }

  private async fetchFile(
    report: Parameters<OneTimeReports['withFile']>[0],
    signal: AbortSignal | undefined,
  ): Promise<OneTimeFile> {
    const name = report.reportName;
    const format = formatOf(report.mimeType ?? undefined);
    const dir = await (this.dir ??= makeSpoolDir('one-time'));
    const path = spoolFilePath(dir, `${name}.${format}`);
    await this.deps.client.downloadReportToFile(
      {
        reportName: name,
        // reportDate of a multi-day report: its end date in its time zone (facts §2.8).
        reportDate: localDate(report.end, report.timeZone),
        accept: format === 'xml' ? 'application/xml' : 'text/csv',
        ...this.params(report),
      },
      path,
      signal ? { signal } : {},
    );
    this.deps.logger.info({ reportName: name, reportId: report.reportId }, 'one-time report downloaded');
    return {
      path,
      format,
      reportName: name,
      reportId: report.reportId,
      start: report.start,
      end: report.end,
    };
  }
}

/** A search result as OneTimeReportSeen; undefined without a valid period. */
function seenOf(r: ReportSearchResult): OneTimeReportSeen | undefined {
  const start = r.reportStartTime ? Date.parse(r.reportStartTime) : NaN;
  const end = r.reportEndTime ? Date.parse(r.reportEndTime) : NaN;
  if (!(start < end)) return undefined;
  const status = String(r.status);
  const said =
    status === 'ERROR'
      ? ['message', 'statusMessage', 'errorMessage', 'reason']
          .map((k) => (r as Record<string, unknown>)[k])
          .find((v): v is string => typeof v === 'string')
      : undefined;
  return {
    reportName: r.reportName,
    start: new Date(start),
    end: new Date(end),
    status,
    ...(r.reportId ? { reportId: r.reportId } : {}),
    ...(r.reportMimeType ? { mimeType: r.reportMimeType } : {}),
    ...(r.timezone ? { timeZone: r.timezone } : {}),
    ...(said ? { message: said } : {}),
  };
}
