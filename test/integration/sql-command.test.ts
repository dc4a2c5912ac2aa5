import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';

/** Texts that try to leave the read-only transaction, run several statements or write. */
const HOSTILE = [
  'end; drop table etl.schema_changes',
  'rollback; drop table etl.schema_changes',
  'commit; drop table etl.schema_changes',
  'abort; drop table etl.schema_changes',
  'set transaction read write; drop table etl.schema_changes',
  'select 1; drop table etl.schema_changes',
  'drop table etl.schema_changes',
  'set transaction read write',
  'set session characteristics as transaction read write',
  'set default_transaction_read_only = off',
  'commit',
  'with gone as (delete from etl.schema_changes returning 1) select count(*) from gone',
  'select * into public.copied from etl.schema_changes',
  'explain analyze delete from etl.schema_changes',
  '/* a comment */ end; drop table etl.schema_changes',
] as const;

describe.each(['postgres', 'embedded'] as const)('cybs-etl sql is read-only (%s)', (kind) => {
  let dir: string;
  let database: TestDatabase | undefined;
  let config: string;
  const env = () => (database ? { DATABASE_URL: database.url } : {});

  beforeAll(async () => {
    dir = await warehouseTempDir('cybs-sql-');
    if (kind === 'postgres') database = await createTestDatabase('sql');
    config = join(dir, 'config.yaml');
    await writeFile(config, `log:\n  level: silent\nwarehouse:\n  path: ${join(dir, 'wh')}\n`);
    expect((await cli(['--config', config, 'migrate'], { env: env() })).code).toBe(0);
  }, 60_000);
  afterAll(async () => {
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const count = async () => {
    const r = await cli(
      ['--config', config, 'sql', '--json', 'select count(*)::int as n from etl.schema_changes'],
      {
        env: env(),
      },
    );
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { n: number }[])[0]!.n;
  };

  it('changes nothing, not even the schema: it does not migrate', async () => {
    const fresh = join(dir, 'fresh.yaml');
    await writeFile(fresh, `log:\n  level: silent\nwarehouse:\n  path: ${join(dir, 'fresh-wh')}\n`);
    const freshDb = kind === 'postgres' ? await createTestDatabase('sql_fresh') : undefined;
    try {
      const r = await cli(['--config', fresh, 'sql', '--json', "select to_regclass('etl.runs')::text as t"], {
        env: freshDb ? { DATABASE_URL: freshDb.url } : {},
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([{ t: null }]);
    } finally {
      await freshDb?.drop();
    }
  });

  it('runs one read-only query', async () => {
    const r = await cli(
      ['--config', config, 'sql', '--json', '/* a /* nested */ comment */\n(select 2 as n)'],
      {
        env: env(),
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([{ n: 2 }]);
  });

  it('refuses, with exit 2 and one sentence, every text that writes, ends its transaction or runs two statements', async () => {
    const before = await count();
    for (const text of HOSTILE) {
      const r = await cli(['--config', config, 'sql', text], { env: env() });
      expect(r.code, `${text}: ${r.stderr}`).toBe(2);
      expect(r.stderr.trim().split('\n'), text).toHaveLength(1);
      expect(r.stdout, text).toBe('');
    }
    expect(await count()).toBe(before);
    const copied = await cli(['--config', config, 'sql', "select to_regclass('public.copied') as t"], {
      env: env(),
    });
    expect(copied.stdout).not.toContain('copied\n');
  });

  if (kind === 'postgres') {
    it('runs in a session whose default is read-only', async () => {
      const r = await cli(['--config', config, 'sql', '--json', 'show default_transaction_read_only'], {
        env: env(),
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([{ default_transaction_read_only: 'on' }]);
    });
  }
});
