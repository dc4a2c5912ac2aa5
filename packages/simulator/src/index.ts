/**
 * The simulator's public entry, `@cybs-etl/simulator`: the one module of the package the product
 * imports (its `simulator` command, and the start without credentials). Everything else here is its
 * inside: routes/ (the HTTP endpoints), data/ (the made-up merchants, their money and the report
 * store), render/ (report layouts, header names, CSV/XML/JSON writers) and server/ (start, auth,
 * faults, errors).
 */
export { SIMULATED_ORGANIZATION_PREFIX, startSimulator } from './server/start-simulator.js';
export type {
  SimulatorCredentialOptions,
  SimulatorHandle,
  SimulatorOptions,
} from './server/start-simulator.js';
export { FaultSpecError, parseFaultSpec } from './server/faults.js';
export type { FaultRule } from './server/faults.js';
export { readSubscriptionsFile } from './server/seed-subscriptions.js';
export { ANOMALY_NAMES, parseAnomalyList } from './data/anomalies.js';
import { SimulatorError } from './server/errors.js';

export { SimulatorError };

/** Whether an error is the simulator's own (its code and exit code say what went wrong). */
export const isSimulatorError = (value: unknown): value is SimulatorError => value instanceof SimulatorError;
