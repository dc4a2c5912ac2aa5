/**
 * Small SQL functions the views share (plain SQL, inlined by the planner where it can): the time
 * checks and ages are computed at, the thresholds of the checks, and the reading of a request's
 * applications into its type and decision.
 */
import { ANALYTICS_SCHEMA as S } from './view-def.js';

export interface FunctionDef {
  name: string;
  sql: string;
  description: string;
}

export const ANALYTICS_FUNCTIONS: readonly FunctionDef[] = [
  {
    name: 'as_of()',
    description:
      'The time ages and checks are computed at: the setting cybs_analytics.as_of when a session sets it (`set cybs_analytics.as_of = ...`, cybs-etl check --now), else now().',
    sql: `create or replace function ${S}.as_of() returns timestamptz language sql stable as $$
  select coalesce(nullif(current_setting('cybs_analytics.as_of', true), '')::timestamptz, now())
$$`,
  },
  {
    name: 'setting(text)',
    description: 'The value of a threshold in cybs_analytics.settings (null when it is not there).',
    sql: `create or replace function ${S}.setting(setting_name text) returns numeric language sql stable as $$
  select value from ${S}.settings where name = setting_name
$$`,
  },
  {
    name: 'applications(text)',
    description:
      'A request’s applications (`ics_auth,ics_bill`, as Application.Name lists them) as a lower-case array, blanks removed; null when there are none.',
    sql: `create or replace function ${S}.applications(list text) returns text[] language sql immutable as $$
  select case when list is null or btrim(list) = '' then null
              else array_remove(string_to_array(regexp_replace(lower(list), '\\s+', '', 'g'), ','), '') end
$$`,
  },
  {
    name: 'request_type(text[], text)',
    description:
      'What a request did, from its applications: authorization_reversal (ics_auth_reversal), refund (ics_credit, ecp_credit), sale (ics_auth with ics_bill, or ecp_debit), capture (ics_bill alone), void (ics_void), authorization (ics_auth alone); without applications, the transaction type as written (credit read as refund, debit as sale).',
    sql: `create or replace function ${S}.request_type(apps text[], transaction_type text) returns text language sql immutable as $$
  select case
    when apps && array['ics_auth_reversal'] then 'authorization_reversal'
    when apps && array['ics_credit', 'ecp_credit'] then 'refund'
    when apps @> array['ics_auth', 'ics_bill'] or apps && array['ecp_debit'] then 'sale'
    when apps && array['ics_bill'] then 'capture'
    when apps && array['ics_void'] then 'void'
    when apps && array['ics_auth'] then 'authorization'
    when lower(btrim(transaction_type)) in ('credit', 'refund') then 'refund'
    when lower(btrim(transaction_type)) in ('debit', 'sale') then 'sale'
    when lower(btrim(transaction_type)) in ('capture', 'authorization', 'void') then lower(btrim(transaction_type))
    else coalesce(apps[1], lower(btrim(transaction_type)))
  end
$$`,
  },
  {
    name: 'decision(text, text)',
    description:
      'ACCEPT, DECLINE or ERROR from the reply code (1, 0, -1), else from the reply flag (SOK accepted, D… declined, E… error).',
    sql: `create or replace function ${S}.decision(rcode text, rflag text) returns text language sql immutable as $$
  select case btrim(rcode)
    when '1' then 'ACCEPT' when '0' then 'DECLINE' when '-1' then 'ERROR'
    else case
      when upper(btrim(rflag)) = 'SOK' then 'ACCEPT'
      when upper(btrim(rflag)) like 'D%' then 'DECLINE'
      when upper(btrim(rflag)) like 'E%' then 'ERROR'
    end
  end
$$`,
  },
];

/** The thresholds of the checks, with their defaults (cybs_analytics.settings; change them there). */
export const DEFAULT_SETTINGS: readonly { name: string; value: number; description: string }[] = [
  {
    name: 'capture_batch_days',
    value: 2,
    description: 'An accepted capture, sale or refund not in a batch this many days after its request fails.',
  },
  {
    name: 'batch_settle_days',
    value: 3,
    description: 'A batched request not settled by the processor this many days after its batch fails.',
  },
  {
    name: 'settle_fund_days',
    value: 5,
    description: 'A settled request not funded this many days after its settlement fails.',
  },
  {
    name: 'fund_deposit_days',
    value: 5,
    description: 'A funding not deposited this many days after its funding date fails.',
  },
  {
    name: 'authorization_open_days',
    value: 7,
    description: 'An accepted authorization neither captured nor reversed this many days after it fails.',
  },
  {
    name: 'chargeback_due_days',
    value: 3,
    description: 'An open chargeback whose respond-by date is at most this many days away fails.',
  },
  {
    name: 'stale_pipeline_hours',
    value: 48,
    description:
      'A pipeline that ran in the last seven days but whose newest loaded window ended more than this many hours ago fails.',
  },
];
