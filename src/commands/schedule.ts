import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerScheduleCommand(program: Command, _ctx: CliContext): void {
  notBuilt(program.command('schedule').description('run the nightly schedule as a long-running daemon'), 7);
}
