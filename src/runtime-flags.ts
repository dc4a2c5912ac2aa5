/**
 * V8 flags every cybs-etl process runs with (the bin's shebang, npm start, the Docker entrypoint,
 * and the tests that measure a child process's memory).
 *
 * `--max-semi-space-size=16`: Node 24 sizes V8's young generation from the machine's memory (64 MB
 * semi-spaces on a 24 GB machine), so short-lived garbage of a streaming load piles up to ~250 MB of
 * RSS before a scavenge; Node 20 used 16 MB. Pinning it keeps memory bounded and equal across Node
 * versions (measured on 200k CSV rows: Node 24 229 MB → 171 MB, Node 20 131 MB). The flag cannot be
 * set after start-up (v8.setFlagsFromString has no effect on the heap already configured).
 *
 * `--heap-growing-percent=25`: after a full collection V8 lets the old generation grow to up to
 * 4× the live heap before the next one. A Purchase and Refund Detail load keeps only ≈ 35 MB live,
 * but every 2.8 MB page body and its parsed objects are promoted there, so RSS climbed to
 * 268 MB. Growing by 25% instead bounds it (170 MB, bench scale 0.2) for ≈ 15% more time in that
 * case; it is not a limit, so a load that needs a bigger heap still gets it.
 */
export const NODE_RUNTIME_FLAGS: readonly string[] = [
  '--max-semi-space-size=16',
  '--heap-growing-percent=25',
];
