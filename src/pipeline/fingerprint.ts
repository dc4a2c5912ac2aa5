import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { FileDigest } from '../spool/file-digest.js';
import type { LoadedState } from '../load/window/load-window.js';
import { packageVersion } from '../paths.js';
import type { OnDemandPipelineDef, ReportPipelineDef } from './define-pipeline.js';

/**
 * etl.windows.fingerprint of a window last loaded from a report file (or from on-demand pages,
 * whose spooled records stand for the file): the file, what read it, and what the load left in its
 * tables. A re-load of a file with the same digest, by the same loader version with the same
 * table declaration, into tables that still hold what the load left (LoadWindowOptions.state),
 * writes nothing: nightly runs re-load their last days' windows, whose data seldom changes once
 * written.
 */
export interface WindowFingerprint {
  version: 1;
  /** `cybs-etl@<version>`: another version may parse or type the same bytes otherwise. */
  loader: string;
  /** SHA-256 of the report definition and the table declaration the file was loaded with. */
  declaration: string;
  file: FileDigest;
  load: LoadedState;
  /**
   * An on-demand window's pages as received (OnDemandPageDigests), when every page was read by
   * OnDemandPageScanner and none repeated an earlier one: a re-load that receives the very same
   * pages neither scans nor spools them.
   */
  pages?: OnDemandPageDigests;
}

/** The raw bodies of an on-demand window's pages, and what each gave its sections. */
export interface OnDemandPageDigests {
  /** The first 32 hex digits of each page body's SHA-256, in order (the empty page that ended the paging included). */
  sha256: string[];
  /** Per page handed on (those with records, or a first page without), its lines per scanned section. */
  counts: number[][];
}

const fingerprintSchema = z.object({
  version: z.literal(1),
  loader: z.string(),
  declaration: z.string(),
  file: z.object({ sha256: z.string(), bytes: z.number(), blocks: z.array(z.string()) }),
  load: z.object({
    tables: z.array(
      z.object({
        table: z.string(),
        source: z.string(),
        columns: z.array(z.string()),
        owned: z.number(),
        staged: z.number(),
        rejected: z.number(),
      }),
    ),
    rejected: z.number(),
    writers: z.array(z.string().regex(/^\d+$/)),
  }),
  pages: z
    .object({ sha256: z.array(z.string()), counts: z.array(z.array(z.number().int().nonnegative())) })
    .refine((p) => p.counts.length <= p.sha256.length)
    .optional(),
});

export function loaderId(): string {
  return `cybs-etl@${packageVersion()}`;
}

/** SHA-256 of what a pipeline's rows are declared as: the report or endpoint, and the tables. */
export function declarationDigest(def: ReportPipelineDef | OnDemandPipelineDef): string {
  const declared =
    def.kind === 'report'
      ? { report: def.reportDefinitionName, table: def.table }
      : { endpoint: def.endpoint, tables: def.tables };
  return createHash('sha256').update(JSON.stringify(declared)).digest('hex');
}

/** The stored fingerprint (jsonb, as an object or as text), or undefined when there is none or it is not one. */
export function readFingerprint(value: unknown): WindowFingerprint | undefined {
  let json = value;
  if (typeof value === 'string') {
    try {
      json = JSON.parse(value) as unknown;
    } catch {
      return undefined;
    }
  }
  const parsed = fingerprintSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/**
 * What a load of a window's report file starts from: the state its last load left (whose writers
 * the new state carries on), and the digest a download must have for that load to be recognised
 * (none when it was made by another loader version or for another declaration).
 */
export function lastLoad(
  stored: unknown,
  declaration: string,
): {
  previous: LoadedState | undefined;
  expected: FileDigest | undefined;
  /** The last load's pages (an on-demand window), under the same conditions as `expected`. */
  pages?: OnDemandPageDigests;
} {
  const fingerprint = readFingerprint(stored);
  if (fingerprint === undefined) return { previous: undefined, expected: undefined };
  const same = fingerprint.loader === loaderId() && fingerprint.declaration === declaration;
  if (!same) return { previous: fingerprint.load, expected: undefined };
  return {
    previous: fingerprint.load,
    expected: fingerprint.file,
    ...(fingerprint.pages ? { pages: fingerprint.pages } : {}),
  };
}
