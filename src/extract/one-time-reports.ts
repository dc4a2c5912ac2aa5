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
 * The report is polled through the search with exponential backoff until COMPLETED, NO_DATA or
 * ERROR, or a timeout; a COMPLETED report is downloaded once to a cache directory and shared by
 * every window of its chunk (the windows load only their own period's rows, see `filterToWindow`).
 */
import { rm } from 'node:fs/promises';
import type { ReportingClient } from '../api/reporting-client.js';
import { isApiError } from '../api/errors.js';
import type { ReportSearchResult, ReportSubscription } from '../api/types.js';
import { CybsError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { ColumnSpec, RecordBatch, RecordSource } from '../parse/records.js';
import type { PlannedWindow } from '../state/windows.js';
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

export type OneTimeResult =
  | {
      kind: 'file';
      path: string;
      format: ReportFormat;
      reportName: string;
      reportId: string;
      /** Start of the report's period: the window that starts there keeps the rejects. */
      start: Date;
      /** End of the report's period. */
      end: Date;
    }
  | { kind: 'no_data'; reportName: string; reportId: string };

export interface OneTimeReportsOptions {
  /** The backfill's range of local days (anchors the chunks). */
  range: { from: string; to: string };
  now: () => Date;
  pollInitialMs?: number;
  pollMaxMs?: number;
  timeoutMs?: number;
  /** Waits between polls (tests may pass a faster one); default setTimeout. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface OneTimeRequest {
  pipeline: string;
  reportDefinitionName: string;
  /** The subscription whose settings the one-time report copies. */
  subscriptionName: string;
  window: PlannedWindow;
  /** The subscription's schedule: chunks are whole report periods. */
  schedule: ReportSchedule;
  timeZone: string;
  /** The organizationId parameter (partners only). */
  organizationParam: string | undefined;
  signal?: AbortSignal;
}

const FINAL = new Set(['COMPLETED', 'NO_DATA', 'ERROR']);

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      },
      { once: true },
    );
  });
}

/** A one-time report of this backfill's pipeline and organization, known by name and time frame. */
interface KnownReport {
  reportName: string;
  start: number;
  end: number;
  /** The search result it was found with (absent: just created). */
  found?: ReportSearchResult;
}

/**
 * The one-time reports of one backfill. For a window: a known report that covers it, else the
 * cybs-etl one-time reports the search finds over the window's chunk, else one created for the chunk
 * (at most once). Each report is polled and downloaded once and cached on disk until close().
 */
export class OneTimeReports {
  private readonly subscriptions = new Map<string, Promise<ReportSubscription>>();
  /** Per pipeline|organization: the one-time reports known so far. */
  private readonly known = new Map<string, KnownReport[]>();
  /** Per chunk name: discovery (search) of existing reports, then creation when needed. */
  private readonly chunks = new Map<string, Promise<void>>();
  /** Per report name: polled until final, downloaded. */
  private readonly prepared = new Map<string, Promise<OneTimeResult>>();
  private dir: Promise<string> | undefined;

  constructor(
    private readonly deps: { client: ReportingClient; logger: Logger },
    private readonly options: OneTimeReportsOptions,
  ) {}

  get range(): { from: string; to: string } {
    return this.options.range;
  }

  now(): Date {
    return this.options.now();
  }

  /** Whether a report definition's rows can be cut into windows (its period field is known). */
  supports(reportDefinitionName: string): boolean {
    return PERIOD_FIELDS[reportDefinitionName] !== undefined;
  }

  /** The ready one-time report that covers the request's window (found, or created and awaited). */
  async reportFor(request: OneTimeRequest): Promise<OneTimeResult> {
    const covering = () => {
      const list = this.known.get(this.scope(request)) ?? [];
      const w = request.window;
      return list.find((r) => r.start <= w.start.getTime() && r.end >= w.end.getTime());
    };
    let report = covering();
    if (!report) {
      const chunk = chunkOfWindow(request.window, request.schedule, this.options.range, this.now());
      const name = oneTimeReportName(request.pipeline, request.window.organizationId, chunk);
      let pending = this.chunks.get(name);
      if (!pending) {
        pending = this.discoverOrCreate(request, chunk, name);
        this.chunks.set(name, pending);
        pending.catch(() => this.chunks.delete(name));
      }
      await pending;
      report = covering();
      if (!report) {
        throw new CybsError(
          'EXTRACT_ONE_TIME_UNCOVERED',
          `no one-time report covers window ${request.window.windowKey} after creating ${name}`,
          { stage: 'extract' },
        );
      }
    }
    let result = this.prepared.get(report.reportName);
    if (!result) {
      result = this.prepare(request, report);
      this.prepared.set(report.reportName, result);
      // Failures are not kept, except ERROR (the service's verdict): the next window tries again.
      const name = report.reportName;
      result.catch((error: unknown) => {
        if (!(error instanceof CybsError && error.code === 'EXTRACT_ONE_TIME_ERROR'))
          this.prepared.delete(name);
      });
    }
    return result;
  }

  async close(): Promise<void> {
    const dir = await this.dir?.catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  }

  private scope(request: OneTimeRequest): string {
    return `${request.pipeline}|${request.window.organizationId}`;
  }

  private remember(request: OneTimeRequest, report: KnownReport): void {
    const key = this.scope(request);
    const list = this.known.get(key) ?? [];
    if (!list.some((r) => r.reportName === report.reportName)) list.push(report);
    // Completed reports first, so a covering COMPLETED report wins over an ERROR one.
    const rank = (r: KnownReport) =>
      !r.found || r.found.status === 'COMPLETED' ? 0 : r.found.status === 'ERROR' ? 2 : 1;
    list.sort((a, b) => rank(a) - rank(b));
    this.known.set(key, list);
  }

  private params(request: OneTimeRequest): { organizationId?: string } {
    return request.organizationParam ? { organizationId: request.organizationParam } : {};
  }

  private opts(request: OneTimeRequest): { signal?: AbortSignal } {
    return request.signal ? { signal: request.signal } : {};
  }

  private subscription(request: OneTimeRequest): Promise<ReportSubscription> {
    const key = `${request.window.organizationId}|${request.subscriptionName}`;
    let s = this.subscriptions.get(key);
    if (!s) {
      s = this.deps.client.getSubscription(
        request.subscriptionName,
        this.params(request),
        this.opts(request),
      );
      this.subscriptions.set(key, s);
      s.catch(() => this.subscriptions.delete(key));
    }
    return s;
  }

  /**
   * The cybs-etl one-time reports of this pipeline and organization over the chunk (a re-run finds
   * them by their names); when none covers the window, create the chunk's report.
   */
  private async discoverOrCreate(request: OneTimeRequest, chunk: OneTimeChunk, name: string): Promise<void> {
    const prefix = `${ONE_TIME_NAME_PREFIX}_${request.pipeline}_${request.window.organizationId}_`;
    let results: ReportSearchResult[] = [];
    try {
      const response = await this.deps.client.searchReports(
        {
          startTime: chunk.start,
          endTime: chunk.end,
          timeQueryType: 'reportTimeFrame',
          reportFrequency: 'ADHOC',
          ...this.params(request),
        },
        this.opts(request),
      );
      results = response.reportSearchResults;
    } catch (error) {
      if (!(isApiError(error) && error.status === 404)) throw error;
    }
    for (const r of results) {
      const start = r.reportStartTime ? Date.parse(r.reportStartTime) : NaN;
      const end = r.reportEndTime ? Date.parse(r.reportEndTime) : NaN;
      if (!r.reportName.startsWith(prefix) || !(start < end)) continue;
      this.remember(request, { reportName: r.reportName, start, end, found: r });
    }
    const w = request.window;
    const list = this.known.get(this.scope(request)) ?? [];
    if (list.some((r) => r.start <= w.start.getTime() && r.end >= w.end.getTime())) return;
    await this.create(request, chunk, name);
    this.remember(request, { reportName: name, start: chunk.start.getTime(), end: chunk.end.getTime() });
  }

  private async create(request: OneTimeRequest, chunk: OneTimeChunk, name: string): Promise<void> {
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
        reportName: name,
        timezone: sub.timezone ?? request.timeZone,
        reportStartTime: chunk.start.toISOString(),
        reportEndTime: chunk.end.toISOString(),
        reportFilters: filters,
        reportPreferences: {
          signedAmounts: preferences.signedAmounts === true,
          ...(convention === 'SOAPI' || convention === 'SCMP' ? { fieldNameConvention: convention } : {}),
        },
      },
      this.params(request),
      this.opts(request),
    );
    this.deps.logger.info(
      {
        pipeline: request.pipeline,
        organizationId: request.window.organizationId,
        reportName: name,
        outcome,
      },
      outcome === 'created' ? 'one-time report created' : 'one-time report already requested (304)',
    );
  }

  /** Poll a known report until final; download a COMPLETED one (once). */
  private async prepare(request: OneTimeRequest, known: KnownReport): Promise<OneTimeResult> {
    const name = known.reportName;
    const report = await this.poll(request, known);
    const status = String(report.status);
    if (status === 'ERROR') {
      const said = ['message', 'statusMessage', 'errorMessage', 'reason']
        .map((k) => (report as Record<string, unknown>)[k])
        .find((v): v is string => typeof v === 'string');
      throw new CybsError(
        'EXTRACT_ONE_TIME_ERROR',
        `one-time report "${name}" (${report.reportId}) ended in ERROR at the service${said ? `: ${said}` : ''}; its windows are failed`,
        { stage: 'extract', context: { reportName: name, reportId: report.reportId } },
      );
    }
    if (status === 'NO_DATA') return { kind: 'no_data', reportName: name, reportId: report.reportId };
    const format = formatOf(report.reportMimeType);
    const timezone = report.timezone ?? request.timeZone;
    const dir = await (this.dir ??= makeSpoolDir('one-time'));
    const path = spoolFilePath(dir, `${name}.${format}`);
    await this.deps.client.downloadReportToFile(
      {
        reportName: name,
        // reportDate of a multi-day report: its end date in its time zone (facts §2.8).
        reportDate: localDate(new Date(known.end), timezone),
        accept: format === 'xml' ? 'application/xml' : 'text/csv',
        ...this.params(request),
      },
      path,
      this.opts(request),
    );
    this.deps.logger.info({ reportName: name, reportId: report.reportId }, 'one-time report downloaded');
    return {
      kind: 'file',
      path,
      format,
      reportName: name,
      reportId: report.reportId,
      start: new Date(known.start),
      end: new Date(known.end),
    };
  }

  /** Search by name until the report is COMPLETED, NO_DATA or ERROR; backoff, then a timeout. */
  private async poll(request: OneTimeRequest, known: KnownReport): Promise<ReportSearchResult> {
    const sleep = this.options.sleep ?? defaultSleep;
    const timeoutMs = this.options.timeoutMs ?? 30 * 60_000;
    const maxMs = this.options.pollMaxMs ?? 30_000;
    let delay = this.options.pollInitialMs ?? 1_000;
    const started = performance.now();
    let last = known.found;
    for (;;) {
      if (last && FINAL.has(String(last.status))) return last;
      if (performance.now() - started > timeoutMs) {
        throw new CybsError(
          'EXTRACT_ONE_TIME_TIMEOUT',
          `one-time report "${known.reportName}" is still ${last?.status ?? 'not visible'} after ${Math.round(timeoutMs / 60_000)} minutes; run the backfill again later`,
          { stage: 'extract', retryable: true },
        );
      }
      await sleep(delay, request.signal);
      delay = Math.min(maxMs, delay * 2);
      try {
        const response = await this.deps.client.searchReports(
          {
            startTime: new Date(known.start),
            endTime: new Date(known.end),
            timeQueryType: 'reportTimeFrame',
            reportName: known.reportName,
            ...this.params(request),
          },
          this.opts(request),
        );
        last = response.reportSearchResults.find((r) => r.reportName === known.reportName) ?? last;
      } catch (error) {
        if (!(isApiError(error) && error.status === 404)) throw error;
      }
    }
  }
}
