import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout holding this package (packages/simulator/test/helpers is four levels down). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

/** CyberSource's sample reports and answers, kept beside the checkout (../shared/samples/cybersource). */
export const SAMPLES = resolve(repoRoot, '..', 'shared', 'samples', 'cybersource');
