/**
 * Readiness of the `cybs-etl schedule` daemon (GET /readyz), as a pure judgement over what the
 * daemon saw and what etl.runs holds. /healthz only says the process serves; /readyz says it does
 * its job: the warehouse answers, no pipeline's last pass failed, and none is stale.
 *
 * Stale: a fire of the pipeline was due more than `graceMs` ago and its newest pass (from any
 * instance) started more than `graceMs` before that fire, or there is none: the fire was not run
 * (its pass still running past the next fire, or the fire taken by nobody). The grace absorbs the
 * start-up of a pass and clock differences between instances and the database.
 */
import type { SchedulePass } from '../state/runs.js';

/** How long a due fire may go without a pass that started around it. */
export const READY_GRACE_MS = 10 * 60_000;

export interface ReadinessInput {
  now: Date;
  /** The pipelines this daemon schedules. */
  pipelines: readonly string[];
  /** Their newest passes (etl.runs); undefined when the warehouse could not be read. */
  lastPasses: ReadonlyMap<string, SchedulePass> | undefined;
  /** Why the warehouse could not be read, when it could not. */
  warehouseError?: string;
  /** The newest fire of each pipeline this daemon saw come due (or the catch-up at its start). */
  lastDue: ReadonlyMap<string, Date>;
  graceMs: number;
}

export interface PipelineReadiness {
  pipeline: string;
  lastPass: SchedulePass | null;
  lastDue: Date | null;
  problem?: string;
}

export interface Readiness {
  ready: boolean;
  warehouse: string;
  pipelines: PipelineReadiness[];
}

export function judgeReadiness(input: ReadinessInput): Readiness {
  if (input.lastPasses === undefined) {
    return {
      ready: false,
      warehouse: input.warehouseError ?? 'cannot be read',
      pipelines: input.pipelines.map((pipeline) => ({
        pipeline,
        lastPass: null,
        lastDue: input.lastDue.get(pipeline) ?? null,
      })),
    };
  }
  const passes = input.lastPasses;
  const pipelines = input.pipelines.map((pipeline): PipelineReadiness => {
    const lastPass = passes.get(pipeline) ?? null;
    const due = input.lastDue.get(pipeline) ?? null;
    const out: PipelineReadiness = { pipeline, lastPass, lastDue: due };
    if (lastPass?.status === 'failed') {
      out.problem = `its last pass (run ${lastPass.runId}) failed: ${lastPass.error ?? 'see cybs-etl status'}`;
    } else if (
      due !== null &&
      input.now.getTime() - due.getTime() > input.graceMs &&
      (lastPass === null || lastPass.startedAt.getTime() < due.getTime() - input.graceMs)
    ) {
      out.problem =
        lastPass?.status === 'running'
          ? `stale: its pass (run ${lastPass.runId}, started ${lastPass.startedAt.toISOString()}) is still running past the fire due at ${due.toISOString()}`
          : `stale: no pass has started for the fire due at ${due.toISOString()}`;
    }
    return out;
  });
  return { ready: pipelines.every((p) => p.problem === undefined), warehouse: 'ok', pipelines };
}
