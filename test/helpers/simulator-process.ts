import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS } from '../../src/runtime-flags.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface SimulatorProcess {
  child: ChildProcess;
  baseUrl: string;
  env: Record<string, string>;
  stdout: () => string;
  stop(): Promise<number | null>;
}

/**
 * Start a simulator in a child process (through tsx) and read its printed base URL and credentials:
 * `cybs-etl simulator <args>` by default, `test/helpers/run-simulator.ts <json options>` with `script: true`,
 * or the compiled CLI (`compiledCli`, no tsx: the product as shipped).
 */
export async function spawnSimulator(
  args: string[],
  env: Record<string, string> = {},
  options: { script?: boolean; compiledCli?: string } = {},
): Promise<SimulatorProcess> {
  const entry = options.compiledCli
    ? [options.compiledCli, '--log-level', 'warn', 'simulator']
    : options.script
      ? ['--import', 'tsx', path.join(repoRoot, 'test', 'helpers', 'run-simulator.ts')]
      : ['--import', 'tsx', path.join(repoRoot, 'pipelines', 'cli.ts'), '--log-level', 'warn', 'simulator'];
  const child = spawn(process.execPath, [...NODE_RUNTIME_FLAGS, ...entry, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...NODE_RUNTIME_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const started = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`simulator did not start: ${out} ${err}`)), 30_000);
    const check = (): void => {
      if (out.includes('Press Ctrl+C')) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    child.stdout!.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`simulator exited with ${code}: ${out} ${err}`));
    });
  });
  const line = started.split('\n').find((l) => l.startsWith('export CYBS_BASE_URL='))!;
  const vars: Record<string, string> = {};
  for (const m of line.matchAll(/([A-Z_]+)=(\S+)/g)) vars[m[1]!] = m[2]!;
  return {
    child,
    baseUrl: vars['CYBS_BASE_URL']!,
    env: vars,
    stdout: () => out,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

/** Resident set size of a process in bytes (Linux /proc). */
export async function rssOf(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
