import pino from 'pino';
import pinoPretty from 'pino-pretty';
import type { Logger, DestinationStream } from 'pino';
import { REDACTED, scrubSecrets } from './redact.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: string;
  /** Human-readable output (pino-pretty); JSON lines otherwise. */
  pretty?: boolean;
  /** Secret values to scrub from every line, whatever field they hide in. */
  secrets?: readonly string[];
  /** Where lines go; stderr by default so that stdout stays for command output. */
  destination?: DestinationStream;
  /**
   * A terminal whose bottom line may hold a progress bar: records are written above it, pretty and
   * one line each (pretty and destination are then ignored).
   */
  terminal?: { writeAbove(text: string): void };
}

const REDACT_PATHS = [
  'password',
  'secret',
  'sharedSecret',
  'p12Password',
  'token',
  'authorization',
  'signature',
  '*.password',
  '*.secret',
  '*.sharedSecret',
  '*.p12Password',
  '*.token',
  '*.authorization',
  '*.signature',
  'headers.authorization',
  'headers.signature',
  'req.headers.authorization',
  'req.headers.signature',
  '*.headers.authorization',
  '*.headers.signature',
];

/**
 * The process logger: created once in the composition root, child loggers per run and window.
 * Credentials are removed twice: known fields by pino's redaction, and any secret value that slips
 * into a message or another field by scrubbing each serialised line.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = (options.secrets ?? []).filter((s) => s.length >= 4);
  const base = options.terminal
    ? terminalStream(options.terminal)
    : (options.destination ?? (options.pretty ? prettyStream() : pino.destination({ fd: 2, sync: true })));
  const destination: DestinationStream =
    secrets.length === 0
      ? base
      : {
          write(line: string) {
            base.write(scrubSecrets(line, secrets));
          },
        };
  return pino(
    {
      level: options.level ?? 'info',
      base: undefined,
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: pino.stdSerializers.err },
    },
    destination,
  );
}

function prettyStream(): DestinationStream {
  // pino-pretty as a synchronous stream keeps ordering with our own stdout output.
  return pinoPretty({
    colorize: true,
    destination: 2,
    sync: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname',
  });
}

/** Records for a person at a terminal: one line each (fields inline), written above the progress bar. */
function terminalStream(terminal: { writeAbove(text: string): void }): DestinationStream {
  const pretty = pinoPretty.prettyFactory({
    colorize: true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname',
  });
  return {
    write(line: string) {
      terminal.writeAbove(pretty(line));
    },
  };
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
