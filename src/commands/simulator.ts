import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerSimulatorCommand(program: Command, _ctx: CliContext): void {
  notBuilt(
    program.command('simulator').description('start the local CyberSource Reporting API simulator'),
    4,
  );
}
