/**
 * The one error family of cybs-etl. Every error the product raises on purpose is a CybsError with a
 * stable `code`, the `stage` it came from, whether retrying the same unit of work can help, and
 * context that never holds a secret.
 */
export const ERROR_STAGES = [
  'config',
  'cli',
  'api',
  'extract',
  'parse',
  'map',
  'load',
  'state',
  'schedule',
  'queue',
  'simulator',
] as const;
export type ErrorStage = (typeof ERROR_STAGES)[number];

export interface CybsErrorOptions {
  stage: ErrorStage;
  retryable?: boolean;
  cause?: unknown;
  /** Extra facts for logs and messages: url without secrets, file, line, field, value. */
  context?: Record<string, unknown>;
  /** Process exit code when this error reaches the CLI (1 by default; 2 for usage/config errors). */
  exitCode?: number;
}

export class CybsError extends Error {
  readonly code: string;
  readonly stage: ErrorStage;
  readonly retryable: boolean;
  readonly context: Record<string, unknown>;
  readonly exitCode: number;

  constructor(code: string, message: string, options: CybsErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CybsError';
    this.code = code;
    this.stage = options.stage;
    this.retryable = options.retryable ?? false;
    this.context = options.context ?? {};
    this.exitCode = options.exitCode ?? 1;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      stage: this.stage,
      retryable: this.retryable,
      message: this.message,
      context: this.context,
    };
  }
}

export function isCybsError(value: unknown): value is CybsError {
  return value instanceof CybsError;
}

/** A configuration problem: exit code 2, never retryable. */
export function configError(message: string, context: Record<string, unknown> = {}): CybsError {
  return new CybsError('CONFIG_INVALID', message, { stage: 'config', context, exitCode: 2 });
}

/** The message of any thrown value, as one line. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
