/**
 * The warehouse URL (DATABASE_URL or warehouse.url) must name PostgreSQL: node-postgres reads any
 * URL and would try a `mysql://` one as PostgreSQL, failing later with a message that never says
 * why. The schemes node-postgres's connection strings take: postgres:, postgresql: and socket:
 * (a Unix socket directory).
 */
const POSTGRES_SCHEMES = ['postgres:', 'postgresql:', 'socket:'] as const;

/**
 * What is wrong with a warehouse URL, as a phrase (never the URL itself, which may hold a
 * password); undefined for a PostgreSQL URL.
 */
export function postgresUrlProblem(url: string): string | undefined {
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    return 'is not a URL';
  }
  if ((POSTGRES_SCHEMES as readonly string[]).includes(scheme)) return undefined;
  return `is not a PostgreSQL URL (it starts with "${scheme}")`;
}

/** The form to write instead, for the fix half of a message. */
export const POSTGRES_URL_EXAMPLE = 'postgres://user@host:5432/database';
