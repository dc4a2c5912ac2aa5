import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerApiCommand(program: Command, _ctx: CliContext): void {
  notBuilt(program.command('api').description('send a signed request to any CyberSource API path'), 3);
}
