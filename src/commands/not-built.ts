import type { Command } from 'commander';
import { CybsError } from '../errors.js';

/** Placeholder action for a command whose issue has not landed yet: it says so and exits 1. */
export function notBuilt(command: Command, issue: number): Command {
  return command.action(() => {
    throw new CybsError(
      'CLI_NOT_BUILT',
      `"cybs-etl ${command.name()}" is not built yet (tracked in issue ${issue}).`,
      {
        stage: 'cli',
      },
    );
  });
}
