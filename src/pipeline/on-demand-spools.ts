import { hash } from 'node:crypto';
import { FileDigester } from '../spool/file-digest.js';
import type { FileDigest } from '../spool/file-digest.js';
import { sectionsOf } from '../catalog/index.js';
import type { OnDemandSection } from '../catalog/index.js';
import type { OnDemandPage } from '../extract/on-demand-pages.js';
import { KEY_LINEAGE_COLUMNS } from '../load/ddl.js';
import { COPY_NULL, encodeCopyValue } from '../copy-text/cell-encoders.js';
import { CybsError } from '../errors.js';
import type { LoadBatch, RecordLinesQuery, RecordsOn, SpooledSource, TableDecl } from '../load/table-spec.js';
import { parseOnDemandResponse, sectionColumns } from '../parse/json/on-demand.js';
import { OnDemandPageScanner } from '../parse/json/on-demand-page-scanner.js';
import type { ScanPlan, ScannedPage, ScannedSection } from '../parse/json/on-demand-page-scanner.js';
import type { ColumnSpec, RecordSource, RejectedRecord, TypedRecord } from '../parse/records.js';
import { CopyTextSpool } from './copy-text-spool.js';
import type { SpoolDir } from '../spool/byte-spool.js';
import type { OnDemandPipelineDef } from './define-pipeline.js';
import { declaredColumns, toSourceColumn } from '../load/report-sources.js';

/** A section the scanner reads, with its spool and the columns of its lines. */
interface ScannedSectionSpool {
  name: string;
  spool: CopyTextSpool;
  columns: ColumnSpec[];
}

/**
 * The pages of one on-demand window spooled per section (CopyTextSpool), record numbers going on
 * across pages so that (source, row) stays unique in the window. A page comes either parsed
 * (parseOnDemandResponse, then CopyTextSpool.writePage) or, for purchase-refund-details, read from
 * its bytes by OnDemandPageScanner (`scan`), whose lines are what writePage would have written.
 *
 * Paging is not a snapshot: records inserted while the pages are read shift the later pages, so a
 * request read on one page comes again on the next. A request (its items in every section, by
 * request id) met on an earlier page is recognised and kept once when its items are the very same;
 * the same request id with other items fails the window (the pages cannot be reconciled; a later
 * attempt reads them again). One short digest per request of the window is held for this.
 */
export class OnDemandSpools {
  readonly spools: Map<string, CopyTextSpool>;
  private readonly offsets = new Map<string, number>();
  private readonly scanner: OnDemandPageScanner | undefined;
  /** The scanner's sections, in its plan's order (empty without a scanner). */
  private readonly scanned: ScannedSectionSpool[];
  /** The scanner's section of request details (its count is a page's record count). */
  private readonly scanCounted: number;
  /** Pages written. */
  pages = 0;
  /** Spools made to read records of known pages again (their names). */
  private knownReads = 0;
  /**
   * Request id (as a COPY text cell) → its slot in `firstPage` and `itemsDigest`: the page that had
   * it first and the first 64 bits of the SHA-1 of its items there. A window holds one entry per
   * request it read, so the entry is kept small (no object, no string, no digest per request).
   */
  private readonly requests = new RequestIds();
  private firstPage = new Uint32Array(1024);
  /** Two 32-bit words per slot. */
  private itemsDigest = new Uint32Array(2048);
  /** Records left out because an earlier page had them, by section. */
  readonly repeated = new Map<string, number>();

  constructor(
    private readonly dir: SpoolDir,
    private readonly def: OnDemandPipelineDef,
    /** The window's source name (messages name `<source>#page<n>`). */
    private readonly source: string,
  ) {
    this.spools = new Map(
      Object.keys(def.tables).map((name) => [
        name,
        new CopyTextSpool(dir, name, def.tables[name]!, declaredColumns(def.tables[name]!)),
      ]),
    );
    const plan = def.endpoint === 'purchase-refund-details' ? this.scanPlan() : undefined;
    this.scanner = plan ? new OnDemandPageScanner(plan.plan) : undefined;
    this.scanned = plan ? plan.spools : [];
    this.scanCounted = plan ? plan.plan.counted.section : -1;
  }

  /**
   * What the scanner reads: every section of the endpoint is an array of items with a table here,
   * each natural key column one of its fields; else no scanner (every page is parsed).
   */
  private scanPlan(): { plan: ScanPlan; spools: ScannedSectionSpool[] } | undefined {
    const sections = sectionsOf(this.def.endpoint);
    const plan: ScanPlan['sections'][number][] = [];
    const spools: ScannedSectionSpool[] = [];
    for (const section of sections) {
      const table = this.def.tables[section.name];
      if (!table || section.kind !== 'items' || section.fields.some((f) => f.source !== 'item'))
        return undefined;
      const required: number[] = [];
      for (const key of table.naturalKey) {
        if (KEY_LINEAGE_COLUMNS.has(key)) continue;
        const index = section.fields.findIndex((f) => f.column === key);
        if (index < 0) return undefined;
        required.push(index);
      }
      plan.push({ key: section.key, fields: section.fields, required });
      spools.push({
        name: section.name,
        spool: this.spools.get(section.name)!,
        columns: sectionColumns(section),
      });
    }
    const counted = countedSection(sections);
    if (counted === undefined) return undefined;
    // The page's top-level numbers (purchaseRefundDetailsResponseSchema: a number or null).
    return { plan: { sections: plan, numbers: ['offset', 'limit', 'pageResults'], counted }, spools };
  }

  /**
   * A page read from its bytes (for fetchOnDemandBodies), numbered after the pages written so
   * far; undefined when there is no scanner, a spool has taken other columns (a parsed page brought
   * unknown keys), or the scanner does not answer.
   */
  readonly scan = (bytes: Buffer | readonly Buffer[], bases?: readonly number[]) => {
    if (!this.scanner) return undefined;
    if (!this.scanned.every((s) => s.spool.acceptsLinesOf(s.columns))) return undefined;
    return this.scanner.scan(bytes, bases ?? this.scannedOffsets());
  };

  /**
   * The scanned section whose lines are a page's record count, and the number of scanned
   * sections; undefined when the pages are not scanned.
   */
  get scanShape(): { counted: number; sections: number } | undefined {
    return this.scanner ? { counted: this.scanCounted, sections: this.scanned.length } : undefined;
  }

  /** Records written so far per scanned section, in the scanner's plan order. */
  scannedOffsets(): number[] {
    return this.scanned.map((s) => this.offsets.get(s.name) ?? 0);
  }

  /** Lines per scanned section of each page written, or undefined once a page was parsed. */
  private counts: number[][] | undefined = [];

  /**
   * What each page written gave the scanned sections (OnDemandPageDigests.counts): undefined when a
   * page was parsed or a request repeated, as a page then cannot be read again on its own.
   */
  pageCounts(): number[][] | undefined {
    return this.repeated.size === 0 ? this.counts : undefined;
  }

  /**
   * Spool one page (after the previous one). Once it resolves, the lines of the page before are
   * in the files: the scanner may write the next page's lines over them.
   */
  async write(page: OnDemandPage): Promise<void> {
    if (page.known !== undefined) throw new Error(`${this.source}: a recognised page has no bytes to spool`);
    this.pages++;
    const before = this.scannedOffsets();
    await this.writePage(page.scanned ? { scanned: this.withoutRepeatsScanned(page.scanned) } : page);
    if (!page.scanned || this.scanned.length === 0) this.counts = undefined;
    this.counts?.push(this.scannedOffsets().map((n, i) => n - before[i]!));
    await this.previousWritten;
    const written = Promise.all(this.scanned.map((s) => s.spool.written()));
    // Awaited by the next write or by close(), where a failed write surfaces; never unhandled.
    written.catch(() => undefined);
    this.previousWritten = written;
  }

  private previousWritten: Promise<unknown> = Promise.resolve();

  private async writePage(page: OnDemandPage): Promise<void> {
    if (page.scanned) {
      const { lines, sections } = page.scanned;
      for (let i = 0; i < this.scanned.length; i++) {
        const { name, spool, columns } = this.scanned[i]!;
        const section = sections[i]!;
        if (section.count === 0) continue;
        const base = this.offsets.get(name) ?? 0;
        await spool.writeLines(columns, lines.subarray(section.start, section.end), section.count, base + 1);
        this.offsets.set(name, base + section.count);
      }
      return;
    }
    const parsed = parseOnDemandResponse(this.def.endpoint, page.body, {
      source: `${this.source}#page${this.pages}`,
      batchSize: Number.POSITIVE_INFINITY,
    });
    // Each section's records and rejects (one batch: batchSize is unbounded), repeats left out.
    const read: ParsedSection[] = [];
    for (const [name, records] of Object.entries(parsed.sections)) {
      if (!this.spools.has(name)) continue;
      const section: ParsedSection = { name, source: records, records: [], rejects: [] };
      for await (const batch of records.batches) {
        section.records.push(...batch.records);
        section.rejects.push(...batch.rejects);
      }
      read.push(section);
    }
    const repeats = this.repeatsOf(read.map((section) => this.parsedItems(section, page.body)));
    for (const { name, source: records, ...section } of read) {
      const spool = this.spools.get(name)!;
      const kept = (r: { recordNumber: number }) => !repeats.get(name)?.has(r.recordNumber);
      const base = this.offsets.get(name) ?? 0;
      const dropped = repeats.get(name)?.size ?? 0;
      // Records keep going on from the last one written (repeats take no number).
      const renumber =
        dropped === 0
          ? (n: number) => base + n
          : numbering(base, [...section.records, ...section.rejects].filter(kept));
      let last = base;
      const typed = section.records.filter(kept).map((r) => {
        last = Math.max(last, renumber(r.recordNumber));
        return { recordNumber: renumber(r.recordNumber), values: r.values };
      });
      const rejects = section.rejects
        .filter(kept)
        .map((r) => ({ ...r, recordNumber: renumber(r.recordNumber) }));
      // Nothing to write (an empty section, or all its records repeats): no segment, as when scanned.
      if (typed.length + rejects.length > 0) await spool.writePage(records.columns, typed, rejects);
      if (dropped > 0) this.repeated.set(name, (this.repeated.get(name) ?? 0) + dropped);
      this.offsets.set(name, Math.max(last, base + records.summary().dataRows - dropped));
    }
  }

  /**
   * The items of a parsed section as (record number, request id cell, text to compare): a record's
   * cells, or a reject's item as it came (the page's items, by the reject's number).
   */
  private parsedItems(section: ParsedSection, body: unknown): SectionItems {
    const columns = section.source.columns;
    const idIndex = columns.findIndex((c) => c.sourceName === REQUEST_ID);
    const declared = sectionsOf(this.def.endpoint).find((s) => s.name === section.name);
    const width = declared?.fields.length ?? 0;
    const raw = declared === undefined ? undefined : (body as Record<string, unknown>)[declared.key];
    const items: SectionItems['items'] = [];
    for (const r of section.records) {
      const id = idIndex < 0 ? null : (r.values[idIndex] ?? null);
      // The declared fields' cells, as a scanned line has them, then the unknown keys a page brought.
      const cells = r.values.map((v) => encodeCopyValue(v) ?? JSON.stringify(v));
      let text = cells.slice(0, width).join('\t');
      for (let i = width; i < cells.length; i++)
        if (r.values[i] !== null && r.values[i] !== undefined)
          text += `\t${columns[i]!.sourceName}=${cells[i]!}`;
      items.push({
        number: r.recordNumber,
        id: typeof id === 'string' ? encodeCopyValue(id) : undefined,
        text,
      });
    }
    for (const r of section.rejects) {
      const item = Array.isArray(raw) ? (raw[r.recordNumber - 1] as unknown) : undefined;
      const id =
        item !== null && typeof item === 'object' ? (item as Record<string, unknown>)[REQUEST_ID] : undefined;
      items.push({
        number: r.recordNumber,
        id: typeof id === 'string' ? encodeCopyValue(id) : undefined,
        text: `reject ${JSON.stringify(item ?? r.raw)}`,
      });
    }
    return { name: section.name, items };
  }

  /** A scanned page without the requests an earlier page had (unchanged when there are none). */
  private withoutRepeatsScanned(page: ScannedPage): ScannedPage {
    const lines: string[][] = [];
    const read: SectionItems[] = this.scanned.map(({ name }, i) => {
      const section = page.sections[i]!;
      const text =
        section.count === 0 ? [] : page.lines.toString('utf8', section.start, section.end).split('\n');
      text.length = section.count;
      lines.push(text);
      // The request id is each section's first field, so a line's first cell; its record number
      // the last cell (not compared).
      return {
        name,
        items: text.map((line, n) => {
          const id = line.slice(0, line.indexOf('\t'));
          // An item without a request id (`\N`) cannot be recognised: it is kept, as when parsed.
          return {
            number: n + 1,
            id: id === COPY_NULL ? undefined : id,
            text: line.slice(0, line.lastIndexOf('\t')),
          };
        }),
      };
    });
    const repeats = this.repeatsOf(read);
    if (repeats.size === 0) return page;
    const sections: ScannedSection[] = [];
    const parts: Buffer[] = [];
    let at = 0;
    for (let i = 0; i < read.length; i++) {
      const { name } = read[i]!;
      const drop = repeats.get(name);
      const kept = drop === undefined ? lines[i]! : lines[i]!.filter((_, n) => !drop.has(n + 1));
      if (drop !== undefined) this.repeated.set(name, (this.repeated.get(name) ?? 0) + drop.size);
      // The kept lines numbered on from the last record written (the repeats take no number).
      const base = this.offsets.get(name) ?? 0;
      const numbered = kept.map((line, k) => `${line.slice(0, line.lastIndexOf('\t'))}\t${base + k + 1}\n`);
      const bytes = Buffer.from(numbered.join(''), 'utf8');
      parts.push(bytes);
      sections.push({ start: at, end: at + bytes.length, count: kept.length });
      at += bytes.length;
    }
    const counted = sections[this.scanCounted]!;
    return { ...page, lines: Buffer.concat(parts), sections, records: counted.count };
  }

  /**
   * The records (by section, their numbers in the page) of the requests an earlier page had with
   * the very same items; fails when an earlier page had a request with other items. Records the
   * requests of this page for the pages after it.
   */
  private repeatsOf(sections: readonly SectionItems[]): Map<string, Set<number>> {
    const byRequest = new Map<string, string[]>();
    for (const { name, items } of sections)
      for (const { id, text } of items) {
        if (id === undefined) continue;
        let texts = byRequest.get(id);
        if (texts === undefined) byRequest.set(id, (texts = []));
        texts.push(`${name}\t${text}`);
      }
    const repeated = new Set<string>();
    for (const [id, texts] of byRequest) {
      const digest = hash('sha1', texts.join('\n'), 'buffer');
      const high = digest.readUInt32BE(0);
      const low = digest.readUInt32BE(4);
      const slot = this.requests.get(id);
      if (slot === undefined) {
        this.remember(id, high, low);
        continue;
      }
      if (this.itemsDigest[2 * slot] !== high || this.itemsDigest[2 * slot + 1] !== low) {
        const earlierPage = this.firstPage[slot]!;
        throw new CybsError(
          'EXTRACT_PAGES_INCONSISTENT',
          `${this.source}: request id ${id} is on page ${earlierPage} and again on page ${this.pages} with other values; the pages changed while they were read and cannot be reconciled`,
          {
            stage: 'extract',
            retryable: true,
            context: { requestId: id, pages: [earlierPage, this.pages] },
          },
        );
      }
      repeated.add(id);
    }
    const out = new Map<string, Set<number>>();
    if (repeated.size === 0) return out;
    for (const { name, items } of sections) {
      const numbers = new Set(
        items.filter((i) => i.id !== undefined && repeated.has(i.id)).map((i) => i.number),
      );
      if (numbers.size > 0) out.set(name, numbers);
    }
    return out;
  }

  /** Records that request `id` was first read on the current page, with its items' digest words. */
  private remember(id: string, high: number, low: number): void {
    const slot = this.requests.add(id);
    if (slot === this.firstPage.length) {
      const pages = new Uint32Array(slot * 2);
      pages.set(this.firstPage);
      this.firstPage = pages;
      const digests = new Uint32Array(slot * 4);
      digests.set(this.itemsDigest);
      this.itemsDigest = digests;
    }
    this.firstPage[slot] = this.pages;
    this.itemsDigest[2 * slot] = high;
    this.itemsDigest[2 * slot + 1] = low;
  }

  /** Finish every spool's files (all of them, even when one failed); throws the first error. */
  async close(): Promise<void> {
    const closed = await Promise.allSettled([
      this.previousWritten,
      ...[...this.spools.values()].map((spool) => spool.close()),
    ]);
    const failed = closed.find((c) => c.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** The spooled sections as load targets (after close()). */
  targets(): { table: TableDecl; source: SpooledSource }[] {
    return [...this.spools].map(([name, spool]) => ({
      table: this.def.tables[name]!,
      source: spool.toLoadSource(this.source),
    }));
  }

  /**
   * The sections as load targets when the window's pages are the very pages of its last load
   * (`known`, kept as received), none of them spooled: enough for a re-load that finds the
   * tables as that load left them, or restores a few rows (LoadWindowOptions.state), whose records
   * it reads again (recordsOn) by scanning only the pages that hold them. The sections' records in
   * full are not there (reading them throws): a load that needs them takes the spooled sections
   * (LoadWindowOptions.fullTargets).
   */
  knownTargets(known: KnownPages): { table: TableDecl; source: SpooledSource }[] {
    return [...this.spools.keys()].map((name) => {
      const table = this.def.tables[name]!;
      const fallback = declaredColumns(table);
      const index = this.scanned.findIndex((s) => s.name === name);
      const lines = index < 0 ? 0 : known.counts.reduce((n, c) => n + c[index]!, 0);
      const source: SpooledSource = {
        kind: 'spooled',
        source: this.source,
        // As CopyTextSpool.toLoadSource gives them: the scanned lines' columns, when it has lines.
        columns: lines > 0 ? this.scanned[index]!.columns.map(toSourceColumn) : [...fallback],
        segments: [],
        perRowBatches: notSpooled(this.source),
        allBatches: notSpooled(this.source),
        recordsOn: (query) =>
          index < 0 ? Promise.resolve(undefined) : this.recordsOnKnown(known, index, table, query),
      };
      return { table, source };
    });
  }

  /**
   * The records of scanned section `index` a query wants, read from the known pages that hold
   * them (scanned again, numbered as the last load numbered them); undefined when a page does not
   * read as it did then.
   */
  private async recordsOnKnown(
    known: KnownPages,
    index: number,
    table: TableDecl,
    query: RecordLinesQuery,
  ): Promise<Awaited<ReturnType<RecordsOn>>> {
    const { name, columns } = this.scanned[index]!;
    const spool = new CopyTextSpool(
      this.dir,
      `${name}.known${++this.knownReads}`,
      table,
      declaredColumns(table),
    );
    try {
      const bases = this.scanned.map(() => 0);
      for (let page = 0; page < known.counts.length && bases[index]! < query.through; page++) {
        const counts = known.counts[page]!;
        const first = bases[index]! + 1;
        const last = Math.min(bases[index]! + counts[index]!, query.through);
        let wanted = false;
        for (let line = first; line <= last && !wanted; line++) wanted = query.wants(line);
        if (wanted) {
          const scanned = this.scanner?.scan(await known.read(page), bases);
          if (scanned === undefined || scanned.sections.some((s, i) => s.count !== counts[i]))
            return undefined;
          const section = scanned.sections[index]!;
          await spool.writeLines(
            columns,
            scanned.lines.subarray(section.start, section.end),
            section.count,
            first,
          );
          // The scanner writes a later page's lines over these.
          await spool.written();
        }
        counts.forEach((n, i) => (bases[i] = bases[i]! + n));
      }
      await spool.close();
      return await spool.toLoadSource(this.source).recordsOn!(query);
    } finally {
      await spool.close().catch(() => {});
    }
  }

  /** The spooled sections' digest (after close()): equal pages give equal spools. */
  digest(): FileDigest {
    const digester = new FileDigester();
    for (const [name, spool] of this.spools) {
      digester.update(Buffer.from(`${name}\n`));
      spool.digestInto(digester);
    }
    return digester.digest();
  }
}

const REQUEST_ID = 'requestId';

/**
 * Pages of a window known to be the very pages of its last load: what each gave the scanned
 * sections then (OnDemandPageDigests.counts), and its bytes.
 */
export interface KnownPages {
  readonly counts: readonly (readonly number[])[];
  read(page: number): Promise<Buffer>;
}

/** The records of a known-pages source, which were not spooled (OnDemandSpools.knownTargets). */
function notSpooled(source: string): AsyncIterable<LoadBatch> {
  return {
    [Symbol.asyncIterator]() {
      throw new Error(
        `${source}: the pages were recognised, not spooled; their records are read by recordsOn`,
      );
    },
  };
}

/**
 * A set of strings numbered 0, 1, 2, … in the order they were added, kept as their UTF-8 bytes in
 * one buffer and an open-addressing table of those numbers: ≈ 40 bytes per id, outside the heap,
 * where a Map of strings took ≈ 75 in it, and no id keeps alive the page text it was sliced from.
 * Ids are compared byte for byte: exact.
 */
export class RequestIds {
  private bytes = Buffer.allocUnsafe(1 << 16);
  private used = 0;
  /** Id n is bytes[ends[n - 1] ?? 0 .. ends[n]). */
  private ends = new Uint32Array(1024);
  /** Id number + 1 at its hash's slot (0: empty); a power of two, at most half full. */
  private table = new Int32Array(2048);
  private count = 0;
  private scratch = Buffer.allocUnsafe(256);

  get size(): number {
    return this.count;
  }

  /** The number of `id`, or undefined when it was not added. */
  get(id: string): number | undefined {
    const length = this.encode(id);
    const key = this.scratch;
    const mask = this.table.length - 1;
    for (let at = hashBytes(key, 0, length) & mask; ; at = (at + 1) & mask) {
      const entry = this.table[at]!;
      if (entry === 0) return undefined;
      if (this.equals(entry - 1, key, length)) return entry - 1;
    }
  }

  /** Add `id` (not added before) and return its number. */
  add(id: string): number {
    const length = this.encode(id);
    const key = this.scratch;
    if (this.used + length > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.used + length, this.bytes.length * 2));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    key.copy(this.bytes, this.used, 0, length);
    this.used += length;
    const n = this.count++;
    if (n === this.ends.length) {
      const ends = new Uint32Array(n * 2);
      ends.set(this.ends);
      this.ends = ends;
    }
    this.ends[n] = this.used;
    if (this.count * 2 > this.table.length) this.rehash(this.table.length * 2);
    else this.place(n);
    return n;
  }

  /** `id` as UTF-8 at the start of `scratch` (grown for a long id); its length. */
  private encode(id: string): number {
    const length = Buffer.byteLength(id, 'utf8');
    if (length > this.scratch.length) this.scratch = Buffer.allocUnsafe(length * 2);
    return this.scratch.write(id, 0, 'utf8');
  }

  private equals(n: number, key: Buffer, length: number): boolean {
    const start = n === 0 ? 0 : this.ends[n - 1]!;
    if (this.ends[n]! - start !== length) return false;
    for (let i = 0; i < length; i++) if (this.bytes[start + i] !== key[i]) return false;
    return true;
  }

  private place(n: number): void {
    const start = n === 0 ? 0 : this.ends[n - 1]!;
    const mask = this.table.length - 1;
    let at = hashBytes(this.bytes, start, this.ends[n]!) & mask;
    while (this.table[at] !== 0) at = (at + 1) & mask;
    this.table[at] = n + 1;
  }

  private rehash(size: number): void {
    this.table = new Int32Array(size);
    for (let n = 0; n < this.count; n++) this.place(n);
  }
}

/** FNV-1a of bytes[start .. end). */
function hashBytes(bytes: Buffer, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

interface ParsedSection {
  name: string;
  source: RecordSource;
  records: TypedRecord[];
  rejects: RejectedRecord[];
}

/** A section's items of one page: number in the page, request id (a COPY text cell), text compared. */
interface SectionItems {
  name: string;
  items: { number: number; id: string | undefined; text: string }[];
}

/** New numbers, from `base + 1` on, for the kept records and rejects of a page (by their number in it). */
function numbering(base: number, kept: readonly { recordNumber: number }[]): (n: number) => number {
  const numbers = [...new Set(kept.map((r) => r.recordNumber))].sort((a, b) => a - b);
  const map = new Map(numbers.map((n, i) => [n, base + i + 1]));
  return (n) => map.get(n)!;
}

/** The section of request details (the page's record count) and its request id field. */
function countedSection(sections: readonly OnDemandSection[]): ScanPlan['counted'] | undefined {
  const section = sections.findIndex((s) => s.key === 'requestDetails');
  const field = section < 0 ? -1 : sections[section]!.fields.findIndex((f) => f.key === 'requestId');
  return field < 0 ? undefined : { section, field };
}
