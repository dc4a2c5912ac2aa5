import { FileDigester } from '../api/file-digest.js';
import type { FileDigest } from '../api/file-digest.js';
import { sectionsOf } from '../catalog/index.js';
import type { OnDemandSection } from '../catalog/index.js';
import type { OnDemandPage } from '../extract/on-demand-pages.js';
import { KEY_LINEAGE_COLUMNS } from '../load/ddl.js';
import type { LoadWindowTarget } from '../load/load-window.js';
import { parseOnDemandResponse, sectionColumns } from '../parse/on-demand.js';
import { OnDemandPageScanner } from '../parse/on-demand-scan.js';
import type { ScanPlan } from '../parse/on-demand-scan.js';
import type { ColumnSpec } from '../parse/records.js';
import { CopyTextSpool } from './copy-text-spool.js';
import type { OnDemandPipelineDef } from './define-pipeline.js';
import { declaredColumns } from './record-source.js';

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
 */
export class OnDemandSpools {
  readonly spools: Map<string, CopyTextSpool>;
  private readonly offsets = new Map<string, number>();
  private readonly scanner: OnDemandPageScanner | undefined;
  /** The scanner's sections, in its plan's order (empty without a scanner). */
  private readonly scanned: ScannedSectionSpool[];
  /** Pages written. */
  pages = 0;

  constructor(
    dir: string,
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
  readonly scan = (bytes: Buffer | readonly Buffer[]) => {
    if (!this.scanner) return undefined;
    if (!this.scanned.every((s) => s.spool.acceptsLinesOf(s.columns))) return undefined;
    return this.scanner.scan(
      bytes,
      this.scanned.map((s) => this.offsets.get(s.name) ?? 0),
    );
  };

  /**
   * Spool one page (after the previous one). Once it resolves, the lines of the page before are
   * in the files: the scanner may write the next page's lines over them.
   */
  async write(page: OnDemandPage): Promise<void> {
    this.pages++;
    await this.writePage(page);
    await this.previousWritten;
    this.previousWritten = Promise.all(this.scanned.map((s) => s.spool.written()));
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
    for (const [name, records] of Object.entries(parsed.sections)) {
      const spool = this.spools.get(name);
      if (!spool) continue;
      const base = this.offsets.get(name) ?? 0;
      let last = base;
      for await (const batch of records.batches) {
        const typed = batch.records.map((r) => {
          last = base + r.recordNumber;
          return { recordNumber: last, values: r.values };
        });
        const rejects = batch.rejects.map((r) => ({ ...r, recordNumber: base + r.recordNumber }));
        await spool.writePage(records.columns, typed, rejects);
      }
      this.offsets.set(name, Math.max(last, base + records.summary().dataRows));
    }
  }

  async close(): Promise<void> {
    for (const spool of this.spools.values()) await spool.close();
  }

  /** The spooled sections as load targets (after close()). */
  targets(): LoadWindowTarget[] {
    return [...this.spools].map(([name, spool]) => ({
      table: this.def.tables[name]!,
      source: spool.toLoadSource(this.source),
    }));
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

/** The section of request details (the page's record count) and its request id field. */
function countedSection(sections: readonly OnDemandSection[]): ScanPlan['counted'] | undefined {
  const section = sections.findIndex((s) => s.key === 'requestDetails');
  const field = section < 0 ? -1 : sections[section]!.fields.findIndex((f) => f.key === 'requestId');
  return field < 0 ? undefined : { section, field };
}
