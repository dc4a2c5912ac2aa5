/**
 * A minimal simulator process for measurements (no CLI, so the CLI's other imports do not count):
 *   node --import tsx test/helpers/run-simulator.ts '<SimulatorOptions as JSON>'
 * Prints the same "export CYBS_BASE_URL=…" line as `cybs-etl simulator`, then runs until SIGTERM.
 * The options may carry `subscriptions` (PUT report-subscriptions bodies) instead of the defaults.
 */
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorOptions } from '../../packages/simulator/src/server/start-simulator.js';

const options = JSON.parse(process.argv[2] ?? '{}') as SimulatorOptions;
const sim = await startSimulator(options);
const c = sim.credentials;
process.stdout.write(
  `export CYBS_BASE_URL=${sim.baseUrl} CYBS_MERCHANT_ID=${c.merchantId} CYBS_KEY_ID=${c.keyId} CYBS_SHARED_SECRET=${c.sharedSecret}\nPress Ctrl+C to stop.\n`,
);
const stop = (): void => {
  void sim.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
