import { FileDigester } from '../spool/file-digest.js';
import { releaseBuffer } from '../spool/release-buffer.js';
import type { FileDigest } from '../spool/file-digest.js';
import { sectionsOf } from '../catalog/index.js';
import type { OnDemandSection } from '../catalog/index.js';
import type { OnDemandPage } from '../extract/on-demand-pages.js';
import { KEY_LINEAGE_COLUMNS } from '../load/ddl.js';
import { encodeCopyValue } from '../copy-text/cell-encoders.js';
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
   * it first and the 64-bit digest of its items there (ItemsDigest). A window holds one entry per
   * request it read, so the entry is kept small (no object, no string, no digest per request).
   */
  private readonly requests = new RequestIds();
  private firstPage: Uint32Array = new Uint32Array(1024);
  /** Two 32-bit words per slot. */
  private itemsDigest: Uint32Array = new Uint32Array(2048);
  /** The sections by their number in a digest (the spools' order). */
  private readonly sectionNames: string[];
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
    this.sectionNames = [...this.spools.keys()];
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
    const repeats = this.repeatsOfScanned(page);
    if (repeats.size === 0) return page;
    const sections: ScannedSection[] = [];
    const parts: Buffer[] = [];
    let at = 0;
    for (let i = 0; i < this.scanned.length; i++) {
      const { name } = this.scanned[i]!;
      const section = page.sections[i]!;
      const lines =
        section.count === 0 ? [] : page.lines.toString('utf8', section.start, section.end).split('\n');
      lines.length = section.count;
      const drop = repeats.get(name);
      const kept = drop === undefined ? lines : lines.filter((_, n) => !drop.has(n + 1));
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
   * repeatsOf for a scanned page, on its bytes (no string per line: every line of a window passes
   * here). The request id is each section's first field, so a line's first cell; what is compared
   * is the line without its last cell (the record number). The first and last tabs are looked for
   * in place (the id is short, the record number shorter), the id hashed on the way, instead of a
   * Buffer search call for each and a second pass over the id.
   */
  private repeatsOfScanned(page: ScannedPage): Map<string, Set<number>> {
    const pageDigests = new PageDigests(this.requests, this.firstPage, this.itemsDigest, this.pages);
    const lines = page.lines;
    for (let i = 0; i < this.scanned.length; i++) {
      const section = page.sections[i]!;
      const number = this.sectionNames.indexOf(this.scanned[i]!.name);
      let start = section.start;
      for (let n = 1; n <= section.count; n++) {
        const end = lines.indexOf(LF, start);
        let idHash = FNV_OFFSET;
        let firstTab = start;
        for (; firstTab < end; firstTab++) {
          const c = lines[firstTab]!;
          if (c === TAB) break;
          idHash = Math.imul(idHash ^ c, FNV_PRIME);
        }
        let lastTab = end - 1;
        while (lastTab >= start && lines[lastTab] !== TAB) lastTab--;
        // An item without a request id (`\N`) cannot be recognised: it is kept, as when parsed.
        if (firstTab < end && !isCopyNull(lines, start, firstTab))
          pageDigests.add(
            lines,
            start,
            firstTab,
            number,
            lines,
            start,
            lastTab < start ? end : lastTab,
            n,
            idHash >>> 0,
          );
        start = end + 1;
      }
    }
    return this.settle(pageDigests);
  }

  /**
   * The records (by section, their numbers in the page) of the requests an earlier page had with
   * the very same items; fails when an earlier page had a request with other items. Records the
   * requests of this page for the pages after it.
   */
  private repeatsOf(sections: readonly SectionItems[]): Map<string, Set<number>> {
    const pageDigests = new PageDigests(this.requests, this.firstPage, this.itemsDigest, this.pages);
    for (const { name, items } of sections) {
      const section = this.sectionNames.indexOf(name);
      for (const { id, text, number } of items) {
        if (id === undefined) continue;
        const idBytes = Buffer.from(id, 'utf8');
        const textBytes = Buffer.from(text, 'utf8');
        pageDigests.add(idBytes, 0, idBytes.length, section, textBytes, 0, textBytes.length, number);
      }
    }
    return this.settle(pageDigests);
  }

  /**
   * After a page's items went into `pageDigests`: the requests first read on this page are kept
   * (their slot, page and digest), those an earlier page had are compared with it (other items:
   * the window fails) and their records returned, by section name, as repeats.
   */
  private settle(pageDigests: PageDigests): Map<string, Set<number>> {
    this.firstPage = pageDigests.firstPage;
    this.itemsDigest = pageDigests.itemsDigest;
    const out = new Map<string, Set<number>>();
    for (const [slot, digest] of pageDigests.earlier) {
      if (this.itemsDigest[2 * slot] !== digest.high || this.itemsDigest[2 * slot + 1] !== digest.low) {
        const id = this.requests.idOf(slot);
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
      for (const { section, number } of digest.items) {
        const name = this.sectionNames[section]!;
        let numbers = out.get(name);
        if (numbers === undefined) out.set(name, (numbers = new Set()));
        numbers.add(number);
      }
    }
    return out;
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

  /**
   * Give back what paging needed (releaseBuffer): the scanner's buffers and the requests met, once
   * close() succeeded (every page's lines are in the spools); no page is written after.
   */
  releasePaging(): void {
    this.scanner?.release();
    this.requests.release();
    releaseBuffer(this.firstPage);
    releaseBuffer(this.itemsDigest);
    this.firstPage = new Uint32Array(0);
    this.itemsDigest = new Uint32Array(0);
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
 * one buffer and an open-addressing table of those numbers: ≈ 48 bytes per id, outside the heap,
 * where a Map of strings took ≈ 75 in it, and no id keeps alive the page text it was sliced from.
 * Ids are compared byte for byte: exact. The table holds each id's hash beside its number, so that
 * a probe compares bytes only with an id of the same hash, and growing it hashes no id again.
 */
export class RequestIds {
  private bytes = Buffer.allocUnsafe(1 << 16);
  private used = 0;
  /** Id n is bytes[ends[n - 1] ?? 0 .. ends[n]). */
  private ends = new Uint32Array(1024);
  /**
   * Two words a slot: id number + 1 (0: empty) and the id's hash. Its slots are a power of two, at
   * most half of them full.
   */
  private table = new Int32Array(2 * 2048);
  private count = 0;
  private scratch = Buffer.allocUnsafe(256);

  get size(): number {
    return this.count;
  }

  /** The number of `id`, or undefined when it was not added. */
  get(id: string): number | undefined {
    return this.find(this.scratch, 0, this.encode(id));
  }

  /** Add `id` (not added before) and return its number. */
  add(id: string): number {
    return this.addBytes(this.scratch, 0, this.encode(id));
  }

  /**
   * The number of the id whose UTF-8 bytes are key[start .. end), or undefined; `hash` is
   * hashBytes of those bytes, when the caller computed it already.
   */
  find(key: Buffer, start: number, end: number, hash = hashBytes(key, start, end)): number | undefined {
    const table = this.table;
    const mask = (table.length >> 1) - 1;
    const h = hash | 0;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = table[2 * at]!;
      if (entry === 0) return undefined;
      if (table[2 * at + 1] === h && this.equals(entry - 1, key, start, end)) return entry - 1;
    }
  }

  /**
   * Add the id whose UTF-8 bytes are key[start .. end) (not added before); its number. `hash`
   * as for find.
   */
  addBytes(key: Buffer, start: number, end: number, hash = hashBytes(key, start, end)): number {
    const length = end - start;
    // Each array outgrown is freed at once (releaseBuffer): nothing outside the set points into it.
    if (this.used + length > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.used + length, this.bytes.length * 2));
      this.bytes.copy(grown, 0, 0, this.used);
      releaseBuffer(this.bytes);
      this.bytes = grown;
    }
    // A request id is a few dozen bytes: copied in place, not through a call to the runtime.
    if (length <= 64) for (let i = 0; i < length; i++) this.bytes[this.used + i] = key[start + i]!;
    else key.copy(this.bytes, this.used, start, end);
    this.used += length;
    const n = this.count++;
    if (n === this.ends.length) {
      const ends = new Uint32Array(n * 2);
      ends.set(this.ends);
      releaseBuffer(this.ends);
      this.ends = ends;
    }
    this.ends[n] = this.used;
    if (this.count * 2 > this.table.length >> 1) this.grow();
    place(this.table, n + 1, hash | 0);
    return n;
  }

  /** The id numbered `n`. */
  idOf(n: number): string {
    return this.bytes.toString('utf8', n === 0 ? 0 : this.ends[n - 1]!, this.ends[n]!);
  }

  /** `id` as UTF-8 at the start of `scratch` (grown for a long id); its length. */
  private encode(id: string): number {
    const length = Buffer.byteLength(id, 'utf8');
    if (length > this.scratch.length) this.scratch = Buffer.allocUnsafe(length * 2);
    return this.scratch.write(id, 0, 'utf8');
  }

  private equals(n: number, key: Buffer, keyStart: number, keyEnd: number): boolean {
    const start = n === 0 ? 0 : this.ends[n - 1]!;
    const length = keyEnd - keyStart;
    if (this.ends[n]! - start !== length) return false;
    for (let i = 0; i < length; i++) if (this.bytes[start + i] !== key[keyStart + i]) return false;
    return true;
  }

  /** The table twice as large, its entries placed again by the hashes it holds. */
  private grow(): void {
    const old = this.table;
    this.table = new Int32Array(old.length * 2);
    for (let at = 0; at < old.length; at += 2) if (old[at] !== 0) place(this.table, old[at]!, old[at + 1]!);
    releaseBuffer(old);
  }

  /** Give back the set's memory (releaseBuffer) once it is no longer asked; it is empty after. */
  release(): void {
    for (const array of [this.bytes, this.ends, this.table]) releaseBuffer(array);
    this.bytes = Buffer.alloc(0);
    this.ends = new Uint32Array(1);
    this.table = new Int32Array(4);
    this.used = 0;
    this.count = 0;
  }
}

/** Put `entry` (an id number + 1) with its `hash` in the first free slot from the hash's on. */
function place(table: Int32Array, entry: number, hash: number): void {
  const mask = (table.length >> 1) - 1;
  let at = hash & mask;
  while (table[2 * at] !== 0) at = (at + 1) & mask;
  table[2 * at] = entry;
  table[2 * at + 1] = hash;
}

const LF = 0x0a;
const TAB = 0x09;

/** Whether bytes[start .. end) is the COPY text NULL, `\N`. */
function isCopyNull(bytes: Buffer, start: number, end: number): boolean {
  return end - start === 2 && bytes[start] === 0x5c && bytes[start + 1] === 0x4e;
}

/** The digest of a request's items before its first item. */
const DIGEST_SEED_HIGH = 0x2545f491;
const DIGEST_SEED_LOW = 0x6a09e667;

/** The two 32-bit words of the last itemHash. */
let itemHigh = 0;
let itemLow = 0;

/**
 * A 64-bit hash of one item (its section and the bytes compared) in itemHigh and itemLow: two
 * 32-bit multiplicative lanes over the bytes, four at a time (a little-endian word read through
 * `view`, a DataView of `bytes`, so the same bytes hash alike wherever they lie), then the last
 * ones singly; each lane finished with MurmurHash3's mix so that every byte reaches every bit. Not
 * cryptographic: the pages come from the service, and a digest only tells a request read again
 * unchanged from one whose items changed meanwhile.
 */
function itemHash(section: number, bytes: Buffer, view: DataView, start: number, end: number): void {
  let a = 0x811c9dc5 ^ section;
  let b = 0x9e3779b9 ^ Math.imul(section + 1, 0x85ebca6b);
  let i = start;
  for (const words = end - 3; i < words; i += 4) {
    const w = view.getInt32(i, true);
    a = Math.imul(a ^ w, 0x01000193);
    b = Math.imul(((b << 5) | (b >>> 27)) ^ w, 0x5bd1e995);
  }
  for (; i < end; i++) {
    const c = bytes[i]!;
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(((b << 5) | (b >>> 27)) ^ c, 0x5bd1e995);
  }
  itemHigh = fmix32(a ^ (end - start));
  itemLow = fmix32(b + Math.imul(end - start, 0x27d4eb2f));
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A request's digest words with one more item (itemHigh, itemLow) folded in, in order. */
function foldHigh(high: number): number {
  return fmix32(Math.imul((high ^ itemHigh) >>> 0, 0xcc9e2d51) ^ 0x1b873593) >>> 0;
}
function foldLow(low: number): number {
  return fmix32(Math.imul(((low << 7) | (low >>> 25)) ^ itemLow, 0x1b873593) + 0xe6546b64) >>> 0;
}

/**
 * The items of one page folded into their requests' digests, in the page's order (section by
 * section, item by item). A request first read on this page is added to the window's requests and
 * its digest built in place (itemsDigest); one an earlier page had gets a digest of this page's
 * items beside (`earlier`, with their records), to be compared with the one kept.
 */
class PageDigests {
  readonly earlier = new Map<
    number,
    { high: number; low: number; items: { section: number; number: number }[] }
  >();

  constructor(
    private readonly requests: RequestIds,
    public firstPage: Uint32Array,
    public itemsDigest: Uint32Array,
    private readonly page: number,
  ) {}

  /** The DataView of the last `bytes` hashed (a page's lines: one view for all its items). */
  private view: DataView | undefined;
  private viewed: Buffer | undefined;

  /**
   * One item: its request id idBytes[idStart .. idEnd) (idHash: hashBytes of it, when known),
   * section, compared bytes and record number.
   */
  add(
    idBytes: Buffer,
    idStart: number,
    idEnd: number,
    section: number,
    bytes: Buffer,
    start: number,
    end: number,
    number: number,
    idHash = hashBytes(idBytes, idStart, idEnd),
  ): void {
    let slot = this.requests.find(idBytes, idStart, idEnd, idHash);
    if (slot === undefined) {
      slot = this.requests.addBytes(idBytes, idStart, idEnd, idHash);
      if (slot === this.firstPage.length) {
        const pages = new Uint32Array(slot * 2);
        pages.set(this.firstPage);
        this.firstPage = pages;
        const digests = new Uint32Array(slot * 4);
        digests.set(this.itemsDigest);
        this.itemsDigest = digests;
      }
      this.firstPage[slot] = this.page;
      this.itemsDigest[2 * slot] = DIGEST_SEED_HIGH;
      this.itemsDigest[2 * slot + 1] = DIGEST_SEED_LOW;
    }
    if (this.viewed !== bytes || this.view === undefined) {
      this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      this.viewed = bytes;
    }
    itemHash(section, bytes, this.view, start, end);
    if (this.firstPage[slot] === this.page) {
      this.itemsDigest[2 * slot] = foldHigh(this.itemsDigest[2 * slot]!);
      this.itemsDigest[2 * slot + 1] = foldLow(this.itemsDigest[2 * slot + 1]!);
      return;
    }
    let digest = this.earlier.get(slot);
    if (digest === undefined)
      this.earlier.set(slot, (digest = { high: DIGEST_SEED_HIGH, low: DIGEST_SEED_LOW, items: [] }));
    digest.high = foldHigh(digest.high);
    digest.low = foldLow(digest.low);
    digest.items.push({ section, number });
  }
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a of bytes[start .. end). */
function hashBytes(bytes: Buffer, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
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
