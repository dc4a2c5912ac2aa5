import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerStatusCommand(program: Command, _ctx: CliContext): void {
  notBuilt(program.command('status').description('show what is loaded, late, failed, and the last runs'), 7);
}
