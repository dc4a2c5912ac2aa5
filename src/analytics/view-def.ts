/**
 * The shape every cybs_analytics view is declared in: its SQL, what it says about itself (COMMENT ON
 * VIEW: the grain, and every judgement a join or a sign convention takes), and each column with its
 * description and lineage (COMMENT ON COLUMN, and the data dictionary). install.ts creates them in
 * order; a test holds the declared columns to the columns PostgreSQL gives each view.
 */
export const ANALYTICS_SCHEMA = 'cybs_analytics';

export type ViewKind = 'staging' | 'model' | 'check' | 'dictionary';

export interface ViewColumn {
  name: string;
  description: string;
  /** Where the value comes from: `cybs.<table>.<column>` or the views it is computed from. */
  lineage: string;
}

export interface ViewDef {
  name: string;
  kind: ViewKind;
  /** COMMENT ON VIEW: grain, sources, and the judgements of joins and signs. */
  description: string;
  /** The columns, in the view's order. */
  columns: readonly ViewColumn[];
  /** The view's query (no trailing semicolon). */
  sql: string;
  /** The cybs tables it reads, directly or through the views it reads. */
  sources: readonly string[];
  /**
   * Kept as a materialized view (refreshed after each run that loaded one of `sources`), with a
   * unique index on `key` (so that a refresh does not block readers) and the other `indexes` the
   * views reading it join on. Set only where the measurement in docs/performance.md says the plain
   * view is too slow.
   */
  materialized?: { key: readonly string[]; indexes?: readonly (readonly string[])[] };
  /** The natural key of a row (documentation and the dbt export). */
  key?: readonly string[];
}

export function qualified(name: string): string {
  return `${ANALYTICS_SCHEMA}.${name}`;
}

/** A column of a computed view. */
export function column(name: string, description: string, lineage: string): ViewColumn {
  return { name, description, lineage };
}
