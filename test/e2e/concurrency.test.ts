/**
 * Concurrency: two `schedule` daemons (catch-up pass at start) and one `backfill --force` over
 * overlapping windows, each its own process, against one database. An audit trigger on etl.windows
 * records every state change with the state of the claiming job attempts at that moment, so that
 * the test can show that no window was ever taken from a job attempt that was still running, and
 * that a window was completed only by its job's running attempt. No deadlock or serialization
 * failure may fail a window (they are retried); the end state equals the truth.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { E2E_NOW, createE2eWorld, e2eConfigYaml } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';
import { spawnCli } from '../helpers/cli-process.js';
import type { CliProcess } from '../helpers/cli-process.js';
import { compareWithGroundTruth, duplicateRows } from '../helpers/ground-truth.js';
import { findSecrets, secretsOf } from '../helpers/secrets.js';

const AUDIT = `
create table public.window_audit (
  id bigserial primary key,
  pipeline text, organization_id text, window_key text,
  old_status text, new_status text, old_owner text, new_owner text,
  old_attempt_active boolean, at timestamptz not null default clock_timestamp()
);
-- Whether the job attempt a claim names ("<job id>/<retry>@<host>:<pid>") is running now.
-- (plpgsql: its body is checked when it runs, once the queue's schema exists)
create function public.attempt_active(claim text) returns boolean language plpgsql as $$
begin
  return exists (select 1 from pgboss.job j
                  where j.name = 'cybs_etl_windows' and j.state = 'active'
                    and j.id = split_part(claim, '/', 1)::uuid
                    and j.retry_count = split_part(split_part(claim, '/', 2), '@', 1)::int);
end $$;
create function public.audit_window() returns trigger language plpgsql as $$
begin
  insert into public.window_audit (pipeline, organization_id, window_key, old_status, new_status, old_owner, new_owner, old_attempt_active)
  values (new.pipeline, new.organization_id, new.window_key, old.status, new.status, old.claim, new.claim,
          case when old.claim is null then null else public.attempt_active(old.claim) end);
  return new;
end $$;
create trigger window_audit before update on etl.windows for each row execute function public.audit_window();
`;

async function waitFor(check: () => boolean, what: string, p: CliProcess[], ms = 240_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until)
      throw new Error(
        `timed out waiting for ${what}: ${p.map((x) => x.stderr().slice(-2000)).join('\n---\n')}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('concurrency: two schedulers and a backfill on one database', () => {
  let world: E2eWorld;
  let config: string;

  beforeAll(async () => {
    world = await createE2eWorld({ prefix: 'conc', simulator: { organizations: 2, transactionsPerDay: 30 } });
    config = join(world.dir, 'conc.yaml');
    await writeFile(
      config,
      e2eConfigYaml(
        world.sim.organizations,
        '  startDate: "2024-03-19"\n  globalConcurrency: 6\n  concurrency: 3\n',
      ).replace('level: warn', 'level: info'),
    );
    // Migrate first, then audit every change of etl.windows.
    const m = await world.run(['migrate']);
    expect(m.code, m.stderr).toBe(0);
    await world.db.query(AUDIT);
  });
  afterAll(async () => {
    await world?.close();
  });

  it(
    'loads every window by one job attempt at a time, retries conflicts, and ends equal to the truth',
    { timeout: 300_000 },
    async () => {
      const args = ['--config', config, '--now', E2E_NOW];
      const schedulers = [0, 1].map(() => spawnCli([...args, 'schedule', '--port', '0'], world.env));
      const backfill = spawnCli(
        [...args, 'backfill', '--from', '2024-03-17', '--to', '2024-03-23', '--force'],
        world.env,
      );
      const all = [...schedulers, backfill];
      try {
        const pipelinesOf = (p: CliProcess) =>
          Number(/(\d+) pipelines scheduled/.exec(p.stdout())?.[1] ?? NaN);
        const passes = (p: CliProcess) => (p.stderr().match(/"msg":"pass finished"/g) ?? []).length;
        await waitFor(() => schedulers.every((s) => passes(s) >= pipelinesOf(s)), 'the catch-up passes', all);
        const b = await backfill.exited;
        expect(b.code, backfill.stdout() + backfill.stderr()).toBe(0);
        for (const s of schedulers) s.child.kill('SIGTERM');
        const exits = await Promise.all(schedulers.map((s) => s.exited));
        for (const [i, e] of exits.entries())
          expect(e.code, schedulers[i]!.stdout() + schedulers[i]!.stderr()).toBe(0);
      } finally {
        for (const p of all) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      }

      const logs = all.map((p) => p.stdout() + p.stderr()).join('\n');
      // No window failed; conflicts (if any) were retried.
      expect(logs).not.toMatch(/"msg":"window failed"/);
      expect(backfill.stdout()).toMatch(/windows failed\s+0\b/);
      const retried = (logs.match(/window load conflict; retrying/g) ?? []).length;

      // Exactly one holder at a time: a claim never took a window from a job attempt still running,
      // and a window became loaded/no_data only from its job's running attempt.
      const stolen = await world.db.query(
        `select * from public.window_audit
        where new_status = 'running' and old_status = 'running' and old_owner is distinct from new_owner
          and old_attempt_active`,
      );
      expect(stolen.rows).toEqual([]);
      const completedByOther = await world.db.query(
        `select * from public.window_audit
        where new_status in ('loaded', 'no_data') and old_status = 'running'
          and (new_owner is not null or old_attempt_active is distinct from true)`,
      );
      expect(completedByOther.rows).toEqual([]);
      const completions = await world.db.query(
        `select count(*)::int as n from public.window_audit
          where new_status in ('loaded', 'no_data') and old_status = 'running'`,
      );
      expect(completions.rows[0].n).toBeGreaterThan(0);
      const claims = await world.db.query(
        `select count(*)::int as claims, count(distinct new_owner)::int as owners, count(distinct (pipeline, organization_id, window_key))::int as windows
         from public.window_audit where new_status = 'running' and old_status is distinct from 'running'`,
      );
      const contested = await world.db.query(
        `select count(*)::int as n from (select 1 from public.window_audit where new_status = 'running'
        group by pipeline, organization_id, window_key having count(distinct new_owner) > 1) x`,
      );

      const states = await world.db.query(
        `select status, count(*)::int as n from etl.windows group by status`,
      );
      for (const row of states.rows) expect(['loaded', 'no_data']).toContain(row.status);
      const result = await compareWithGroundTruth(world.db, {
        truth: (o, s, e) => world.sim.groundTruth(o, s, e),
        organizations: world.sim.organizations,
        startDate: '2024-03-17',
        endDate: '2024-03-24',
      });
      expect(result.mismatches).toEqual([]);
      expect(await duplicateRows(world.db)).toBe(0);
      expect(findSecrets(logs, secretsOf(world))).toEqual([]);
      console.log(
        `concurrency: 3 processes (2 schedule + 1 backfill --force); ${claims.rows[0].claims} claims of ` +
          `${claims.rows[0].windows} windows by ${claims.rows[0].owners} job attempts; ${contested.rows[0].n} windows ` +
          `claimed by more than one process over time (never at once); ${retried} conflict retries; ` +
          `${result.rowsExpected} rows equal to the truth`,
      );
    },
  );
});
