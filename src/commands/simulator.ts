import type { Command } from 'commander';
import { Option } from 'commander';
import { CybsError } from '../errors.js';
import {
  ANOMALY_NAMES,
  FaultSpecError,
  parseAnomalyList,
  parseFaultSpec,
  readSubscriptionsFile,
  startSimulator,
} from '@cybs-etl/simulator';
import type { FaultRule, SimulatorCredentialOptions } from '@cybs-etl/simulator';
import type { CliContext } from './context.js';
import { simulatorStep } from './service-access.js';

const FAULTS_HELP = `
Faults (--faults): comma-separated rules  endpoint:kind[=param][@probability][xCount]
  endpoint  * | report-definitions | subscriptions | search | create-report | report | download |
            purchase-refund-details | net-fundings | conversion-details | notification-of-changes |
            payment-batch-summaries
  kind      401 | 429[=retryAfterSeconds] | 500 | 502 | 503 | slow-headers[=ms] | slow-body[=ms] |
            reset[=bytes] | truncate[=bytes] | stuck[=reportName] | malformed-row[=row[/amount]]
  @p        probability per matching request (seeded, repeatable); xN: at most N times
  e.g. --faults 'download:reset@0.3,search:429x2,purchase-refund-details:500@0.1,download:truncate'
  Invented: the reporting API documents no 429 and no rate limit; the 429 (a TOO_MANY_REQUESTS
  error bean with Retry-After) exists only to exercise a client's retries.
  A 401 (refused credentials, or the 401 fault) answers as the gateway does:
  {"response":{"rmsg":"Authentication Failed"}}.

Credentials: CYBS_MERCHANT_ID, CYBS_KEY_ID, CYBS_SHARED_SECRET (base64) and CYBS_PORTFOLIO_ID
(meta key) from the environment when set; otherwise deterministic ones made up from the seed.
Control: GET /__simulator/ground-truth?organizationId=&startDate=&endDate=, GET /__simulator/state,
POST /__simulator/clock {"advanceMs":n}, POST /__simulator/faults {"spec":"…"}.
`;

function integer(name: string, min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) {
      throw new CybsError('CLI_USAGE', `${name} must be an integer ≥ ${min} (got "${value}").`, {
        stage: 'cli',
        exitCode: 2,
      });
    }
    return n;
  };
}

export function registerSimulatorCommand(program: Command, ctx: CliContext): void {
  program
    .command('simulator')
    .description('start the local CyberSource Reporting API simulator (deterministic data, faults on demand)')
    .addOption(
      new Option('--port <n>', 'port (0 = a random free port)').default(0).argParser(integer('--port', 0)),
    )
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .addOption(new Option('--seed <n>', 'dataset seed').default(1).argParser(integer('--seed', 0)))
    .addOption(
      new Option('--organizations <n>', 'number of simulated organizations')
        .default(3)
        .argParser(integer('--organizations', 1)),
    )
    .addOption(
      new Option('--transactions-per-day <n>', 'transactions per organization and day')
        .default(200)
        .argParser(integer('--transactions-per-day', 0)),
    )
    .option('--start-date <YYYY-MM-DD>', 'first day with data (default: 60 days ago)')
    .option('--quiet-day-rate <p>', 'share of days without transactions (default 0.05)')
    .option('--faults <spec>', 'faults to inject (see below)')
    .option(
      '--anomalies <names>',
      `money-chain anomalies to seed on the first organization, comma-separated, or all: ${ANOMALY_NAMES.join(', ')}`,
    )
    .option(
      '--subscriptions <file>',
      'YAML or JSON list of subscriptions (PUT report-subscriptions bodies, optional organizationId) that exist from the start date instead of the default ones',
    )
    .addHelpText('after', FAULTS_HELP)
    .action(
      async (opts: {
        port: number;
        host: string;
        seed: number;
        organizations: number;
        transactionsPerDay: number;
        startDate?: string;
        quietDayRate?: string;
        faults?: string;
        anomalies?: string;
        subscriptions?: string;
      }) => {
        const anomalies = opts.anomalies === undefined ? [] : parseAnomalyList(opts.anomalies);
        if (typeof anomalies === 'string')
          throw new CybsError('CLI_USAGE', `--anomalies: ${anomalies}.`, { stage: 'cli', exitCode: 2 });
        let faults: FaultRule[] = [];
        try {
          faults = opts.faults ? parseFaultSpec(opts.faults) : [];
        } catch (error) {
          if (error instanceof FaultSpecError) {
            throw new CybsError('CLI_USAGE', error.message, { stage: 'cli', exitCode: 2 });
          }
          throw error;
        }
        const env = ctx.io.env;
        const pick = (name: string): string | undefined => env[name]?.trim() || undefined;
        const credentials: SimulatorCredentialOptions = {};
        const merchantId = pick('CYBS_MERCHANT_ID');
        const keyId = pick('CYBS_KEY_ID');
        const sharedSecret = pick('CYBS_SHARED_SECRET');
        const portfolioId = pick('CYBS_PORTFOLIO_ID');
        if (merchantId) credentials.merchantId = merchantId;
        if (keyId) credentials.keyId = keyId;
        if (sharedSecret) credentials.sharedSecret = sharedSecret;
        if (portfolioId) credentials.portfolioId = portfolioId;
        const quiet = opts.quietDayRate !== undefined ? Number(opts.quietDayRate) : undefined;
        if (quiet !== undefined && !(quiet >= 0 && quiet <= 1)) {
          throw new CybsError('CLI_USAGE', '--quiet-day-rate must be between 0 and 1.', {
            stage: 'cli',
            exitCode: 2,
          });
        }
        const file = opts.subscriptions;
        const subscriptions = file ? await simulatorStep(() => readSubscriptionsFile(file)) : undefined;
        const logger = await ctx.logger();
        const sim = await simulatorStep(() =>
          startSimulator({
            port: opts.port,
            host: opts.host,
            seed: opts.seed,
            organizations: opts.organizations,
            transactionsPerDay: opts.transactionsPerDay,
            ...(opts.startDate ? { startDate: opts.startDate } : {}),
            ...(quiet !== undefined ? { quietDayRate: quiet } : {}),
            faults,
            ...(anomalies.length > 0 ? { anomalies } : {}),
            credentials,
            ...(subscriptions ? { subscriptions, subscriptionsSource: opts.subscriptions } : {}),
            logger,
          }),
        );
        const c = sim.credentials;
        const p = sim.portfolioCredentials;
        const out = ctx.io.stdout;
        out.write(`CyberSource Reporting API simulator listening on ${sim.baseUrl}\n`);
        out.write(
          `organizations: ${sim.organizations.join(', ')}; data from ${sim.startDate}; seed ${sim.seed}\n`,
        );
        for (const a of sim.anomalies)
          out.write(
            `anomaly ${a.name}: ${a.organizationId} ${a.day} request ${a.requestId}${a.fundingId ? ` funding ${a.fundingId}` : ''}${a.caseNumber ? ` case ${a.caseNumber}` : ''}\n`,
          );
        out.write(`# credentials it accepts (merchant key of ${c.merchantId}):\n`);
        out.write(
          `export CYBS_BASE_URL=${sim.baseUrl} CYBS_MERCHANT_ID=${c.merchantId} CYBS_KEY_ID=${c.keyId} ` +
            `CYBS_SHARED_SECRET=${c.sharedSecret}${c.portfolioId ? ` CYBS_PORTFOLIO_ID=${c.portfolioId}` : ''}\n`,
        );
        if (!c.portfolioId) {
          out.write(`# portfolio (meta key) credentials for all organizations:\n`);
          out.write(
            `export CYBS_BASE_URL=${sim.baseUrl} CYBS_MERCHANT_ID=${p.merchantId} CYBS_PORTFOLIO_ID=${p.portfolioId} ` +
              `CYBS_KEY_ID=${p.keyId} CYBS_SHARED_SECRET=${p.sharedSecret}\n`,
          );
        }
        if (faults.length > 0) out.write(`faults: ${opts.faults}\n`);
        out.write('Press Ctrl+C to stop.\n');
        await new Promise<void>((resolve) => {
          const stop = (): void => {
            process.off('SIGINT', stop);
            process.off('SIGTERM', stop);
            resolve();
          };
          process.on('SIGINT', stop);
          process.on('SIGTERM', stop);
        });
        await sim.close();
        out.write('simulator stopped\n');
      },
    );
}
