/** A simulator report file spec for writer tests: organization m1, report R1, 2024-03-05 UTC, the definition's default fields. */
import { reportDefinition } from '../../src/render/report-layouts.js';
import type { ReportFileSpec } from '../../src/render/report-writers.js';

export function reportSpec(definition: string, over: Partial<ReportFileSpec> = {}): ReportFileSpec {
  const def = reportDefinition(definition);
  if (def === undefined) throw new Error(`The simulator has no report definition ${definition}`);
  return {
    organizationId: 'm1',
    reportName: 'R1',
    definition: def,
    fields: def.fields,
    mimeType: 'text/csv',
    signedAmounts: false,
    start: Date.parse('2024-03-05T00:00:00Z'),
    end: Date.parse('2024-03-06T00:00:00Z'),
    ...over,
  };
}
