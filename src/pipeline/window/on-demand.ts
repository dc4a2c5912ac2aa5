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
  /** Fetches the window page by page as it is iterated, each page spooled before the next step. */
  async function* pages(): AsyncGenerator<number> {
    for await (const page of fetchOnDemandBodies(deps.client, def.endpoint, {
      window: task.window,
      ...(organizationId ? { organizationId } : {}),
      pageLimit: task.pipeline.pageLimit,
      signal: task.signal,
      scan: spools.scan,
    })) {
      await spools.write(page);
      yield spools.pages;
    }
    await spools.close();
  }
  // The spooled sections stand for the window's file: equal pages give equal spools.
  let digest: Promise<FileDigest> | undefined;
  const spoolDigest = () => (digest ??= Promise.resolve().then(() => spools.digest()));
  const declaration = declarationDigest(def);
  const outcome = () => ({
    sourceRef: `${source} (${spools.pages} page${spools.pages === 1 ? '' : 's'})`,
    noData: spools.pages === 0,
  });
  try {
    const { previous, expected } = lastLoad(task.state.fingerprint, declaration);
    if (previous !== undefined) {
      // A re-load (which copies nothing while paging): the pages are fetched and spooled before its
      // load transaction, so that the very pages of its last load can be recognised.
      for await (const _page of pages());
      const spooled = await spoolDigest();
      const same = expected !== undefined && sameDigest(spooled, expected);
      const file: FileLoad = { previous, same, digest: spoolDigest, declaration };
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
    const file: FileLoad = { previous: undefined, same: false, digest: spoolDigest, declaration };
    return await commitLoad(deps, task, { targets: [], live, file }, outcome);
  } finally {
    await spools.close().catch(() => {});
  }
}
