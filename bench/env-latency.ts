/**
 * Per-operation latency of an environment (p50/p99 over individually timed operations): reset, a
 * read-tool step, and snapshot + restore. Tail latency matters to a trainer stepping thousands of
 * episodes, so each operation is timed on its own rather than in batches.
 */
import type { Action, Observation, StepResult } from "../src/core/contract.js";
import type { EnvironmentEntry } from "../src/core/registry.js";
import { sampleTaskIds } from "../src/tasks/splits.js";

export interface LatencyStats {
  p50_us: number;
  p99_us: number;
  samples: number;
}

export interface EnvLatency {
  env: string;
  difficulty: string;
  reset: LatencyStats;
  read_step: LatencyStats;
  snapshot_restore: LatencyStats;
}

function stats(samplesNs: number[]): LatencyStats {
  const sorted = [...samplesNs].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number) / 1e3;
  return { p50_us: Math.round(at(0.5) * 10) / 10, p99_us: Math.round(at(0.99) * 10) / 10, samples: sorted.length };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start);
}

/**
 * Measure reset, one read-tool step and snapshot+restore on `samples` tasks of one difficulty. The read
 * step is the reference solver's first read tool call: a real, task-specific read.
 */
export async function envLatency(
  entry: EnvironmentEntry,
  options: { difficulty: string; samples?: number; warmup?: number },
): Promise<EnvLatency> {
  const env = entry.create({ maxSteps: 1000 });
  const family = env.tasks.families[0] as string;
  const samples = options.samples ?? 400;
  const warmup = options.warmup ?? 100;
  const ids = sampleTaskIds({ family, difficulties: [options.difficulty], n: samples + warmup, seed: 3 });
  const reset: number[] = [];
  const step: number[] = [];
  const snapRestore: number[] = [];
  for (const [i, id] of ids.entries()) {
    let observation: Observation | undefined;
    const r = await timed(async () => (observation = await env.reset(id, i)));
    // Follow the reference solver (untimed) up to its first read tool call, and time that step.
    const solver = env.referenceSolver();
    const tools = env.tools();
    const history: Array<{ action: Action; result: StepResult }> = [];
    let s = Number.NaN;
    for (let step = 1; step <= 20 && Number.isNaN(s); step++) {
      const action = await solver.act({ step, observation: observation as Observation, tools, history });
      const isRead = action.type === "tool_call" && tools.find((t) => t.name === action.tool)?.effect === "read";
      let result: StepResult | undefined;
      const t = await timed(async () => (result = await env.step(action)));
      if (isRead) s = t;
      history.push({ action, result: result as StepResult });
      observation = (result as StepResult).observation;
    }
    if (Number.isNaN(s)) throw new Error(`${entry.id}: the reference solver made no read tool call in 20 steps`);
    const c = await timed(async () => env.restore(await env.snapshot()));
    if (i >= warmup) {
      reset.push(r);
      step.push(s);
      snapRestore.push(c);
    }
  }
  await env.close();
  return { env: entry.id, difficulty: options.difficulty, reset: stats(reset), read_step: stats(step), snapshot_restore: stats(snapRestore) };
}
