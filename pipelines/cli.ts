/**
 * The command line with every pipeline cybs-etl knows: the entry that hands the declarations of
 * pipelines/index.ts to the composition root (src/cli.ts), which takes them as a parameter and
 * never imports them. The bundle is built from this file (scripts/build.mjs); the package's bin,
 * pipelines/bin.ts, runs it.
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { main as runProgram, runCli as runCliOver } from '../src/cli.js';
import type { CliIo } from '../src/commands/context.js';
import { PIPELINES } from './index.js';

/** Run the CLI with the given arguments (without node and script); resolves to the exit code. */
export function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  return runCliOver(argv, io, PIPELINES);
}

/** Run the CLI as a program: this process's arguments and streams; its exit code. */
export function main(): Promise<void> {
  return runProgram(PIPELINES);
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

// `node --import tsx pipelines/cli.ts …` (the package's bin, pipelines/bin.ts, calls main itself).
if (isMain()) await main();
