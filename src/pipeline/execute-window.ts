/**
 * The window executor: a window of a report pipeline or of an on-demand endpoint, run by the file of
 * its kind in pipeline/window/, with its metrics.
 */
import type { WindowExecutor } from './run-pipelines.js';
import type { ExecutorDeps } from './window/commit.js';
import { executeReportWindow } from './window/report.js';
import { executeOnDemandWindow } from './window/on-demand.js';

/** extract → parse → load of one window; rows and window state commit in one transaction. */
export function createWindowExecutor(deps: ExecutorDeps): WindowExecutor {
  return async (task) => {
    const started = performance.now();
    let outcome = 'failed';
    try {
      const result =
        task.pipeline.def.kind === 'report'
          ? await executeReportWindow(deps, task, task.pipeline.def)
          : await executeOnDemandWindow(deps, task, task.pipeline.def);
      outcome = result.kind;
      if (result.kind === 'loaded') {
        deps.metrics?.rowsLoaded.inc({ pipeline: task.pipeline.name }, result.rowsLoaded);
        deps.metrics?.rowsRejected.inc({ pipeline: task.pipeline.name }, result.rowsRejected);
      }
      return result;
    } finally {
      deps.metrics?.windows.inc({ pipeline: task.pipeline.name, outcome });
      deps.metrics?.windowDuration.observe(
        { pipeline: task.pipeline.name, outcome },
        (performance.now() - started) / 1000,
      );
    }
  };
}
