/**
 * Parsed reports as load sources: the adapters from parse/'s readers (typed records, the CSV
 * scanner's bytes, the XML scanner's lines) to the loader's LoadSource kinds. The loader reads the
 * records a CSV scanner set aside through the per-row reader here, its own code, never the caller's.
 */
import { Readable } from 'node:stream';
import type { SetAsideRecord } from '../copy-text/bodies.js';
import { refuseFastPath } from '../copy-text/fast-path-refusal.js';
import { CybsError } from '../errors.js';
import { openCsvReport, serialiseCsvRow } from '../parse/csv/csv-report.js';
import type { RawCsvReport } from '../parse/csv/raw-csv-report.js';
import type { ColumnSpec, RecordSource, TypedRecord } from '../parse/records.js';
import type { RawXmlReport } from '../parse/xml/raw-xml-report.js';
import type {
  CopyLinesSource,
  CsvBytesSource,
  LoadBatch,
  LoadRecord,
  RecordsSource,
  SourceColumn,
  TableDecl,
} from './table-spec.js';

/** A parser column as the loader sees it. */
export function toSourceColumn(spec: ColumnSpec): SourceColumn {
  const out: SourceColumn = { name: spec.column, pgType: spec.pgType };
  if (spec.description) out.description = spec.description;
  if (spec.field.kind === 'unknown') out.unknown = true;
  return out;
}

/**
 * A record as the loader sees it. Parsers do not keep each row's original text (it would double the
 * work on the hot path); the few records the loader itself rejects get their values re-serialised as
 * a CSV row instead.
 */
export function toLoadRecord(record: TypedRecord): LoadRecord {
  const { recordNumber, values } = record;
  return {
    recordNumber,
    values,
    get raw() {
      return serialiseCsvRow(values.map((v) => (v === null ? '' : String(v))));
    },
  };
}

/**
 * Feed a parser's record source to the loader. `columns` overrides the parser's column list when
 * it is known in advance (an XML file read twice: its columns are discovered while reading, so the
 * first pass collects them and the second pass loads with the full list; records are padded).
 */
export function toLoadSource(
  records: RecordSource,
  source: string,
  columns?: readonly ColumnSpec[],
): RecordsSource {
  return {
    kind: 'records',
    source,
    columns: (columns ?? records.columns).map(toSourceColumn),
    batches: (async function* (): AsyncGenerator<LoadBatch> {
      for await (const batch of records.batches) {
        yield { records: batch.records.map(toLoadRecord), rejects: batch.rejects.map((r) => ({ ...r })) };
      }
    })(),
  };
}

/** The declared data columns of a table, as a source's columns (for a source with no rows). */
export function declaredColumns(table: TableDecl): SourceColumn[] {
  return table.columns.map((c) => ({
    name: c.name,
    pgType: c.pgType,
    ...(c.description ? { description: c.description } : {}),
  }));
}

/**
 * A CSV file opened for the fast path as a loader source (its bytes go straight to COPY); `reopen`
 * opens the file again from its start.
 */
export function toRawLoadSource(
  report: RawCsvReport,
  source: string,
  reopen: () => Promise<RawCsvReport>,
): CsvBytesSource {
  return {
    kind: 'csv-bytes',
    source,
    columns: report.columns.map(toSourceColumn),
    body: report.body,
    reopen: async () => (await reopen()).body,
    perRowRecords: (aside) => perRowBatches(report, aside, source),
  };
}

/**
 * Set-aside records of a raw CSV report, each parsed on its own (with its line number) by the
 * per-row path. A record the per-row parser cannot read at all fails the whole file there, with
 * messages about the file: that refuses the fast path, so the per-row path reads the whole file.
 */
async function* perRowBatches(
  report: RawCsvReport,
  aside: readonly SetAsideRecord[],
  source: string,
): AsyncGenerator<LoadBatch> {
  const definition = report.metadata.reportDefinition;
  for (const record of aside) {
    try {
      const input = Readable.from([report.head, Buffer.from(`${record.text}\r\n`, 'utf8')]);
      const records = await openCsvReport(input, {
        fileName: report.body.fileName,
        ...(definition !== undefined ? { report: definition } : {}),
        firstDataLine: record.line,
      });
      yield* toLoadSource(records, source).batches;
    } catch (error) {
      if (error instanceof CybsError && error.stage === 'parse') {
        throw refuseFastPath(`line ${record.line} cannot be read on its own (${error.code})`);
      }
      throw error;
    }
  }
}

/**
 * An XML file opened for the fast path as a loader source (its records as COPY text lines);
 * `reopen` reads the file again from its start.
 */
export function toRawXmlLoadSource(
  report: RawXmlReport,
  source: string,
  reopen: () => Promise<RawXmlReport>,
): CopyLinesSource {
  const columns = report.columns.map(toSourceColumn);
  const names = columns.map((c) => c.name).join('\n');
  return {
    kind: 'copy-lines',
    source,
    columns,
    body: report.body,
    reopen: async () => {
      const again = await reopen();
      if (again.columns.map((c) => toSourceColumn(c).name).join('\n') !== names) {
        throw refuseFastPath('the XML file gave other columns when read again');
      }
      return again.body;
    },
  };
}
