-- A number for each (organization, source), and that number in the tables' indexes instead of the
-- two texts. A row-keyed table (natural key _organization_id, _source, _source_row) had a unique
-- index whose entries were ≈ 110 bytes for a Purchase and Refund Detail source (the source names
-- its endpoint and two timestamps); on (_source_key, _source_row) they are ≈ 24 bytes, and
-- PostgreSQL's own COPY of the five row-keyed Purchase and Refund Detail sections (1,000,500 rows)
-- took 2.99–3.04 s instead of 3.48–3.59 s. A request-keyed table's index to find a source's rows
-- becomes one on _source_key. The rows keep _organization_id and _source as they were.
--
-- The loader takes a source's number from etl.sources (adding it the first time) before it writes
-- the source's rows, in the window's transaction; the number is only ever that pair's.
create table if not exists etl.sources (
  source_key bigint generated always as identity primary key,
  organization_id text not null,
  source text not null,
  created_at timestamptz not null default now(),
  unique (organization_id, source)
);
comment on table etl.sources is
  'One number per (organization, source) that cybs-etl loaded: the _source_key of those rows in every cybs table.';

-- Existing cybs-etl tables (with the lineage columns _organization_id, _source, _source_row and
-- _loaded_at, and no _source_key yet): number their sources, add and fill _source_key, and rebuild
-- with the same name every plain btree index whose columns start with (_organization_id, _source)
-- on _source_key and the rest of its columns (unique if it was).
do $$
declare
  t record;
  ix record;
begin
  for t in
    select c.oid, n.nspname as schema_name, c.relname as table_name
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'r'
       and n.nspname not in ('pg_catalog', 'information_schema', 'etl')
       and n.nspname not like 'pg\_%'
       and (select count(*) from pg_attribute a
             where a.attrelid = c.oid and not a.attisdropped
               and a.attname in ('_organization_id', '_source', '_source_row', '_loaded_at')) = 4
       and not exists (select 1 from pg_attribute a
                        where a.attrelid = c.oid and a.attname = '_source_key' and not a.attisdropped)
  loop
    execute format(
      'insert into etl.sources (organization_id, source)
       select distinct "_organization_id", "_source" from %I.%I
       on conflict (organization_id, source) do nothing',
      t.schema_name, t.table_name);
    execute format('alter table %I.%I add column "_source_key" bigint', t.schema_name, t.table_name);
    execute format(
      'update %I.%I as x set "_source_key" = s.source_key
         from etl.sources s
        where s.organization_id = x."_organization_id" and s.source = x."_source"',
      t.schema_name, t.table_name);
    execute format('alter table %I.%I alter column "_source_key" set not null', t.schema_name, t.table_name);
    execute format(
      'comment on column %I.%I."_source_key" is %L',
      t.schema_name, t.table_name,
      'etl.sources.source_key of the row''s (_organization_id, _source): the compact form of the two in the table''s indexes.');
    for ix in
      select ic.relname as index_name, i.indisunique as is_unique,
             (select array_agg(a.attname::text order by k.ord)
                from unnest(i.indkey::int2[]) with ordinality as k(attnum, ord)
                join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum) as columns
        from pg_index i
        join pg_class ic on ic.oid = i.indexrelid
        join pg_am am on am.oid = ic.relam
       where i.indrelid = t.oid
         and am.amname = 'btree'
         and i.indpred is null
         and i.indexprs is null
         and i.indnkeyatts = i.indnatts
         and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
    loop
      if ix.columns[1:2] = array['_organization_id', '_source'] then
        execute format('drop index %I.%I', t.schema_name, ix.index_name);
        execute format(
          'create %s index %I on %I.%I (%s)',
          case when ix.is_unique then 'unique' else '' end,
          ix.index_name, t.schema_name, t.table_name,
          (select string_agg(quote_ident(col), ', ' order by ord)
             from unnest(array['_source_key'] || ix.columns[3:]) with ordinality as u(col, ord)));
      end if;
    end loop;
  end loop;
end
$$;
