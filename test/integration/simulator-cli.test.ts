import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { signedFetch } from '../../packages/simulator/test/helpers/cybs-sign.js';
import { spawnSimulator } from '../helpers/simulator-process.js';
import type { SimulatorProcess } from '../helpers/simulator-process.js';

describe('cybs-etl simulator (command line)', () => {
  let sim: SimulatorProcess;
  const secret = Buffer.from('a shared secret from the environment').toString('base64');

  beforeAll(async () => {
    sim = await spawnSimulator(
      ['--seed', '3', '--organizations', '2', '--transactions-per-day', '50', '--faults', 'search:429x1'],
      {
        CYBS_MERCHANT_ID: 'env_merchant',
        CYBS_KEY_ID: 'env-key',
        CYBS_SHARED_SECRET: secret,
      },
    );
  });
  afterAll(async () => {
    expect(await sim.stop()).toBe(0);
    expect(sim.stdout()).toContain('simulator stopped');
  });

  it('prints its base URL and the credentials from the environment, and accepts them', async () => {
    expect(sim.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sim.env).toMatchObject({
      CYBS_MERCHANT_ID: 'env_merchant',
      CYBS_KEY_ID: 'env-key',
      CYBS_SHARED_SECRET: secret,
    });
    expect(sim.stdout()).toContain('CYBS_PORTFOLIO_ID=');
    const c = { merchantId: 'env_merchant', keyId: 'env-key', sharedSecret: secret };
    const r = await signedFetch(sim.baseUrl, c, '/reporting/v3/report-subscriptions');
    expect(r.status).toBe(200);
    const search =
      '/reporting/v3/reports?startTime=2020-01-01T00:00:00Z&endTime=2020-01-02T00:00:00Z&timeQueryType=executedTime';
    expect((await signedFetch(sim.baseUrl, c, search)).status).toBe(429);
    expect((await signedFetch(sim.baseUrl, c, search)).status).toBe(404);
  });

  it('documents the fault syntax in --help and refuses a bad spec', async () => {
    const help = await cli(['simulator', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('endpoint:kind[=param][@probability][xCount]');
    const bad = await cli(['simulator', '--faults', 'download:explode']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Unknown fault kind');
  });

  it('--subscriptions FILE: a bad entry is a usage error naming the file and the entry', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cybs-sim-subs-'));
    try {
      const file = join(dir, 'subscriptions.yaml');
      await writeFile(
        file,
        '- reportName: Daily_0900\n  reportDefinitionName: TransactionRequestClass\n  reportFields: [Request.RequestID]\n' +
          '  reportMimeType: text/csv\n  reportFrequency: DAILY\n  timezone: Asia/Kolkata\n  startTime: "9:00"\n',
      );
      const bad = await cli(['simulator', '--subscriptions', file]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(
        `${file}: subscription 1 ("Daily_0900"): the service would refuse it (startTime`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
