import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { text as readAll } from 'node:stream/consumers';
import type { Command } from 'commander';
import { createReportingClient, HTTP_METHODS, isJsonContentType } from '../api/index.js';
import type { HttpMethod } from '../api/index.js';
import { CREDENTIAL_VARIABLES } from '../config/env.js';
import { CybsError } from '../errors.js';
import type { CliContext } from './context.js';

interface ApiCommandOptions {
  data?: string;
  organizationId?: string;
  accept?: string;
}

function usage(message: string): CybsError {
  return new CybsError('CLI_USAGE', message, { stage: 'cli', exitCode: 2 });
}

/** The request body of --data: JSON text, or @file holding JSON. Parsed so that what is signed is canonical. */
async function readBody(data: string, cwd: string): Promise<unknown> {
  let text = data;
  if (data.startsWith('@')) {
    const file = resolve(cwd, data.slice(1));
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw usage(
        `--data ${data}: the file cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
      );
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw usage(`--data is not valid JSON (${(error as Error).message}).`);
  }
}

export function registerApiCommand(program: Command, ctx: CliContext): void {
  program
    .command('api')
    .description('send a signed request to any CyberSource API path and print the answer')
    .argument('<method>', `HTTP method: ${HTTP_METHODS.join(', ')}`)
    .argument(
      '<path>',
      'path with an optional query, e.g. /reporting/v3/report-definitions or /tms/v2/customers/ID',
    )
    .option('-d, --data <json>', 'request body: JSON text, or @file to read it from a file')
    .option('--organization-id <id>', 'act for this merchant (partners only)')
    .option('--accept <type>', 'Accept header, e.g. text/csv or application/xml (JSON by default)')
    .addHelpText(
      'after',
      '\nCredentials come from the environment (CYBS_MERCHANT_ID, CYBS_KEY_ID, CYBS_SHARED_SECRET, CYBS_AUTH, …);\n' +
        'the target from CYBS_BASE_URL, CYBS_ENVIRONMENT or api.environment in the config.\n' +
        'Example: cybs-etl api GET "/reporting/v3/reports?startTime=2024-01-01T00:00:00Z&endTime=2024-01-02T00:00:00Z&timeQueryType=executedTime"',
    )
    .action(async (methodArg: string, path: string, options: ApiCommandOptions) => {
      const method = methodArg.toUpperCase();
      if (!(HTTP_METHODS as readonly string[]).includes(method)) {
        throw usage(`method must be one of ${HTTP_METHODS.join(', ')} (got "${methodArg}").`);
      }
      if (!path.startsWith('/')) throw usage(`path must start with "/" (got "${path}").`);
      const body = options.data === undefined ? undefined : await readBody(options.data, ctx.io.cwd);
      const env = ctx.env();
      if (!env.credentials) {
        throw new CybsError(
          'API_NO_CREDENTIALS',
          `no CyberSource credentials in the environment: set ${CREDENTIAL_VARIABLES}.`,
          { stage: 'cli', exitCode: 2 },
        );
      }
      const config = await ctx.config();
      const logger = await ctx.logger();
      const client = createReportingClient(
        { credentials: env.credentials, target: env.target, api: config.api },
        { logger: logger.child({ command: 'api' }) },
      );
      ctx.onClose(() => client.close());

      const response = await client.requestStream({
        method: method as HttpMethod,
        path,
        ...(body === undefined ? {} : { body }),
        ...(options.accept === undefined ? {} : { accept: options.accept }),
        ...(options.organizationId === undefined ? {} : { organizationId: options.organizationId }),
      });
      if (isJsonContentType(response.contentType)) {
        const text = await readAll(response.body);
        let pretty = text;
        try {
          pretty = JSON.stringify(JSON.parse(text) as unknown, null, 2);
        } catch {
          // not JSON after all: print as received
        }
        if (pretty !== '') ctx.io.stdout.write(pretty.endsWith('\n') ? pretty : `${pretty}\n`);
        return;
      }
      let wrote = false;
      for await (const chunk of response.body) {
        const text = Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk);
        if (text !== '') wrote = true;
        ctx.io.stdout.write(text);
      }
      if (!wrote) ctx.io.stderr.write(`cybs-etl: HTTP ${response.status} (no body)\n`);
    });
}
