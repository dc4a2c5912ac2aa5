import { createInterface } from 'node:readline';
import { CybsError } from '../errors.js';
import type { CliContext } from './context.js';

/** The `--yes` option of the commands that change state (windows retry/reset, subscriptions apply). */
export const YES_OPTION = ['--yes', 'do not ask for confirmation (scripts)', false] as const;

/**
 * Ask before a change, as terraform apply does: with `--yes` go on; at a terminal, print the
 * question and go on only on `y` or `yes`; elsewhere (a script, a pipe) refuse, since nobody can
 * answer. Resolves to true to go on, false when the person said no.
 */
export async function confirmChange(
  ctx: CliContext,
  options: { yes: boolean; question: string; what: string },
): Promise<boolean> {
  if (options.yes) return true;
  const stdin = ctx.io.stdin;
  if (!stdin?.isTTY) {
    throw new CybsError(
      'CONFIRMATION_REQUIRED',
      `${options.what} needs a confirmation and standard input is not a terminal: run it again with --yes to go on without asking.`,
      { stage: 'cli', exitCode: 2 },
    );
  }
  ctx.io.stdout.write(`${options.question} [y/N] `);
  const answer = await readLine(stdin);
  const yes = /^\s*y(es)?\s*$/i.test(answer ?? '');
  if (!yes) ctx.io.stdout.write('Nothing changed.\n');
  return yes;
}

/** One line of input, or undefined when the input ends first. */
function readLine(input: NodeJS.ReadableStream): Promise<string | undefined> {
  return new Promise((resolve) => {
    const rl = createInterface({ input, terminal: false });
    let answered = false;
    rl.once('line', (line) => {
      answered = true;
      rl.close();
      resolve(line);
    });
    rl.once('close', () => {
      if (!answered) resolve(undefined);
    });
  });
}
