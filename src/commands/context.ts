import type { Command } from 'commander';
import { readEnv, secretValues } from '../config/env.js';
import { configError, isCybsError } from '../errors.js';
import type { EnvSettings } from '../config/env.js';
import { configFile, configWarnings, loadConfig } from '../config/load-config.js';
import type { Config } from '../config/schema.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { createLogger } from '../observability/logger.js';
import { unreachableWarehouse } from './explain-error.js';
import type { Logger } from '../observability/logger.js';
import { createTerminalLine } from '../observability/progress.js';
import type { OutputStream, TerminalLine } from '../observability/progress.js';
import type { PipelineDef, ReportPipelineDef } from '../pipeline/define-pipeline.js';

export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: OutputStream;
  stderr: OutputStream;
  cwd: string;
  /** Where a command that changes state reads its confirmation (src/commands/confirm.ts); absent: not a terminal. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
}

export interface GlobalOptions {
  config: string;
  verbose: boolean;
  pretty: boolean;
  logLevel?: string;
  now?: string;
}

/**
 * What every command may need, built lazily once per invocation: the validated config, the env
 * settings (credentials), the logger and the warehouse. Commands never read process.env themselves.
 */
export class CliContext {
  private configPromise?: Promise<Config>;
  private envSettings?: EnvSettings;
  private loggerInstance?: Logger;
  private readonly closers: (() => Promise<void>)[] = [];
  /**
   * Exit code a command asks for without throwing (e.g. 1 when windows failed). Kept here, not in
   * the global process.exitCode, so that one invocation's failure cannot leak into the next one
   * run in the same process (tests, embedding).
   */
  exitCode?: number;

  constructor(
    readonly io: CliIo,
    private readonly program: Command,
    /** Every pipeline cybs-etl knows (pipelines/index.ts, given by the entry, pipelines/cli.ts). */
    readonly pipelines: readonly PipelineDef[],
  ) {}

  /** The report pipelines among them (one per report definition). */
  reportPipelines(): ReportPipelineDef[] {
    return this.pipelines.filter((p): p is ReportPipelineDef => p.kind === 'report');
  }

  globals(): GlobalOptions {
    return this.program.opts<GlobalOptions>();
  }

  /** The current time: the real clock, or --now (which then moves forward with the real clock). */
  now(): Date {
    const given = this.globals().now;
    if (!given) return new Date();
    const t = Date.parse(given);
    if (Number.isNaN(t)) throw configError(`--now ${given} is not an ISO 8601 time.`);
    this.nowOffset ??= t - Date.now();
    return new Date(Date.now() + this.nowOffset);
  }

  private nowOffset?: number;

  config(): Promise<Config> {
    this.configPromise ??= loadConfig(this.globals().config).then((config) => {
      this.pendingWarnings = [...configWarnings(config)];
      this.logConfigWarnings();
      return config;
    });
    return this.configPromise;
  }

  private pendingWarnings: string[] = [];

  /** Config warnings are logged once, as soon as both the config and the logger exist. */
  private logConfigWarnings(): void {
    if (!this.loggerInstance) return;
    for (const warning of this.pendingWarnings.splice(0)) this.loggerInstance.warn(warning);
  }

  env(): EnvSettings {
    this.envSettings ??= readEnv(this.io.env);
    return this.envSettings;
  }

  /** Secret values to scrub from any output. */
  secrets(): string[] {
    try {
      return secretValues(this.env());
    } catch {
      return [];
    }
  }

  async logger(): Promise<Logger> {
    if (this.loggerInstance) return this.loggerInstance;
    const g = this.globals();
    let level = g.logLevel;
    if (!level) {
      try {
        level = (await this.config()).log.level;
      } catch {
        level = 'info';
      }
    }
    const terminal = this.terminal();
    this.loggerInstance = createLogger({
      level: g.verbose && level === 'info' ? 'debug' : level,
      pretty: g.pretty,
      secrets: this.secrets(),
      ...(terminal ? { terminal } : {}),
    });
    this.logConfigWarnings();
    return this.loggerInstance;
  }

  private terminalLine?: TerminalLine;

  /**
   * Standard error when it is a terminal: its bottom line holds the progress bar, and log records
   * and messages printed while it is shown go above it (writeAbove). Undefined off a terminal.
   */
  terminal(): TerminalLine | undefined {
    if (this.io.stderr.isTTY !== true) return undefined;
    this.terminalLine ??= createTerminalLine(this.io.stderr);
    return this.terminalLine;
  }

  /** Open the warehouse named by DATABASE_URL, warehouse.url or warehouse.path, migrated to the latest schema. */
  async warehouse(options: { migrate?: boolean } = {}): Promise<Warehouse> {
    const config = await this.config();
    const fromEnv = this.env().databaseUrl;
    const url = fromEnv ?? config.warehouse.url;
    if (url) {
      this.warehouseTarget = {
        url,
        setting: fromEnv ? 'DATABASE_URL' : `warehouse.url in ${configFile(config)}`,
      };
    }
    // Loaded on demand: commands that never touch the warehouse do not pay for kysely and pg.
    const { openWarehouse } = await import('../warehouse/warehouse.js');
    const { migrateToLatest } = await import('../warehouse/migrate.js');
    const warehouse = await openWarehouse({ url, path: config.warehouse.path });
    this.closers.push(() => warehouse.close());
    if (options.migrate !== false) {
      await migrateToLatest(warehouse.db);
      // A command that only needs the warehouse goes on without the models (and says why).
      await this.installAnalytics(warehouse).catch(async (error: unknown) => {
        (await this.logger()).warn(
          { error: (error as Error).message },
          'the cybs_analytics views could not be installed; run cybs-etl migrate to see why',
        );
      });
    }
    return warehouse;
  }

  /** Create or update the cybs_analytics views (src/analytics/install.ts) when their definition changed. */
  async installAnalytics(
    warehouse: Warehouse,
  ): Promise<{ installed: boolean; version: string; views: number }> {
    const { installAnalytics } = await import('../analytics/install.js');
    const { warehouseTables } = await import('../analytics/dictionary.js');
    return installAnalytics(warehouse.db, warehouseTables(this.pipelines));
  }

  /** The PostgreSQL warehouse this invocation opened, and the setting that named it. */
  private warehouseTarget?: { url: string; setting: string };

  /**
   * The error a command ends with, with a PostgreSQL warehouse it could not reach (at opening,
   * migrating or any later statement) told as such: its address and the setting to correct. Errors
   * of other parts (the API's own connection failures among them) are left as they are.
   */
  warehouseFailure(error: unknown): unknown {
    if (!this.warehouseTarget) return error;
    if (isCybsError(error) && error.stage !== 'load' && error.stage !== 'state') return error;
    return unreachableWarehouse(error, this.warehouseTarget) ?? error;
  }

  onClose(fn: () => Promise<void>): void {
    this.closers.push(fn);
  }

  async close(): Promise<void> {
    while (this.closers.length > 0) {
      const fn = this.closers.pop()!;
      await fn().catch(() => {});
    }
  }
}
