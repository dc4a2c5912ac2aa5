/**
 * The CLI in a child process (`node --import tsx pipelines/cli.ts …`, or the built bundle as the bin runs
 * it), for tests that kill it, run several at once, or read everything it writes (stdout and the
 * JSON log lines on stderr).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS } from '../../src/runtime-flags.js';
import { repoRoot } from './simulator-process.js';

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * `options.bundle`: run that built bundle (compileCli) instead of src/ through tsx, with the flags
 * and environment of src/runtime-flags.ts, as the bin's shebang runs it.
 */
export function spawnCli(
  args: string[],
  env: Record<string, string>,
  options: { bundle?: string; cwd?: string } = {},
): CliProcess {
  const entry = options.bundle
    ? [...NODE_RUNTIME_FLAGS, options.bundle]
    : ['--import', 'tsx', path.join(repoRoot, 'pipelines', 'cli.ts')];
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      ...(options.bundle ? NODE_RUNTIME_ENV : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** A small seeded PRNG (mulberry32): the same seed gives the same kill moments. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
