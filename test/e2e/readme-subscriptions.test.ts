/**
 * The README's "Subscriptions as code" example (issue 30, finding 3): applied with --prune, it once
 * deleted the three subscriptions the other enabled-by-default pipelines read, and the next run
 * failed with PIPELINE_UNAVAILABLE. Now apply --prune refuses to delete them, naming the
 * pipelines, and the example applied leaves every default pipeline loading.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { createE2eWorld } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';

/** The first ```yaml block of the README's "Subscriptions as code" section. */
async function readmeExample(): Promise<string> {
  const readme = await readFile(join(projectRoot(), 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Subscriptions as code'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README.md: no yaml block under "## Subscriptions as code"');
  return block[1]!;
}

// A run of every default pipeline over the simulator: generous on a busy machine.
describe("the README's subscriptions example", { timeout: 240_000 }, () => {
  let world: E2eWorld;
  beforeAll(async () => {
    world = await createE2eWorld({ prefix: 'readmesubs', configExtra: await readmeExample() });
  }, 240_000);
  afterAll(async () => {
    await world?.close();
  });

  it('applied with --prune, deletes nothing an enabled pipeline reads; applied, leaves the default pipelines loading', async () => {
    const names = () =>
      world.sim.store
        .activeSubscriptions(world.sim.organizations[0]!)
        .map((s) => s.reportName)
        .sort();
    const before = names();
    const pruned = await world.run(['subscriptions', 'apply', '--prune', '--yes']);
    expect(pruned.code).toBe(1);
    for (const pipeline of ['payment_batch_detail', 'funding_detail', 'conversion_detail'])
      expect(pruned.stderr).toContain(`(read by the enabled pipeline ${pipeline})`);
    expect(names()).toEqual(before);

    const applied = await world.run(['subscriptions', 'apply', '--yes']);
    expect(applied.code, applied.stderr).toBe(0);
    const run = await world.run(['run']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).not.toContain('PIPELINE_UNAVAILABLE');
    expect(run.stdout).toMatch(/windows failed\s+0/);
  });
});
