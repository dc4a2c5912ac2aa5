/**
 * Render the data dictionary (cybs_analytics.data_dictionary, read from the warehouse) as pages:
 * an index with the join map from capture to deposit and example queries for the questions the
 * models answer, one page per table or view, and the list of undocumented columns; in Markdown or
 * HTML. And a dbt `sources.yml` of the same tables (pure: the caller reads and writes).
 */
import { stringify } from 'yaml';
import { CHECKS } from './checks.js';

export interface DictionaryRow {
  table_schema: string;
  table_name: string;
  table_kind: string;
  table_description: string | null;
  ordinal: number;
  column_name: string;
  data_type: string;
  description: string | null;
  documented: boolean;
  catalog_id: string | null;
  soapi_name: string | null;
  scmp_name: string | null;
  source_reports: string | null;
  natural_key: string | null;
  in_natural_key: boolean;
  lineage: string | null;
}

export interface DocTable {
  schema: string;
  name: string;
  kind: string;
  description: string;
  sourceReports: string | null;
  naturalKey: string[];
  columns: DictionaryRow[];
}

export function groupTables(rows: readonly DictionaryRow[]): DocTable[] {
  const byTable = new Map<string, DocTable>();
  for (const r of rows) {
    const key = `${r.table_schema}.${r.table_name}`;
    let t = byTable.get(key);
    if (!t) {
      t = {
        schema: r.table_schema,
        name: r.table_name,
        kind: r.table_kind,
        description: r.table_description ?? '',
        sourceReports: r.source_reports,
        naturalKey: r.natural_key ? r.natural_key.split(', ').filter(Boolean) : [],
        columns: [],
      };
      byTable.set(key, t);
    }
    t.columns.push(r);
  }
  for (const t of byTable.values()) t.columns.sort((a, b) => a.ordinal - b.ordinal);
  return [...byTable.values()].sort(
    (a, b) =>
      a.schema.localeCompare(b.schema) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name),
  );
}

/** The way from a capture to the bank, and the keys that join each step. */
export const JOIN_MAP = `authorization (cybs.transaction_request, type authorization)
   │  capture.predecessor_request_id = authorization.request_id
   │  (or cybs.purchase_refund_authorizations.authorization_request_id)
   ▼
capture / sale / refund (cybs.transaction_request)           ─┐
   │  (organization, request_id)                               │ cybs_analytics.payment_lifecycle:
   ▼                                                           │ one row per capture or credit,
batch (cybs.payment_batch_detail: batch_id, batch_date)        │ every stage's id, time, amount
   │  (organization, request_id)                               │
   ▼                                                           │
processor settlement (cybs.processor_settlement_detail)        │
   │  (organization, request_id); the fee: cybs.fee_detail     │
   ▼                                                           │
funding (cybs.funding_detail: funding_identification_number)   │
   │  (organization, funding_identification_number)            │
   ▼                                                           │
deposit (cybs.deposit_detail: deposit_identifier)             ─┘

chargebacks (cybs.chargeback_and_retrieval_detail) join the capture by (organization, request_id)
and their funding line by (organization, chargeback_case_number).
cybs_analytics.ledger holds every movement as a signed entry with its request, funding and
deposit ids; cybs_analytics.deposit_reconciliation sums it per funding and deposit.`;

/** Example queries for the questions the models answer. */
export const EXAMPLE_QUERIES: readonly { question: string; sql: string }[] = [
  {
    question: 'Did every capture settle? (captures stuck before the bank, oldest first)',
    sql: `select organization_id, request_id, type, amount, currency, stage, age_days
  from cybs_analytics.payment_lifecycle
 where stage <> 'deposited' and age_days > 5
 order by age_days desc;`,
  },
  {
    question: 'Which deposit paid for which sales?',
    sql: `select deposit_id, funding_id, entry_type, request_id, amount, currency
  from cybs_analytics.ledger
 where deposit_id = 'D…' and account = 'processor'
 order by entry_type, request_id;`,
  },
  {
    question: 'Gross − fees − chargebacks = deposited, and where is the difference?',
    sql: `select level, funding_id, deposit_id, currency, gross_amount, fee_amount, chargeback_amount,
       adjustment_amount, expected_net, funded_amount, deposited_amount, difference
  from cybs_analytics.deposit_reconciliation
 where difference <> 0;`,
  },
  {
    question: 'What is in transit at month end?',
    sql: `select organization_id, currency, settled_not_funded, funded_not_deposited
  from cybs_analytics.in_transit
 where as_of_date = date '2026-11-30';`,
  },
  {
    question: 'Effective fee rate by card type and interchange level',
    sql: `select month, card_type, interchange_level, volume, total_fees, effective_rate
  from cybs_analytics.fee_rates_monthly
 order by month, effective_rate desc;`,
  },
  {
    question: 'Which chargebacks are due?',
    sql: `select organization_id, case_number, request_id, chargeback_amount, currency, respond_by_date, days_to_respond
  from cybs_analytics.chargebacks
 where status = 'open'
 order by respond_by_date;`,
  },
  {
    question: 'Portfolio: the merchants by volume, with their ratios',
    sql: `select month, organization_id, currency, sales_amount, approval_rate, refund_ratio, chargeback_ratio,
       effective_fee_rate, volume_rank
  from cybs_analytics.merchant_monthly
 order by month, currency, volume_rank;`,
  },
  {
    question: 'What fails reconciliation, per check and day?',
    sql: `select check_name, organization_id, check_date, failures
  from cybs_analytics.rc_summary
 order by check_date desc, check_name;`,
  },
];

export interface DocFile {
  path: string;
  content: string;
}

const KIND_TITLES: Record<string, string> = {
  report: 'Report tables (cybs)',
  child: 'Child tables of XML reports (cybs)',
  'on-demand': 'On-demand tables (cybs)',
  table: 'Other tables',
  staging: 'Staging views (cybs_analytics)',
  model: 'Models (cybs_analytics)',
  check: 'Reconciliation checks (cybs_analytics)',
  dictionary: 'Data dictionary (cybs_analytics)',
  view: 'Other views',
};

const fileName = (t: DocTable, ext: string): string => `${t.schema}.${t.name}.${ext}`;

function mdCell(text: string | null | undefined): string {
  return (text ?? '').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

export function tablePageMarkdown(t: DocTable): string {
  const lines = [
    `# ${t.schema}.${t.name}`,
    '',
    t.description,
    '',
    ...(t.sourceReports ? [`Source: ${t.sourceReports}.`, ''] : []),
    ...(t.naturalKey.length > 0
      ? [`Natural key: ${t.naturalKey.map((k) => `\`${k}\``).join(', ')}.`, '']
      : []),
    '| column | type | description | catalog id | Simple Order | SCMP | lineage |',
    '|---|---|---|---|---|---|---|',
    ...t.columns.map(
      (c) =>
        `| \`${c.column_name}\`${c.in_natural_key ? ' (key)' : ''} | ${mdCell(c.data_type)} | ${c.documented ? mdCell(c.description) : '*undocumented*'} | ${mdCell(c.catalog_id)} | ${mdCell(c.soapi_name)} | ${mdCell(c.scmp_name)} | ${mdCell(c.lineage)} |`,
    ),
    '',
  ];
  return lines.join('\n');
}

export function indexMarkdown(tables: readonly DocTable[], ext: string): string {
  const undocumented = tables.flatMap((t) => t.columns.filter((c) => !c.documented));
  const total = tables.reduce((n, t) => n + t.columns.length, 0);
  const lines = [
    '# cybs-etl warehouse: data dictionary',
    '',
    `${tables.length} tables and views, ${total} columns (${undocumented.length} undocumented: see [undocumented columns](undocumented.${ext})).`,
    '',
    '## From capture to deposit: the join map',
    '',
    '```',
    JOIN_MAP,
    '```',
    '',
    '## Questions and the queries that answer them',
    '',
    ...EXAMPLE_QUERIES.flatMap((q) => [`**${q.question}**`, '', '```sql', q.sql, '```', '']),
    '## Reconciliation checks',
    '',
    'Each `cybs_analytics.rc_<check>` view returns the failing rows; `cybs-etl check` prints them and exits 1 when any fails.',
    '',
    ...CHECKS.map((c) => `- \`rc_${c.check}\`: ${c.title}.`),
    '',
  ];
  const kinds = [...new Set(tables.map((t) => t.kind))];
  for (const kind of kinds) {
    lines.push(`## ${KIND_TITLES[kind] ?? kind}`, '');
    for (const t of tables.filter((x) => x.kind === kind))
      lines.push(`- [${t.schema}.${t.name}](${fileName(t, ext)}): ${mdCell(firstSentence(t.description))}`);
    lines.push('');
  }
  return lines.join('\n');
}

/** The description up to its first full stop (a colon would leave "Staging view of x:" alone). */
function firstSentence(text: string): string {
  const m = /^(.*?\.)(\s|$)/.exec(text);
  return m ? m[1]! : text;
}

export function undocumentedMarkdown(tables: readonly DocTable[]): string {
  const lines = [
    '# Undocumented columns',
    '',
    'Columns no catalog entry, comment or documentation describes.',
    '',
  ];
  for (const t of tables) {
    const cols = t.columns.filter((c) => !c.documented);
    if (cols.length === 0) continue;
    lines.push(`- ${t.schema}.${t.name}: ${cols.map((c) => `\`${c.column_name}\``).join(', ')}`);
  }
  return `${lines.join('\n')}\n`;
}

const escapeHtml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A Markdown page of the shapes written above (headings, paragraphs, tables, lists, code) as HTML. */
export function markdownToHtml(title: string, md: string): string {
  const out: string[] = [];
  const lines = md.split('\n');
  const inline = (s: string): string =>
    escapeHtml(s)
      .replace(/\*\*(.+?)\*\*/g, '<strong>$1</strong>')
      .replace(/\*(.+?)\*/g, '<em>$1</em>')
      .replace(/`([^`]+)`/g, '<code>$1</code>')
      .replace(/\[([^\]]+)\]\(([^)]+)\.md\)/g, '<a href="$2.html">$1</a>');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('```')) {
      const code: string[] = [];
      for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) code.push(lines[i]!);
      out.push(`<pre><code>${escapeHtml(code.join('\n'))}</code></pre>`);
    } else if (/^#{1,3} /.test(line)) {
      const level = /^#+/.exec(line)![0].length;
      out.push(`<h${level}>${inline(line.slice(level + 1))}</h${level}>`);
    } else if (line.startsWith('|')) {
      const rows: string[][] = [];
      for (; i < lines.length && lines[i]!.startsWith('|'); i++) {
        if (/^\|[-| ]+\|$/.test(lines[i]!)) continue;
        rows.push(
          lines[i]!.slice(1, -1)
            .split(/(?<!\\)\|/)
            .map((c) => c.trim().replace(/\\\|/g, '|')),
        );
      }
      i--;
      const [head, ...body] = rows;
      out.push(
        `<table><thead><tr>${(head ?? []).map((c) => `<th>${inline(c)}</th>`).join('')}</tr></thead><tbody>${body
          .map((r) => `<tr>${r.map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`)
          .join('')}</tbody></table>`,
      );
    } else if (line.startsWith('- ')) {
      const items: string[] = [];
      for (; i < lines.length && lines[i]!.startsWith('- '); i++)
        items.push(`<li>${inline(lines[i]!.slice(2))}</li>`);
      i--;
      out.push(`<ul>${items.join('')}</ul>`);
    } else if (line.trim() !== '') {
      out.push(`<p>${inline(line)}</p>`);
    }
  }
  return `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>\n<style>body{font-family:sans-serif;max-width:80em;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .4em;vertical-align:top}code{background:#f4f4f4}</style></head>\n<body>\n${out.join('\n')}\n</body></html>\n`;
}

export function renderDocs(rows: readonly DictionaryRow[], format: 'md' | 'html'): DocFile[] {
  const tables = groupTables(rows);
  const pages: { name: string; title: string; md: string }[] = [
    { name: 'index', title: 'cybs-etl data dictionary', md: indexMarkdown(tables, format) },
    { name: 'undocumented', title: 'Undocumented columns', md: undocumentedMarkdown(tables) },
    ...tables.map((t) => ({
      name: `${t.schema}.${t.name}`,
      title: `${t.schema}.${t.name}`,
      md: tablePageMarkdown(t),
    })),
  ];
  return pages.map((p) =>
    format === 'md'
      ? { path: `${p.name}.md`, content: p.md }
      : { path: `${p.name}.html`, content: markdownToHtml(p.title, p.md) },
  );
}

export interface Freshness {
  warnAfterHours: number;
  errorAfterHours: number;
}

/**
 * dbt `sources.yml`: source `cybs` (its tables, with the freshness of the pipeline that loads them,
 * by `_loaded_at`) and source `cybs_analytics` (the views); columns with their descriptions, and the
 * natural key of each as a `unique` test (an expression joining its columns when it has several).
 */
export function dbtSourcesYaml(
  rows: readonly DictionaryRow[],
  freshness: ReadonlyMap<string, Freshness>,
): string {
  const tables = groupTables(rows);
  const source = (schema: string) => ({
    name: schema,
    schema,
    description:
      schema === 'cybs'
        ? 'CyberSource reporting data loaded by cybs-etl: one table per report definition and on-demand section.'
        : 'cybs-etl models, reconciliation checks and data dictionary on the cybs tables.',
    tables: tables
      .filter((t) => t.schema === schema)
      .map((t) => {
        const f = freshness.get(t.name);
        const key = t.naturalKey;
        return {
          name: t.name,
          description: t.description,
          ...(schema === 'cybs' && f
            ? {
                loaded_at_field: '_loaded_at',
                freshness: {
                  warn_after: { count: f.warnAfterHours, period: 'hour' },
                  error_after: { count: f.errorAfterHours, period: 'hour' },
                },
              }
            : {}),
          ...(key.length > 1
            ? {
                data_tests: [
                  {
                    unique: {
                      column_name: `(${key.map((k) => `coalesce(${k}::text, '')`).join(" || '|' || ")})`,
                    },
                  },
                ],
              }
            : {}),
          columns: t.columns.map((c) => ({
            name: c.column_name,
            data_type: c.data_type,
            ...(c.description ? { description: c.description } : {}),
            ...(key.length === 1 && key[0] === c.column_name ? { data_tests: ['unique', 'not_null'] } : {}),
          })),
        };
      }),
  });
  return `# Written by cybs-etl docs --dbt: the warehouse's tables as dbt sources.\n${stringify(
    { version: 2, sources: [source('cybs'), source('cybs_analytics')] },
    { lineWidth: 0 },
  )}`;
}
