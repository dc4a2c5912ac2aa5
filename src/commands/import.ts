import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import type { Command } from 'commander';
import { Option } from 'commander';
import { sql } from 'kysely';
import { PIPELINE_NAME_ALIASES, REPORT_DEFINITION_ALIASES, findReportDefinition } from '../catalog/index.js';
import type { ReportDefinition } from '../catalog/index.js';
import { CybsError, configError, isCybsError } from '../errors.js';
import {
  checkReportShape,
  namedReportDefinition,
  readReportHead,
  reportHeadText,
} from '../extract/report-identity.js';
import { readTableColumns } from '../load/ddl.js';
import type { TableDecl } from '../load/table-spec.js';
import type { ColumnSpec } from '../parse/records.js';
import type { ReportPipelineDef } from '../pipeline/define-pipeline.js';
import { inWindowTransaction, loadWindowIn } from '../load/window/load-window.js';
import type { TableLoadResult } from '../load/window/load-window.js';
import { loadReportFile } from '../pipeline/window/report-file.js';
import { openCsvReport } from '../parse/csv/csv-report.js';
import { openXmlReport } from '../parse/xml/xml-report.js';
import type { Db } from '../warehouse/warehouse.js';
import { finishRun, startRun } from '../state/runs.js';
import { readImportFingerprint, saveImportFingerprint } from '../state/import-fingerprints.js';
import { declarationDigest, lastLoad, loaderId } from '../pipeline/fingerprint.js';
import type { WindowFingerprint } from '../pipeline/fingerprint.js';
import { FileDigester, sameDigest } from '../spool/file-digest.js';
import type { FileDigest } from '../spool/file-digest.js';
import type { CliContext } from './context.js';

/**
 * The file's FileDigest (what a re-load compares) and, when asked, the SHA-256 of its bytes (an
 * identity, importIdentity), in one read of 1 MB chunks: with the stream's 64 KB default, reading
 * and handing over the chunks costs about as much CPU as hashing them.
 */
async function readDigests(
  path: string,
  withSha256: boolean,
): Promise<{ digest: FileDigest; sha256?: string }> {
  const digester = new FileDigester();
  const hash = withSha256 ? createHash('sha256') : undefined;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    digester.update(chunk as Buffer);
    hash?.update(chunk as Buffer);
  }
  return hash ? { digest: digester.digest(), sha256: hash.digest('hex') } : { digest: digester.digest() };
}

/**
 * What makes an imported file the same report as an earlier import, whatever its name: the report
 * name and period its metadata names, or, for a file that names no period, its bytes' digest. An
 * imported file's source is `import:<file name>:<identity>`.
 */
function importIdentity(meta: ReportPeriodMeta, sha256: string | undefined): string {
  if (namesPeriod(meta)) {
    return [meta.reportName ?? '', `${meta.rawStart ?? ''}..${meta.rawEnd ?? ''}`].filter(Boolean).join(':');
  }
  return [meta.reportName ?? '', `sha256-${sha256!.slice(0, 32)}`].filter(Boolean).join(':');
}

type ReportPeriodMeta = {
  reportName: string | undefined;
  rawStart: string | undefined;
  rawEnd: string | undefined;
};

/** Whether the file's metadata names its period (else its bytes' SHA-256 identify it). */
function namesPeriod(meta: ReportPeriodMeta): boolean {
  return Boolean(meta.rawStart || meta.rawEnd);
}

/**
 * The source an earlier import of the same report (`identity`) loaded for the organization, if
 * any: a new import of it replaces that load's rows instead of adding a second copy of them.
 */
async function earlierImportSource(
  db: Db,
  organizationId: string,
  identity: string,
): Promise<string | undefined> {
  const suffix = `:${identity}`;
  const found = await sql<{ source: string }>`
    select source from etl.sources
     where organization_id = ${organizationId} and source like 'import:%'
       and length(source) > ${suffix.length + 'import:'.length} and right(source, ${suffix.length}) = ${suffix}
     order by source_key desc limit 1`.execute(db);
  return found.rows[0]?.source;
}

/** The format a file's name says, else its head: a first `<` (in its own encoding) is XML. */
function sniffFormat(path: string, head: Buffer): 'csv' | 'xml' {
  const ext = extname(path).toLowerCase();
  if (ext === '.xml') return 'xml';
  if (ext === '.csv') return 'csv';
  return /^\s*</.test(reportHeadText(head.subarray(0, 64), basename(path))) ? 'xml' : 'csv';
}

/** The report pipeline of a `--report-definition` value: a definition, an alias of one, or its table. */
function reportPipelineNamed(
  reportPipelines: readonly ReportPipelineDef[],
  given: string,
): ReportPipelineDef {
  const wanted = (findReportDefinition(given)?.name ?? given).toLowerCase();
  const table = PIPELINE_NAME_ALIASES[given] ?? given;
  const pipeline = reportPipelines.find(
    (p) => p.reportDefinitionName.toLowerCase() === wanted || p.name === table,
  );
  if (!pipeline) {
    throw configError(
      `unknown report definition "${given}"; expected one of ${reportPipelines.map((p) => p.reportDefinitionName).join(', ')}.`,
    );
  }
  return pipeline;
}

/**
 * Refuse a CSV header that shares fewer than half of its columns with what the table knows: the
 * catalog's fields (a report may carry any of them) and the columns the table has. Such a file is
 * no report of the table, and importing it would add its columns to the table for good.
 */
async function refuseForeignHeader(
  db: Db,
  table: TableDecl,
  columns: readonly ColumnSpec[],
  fileName: string,
): Promise<void> {
  const existing = (await readTableColumns(db, table.schema, table.name)) ?? [];
  const known = new Set([...table.columns, ...existing].map((c) => c.name));
  const foreign = columns.filter((c) => c.field.kind !== 'catalog' && !known.has(c.column));
  if (foreign.length * 2 <= columns.length) return;
  const shown = foreign
    .slice(0, 8)
    .map((c) => JSON.stringify(c.sourceName.length > 40 ? `${c.sourceName.slice(0, 39)}…` : c.sourceName));
  throw configError(
    `${fileName}: only ${columns.length - foreign.length} of its ${columns.length} header columns are catalog fields or columns of ${table.schema}.${table.name} ` +
      `(not ${shown.join(', ')}${foreign.length > shown.length ? `, and ${foreign.length - shown.length} more` : ''}); ` +
      `check --report-definition, or pass --force to import it and add those columns; nothing was imported.`,
  );
}

export function registerImportCommand(program: Command, ctx: CliContext): void {
  program
    .command('import')
    .description('load a report file downloaded by hand (Business Center or elsewhere) into its cybs table')
    .argument('<file>', 'the CSV or XML report file')
    .option(
      '--report-definition <name>',
      'report definition, e.g. PaymentBatchDetailClass (or the table name); default: the one the file names',
    )
    .option('--organization-id <id>', 'organization the rows belong to (default: the one named in the file)')
    .addOption(
      new Option('--format <format>', 'file format (default: from the extension or content)').choices([
        'csv',
        'xml',
      ]),
    )
    .option(
      '--force',
      'import a CSV file even when fewer than half of its columns are known to the table (the others are added as columns)',
      false,
    )
    .action(
      async (
        file: string,
        opts: { reportDefinition?: string; organizationId?: string; format?: 'csv' | 'xml'; force: boolean },
      ) => {
        // The seed's names (RiskDecisionEventDetailClass, its table) are aliases of the real ones.
        const given = opts.reportDefinition?.trim();
        let pipeline = given === undefined ? undefined : reportPipelineNamed(ctx.reportPipelines(), given);
        try {
          await stat(file);
        } catch {
          throw configError(`file ${file} does not exist or cannot be read.`);
        }
        const head = await readReportHead(file);
        const format = opts.format ?? sniffFormat(file, head);
        const fileName = basename(file);
        // A file that is no report (a web page saved by hand, an error document), or whose metadata
        // names another definition than the one given.
        let named: ReportDefinition | undefined;
        try {
          const headMetadata = checkReportShape(head, {
            format,
            fileName,
            reportDefinition: pipeline?.reportDefinitionName,
          });
          named = headMetadata === undefined ? undefined : namedReportDefinition(headMetadata);
        } catch (error) {
          if (!isCybsError(error) || error.code !== 'EXTRACT_OTHER_REPORT') throw error;
          throw configError(
            `${error.message.replace(/; nothing of it is loaded\.$/, '')}: import it with --report-definition ${String(error.context.reportDefinition)}, or without --report-definition; nothing was imported.`,
          );
        }
        pipeline ??= named && ctx.reportPipelines().find((p) => p.reportDefinitionName === named.name);
        if (!pipeline) {
          throw configError(
            `${fileName} does not name its report type (no metadata line that names one); pass --report-definition, e.g. --report-definition PaymentBatchDetailClass.`,
          );
        }
        const parseOptions = { fileName, report: pipeline.reportDefinitionName };
        // The file's first records, for its metadata (and, for CSV, the per-row path's records).
        const records = await (format === 'xml' ? openXmlReport : openCsvReport)(
          createReadStream(file),
          parseOptions,
        );
        const meta = records.metadata;
        const organizationId = opts.organizationId ?? meta.organizationId;
        if (!organizationId) {
          throw configError(`${fileName} does not name its organization; pass --organization-id.`);
        }
        // One read of the file: its digest (a re-load's), and its SHA-256 when that identifies it.
        const { digest, sha256 } = await readDigests(file, !namesPeriod(meta));
        const identity = importIdentity(meta, sha256);
        const warehouse = await ctx.warehouse();
        const logger = await ctx.logger();
        const config = await ctx.config();
        // A CSV header mostly foreign to the table is a file of another report (or no report):
        // refused before anything is written, unless --force.
        if (format === 'csv' && !opts.force) {
          await refuseForeignHeader(warehouse.db, pipeline.table, records.columns, fileName);
        }
        // The same report imported again (under any file name) replaces its earlier load.
        const earlier = await earlierImportSource(warehouse.db, organizationId, identity);
        const source = earlier ?? `import:${fileName}:${identity}`;
        if (
          given !== undefined &&
          (REPORT_DEFINITION_ALIASES[given] !== undefined || PIPELINE_NAME_ALIASES[given] !== undefined)
        ) {
          logger.warn(
            `--report-definition ${given} is a former name of ${pipeline.reportDefinitionName}; importing into ${pipeline.table.schema}.${pipeline.table.name}`,
          );
        }
        // The target pipeline's schema contract (config `schemaChanges`) holds for imports too.
        const schemaChanges = config.pipelines[pipeline.name]?.schemaChanges ?? config.defaults.schemaChanges;
        // What the report's last import left: the same bytes into a table that still holds them
        // write nothing, and a few rows touched since are restored alone (as a window's re-load).
        const declaration = declarationDigest(pipeline);
        const { previous, expected } = lastLoad(
          earlier === undefined
            ? undefined
            : await readImportFingerprint(warehouse.db, organizationId, source),
          declaration,
        );
        const state = { previous, skipIfUnchanged: expected !== undefined && sameDigest(digest, expected) };
        const runId = await startRun(warehouse.db, { command: 'import', pipelines: [pipeline.name] });
        const window = { pipeline: pipeline.name, organizationId, windowKey: source };
        try {
          // The records opened above told the file's metadata and header; the load reads the file
          // again, by the fast path or row by row as a run does (loadReportFile).
          await (records.batches as AsyncGenerator).return?.(undefined);
          const result = await loadReportFile(
            pipeline,
            {
              format,
              fileName,
              source,
              requireFinalLineBreak: false,
              read: () => createReadStream(file, { highWaterMark: (format === 'csv' ? 256 : 64) * 1024 }),
              complete: () => Promise.resolve(createReadStream(file)),
            },
            (targets) => {
              const options = { window, targets, runId, schemaChanges, logger, state };
              return inWindowTransaction(warehouse, options, async (tx) => {
                const loaded = await loadWindowIn(tx, options);
                const fingerprint: WindowFingerprint | null = loaded.state
                  ? { version: 1, loader: loaderId(), declaration, file: digest, load: loaded.state }
                  : null;
                await saveImportFingerprint(tx.trx, organizationId, source, fingerprint);
                return loaded;
              });
            },
            logger.child({ file: fileName }),
          );
          const [t, ...children] = result.tables as [TableLoadResult, ...TableLoadResult[]];
          await finishRun(warehouse.db, runId, {
            status: 'succeeded',
            counts: {
              inserted: t.inserted,
              updated: t.updated,
              unchanged: t.unchanged,
              deleted: t.deleted,
              rejected: t.rejected,
            },
          });
          ctx.io.stdout.write(
            `Imported ${fileName} into ${t.table} (organization ${organizationId}): ` +
              `${t.staged} rows loaded (${t.inserted} new, ${t.updated} updated, ${t.unchanged} unchanged, ${t.deleted} removed), ` +
              `${t.rejected} rejected${t.rejected > 0 ? ' (see etl.rejects)' : ''}` +
              `${t.columnsAdded.length > 0 ? `; columns added: ${t.columnsAdded.join(', ')}` : ''}` +
              children
                .map(
                  (c) =>
                    `; ${c.table}: ${c.staged} rows (${c.inserted} new, ${c.updated} updated, ${c.unchanged} unchanged, ${c.deleted} removed), ${c.rejected} rejected`,
                )
                .join('') +
              `.${
                earlier === undefined
                  ? ''
                  : result.unchanged === true
                    ? ` It is the very file imported before (${earlier}), and the table still holds what that import left: nothing was written.`
                    : ` It replaced the earlier import of the same report (${earlier}).`
              }\n`,
          );
        } catch (error) {
          await finishRun(warehouse.db, runId, { status: 'failed', error: (error as Error).message });
          if (error instanceof CybsError) throw error;
          throw new CybsError('IMPORT_FAILED', `importing ${fileName} failed: ${(error as Error).message}`, {
            stage: 'load',
            cause: error,
          });
        }
      },
    );
}
