import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerImportCommand(program: Command, _ctx: CliContext): void {
  notBuilt(program.command('import').description('load a report file downloaded by hand'), 6);
}
