import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { notBuilt } from './not-built.js';

export function registerSubscriptionsCommand(program: Command, _ctx: CliContext): void {
  notBuilt(
    program.command('subscriptions').description('list, plan and apply declared report subscriptions'),
    8,
  );
}
