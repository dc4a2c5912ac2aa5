/**
 * Composition root of the command line: parses arguments, builds the context (config, env,
 * logger, warehouse, the pipeline declarations it is given) and maps errors to exit codes: 0
 * success, 1 failure, 2 usage or config error. The declarations come from the entry that starts it,
 * pipelines/cli.ts: src/ never reaches into pipelines/.
 */
import { Command, CommanderError, Option } from 'commander';
import { DEFAULT_CONFIG_PATH } from './config/defaults.js';
import { scrubSecrets } from './observability/redact.js';
import { packageVersion } from './paths.js';
import { applyV8RuntimeFlags } from './runtime-flags.js';
import { CliContext } from './commands/context.js';
import { explainError } from './commands/explain-error.js';
import type { CliIo } from './commands/context.js';
import type { PipelineDef } from './pipeline/define-pipeline.js';
import type { Command as CommandType } from 'commander';

type Register = (program: CommandType, ctx: CliContext) => void;

/**
 * Commands in help order, each loaded on demand: a command imports only what it needs (the
 * simulator does not load the warehouse stack, `migrate` does not load the API client), which keeps
 * start-up time and memory down.
 */
const COMMANDS: readonly [string, () => Promise<Register>][] = [
  ['run', async () => (await import('./commands/run.js')).registerRunCommand],
  ['backfill', async () => (await import('./commands/backfill.js')).registerBackfillCommand],
  ['schedule', async () => (await import('./commands/schedule.js')).registerScheduleCommand],
  ['worker', async () => (await import('./commands/worker.js')).registerWorkerCommand],
  ['status', async () => (await import('./commands/status.js')).registerStatusCommand],
  ['windows', async () => (await import('./commands/windows.js')).registerWindowsCommand],
  ['import', async () => (await import('./commands/import.js')).registerImportCommand],
  ['subscriptions', async () => (await import('./commands/subscriptions.js')).registerSubscriptionsCommand],
  ['simulator', async () => (await import('./commands/simulator.js')).registerSimulatorCommand],
  ['api', async () => (await import('./commands/api.js')).registerApiCommand],
  ['pipelines', async () => (await import('./commands/pipelines.js')).registerPipelinesCommand],
  ['migrate', async () => (await import('./commands/migrate.js')).registerMigrateCommand],
  ['sql', async () => (await import('./commands/sql.js')).registerSqlCommand],
  ['check', async () => (await import('./commands/check.js')).registerCheckCommand],
  ['alerts', async () => (await import('./commands/alerts.js')).registerAlertsCommand],
  ['docs', async () => (await import('./commands/docs.js')).registerDocsCommand],
];

/** Global options that take a value (their value is not the command name). */
const GLOBAL_VALUE_OPTIONS = new Set(['-c', '--config', '--log-level', '--now']);

/** The command named on the command line, if it is a known one. */
export function invokedCommand(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (GLOBAL_VALUE_OPTIONS.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith('-')) continue;
    return COMMANDS.some(([name]) => name === arg) ? arg : undefined;
  }
  return undefined;
}

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export async function buildProgram(
  io: CliIo,
  pipelines: readonly PipelineDef[],
  argv: readonly string[] = [],
): Promise<{ program: Command; ctx: CliContext }> {
  const program = new Command('cybs-etl');
  const ctx = new CliContext(io, program, pipelines);
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

  const only = invokedCommand(argv);
  for (const [name, load] of COMMANDS) {
    if (only === undefined || only === name) (await load())(program, ctx);
  }

  for (const command of program.commands) command.exitOverride().configureOutput(program.configureOutput());
  return { program, ctx };
}

/**
 * Run the CLI with the given arguments (without node and script) over the given pipeline
 * declarations; resolves to the exit code.
 */
export async function runCli(
  argv: readonly string[],
  io: CliIo,
  pipelines: readonly PipelineDef[],
): Promise<number> {
  const { program, ctx } = await buildProgram(io, pipelines, argv);
  // Commands report a non-zero outcome through process.exitCode; read it for this invocation only,
  // so that one in-process run (tests, embedding) does not leak its exit code into the next one.
  const previousExitCode = process.exitCode;
  process.exitCode = undefined;
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
    const { message, exitCode } = explainError(ctx.warehouseFailure(error));
    io.stderr.write(`cybs-etl: ${scrubSecrets(message, secrets)}\n`);
    if (verbose && error instanceof Error && error.stack)
      io.stderr.write(`${scrubSecrets(error.stack, secrets)}\n`);
    return exitCode;
  } finally {
    process.exitCode = previousExitCode;
    await ctx.close();
  }
}

/**
 * A reader that stops early (`cybs-etl status | head -4`) closes the pipe under stdout (or stderr);
 * the next write fails with EPIPE, which Node emits as an 'error' event on the stream and, with no
 * listener, turns into a crash with a stack trace and exit code 1. The reader has had all it wanted:
 * whatever the command still writes there is dropped, and the command ends as it would have, with
 * its own exit code. Any other failure to write is one sentence on stderr and exit code 1.
 */
function writeQuietlyToClosedPipes(): { failed: () => boolean } {
  let failed = false;
  for (const [name, stream] of [
    ['standard output', process.stdout],
    ['standard error', process.stderr],
  ] as const) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE' || failed) return;
      failed = true;
      if (stream !== process.stderr)
        process.stderr.write(`cybs-etl: cannot write to ${name} (${error.code ?? error.message}).\n`);
    });
  }
  return { failed: () => failed };
}

/** Run the CLI as a program: this process's arguments and streams; its exit code. */
export async function main(pipelines: readonly PipelineDef[]): Promise<void> {
  applyV8RuntimeFlags();
  const output = writeQuietlyToClosedPipes();
  const code = await runCli(
    process.argv.slice(2),
    {
      env: process.env,
      stdout: process.stdout,
      stderr: process.stderr,
      cwd: process.cwd(),
      stdin: process.stdin,
    },
    pipelines,
  );
  process.exitCode = code === EXIT_OK && output.failed() ? EXIT_FAILURE : code;
}
