import { CREDENTIAL_VARIABLES } from '../config/env.js';
import type { ApiTarget, Credentials } from '../config/env.js';
import type { Config } from '../config/schema.js';
import { CybsError } from '../errors.js';
import type { SimulatorHandle, SimulatorOptions } from '@cybs-etl/simulator';
import type { CliContext } from './context.js';

/** `--simulator` of the commands that call the service (see chooseService). */
export const SIMULATOR_OPTION = [
  '--simulator',
  'use the built-in simulator instead of CyberSource (made-up merchants; default only without credentials and with the embedded warehouse)',
  false,
] as const;

/**
 * Whom a command that calls the service talks to: the CyberSource credentials in the environment,
 * or the built-in simulator, only on purpose: asked for (`--simulator`), or without credentials
 * when the warehouse is the embedded default (the README's first command). Without credentials
 * and with a PostgreSQL warehouse it is a usage error, raised before anything starts: a real
 * warehouse never receives simulated rows because a variable was missing.
 */
export function chooseService(
  ctx: CliContext,
  config: Config,
  options: { simulator: boolean },
): 'credentials' | 'simulator' {
  const env = ctx.env();
  if (options.simulator) return 'simulator';
  if (env.credentials) return 'credentials';
  const warehouse = env.databaseUrl
    ? 'DATABASE_URL'
    : config.warehouse.url
      ? `warehouse.url in ${ctx.globals().config}`
      : undefined;
  if (warehouse === undefined) return 'simulator';
  throw new CybsError(
    'CLI_NO_CREDENTIALS',
    `no CyberSource credentials in the environment and the warehouse is PostgreSQL (${warehouse}): set ${CREDENTIAL_VARIABLES}, or pass --simulator to load the built-in simulator's made-up merchants into it.`,
    { stage: 'cli', exitCode: 2 },
  );
}

/**
 * Start the simulator (or read its input) with the simulator's own errors told as the product's:
 * the same code, sentence and exit code (2 for bad options, a bad subscriptions file or fault spec).
 */
export async function simulatorStep<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    const { isSimulatorError } = await import('@cybs-etl/simulator');
    if (!isSimulatorError(error)) throw error;
    throw new CybsError(error.code, error.message, {
      stage: 'simulator',
      exitCode: error.exitCode,
      cause: error,
    });
  }
}

/** What the API client of a command is built from. */
export interface ServiceAccess {
  credentials: Credentials;
  target: ApiTarget;
  /** The organizations to load when config names none: the credential's own, or the simulator's. */
  defaultOrganizations: string[];
  /** A partner (portfolio) key, which names the organization it acts for in every request. */
  partner: boolean;
  simulator?: SimulatorHandle;
}

/**
 * The service chooseService picked. The simulator is started in-process (loaded only then: a real
 * deployment never loads it) and used through its partner key for its merchants; `announce` gets
 * the sentence that says so.
 */
export async function connectService(
  ctx: CliContext,
  choice: 'credentials' | 'simulator',
  options: { simulator?: SimulatorOptions; announce: (line: string) => void },
): Promise<ServiceAccess> {
  const env = ctx.env();
  if (choice === 'credentials' && env.credentials) {
    const credentials = env.credentials;
    return {
      credentials,
      target: env.target,
      defaultOrganizations: [credentials.merchantId],
      partner: credentials.portfolioId !== undefined,
    };
  }
  const { startSimulator } = await import('@cybs-etl/simulator');
  const simulator = await simulatorStep(() => startSimulator({ organizations: 2, ...options.simulator }));
  ctx.onClose(() => simulator.close());
  const key = simulator.portfolioCredentials;
  options.announce(
    `${env.credentials ? '--simulator: the CyberSource credentials in the environment are not used; using' : `No CyberSource credentials in the environment (${CREDENTIAL_VARIABLES}): using`} ` +
      `the built-in simulator at ${simulator.baseUrl} with its organizations ${simulator.organizations.join(', ')}. ` +
      `Data below is simulated, not yours.`,
  );
  return {
    credentials: {
      auth: 'jwt',
      merchantId: key.merchantId,
      portfolioId: key.portfolioId,
      keyId: key.keyId,
      sharedSecret: key.sharedSecret,
    },
    target: { baseUrl: simulator.baseUrl },
    defaultOrganizations: simulator.organizations,
    partner: true,
    simulator,
  };
}
