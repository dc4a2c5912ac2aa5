#!/usr/bin/env node
/**
 * Composition root of the command line: parses arguments, builds the context (config, env,
 * logger, warehouse) and maps errors to exit codes: 0 success, 1 failure, 2 usage or config error.
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { DEFAULT_CONFIG_PATH } from './config/defaults.js';
import { isCybsError } from './errors.js';
import { scrubSecrets } from './observability/redact.js';
import { packageVersion } from './paths.js';
import { CliContext } from './commands/context.js';
import type { CliIo } from './commands/context.js';
import { registerApiCommand } from './commands/api.js';
import { registerBackfillCommand } from './commands/backfill.js';
import { registerImportCommand } from './commands/import.js';
import { registerMigrateCommand } from './commands/migrate.js';
import { registerPipelinesCommand } from './commands/pipelines.js';
import { registerRunCommand } from './commands/run.js';
import { registerScheduleCommand } from './commands/schedule.js';
import { registerSimulatorCommand } from './commands/simulator.js';
import { registerSqlCommand } from './commands/sql.js';
import { registerStatusCommand } from './commands/status.js';
import { registerSubscriptionsCommand } from './commands/subscriptions.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export function buildProgram(io: CliIo): { program: Command; ctx: CliContext } {
  const program = new Command('cybs-etl');
  const ctx = new CliContext(io, program);
  program
    .description(
      'Load CyberSource Reporting API data into PostgreSQL: nightly runs, backfills, typed tables.',
    )
    .version(packageVersion(), '-V, --version')
    .addOption(new Option('-c, --config <path>', 'config file').default(DEFAULT_CONFIG_PATH))
    .option('-v, --verbose', 'show debug logs and stack traces', false)
    .option('--pretty', 'human-readable logs even when stderr is not a terminal', false)
    .addOption(
      new Option('--now <iso-time>', 'pretend the current time is this (replays and tests)').hideHelp(),
    )
    .addOption(
      new Option('--log-level <level>', 'log level').choices([
        'fatal',
        'error',
        'warn',
        'info',
        'debug',
        'trace',
        'silent',
      ]),
    )
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    })
    .exitOverride();

  registerRunCommand(program, ctx);
  registerBackfillCommand(program, ctx);
  registerScheduleCommand(program, ctx);
  registerStatusCommand(program, ctx);
  registerImportCommand(program, ctx);
  registerSubscriptionsCommand(program, ctx);
  registerSimulatorCommand(program, ctx);
  registerApiCommand(program, ctx);
  registerPipelinesCommand(program, ctx);
  registerMigrateCommand(program, ctx);
  registerSqlCommand(program, ctx);

  for (const command of program.commands) command.exitOverride().configureOutput(program.configureOutput());
  return { program, ctx };
}

/** Run the CLI with the given arguments (without node and script); resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const { program, ctx } = buildProgram(io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ctx.exitCode ?? EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.exitCode === 0
      ) {
        return EXIT_OK;
      }
      return EXIT_USAGE;
    }
    const verbose = program.opts<{ verbose?: boolean }>().verbose === true;
    const secrets = ctx.secrets();
    const message = isCybsError(error)
      ? error.message
      : `unexpected error: ${(error as Error)?.message ?? String(error)}`;
    io.stderr.write(`cybs-etl: ${scrubSecrets(message, secrets)}\n`);
    if (verbose && error instanceof Error && error.stack)
      io.stderr.write(`${scrubSecrets(error.stack, secrets)}\n`);
    return isCybsError(error) ? error.exitCode : EXIT_FAILURE;
  } finally {
    await ctx.close();
  }
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  const code = await runCli(process.argv.slice(2), {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    cwd: process.cwd(),
  });
  process.exitCode = code;
}
