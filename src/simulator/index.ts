/**
 * The simulator's public entry: the one module of src/simulator the product imports (its
 * `simulator` command, and the start without credentials). Everything else here is its inside.
 */
export { SIMULATED_ORGANIZATION_PREFIX, startSimulator } from './start-simulator.js';
export type { SimulatorCredentialOptions, SimulatorHandle, SimulatorOptions } from './start-simulator.js';
export { FaultSpecError, parseFaultSpec } from './faults.js';
export type { FaultRule } from './faults.js';
export { readSubscriptionsFile } from './seed-subscriptions.js';
export { ANOMALY_NAMES, parseAnomalyList } from './anomalies.js';
