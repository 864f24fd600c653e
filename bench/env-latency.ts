/**
 * Per-operation latency of an environment (p50/p99 over individually timed operations): reset, a
 * read-tool step, and snapshot + restore. Tail latency matters to a trainer stepping thousands of
 * episodes, so each operation is timed on its own rather than in batches.
 */
import type { Action, Observation, StepResult } from "../src/core/contract.js";
import { toDecision } from "../src/core/policy.js";
import type { EnvironmentEntry } from "../src/core/registry.js";
import { sampleTaskIds } from "../src/tasks/splits.js";
import { p50p99, timeOnce } from "./harness.js";

export interface LatencyStats {
  p50_us: number;
  p99_us: number;
  samples: number;
}

export interface EnvLatency {
  env: string;
  difficulty: string;
  reset: LatencyStats;
  /** Read tool calls of reference episodes: mostly each tool's first call on a fresh database. */
  read_step: LatencyStats;
  /** The same read repeated within the episode: prepared statements, warm caches. */
  read_step_repeated: LatencyStats;
  /** The step that ends the episode, which also runs the verifier. */
  final_step: LatencyStats;
  /** Snapshot + restore of the finished episode's full state. */
  snapshot_restore: LatencyStats;
}

function stats(samplesNs: number[]): LatencyStats {
  const { p50, p99, samples } = p50p99(samplesNs, 1e3, 1);
  return { p50_us: p50, p99_us: p99, samples };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  return (await timeOnce(fn))[0];
}

/**
 * Measure reset, one read-tool step and snapshot+restore on `samples` tasks of one difficulty. The read
 * steps are every read tool call the reference solver makes: real, task-specific reads.
 */
export async function envLatency(
  entry: EnvironmentEntry,
  options: { difficulty: string; samples?: number; warmup?: number },
): Promise<EnvLatency> {
  const env = entry.create();
  const family = env.tasks.families[0] as string;
  const samples = options.samples ?? 400;
  const warmup = options.warmup ?? 100;
  const ids = sampleTaskIds({ family, difficulties: [options.difficulty], n: samples + warmup, seed: 3 });
  const reset: number[] = [];
  const step: number[] = [];
  const snapRestore: number[] = [];
  const final: number[] = [];
  const again: number[] = [];
  for (const [i, id] of ids.entries()) {
    let observation: Observation | undefined;
    const r = await timed(async () => (observation = await env.reset(id, i)));
    // Follow the reference solver through the episode, timing every read tool call it makes.
    const solver = env.referenceSolver();
    const tools = env.tools();
    const history: Array<{ action: Action; result: StepResult }> = [];
    const reads: number[] = [];
    const repeated: number[] = [];
    const finals: number[] = [];
    for (let step = 1; step <= env.maxSteps; step++) {
      const action = toDecision(await solver.act({ step, observation: observation as Observation, tools, history })).action as Action;
      const isRead = action.type === "tool_call" && tools.find((t) => t.name === action.tool)?.effect === "read";
      let result: StepResult | undefined;
      const t = await timed(async () => (result = await env.step(action)));
      const ended = Boolean(result?.terminated || result?.truncated);
      // Repeat the episode's first read a few times: its steady-state cost once statements are prepared.
      if (isRead && !ended && reads.length === 0) {
        for (let k = 0; k < 3; k++) repeated.push(await timed(() => env.step(action)));
      }
      // The last step also scores the episode (verifier + reference replay): timed on its own.
      if (ended) finals.push(t);
      else if (isRead) reads.push(t);
      history.push({ action, result: result as StepResult });
      observation = (result as StepResult).observation;
      if (ended) break;
    }
    if (reads.length === 0) throw new Error(`${entry.id}: the reference solver made no read tool call`);
    const c = await timed(async () => env.restore(await env.snapshot()));
    if (i >= warmup) {
      reset.push(r);
      step.push(...reads);
      again.push(...repeated);
      final.push(...finals);
      snapRestore.push(c);
    }
  }
  await env.close();
  return {
    env: entry.id,
    difficulty: options.difficulty,
    reset: stats(reset),
    read_step: stats(step),
    read_step_repeated: stats(again),
    final_step: stats(final),
    snapshot_restore: stats(snapRestore),
  };
}
