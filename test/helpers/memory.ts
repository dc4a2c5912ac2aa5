import { readdir, readFile } from 'node:fs/promises';

/** Sample `sample` every 100 ms until stopped; the stop resolves to the largest value seen. */
function samplePeak(sample: () => Promise<number>): () => Promise<number> {
  let peak = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      peak = Math.max(peak, await sample());
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return Math.max(peak, await sample());
  };
}

/**
 * The peak RSS of a live process, in MB, from its own high-water mark (VmHWM), sampled until
 * stopped (after the process exits the last sample stands).
 */
export function sampleProcessPeak(pid: number): () => Promise<number> {
  let last = 0;
  return samplePeak(async () => {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
    if (kb !== undefined) last = Number(kb) / 1024;
    return last;
  });
}

/**
 * The memory of the PostgreSQL server on `dataDir` (the postmaster, whose command line names the
 * directory, and its children, whose command lines show only their role), sampled until stopped:
 * the peak of the sum of their proportional set sizes, in MB. PSS counts each shared page (the
 * shared buffers) once over all processes, where RSS would count it in each.
 */
export function sampleServerPeak(dataDir: string): () => Promise<number> {
  return samplePeak(async () => {
    const parents = new Map<string, string>();
    let postmaster: string | undefined;
    for (const pid of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(pid)) continue;
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      parents.set(pid, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] ?? '');
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes(dataDir) && cmdline.includes('postgres')) postmaster = pid;
    }
    if (postmaster === undefined) return 0;
    let kb = 0;
    for (const [pid, parent] of parents) {
      if (pid !== postmaster && parent !== postmaster) continue;
      const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
      kb += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0);
    }
    return kb / 1024;
  });
}
