import { definePipeline } from '../../src/pipeline/define-pipeline.js';
import type { PipelineDef } from '../../src/pipeline/define-pipeline.js';

/**
 * Stand-in on-demand pipelines for tests of the window machinery (planning, claiming, the queue):
 * `alpha` (net-fundings, windows in UTC) and `beta` (conversion-details, in America/Chicago), each
 * with one table the tests never load, since their executors are fakes.
 */
export function standInPipelines(): PipelineDef[] {
  const table = {
    schema: 'cybs',
    name: 't',
    description: '',
    columns: [],
    naturalKey: ['_organization_id'],
    keyDescription: '',
  };
  const onDemand = (name: string, endpoint: 'net-fundings' | 'conversion-details', timezone: string) =>
    definePipeline({
      kind: 'on-demand',
      name,
      description: name,
      endpoint,
      tables: { s: table },
      paged: false,
      defaultSchedule: { cron: '0 7 * * *', timezone },
      defaultLookbackDays: 3,
      enabledByDefault: true,
    });
  return [
    onDemand('alpha', 'net-fundings', 'UTC'),
    onDemand('beta', 'conversion-details', 'America/Chicago'),
  ];
}
