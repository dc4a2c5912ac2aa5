import type { Command } from 'commander';
import { CybsError, errorMessage } from '../errors.js';
import type { CliContext } from './context.js';

/** Statements that only read; anything else (writes, DDL, SET, transaction control, COPY) is refused. */
const READ_ONLY_KEYWORDS = ['select', 'with', 'values', 'table', 'show', 'explain'] as const;

/** The first keyword of a SQL text, past blanks, comments and opening parentheses, lower-cased. */
export function leadingKeyword(text: string): string {
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s|\(/.test(c)) i += 1;
    else if (text.startsWith('--', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end + 1;
    } else if (text.startsWith('/*', i)) {
      // Block comments nest in PostgreSQL.
      let depth = 0;
      do {
        const step = text.slice(i, i + 2);
        depth += step === '/*' ? 1 : step === '*/' ? -1 : 0;
        i += step === '/*' || step === '*/' ? 2 : 1;
      } while (depth > 0 && i < text.length);
    } else break;
  }
  return (/^[a-z_]+/i.exec(text.slice(i))?.[0] ?? '').toLowerCase();
}

function sqlUsageError(message: string, cause?: unknown): CybsError {
  return new CybsError('SQL_REFUSED', message, { stage: 'cli', exitCode: 2, cause });
}

interface QueryErrorFields {
  code?: unknown;
  position?: unknown;
  hint?: unknown;
}

/** PostgreSQL errors that say the connection or server failed, not the query (SQLSTATE classes 08, 57). */
function isServerFailure(error: unknown): boolean {
  const code = (error as QueryErrorFields | null)?.code;
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57)/.test(code);
}

/**
 * The database refused the text as this command's kind of query, not as SQL: a write in the
 * read-only transaction (25006), or a second statement in the extended protocol's one.
 */
function isRefusedKind(error: unknown): boolean {
  const code = (error as QueryErrorFields | null)?.code;
  return (
    code === '25006' || /cannot insert multiple commands into a prepared statement/i.test(errorMessage(error))
  );
}

/**
 * Line and column (1-based) of PostgreSQL's error position: a 1-based count of characters (code
 * points, not UTF-16 units) into the query text as sent.
 */
export function lineAndColumn(text: string, position: number): { line: number; column: number } {
  const before = Array.from(text).slice(0, Math.max(0, position - 1));
  let line = 1;
  let column = 1;
  for (const c of before) {
    if (c === '\n') {
      line += 1;
      column = 1;
    } else column += 1;
  }
  return { line, column };
}

/** A query the database could not run, in one sentence: where in the text, what, and its hint. */
export function queryError(query: string, error: unknown): CybsError {
  const e = (error ?? {}) as QueryErrorFields;
  const position = Number(e.position);
  let where = '';
  if (Number.isInteger(position) && position > 0) {
    const { line, column } = lineAndColumn(query, position);
    where = ` at line ${line}, column ${column}`;
  }
  const hint = typeof e.hint === 'string' && e.hint ? ` (${e.hint.replace(/\.$/, '')})` : '';
  return new CybsError('SQL_FAILED', `The query failed${where}: ${errorMessage(error)}${hint}.`, {
    stage: 'cli',
    cause: error,
    context: { ...(where ? { position } : {}), ...(typeof e.code === 'string' ? { sqlState: e.code } : {}) },
  });
}

/** Render rows as an aligned text table (psql-like). */
export function formatTable(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(0 rows)\n';
  const columns = Object.keys(rows[0]!);
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? ''
      : v instanceof Date
        ? v.toISOString()
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((r) => r[i]!.length))));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.slice(0, 60).padEnd(widths[i]!))
      .join(' | ')
      .trimEnd();
  return (
    [
      line(columns),
      widths.map((w) => '-'.repeat(w)).join('-+-'),
      ...cells.map(line),
      `(${rows.length} row${rows.length === 1 ? '' : 's'})`,
    ].join('\n') + '\n'
  );
}

export function registerSqlCommand(program: Command, ctx: CliContext): void {
  program
    .command('sql')
    .description(
      'run a read-only SQL query against the warehouse (handy for the embedded one) and print the rows',
    )
    .argument('<query>', 'SQL text, e.g. "select count(*) from cybs.transaction_request"')
    .option('--json', 'print rows as JSON', false)
    .action(async (query: string, opts: { json: boolean }) => {
      const keyword = leadingKeyword(query);
      if (!(READ_ONLY_KEYWORDS as readonly string[]).includes(keyword)) {
        throw sqlUsageError(
          `The sql command runs one read-only query (${READ_ONLY_KEYWORDS.join(', ')}); this text starts with ${keyword ? `"${keyword}"` : 'no statement'}.`,
        );
      }
      // Not migrated: a read-only command changes nothing, the schema neither.
      const warehouse = await ctx.warehouse({ migrate: false });
      let rows: Record<string, unknown>[];
      try {
        rows = await warehouse.readOnlyQuery(query);
      } catch (error) {
        if (isServerFailure(error)) throw error;
        if (isRefusedKind(error)) {
          throw sqlUsageError(
            `The query was refused: ${errorMessage(error)}; the sql command runs one statement that only reads.`,
            error,
          );
        }
        throw queryError(query, error);
      }
      ctx.io.stdout.write(opts.json ? `${JSON.stringify(rows, null, 2)}\n` : formatTable(rows));
    });
}
