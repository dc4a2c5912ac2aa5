/**
 * What the command line prints for an error that reaches it: one sentence that says what happened
 * and what to do, and the exit code (1 runtime failure, 2 usage or config error). The product's own
 * errors (CybsError) carry both; this module gives the known causes that arrive as something else
 * (a database's or the operating system's error) their sentence, and leaves "unexpected error" to
 * what is truly unexpected.
 */
import { CybsError, errorMessage, isCybsError } from '../errors.js';
import {
  LOAD_ERROR_CODES,
  databaseErrorFix,
  isConnectionLost,
  sqlState,
} from '../warehouse/database-errors.js';

export interface ExplainedError {
  message: string;
  exitCode: number;
}

interface ErrorFields {
  code?: unknown;
  syscall?: unknown;
  path?: unknown;
  address?: unknown;
  port?: unknown;
  severity?: unknown;
  cause?: unknown;
  errors?: unknown;
}

const fields = (error: unknown): ErrorFields =>
  error !== null && typeof error === 'object' ? (error as ErrorFields) : {};

/** The error and what it wraps (causes, the attempts of an AggregateError), outermost first. */
function* causeChain(error: unknown): Generator<unknown> {
  const seen = new Set<unknown>();
  const queue = [error];
  while (queue.length > 0) {
    const next = queue.shift();
    if (next === undefined || next === null || seen.has(next)) continue;
    seen.add(next);
    yield next;
    const f = fields(next);
    queue.push(f.cause);
    if (Array.isArray(f.errors)) queue.push(...(f.errors as unknown[]));
  }
}

/** Failures to reach a PostgreSQL server: why, and the fix, given the setting that names it. */
const UNREACHABLE: Record<string, (setting: string, detail: string) => [string, string]> = {
  ECONNREFUSED: (s) => [
    'nothing accepts connections there (connection refused)',
    `start PostgreSQL there or correct ${s}`,
  ],
  ENOTFOUND: (s) => ['the host name does not resolve', `correct the host in ${s}`],
  EAI_AGAIN: (s) => ['the host name does not resolve (DNS lookup failed)', `correct the host in ${s}`],
  ETIMEDOUT: (s) => [
    'no answer from that address (timed out)',
    `check the host and port in ${s} and the network between them`,
  ],
  EHOSTUNREACH: (s) => ['no route to that host', `check the host in ${s} and the network between them`],
  ENETUNREACH: (s) => ['the network is unreachable', `check the host in ${s} and this machine's network`],
  ENOENT: (s) => [
    'no PostgreSQL socket in that directory',
    `start PostgreSQL or correct the socket directory in ${s}`,
  ],
  ECONNRESET: (s) => [
    'the server closed the connection at once',
    `check that ${s} names a PostgreSQL server that accepts this client (pg_hba.conf, SSL)`,
  ],
  '28P01': (s, d) => [d, `correct the user or password in ${s}`],
  '28000': (s, d) => [d, `allow this client in the server's pg_hba.conf or correct the user in ${s}`],
  '3D000': (s, d) => [d, `create the database (createdb) or correct its name in ${s}`],
  '57P03': (_s, d) => [d, 'run the command again once the server accepts connections'],
  '53300': (_s, d) => [d, "raise the server's max_connections or stop some of its clients"],
};

/** node-postgres's own connection failures, which have no code. */
const PG_CONNECT_MESSAGES: [RegExp, string][] = [
  [/timeout expired|connection timeout/i, 'ETIMEDOUT'],
  [/does not support SSL/i, 'ECONNRESET'],
];

function unreachableCause(error: unknown): { code: string; detail: string } | undefined {
  for (const e of causeChain(error)) {
    const code = sqlState(e);
    if (code && code in UNREACHABLE) {
      // ENOENT only says "no socket" when connecting; a missing file elsewhere is another story.
      if (code === 'ENOENT' && fields(e).syscall !== 'connect') continue;
      return { code, detail: errorMessage(e) };
    }
    const known = PG_CONNECT_MESSAGES.find(([pattern]) => pattern.test(errorMessage(e)));
    if (known) return { code: known[1], detail: errorMessage(e) };
  }
  return undefined;
}

/** `host:port` of a PostgreSQL URL (or its socket directory), without user or password. */
export function warehouseAddress(url: string): string {
  try {
    const u = new URL(url);
    const host = decodeURIComponent(u.hostname) || u.searchParams.get('host') || 'localhost';
    const port = u.port || u.searchParams.get('port') || '5432';
    return host.startsWith('/') ? `the socket in ${host} (port ${port})` : `${host}:${port}`;
  } catch {
    return 'the configured address';
  }
}

/**
 * A warehouse named by a URL that could not be reached (refused, unknown host, wrong password, no
 * such database, ...), found anywhere in the error's causes, as a LOAD_CONNECT error that names
 * the address and the setting to correct; undefined for any other failure.
 */
export function unreachableWarehouse(
  error: unknown,
  target: { url: string; setting: string },
): CybsError | undefined {
  const cause = unreachableCause(error);
  if (!cause) return undefined;
  // A connection reset while a load used it (a backend terminated mid-COPY) was reached, then lost.
  if (cause.code === 'ECONNRESET' && isCybsError(error) && error.code === LOAD_ERROR_CODES.connection)
    return undefined;
  const [reason, fix] = UNREACHABLE[cause.code]!(target.setting, cause.detail);
  const address = warehouseAddress(target.url);
  return new CybsError(
    'LOAD_CONNECT',
    `Cannot reach the warehouse at ${address} (${target.setting}): ${reason}; ${fix}.`,
    {
      stage: 'load',
      retryable: true,
      cause: error,
      context: { address, setting: target.setting, reason: cause.code },
    },
  );
}

/** File system failures: what went wrong, and what to do about it. */
const FILE_FAILURES: Record<string, [string, string]> = {
  EACCES: ['permission denied', 'give this user access to it, or choose another path'],
  EPERM: ['operation not permitted', 'give this user access to it, or choose another path'],
  EROFS: [
    'the file system is read-only',
    'choose a path on a writable file system (in a container: a volume)',
  ],
  ENOSPC: ['no space left on the device', 'free space there'],
  EDQUOT: ['disk quota exceeded', 'free space there'],
  ENOENT: ['no such file or directory', 'check the path'],
  ENOTDIR: ['a part of the path is not a directory', 'check the path'],
  EISDIR: ['it is a directory', 'give the path of a file'],
  EMFILE: ['too many open files', 'raise the limit of open files (ulimit -n)'],
};

function isDatabaseError(error: unknown): boolean {
  const code = sqlState(error);
  return code !== undefined && /^[0-9A-Z]{5}$/.test(code) && typeof fields(error).severity === 'string';
}

/** The sentence and exit code for anything that reaches the command line. */
export function explainError(error: unknown): ExplainedError {
  if (isCybsError(error)) return { message: error.message, exitCode: error.exitCode };
  const message = errorMessage(error).replace(/\s+/g, ' ').trim();
  const code = sqlState(error);
  if (isDatabaseError(error)) {
    const fix = databaseErrorFix(code);
    return {
      message: `The warehouse refused a statement: ${message} (SQLSTATE ${code}); ${fix ?? 'run again with --verbose for the details'}.`,
      exitCode: 1,
    };
  }
  if (isConnectionLost(error)) {
    return {
      message: `The connection to the warehouse was lost (${message}); run the command again once PostgreSQL answers.`,
      exitCode: 1,
    };
  }
  const f = fields(error);
  if (f.syscall === 'listen' && code) {
    const where = [f.address, f.port].filter((v) => v !== undefined).join(':');
    const why = code === 'EADDRINUSE' ? 'the address is already in use' : message;
    return {
      message: `Cannot listen on ${where || 'that address'}: ${why} (${code}); choose another port or address (--port, --host).`,
      exitCode: code === 'EADDRINUSE' ? 1 : 2,
    };
  }
  const failure = code ? FILE_FAILURES[code] : undefined;
  if (failure && typeof f.path === 'string') {
    const [reason, fix] = failure;
    const what = typeof f.syscall === 'string' ? `${f.syscall} ` : '';
    return { message: `Cannot ${what}${f.path}: ${reason} (${code}); ${fix}.`, exitCode: 1 };
  }
  return {
    message: `unexpected error: ${message}; run again with --verbose for the stack trace, and report it.`,
    exitCode: 1,
  };
}
