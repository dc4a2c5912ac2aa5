import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerRunCommand(program: Command, _ctx: CliContext): void {
  notBuilt(program.command('run').description('load every due window of the enabled pipelines once'), 7);
}
