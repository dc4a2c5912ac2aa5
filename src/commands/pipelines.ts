import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerPipelinesCommand(program: Command, _ctx: CliContext): void {
  notBuilt(
    program.command('pipelines').description('list pipelines, their tables and whether they are enabled'),
    7,
  );
}
