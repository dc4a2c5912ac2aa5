import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS } from '../../../src/runtime-flags.js';
import { repoRoot } from './helpers.js';

const run = promisify(execFile);

interface BenchResult {
  rows: number;
  rejects: number;
  peakRssMB: number;
}

/**
 * Runs the memory bench in a child process (its own peak RSS) with the flags and environment every
 * cybs-etl process runs with, and returns its JSON line.
 */
async function bench(args: string[]): Promise<BenchResult> {
  const { stdout } = await run(
    process.execPath,
    [...NODE_RUNTIME_FLAGS, '--import', 'tsx', path.join('test', 'bench', 'parse-memory.ts'), ...args],
    { cwd: repoRoot, maxBuffer: 1024 * 1024, env: { ...process.env, ...NODE_RUNTIME_ENV } },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!) as BenchResult;
}

// Memory, never time. The figures for the full sizes (1M CSV rows, 200k XML records) come from
// `node --import tsx test/bench/parse-memory.ts`.
describe('parser memory stays bounded', () => {
  it('parses 200,000 CSV rows with peak RSS under 200 MB', { timeout: 300_000 }, async () => {
    const result = await bench(['--format', 'csv', '--csv-rows', '200000']);
    expect(result.rows).toBe(200_000);
    expect(result.rejects).toBe(0);
    expect(result.peakRssMB).toBeLessThan(200);
  });

  it('parses 50,000 XML records with peak RSS under 200 MB', { timeout: 300_000 }, async () => {
    const result = await bench(['--format', 'xml', '--xml-records', '50000']);
    expect(result.rows).toBe(50_000);
    expect(result.rejects).toBe(0);
    expect(result.peakRssMB).toBeLessThan(200);
  });
});
