import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerBackfillCommand(program: Command, _ctx: CliContext): void {
  notBuilt(program.command('backfill').description('load every window of a date range'), 7);
}
