import v8 from 'node:v8';

/**
 * V8 flags (and one glibc setting) every cybs-etl process runs with: they keep a streaming load's
 * memory bounded, and the same on every Node version, without collecting garbage all the time.
 * docs/performance.md ("Runtime flags") has the measurements behind each value.
 *
 * NODE_RUNTIME_FLAGS size the heap and NODE_RUNTIME_ENV is read by glibc at start, so both must be
 * on node's command line (the bin's shebang through `env -S`, npm start, the Docker entrypoint, the
 * tests and bench that spawn a process): v8.setFlagsFromString cannot resize a heap already made.
 * V8_RUNTIME_FLAGS are read at each collection, so the CLI sets them when it starts
 * (applyV8RuntimeFlags); that keeps the shebang under the 127 characters older kernels read.
 *
 * - `--max-semi-space-size=4`: Node 24 sizes the young generation from the machine's memory (64 MB
 *   semi-spaces on 24 GB), and both semi-spaces are resident: a small fixed size bounds RSS.
 * - `--heap-growing-percent=25`: the old generation grows by 25% of the live heap between full
 *   collections instead of up to 4×. Not a limit: a load that needs a bigger heap still gets it.
 * - `--initial-old-space-size=64`: with that growing factor, a small live heap gets a limit so low
 *   that the buffers a load passes through set off a full collection every few MB; a 64 MB floor
 *   under the limit keeps them rare.
 * - MALLOC_ARENA_MAX=2: glibc gives each allocating thread an arena (up to 8 per core), which a
 *   load's 64 KB–1 MB buffers leave fragmented; two arenas take back the RSS the 64 MB floor costs.
 * - MALLOC_MMAP_THRESHOLD_=131072: glibc's default threshold, kept fixed. Left dynamic, it rises
 *   to the size of the largest mapped block freed (up to 32 MB): once the first 1 MB buffer of a
 *   load (a spool read for COPY, its lines with the lineage appended) is freed, every later one
 *   comes from the main heap, which they leave fragmented and which is not given back. Fixed,
 *   each is mapped and unmapped as it is freed, for the page faults of fresh pages (a little more
 *   system time).
 * - incremental marking soft/hard triggers at 80%/90% of the limit: without them V8 starts its next
 *   marking right after each full collection and never stops marking. The soft trigger marks in a
 *   task, which a loop that never yields (the per-row CSV parser) never runs: hence the hard one.
 * - `--memory-saver-mode`, on V8 13 and later (Node 24; earlier versions do not know the flag): for
 *   the same work V8 13 keeps a larger heap than V8 12, and saver mode keeps it smaller, at little
 *   cost to the loads (docs/performance.md). It does not change when the socket's dead buffers
 *   are freed (at V8's next mark-compact), which is most of what is left of Node 24's extra memory.
 */
export const NODE_RUNTIME_FLAGS: readonly string[] = [
  '--max-semi-space-size=4',
  '--initial-old-space-size=64',
];

/** Environment of every cybs-etl process (see above), set where NODE_RUNTIME_FLAGS are. */
export const NODE_RUNTIME_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
};

export const V8_RUNTIME_FLAGS: readonly string[] = [
  '--heap-growing-percent=25',
  '--incremental-marking-soft-trigger=80',
  '--incremental-marking-hard-trigger=90',
  ...(Number(process.versions.v8.split('.')[0]) >= 13 ? ['--memory-saver-mode'] : []),
];

/** Set V8_RUNTIME_FLAGS in this process (at start-up, before the work begins). */
export function applyV8RuntimeFlags(): void {
  for (const flag of V8_RUNTIME_FLAGS) v8.setFlagsFromString(flag);
}
