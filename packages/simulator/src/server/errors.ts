/**
 * The simulator's own error: it shares nothing with the product it stands in for, the error family
 * included. `code` names the cause (SIMULATOR_OPTIONS, SIMULATOR_CLOCK, SIMULATOR_FAULTS);
 * `exitCode` is 2 for a usage error (bad options, subscriptions file or fault spec), else 1. The
 * CLI turns it into its own error at the call (src/commands/service-access.ts).
 */
export class SimulatorError extends Error {
  readonly code: string;
  readonly exitCode: number;

  constructor(code: string, message: string, options: { exitCode?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SimulatorError';
    this.code = code;
    this.exitCode = options.exitCode ?? 1;
  }
}
