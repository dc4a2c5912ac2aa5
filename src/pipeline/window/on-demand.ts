/**
 * An on-demand window (Purchase and Refund Detail, Conversion Detail, …): every page fetched
 * inside the window's load transaction, spooled per section, and copied into the tables while the
 * next page is fetched on a first load.
 */
import { sameDigest } from '../../spool/file-digest.js';
import type { FileDigest } from '../../spool/file-digest.js';
import { fetchOnDemandBodies } from '../../extract/on-demand-pages.js';
import type { LiveLoad } from '../../load/window/load-window.js';
import { declarationDigest, lastLoad } from '../fingerprint.js';
import type { OnDemandPipelineDef } from '../define-pipeline.js';
import { OnDemandSpools } from '../on-demand-spools.js';
import { RawPages } from '../on-demand-raw-pages.js';
import { declaredColumns } from '../../load/report-sources.js';
import type { WindowResult, WindowTask } from '../run-pipelines.js';
import type { SpoolDir } from '../../spool/byte-spool.js';
import { commitLoad, withSpoolDir } from './commit.js';
import type { ExecutorDeps, FileLoad } from './commit.js';

export async function executeOnDemandWindow(
  deps: ExecutorDeps,
  task: WindowTask,
  def: OnDemandPipelineDef,
): Promise<WindowResult> {
  const organizationId = deps.organizationParam(task.window.organizationId);
  const source = `${def.endpoint}/${task.window.start.toISOString()}..${task.window.end.toISOString()}`;
  return withSpoolDir((dir) => spoolAndLoadOnDemand(deps, task, def, organizationId, source, dir));
}

/**
 * All pages of an on-demand window, read once (purchase-refund-details pages from their bytes by
 * OnDemandPageScanner when it answers, others parsed) and spooled per section as COPY text (the
 * next page is fetched while the current one is read), fetched inside the window's load transaction:
 * on a first load, each page's lines are copied into the tables while the next page is fetched
 * and parsed (LoadWindowOptions.live); otherwise the spooled sections are loaded once complete.
 * A re-load whose pages are, byte for byte, the pages of the window's last load (RawPages) keeps
 * them as received instead: they are scanned and spooled only if the load needs every record.
 */
async function spoolAndLoadOnDemand(
  deps: ExecutorDeps,
  task: WindowTask,
  def: OnDemandPipelineDef,
  organizationId: string | undefined,
  source: string,
  dir: SpoolDir,
): Promise<WindowResult> {
  const names = Object.keys(def.tables);
  const spools = new OnDemandSpools(dir, def, source);
  const { previous, expected, pages: lastPages } = lastLoad(task.state.fingerprint, declarationDigest(def));
  const shape = spools.scanShape;
  // The last load's pages, when they can be recognised: each page's counts as the scanner reads them.
  const usable = shape !== undefined && lastPages?.counts.every((c) => c.length === shape.sections) === true;
  const raw = new RawPages(dir, usable ? lastPages : undefined, shape?.counted ?? -1);
  /** Pages handed on (recognised or spooled), and the pages kept raw that are spooled since. */
  let handed = 0;
  let replayed = 0;
  /** Spool the pages kept raw (scanned from their bytes now), in order. */
  const replay = async () => {
    for (; replayed < raw.kept; replayed++) {
      const scanned = spools.scan(await raw.read(replayed));
      if (scanned === undefined) throw new Error(`${source}: page ${replayed + 1} does not read as it did`);
      await spools.write({ scanned });
    }
  };
  /** Fetches the window page by page as it is iterated, each page spooled before the next step. */
  async function* pages(): AsyncGenerator<number> {
    for await (const page of fetchOnDemandBodies(deps.client, def.endpoint, {
      window: task.window,
      ...(organizationId ? { organizationId } : {}),
      pageLimit: task.pipeline.pageLimit,
      signal: task.signal,
      // A page after pages kept raw is numbered on from them (they are spooled before it).
      scan: (bytes) => spools.scan(bytes, raw.kept > replayed ? raw.keptBases() : undefined),
      ...(shape ? { recognise: raw.recognise } : {}),
    })) {
      handed++;
      if (page.known !== undefined) {
        await raw.written();
        continue;
      }
      if (raw.kept > replayed) {
        const bases = raw.keptBases();
        // The scanner writes the pages read again over this page's lines: a copy.
        const held = page.scanned
          ? { scanned: { ...page.scanned, lines: Buffer.from(page.scanned.lines) } }
          : page;
        await replay();
        if (page.scanned && spools.scannedOffsets().some((n, i) => n !== bases[i])) {
          throw new Error(`${source}: the pages kept do not read as they did`);
        }
        await spools.write(held);
      } else {
        await spools.write(page);
      }
      yield handed;
    }
    if (raw.same()) return;
    await replay();
    await spools.close();
  }
  // The spooled sections stand for the window's file: equal pages give equal spools.
  let digest: Promise<FileDigest> | undefined;
  const spoolDigest = () => (digest ??= Promise.resolve().then(() => spools.digest()));
  const declaration = declarationDigest(def);
  const outcome = () => ({
    sourceRef: `${source} (${handed} page${handed === 1 ? '' : 's'})`,
    noData: handed === 0,
  });
  const pageDigests = () => raw.digests(spools.pageCounts());
  try {
    if (previous !== undefined) {
      // A re-load (which copies nothing while paging): the pages are fetched (and spooled, unless
      // they are the very pages of the last load) before its load transaction.
      for await (const _page of pages());
      if (raw.same() && expected !== undefined) {
        // Recognised from the pages' bytes: the tables are checked (and a few touched rows
        // restored) against the last load's state; a load that needs every record spools the
        // pages kept then.
        let spooled = false;
        const fullTargets = async () => {
          spooled = true;
          await replay();
          await spools.close();
          return spools.targets();
        };
        const file: FileLoad = {
          previous,
          same: true,
          digest: () => (spooled ? spoolDigest() : Promise.resolve(expected)),
          declaration,
          pages: pageDigests,
        };
        return await commitLoad(
          deps,
          task,
          { targets: spools.knownTargets(raw), fullTargets, file },
          outcome,
        );
      }
      const spooled = await spoolDigest();
      const same = expected !== undefined && sameDigest(spooled, expected);
      const file: FileLoad = { previous, same, digest: spoolDigest, declaration, pages: pageDigests };
      return await commitLoad(deps, task, { targets: spools.targets(), file }, outcome);
    }
    const live: LiveLoad = {
      tables: names.map((name) => ({
        table: def.tables[name]!,
        columns: declaredColumns(def.tables[name]!),
        feed: spools.spools.get(name)!.feed,
      })),
      source,
      pages: pages(),
      targets: () => spools.targets(),
    };
    const file: FileLoad = {
      previous: undefined,
      same: false,
      digest: spoolDigest,
      declaration,
      pages: pageDigests,
    };
    return await commitLoad(deps, task, { targets: [], live, file }, outcome);
  } finally {
    const closed = await spools.close().then(
      () => true,
      () => false,
    );
    // Every page's lines are in the spools: what paging needed is of no more use.
    if (closed) spools.releasePaging();
    await raw.close().catch(() => {});
  }
}
