-- Tables keyed by (_organization_id, _source, _source_row) had, besides that unique index, a second
-- index on (_organization_id, _source) to find a source's rows. The unique index serves the same
-- lookups (its first two columns), and the second one cost every COPY into the table about a
-- quarter of its time. New tables are created without it; this drops it from existing ones.
--
-- Only an index that is exactly a plain btree on (_organization_id, _source) (no expression, no
-- predicate, not unique) of a cybs-etl table (one with the lineage columns _source_row and
-- _loaded_at) that also has a valid unique index starting with those two columns is dropped.
do $$
declare
  redundant record;
begin
  for redundant in
    select n.nspname as schema_name, ic.relname as index_name
      from pg_index i
      join pg_class ic on ic.oid = i.indexrelid
      join pg_class t on t.oid = i.indrelid
      join pg_namespace n on n.oid = t.relnamespace
      join pg_am am on am.oid = ic.relam
     where am.amname = 'btree'
       and not i.indisunique
       and i.indpred is null
       and i.indexprs is null
       and i.indnatts = 2
       and (select array_agg(a.attname::text order by k.ord)
              from unnest(i.indkey::int2[]) with ordinality as k(attnum, ord)
              join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum)
           = array['_organization_id', '_source']
       and exists (select 1 from pg_attribute a
                    where a.attrelid = t.oid and a.attname = '_source_row' and not a.attisdropped)
       and exists (select 1 from pg_attribute a
                    where a.attrelid = t.oid and a.attname = '_loaded_at' and not a.attisdropped)
       and exists (
             select 1
               from pg_index u
              where u.indrelid = t.oid
                and u.indisunique
                and u.indisvalid
                and u.indpred is null
                and u.indexprs is null
                and u.indnkeyatts >= 2
                and (select array_agg(a.attname::text order by k.ord)
                       from unnest((u.indkey::int2[])[0:1]) with ordinality as k(attnum, ord)
                       join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum)
                    = array['_organization_id', '_source'])
  loop
    execute format('drop index %I.%I', redundant.schema_name, redundant.index_name);
  end loop;
end
$$;
