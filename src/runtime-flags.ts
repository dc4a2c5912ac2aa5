import v8 from 'node:v8';

/**
 * V8 flags (and one glibc setting) every cybs-etl process runs with.
 *
 * NODE_RUNTIME_FLAGS size the heap, so they must be on node's command line (the bin's shebang,
 * npm start, the Docker entrypoint, and the tests and bench that spawn a process to measure it):
 * v8.setFlagsFromString has no effect on a heap already configured. NODE_RUNTIME_ENV is read by
 * glibc when the process starts, so it goes in the same places (the shebang through `env -S`).
 * V8_RUNTIME_FLAGS are read by V8's garbage collector each time it decides, so the CLI sets them
 * itself when it starts (applyV8RuntimeFlags), which also keeps the shebang under the 127
 * characters older Linux kernels read of it.
 *
 * `--max-semi-space-size=4`: Node 24 sizes V8's young generation from the machine's memory (64 MB
 * semi-spaces on a 24 GB machine), so short-lived garbage of a streaming load piles up to ~250 MB of
 * RSS before a scavenge; Node 20 used 16 MB. Pinning it keeps memory bounded and equal across Node
 * versions (measured on 200k CSV rows: Node 24 229 MB → 171 MB at 16, Node 20 131 MB). Both
 * semi-spaces are resident: 8 rather than 16 kept the 30-day backfill (four windows in flight)
 * well under 200 MB with the triggers below (180 MB, against 188–200 MB with 16 and no triggers).
 * 4 rather than 8 (2026-11-22, compiled CLI, Node 20, alternating runs): the 30-day backfill
 * 172–178 MB against 184–195 MB in 20.3–20.7 s both ways; 200,000 Purchase and Refund Detail
 * records 149–162 MB against 161–175 MB, same time; 200,000 XML records 150–161 MB against
 * 164–166 MB, 0.5–1.5% slower; the 1M-row CSV load the same (149–156 MB, 4.9–5.3 s); the per-row
 * parsers 6–8 MB less, 1–3% slower; `npm start` the same.
 *
 * `--heap-growing-percent=25`: after a full collection V8 lets the old generation grow to up to
 * 4× the live heap before the next one; growing by 25% instead bounds RSS (the 30-day backfill:
 * 202–217 MB without it). It is not a limit, so a load that needs a bigger heap still gets it.
 *
 * `--initial-old-space-size=64`: with the growing factor fixed at 25%, a load's small heap (≈ 22 MB
 * live while a 1M-row CSV streams) got a limit so low that the buffers passing through (the
 * download's, the file's, COPY's: ≈ 1.1 GB per 1M rows) set off a full collection every 14 MB or so:
 * 76 mark-compacts in that load, 6 with a 64 MB floor under the old generation's limit (56 MB: still
 * 66). Measured on this 2-core machine, alternating, in a slow phase: the loader's CPU 5.6–6.0 s →
 * 3.7–4.1 s for the 1M-row CSV load, 3.8–4.2 s → 3.0–3.4 s for 200,000 Purchase and Refund Detail
 * records, 24.5–27.9 s → 19.8–21.3 s for the 30-day backfill. Node 24's collector did not need it
 * (31–34 mark-compacts with or without it). The floor costs RSS where the heap is small: the backfill's peak
 * went from 179–183 MB to 189–196 MB, which MALLOC_ARENA_MAX takes back (below).
 *
 * MALLOC_ARENA_MAX=2 (NODE_RUNTIME_ENV): glibc gives each thread that allocates (libuv's pool, V8's
 * helpers) an arena of its own, up to 8 per core, and the 64 KB–1 MB buffers of a load leave them
 * fragmented. Two arenas: the 30-day backfill peaked at 171 MB instead of 180 MB, and at 177–185 MB
 * with the 64 MB floor (against 189–196 MB without); its CPU did not change (19.8–21.3 s).
 *
 * `--incremental-marking-soft-trigger=80`, `--incremental-marking-hard-trigger=90`: with the old
 * generation's limit that close, V8 began its next incremental marking right after each full
 * collection, so marking never paused (45 full collections while 200,000 Purchase and Refund Detail
 * records load, and the process's CPU time about twice its main thread's). The triggers start
 * marking at 80% of the limit (a task) and at once from 90%: Purchase and Refund Detail 3.05–3.33 s
 * → 2.83–2.85 s of CPU (3.83–3.87 s → 3.57–3.64 s wall on this 2-core machine, where PostgreSQL
 * gets the other core back). A soft trigger alone let the per-row CSV parser, whose loop never
 * yields to a task, reach 333 MB on 200,000 rows (121–123 MB with both).
 */
export const NODE_RUNTIME_FLAGS: readonly string[] = [
  '--max-semi-space-size=4',
  '--initial-old-space-size=64',
];

/** Environment of every cybs-etl process (see above), set where NODE_RUNTIME_FLAGS are. */
export const NODE_RUNTIME_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

export const V8_RUNTIME_FLAGS: readonly string[] = [
  '--heap-growing-percent=25',
  '--incremental-marking-soft-trigger=80',
  '--incremental-marking-hard-trigger=90',
];

/** Set V8_RUNTIME_FLAGS in this process (at start-up, before the work begins). */
export function applyV8RuntimeFlags(): void {
  for (const flag of V8_RUNTIME_FLAGS) v8.setFlagsFromString(flag);
}
