import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parse } from 'csv-parse/sync';
import { openCsvReport, plainCsvFields, serialiseCsvRow } from '../../../../src/parse/csv/csv-report.js';
import { CybsError } from '../../../../src/errors.js';
import { chunked, collect, rowsOf } from '../helpers.js';

const META = 'org1,MyReport,TransactionRequest,1.0,2024-01-01T00:00:00Z to 2024-01-02T00:00:00Z';

async function open(text: string, chunk = 7) {
  return openCsvReport(chunked(text, chunk), { fileName: 'test.csv' });
}

async function thrown(text: string): Promise<CybsError> {
  try {
    const source = await open(text);
    await collect(source);
  } catch (error) {
    expect(error).toBeInstanceOf(CybsError);
    return error as CybsError;
  }
  throw new Error('expected an error');
}

describe('CSV reports: layout', () => {
  it('accepts BOM, CRLF, padded metadata, quoted values and a trailing empty line', async () => {
    const text =
      '\uFEFF' +
      `${META},,,\r\n` +
      'request_id,amount,BillTo.FirstName,Custom Note\r\n' +
      '"0001234567890123456789",23.00,"Smith, ""Jo""","line1\r\nline2"\r\n' +
      '0009,-3.7500,Ünïcode ✓,\r\n' +
      '\r\n';
    const source = await open(text, 3);
    expect(source.metadata.organizationId).toBe('org1');
    expect(source.metadata.reportType).toBe('TransactionRequest');
    expect(source.metadata.reportDefinition).toBe('TransactionRequestClass');
    expect(source.columns.map((c) => c.column)).toEqual([
      'request_id',
      'amount',
      'bill_to_first_name',
      'custom_note',
    ]);
    expect(source.unknownColumns.map((c) => [c.sourceName, c.column, c.pgType])).toEqual([
      ['Custom Note', 'custom_note', 'text'],
    ]);
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    expect(rowsOf(source, records)).toEqual([
      {
        request_id: '0001234567890123456789',
        amount: '23.00',
        bill_to_first_name: 'Smith, "Jo"',
        custom_note: 'line1\r\nline2',
      },
      { request_id: '0009', amount: '-3.7500', bill_to_first_name: 'Ünïcode ✓', custom_note: null },
    ]);
    expect(records.map((r) => r.recordNumber)).toEqual([3, 5]);
    expect(source.summary()).toMatchObject({ records: 2, rejects: 0, dataRows: 2, blankLines: 1 });
  });

  it('takes a first line without a date range as the header', async () => {
    const source = await open('request_id,amount\n1,2.5\n');
    expect(source.metadata.reportName).toBeUndefined();
    const { records } = await collect(source);
    expect(rowsOf(source, records)).toEqual([{ request_id: '1', amount: '2.5' }]);
  });

  it('treats metadata + header without rows as a valid empty report', async () => {
    const source = await open(`${META}\nrequest_id,amount\n`);
    const { records, rejects, batches } = await collect(source);
    expect(records).toEqual([]);
    expect(rejects).toEqual([]);
    expect(batches).toEqual([]);
  });

  it('keeps a header naming one field twice as a second, unknown column', async () => {
    const source = await open(`${META}\nrequest_id,Request.RequestID\n1,2\n`);
    expect(source.columns.map((c) => c.column)).toEqual(['request_id', 'request_id_2']);
    expect(source.unknownColumns).toHaveLength(1);
  });

  it('cuts bounded batches and counts every row', async () => {
    const rows = Array.from({ length: 2_345 }, (_, i) => `${i},${i}.00`).join('\n');
    const source = await openCsvReport(chunked(`${META}\nrequest_id,amount\n${rows}\n`, 1000), {
      fileName: 'big.csv',
      batchSize: 1000,
    });
    const { records, batches } = await collect(source);
    expect(batches.map((b) => b.records.length)).toEqual([1000, 1000, 345]);
    expect(records[2344]!.values).toEqual(['2344', '2344.00']);
    expect(records[2344]!.recordNumber).toBe(2347);
  });
});

describe('CSV reports: bad input', () => {
  it('rejects a row with a missing value, with its line and raw text', async () => {
    const source = await open(`${META}\nrequest_id,amount,currency\n1,2.00,USD\n2,3.00\n3,4.00,EUR\n`);
    const { records, rejects } = await collect(source);
    expect(records.map((r) => r.recordNumber)).toEqual([3, 5]);
    expect(rejects).toEqual([
      {
        recordNumber: 4,
        raw: '2,3.00',
        code: 'PARSE_CSV_COLUMN_COUNT',
        message: 'test.csv line 4: 2 values where the header has 3; row kept as a reject.',
      },
    ]);
    expect(records.length + rejects.length).toBe(3);
  });

  it('accepts extra empty padding values but rejects extra data', async () => {
    const source = await open(`${META}\nrequest_id,amount\n1,2.00,,\n2,3.00,x\n`);
    const { records, rejects } = await collect(source);
    expect(records.map((r) => r.values)).toEqual([['1', '2.00']]);
    expect(rejects.map((r) => [r.recordNumber, r.code])).toEqual([[4, 'PARSE_CSV_COLUMN_COUNT']]);
  });

  it('rejects an unparseable amount naming file, line, field and value', async () => {
    const source = await open(
      `${META}\nrequest_id,amount,batch_date\n1,"1,234.00",2023-10-11\n2,1e5,x\n3,5,2023-13-01\n`,
    );
    const { records, rejects } = await collect(source);
    expect(records).toEqual([]);
    expect(rejects.map((r) => [r.recordNumber, r.code, r.field, r.value, r.raw])).toEqual([
      [3, 'MAP_INVALID_VALUE', 'amount', '1,234.00', '1,"1,234.00",2023-10-11'],
      [4, 'MAP_INVALID_VALUE', 'amount', '1e5', '2,1e5,x'],
      [5, 'MAP_INVALID_VALUE', 'batch_date', '2023-13-01', '3,5,2023-13-01'],
    ]);
    expect(rejects[0]!.message).toMatch(
      /^test\.csv line 3: field amount \(column amount, numeric\) has "1,234\.00"; expected a decimal/,
    );
    expect(rejects[2]!.message).toMatch(/expected an ISO 8601 timestamp/);
  });

  it('throws PARSE_CSV_INVALID for a broken quote, naming file and line', async () => {
    const error = await thrown(`${META}\nrequest_id,amount\n1,2.00\n2,"3.00\n3,4.00\n`);
    expect(error.code).toBe('PARSE_CSV_INVALID');
    expect(error.stage).toBe('parse');
    expect(error.context).toMatchObject({ file: 'test.csv', csvCode: 'CSV_QUOTE_NOT_CLOSED' });
    expect(error.message).toMatch(
      /^test\.csv: invalid CSV at line 4: a quote opened in this line is never closed/,
    );
    expect(error.context.line).toBe(4);
  });

  it('ends each row at its own line break: CRLF, LF or CR, mixed in one file', async () => {
    const rows = Array.from({ length: 12 }, (_, i) => `r${i},${i}.00`);
    const breaks = ['\r\n', '\n', '\r\n', '\r\n', '\n', '\r'];
    const text =
      `${META}\r\nrequest_id,amount\r\n` + rows.map((r, i) => r + breaks[i % breaks.length]!).join('');
    for (const chunk of [1, 2, 5, 4096]) {
      const source = await openCsvReport(chunked(text, chunk), { fileName: 'test.csv' });
      const { records, rejects } = await collect(source);
      expect(rejects, `chunk ${chunk}`).toEqual([]);
      expect(rowsOf(source, records).map((r) => r['request_id'])).toEqual(rows.map((r) => r.split(',')[0]));
      expect(records.map((r) => r.recordNumber)).toEqual(rows.map((_, i) => i + 3));
    }
  });

  it('names the line where a stray quote opens when the reader stumbles lines later', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => `r${i},${i}.00`);
    rows[5] = 'r5,"1.00'; // line 8: opens a quote that the quote of line 20 "closes"
    rows[17] = 'r17,"2.00",x';
    const error = await thrown(`${META}\nrequest_id,amount\n${rows.join('\n')}\n`);
    expect(error.code).toBe('PARSE_CSV_INVALID');
    expect(error.context).toMatchObject({ line: 20, recordLine: 8, csvCode: 'CSV_INVALID_CLOSING_QUOTE' });
    expect(error.message).toMatch(
      /at line 20: .*\(in the record that starts at line 8, where a quote may open/,
    );
  });

  it('names the line where an unclosed quote opens, not the end of the file', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => (i + 3 === 503 ? `r${i},"1.00` : `r${i},1.00`));
    // A quoted value with a line break before it moves the lines down by one.
    rows[10] = `r10,"1.00\n"`;
    const text = `${META}\nrequest_id,amount\n${rows.join('\n')}\n`;
    for (const chunk of [7, 4096, 1 << 20]) {
      const source = await openCsvReport(chunked(text, chunk), { fileName: 'test.csv' });
      const error = await collect(source).catch((e: unknown) => e as CybsError);
      expect(error).toMatchObject({ code: 'PARSE_CSV_INVALID', context: { line: 504 } });
      expect((error as CybsError).message).toMatch(/^test\.csv: invalid CSV at line 504: a quote opened/);
    }
  });

  it('throws PARSE_CSV_INVALID for a stray quote inside a value', async () => {
    const error = await thrown(`${META}\nrequest_id,amount\n1,2"x"\n`);
    expect(error.code).toBe('PARSE_CSV_INVALID');
    expect(error.context.line).toBe(3);
  });

  it('throws PARSE_EMPTY for an empty file and for a metadata line alone', async () => {
    const empty = await thrown('');
    expect(empty.code).toBe('PARSE_EMPTY');
    expect(empty.context).toEqual({ file: 'test.csv', line: 1 });
    const only = await thrown(`${META},,,\n`);
    expect(only.code).toBe('PARSE_EMPTY');
    expect(only.message).toMatch(/only its metadata line/);
    const legacyOnly = await thrown('Payment Batch Detail Report,1.0,2003-05-01 to 2003-05-01,,,\r\n');
    expect(legacyOnly.code).toBe('PARSE_EMPTY');
  });

  it('passes input stream errors through', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield Buffer.from(`${META}\nrequest_id\n1\n`);
      throw new Error('socket hang up');
    }
    await expect(
      (async () => collect(await openCsvReport(failing(), { fileName: 'x.csv' })))(),
    ).rejects.toThrow('socket hang up');
  });
});

describe('CSV reports: truncation', () => {
  const full = `${META}\nrequest_id,amount,currency_code\n1,10.25,USD\n2,20.50,EUR\n3,30.75,USD\n`;
  const strict = (text: string, chunk = 5) =>
    openCsvReport(chunked(text, chunk), { fileName: 'cut.csv', requireFinalLineBreak: true });

  it('fails a file cut inside its last row (fewer values) as PARSE_CSV_TRUNCATED, never a reject', async () => {
    const cut = full.slice(0, full.indexOf('3,30') + 3); // "…\n3,30"
    const error = await thrown(cut);
    expect(error.code).toBe('PARSE_CSV_TRUNCATED');
    expect(error.message).toMatch(/ends inside line 5 .*cut off in transfer/);
  });

  it('with requireFinalLineBreak (downloads), fails any unterminated last line: its last value may be cut', async () => {
    const cut = full.slice(0, full.length - 2); // "3,30.75,US": every column present, the value cut
    await expect((async () => collect(await strict(cut)))()).rejects.toMatchObject({
      code: 'PARSE_CSV_TRUNCATED',
    });
    const headerOnly = `${META}\nrequest_id,amount,curr`;
    await expect((async () => collect(await strict(headerOnly)))()).rejects.toMatchObject({
      code: 'PARSE_CSV_TRUNCATED',
    });
    // Every cut point inside the body fails or (only at a line boundary) reads a shorter valid file.
    const headerEnd = full.indexOf('\n', META.length + 1) + 1;
    for (let at = headerEnd; at < full.length; at++) {
      const text = full.slice(0, at);
      const atBoundary = text.endsWith('\n');
      const outcome = await (async () => collect(await strict(text, 3)))().then(
        (r) => `rows:${r.records.length}:${r.rejects.length}`,
        (e: CybsError) => e.code,
      );
      if (atBoundary) expect(outcome, JSON.stringify(text)).toMatch(/^rows:\d:0$/);
      else expect(outcome, JSON.stringify(text)).toBe('PARSE_CSV_TRUNCATED');
    }
  });

  it('accepts a complete file with or without the final line break when not strict (local files)', async () => {
    const { records } = await collect(await open(full.slice(0, -1)));
    expect(records).toHaveLength(3);
    const strictFull = await collect(await strict(full));
    expect(strictFull.records).toHaveLength(3);
  });
});

describe('CSV reports: round trip (property)', () => {
  it('parses any RFC 4180 table of strings back to the same values', async () => {
    const cell = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 12 }),
      fc.constantFrom('', ',', '"', '""', '\r\n', '\n', ' x ', 'a,b', 'é"\r\nü', '\uFEFF'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 1, max: 5 })
          .chain((width) =>
            fc.tuple(
              fc.constant(width),
              fc.array(fc.array(cell, { minLength: width, maxLength: width }), { maxLength: 15 }),
              fc.boolean(),
              fc.integer({ min: 1, max: 50 }),
            ),
          ),
        async ([width, rows, crlf, chunk]) => {
          const eol = crlf ? '\r\n' : '\n';
          const header = Array.from({ length: width }, (_, i) => `Note Column ${i}`);
          // A one-column row holding '' must be quoted, or it would be a blank line.
          const line = (cells: string[]): string =>
            cells.length === 1 && cells[0] === '' ? '""' : serialiseCsvRow(cells);
          const text =
            [META + ','.repeat(Math.max(0, width - 5)), line(header), ...rows.map(line)].join(eol) + eol;
          const source = await openCsvReport(chunked(text, chunk), { fileName: 'prop.csv' });
          expect(source.unknownColumns).toHaveLength(width);
          const { records, rejects } = await collect(source);
          expect(rejects).toEqual([]);
          expect(records.map((r) => r.values)).toEqual(rows.map((r) => r.map((v) => (v === '' ? null : v))));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('CSV reports: a plain head line', () => {
  it('reads a line without quotes, carriage returns or line feeds as csv-parse does, and declines any other', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', ' ', ',', '"', '\r', '\n', '\uFEFF', 'é', '\t') }),
        (line) => {
          const plain = plainCsvFields(line);
          if (line === '' || /["\r\n]/.test(line)) expect(plain).toBeUndefined();
          else expect(plain).toEqual((parse(line, { relax_column_count: true }) as string[][])[0]);
        },
      ),
      { numRuns: 500 },
    );
    expect(plainCsvFields(META)).toEqual(META.split(','));
  });
});
