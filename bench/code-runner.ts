/**
 * Latency of the code sandbox as an agent feels it: `run_tests` on a typical code-repair task (medium:
 * three modules, ~30 visible tests), timed one call at a time (p50/p99), through the whole step (tool
 * middleware, QuickJS run in the worker, rendering). For comparison, the bare sandbox run of the same
 * files, and runs that hit the instruction budget: a function looping forever, and a test looping over a
 * huge sparse array inside a built-in (metered, so it ends at the same budget, not at the wall-clock
 * backstop). Part of `npm run bench` (bench/run.ts).
 */
import type { Action, StepResult } from "../src/core/contract.js";
import { CodeRepair } from "../src/envs/code-repair/env.js";
import { sharedCodeRunner } from "../src/sandboxes/code-runner.js";
import { sampleTaskIds } from "../src/tasks/splits.js";
import { p50p99, timeOnce } from "./harness.js";

export interface CodeRunnerStats {
  p50_ms: number;
  p99_ms: number;
  samples: number;
}

export interface CodeRunnerLatency {
  difficulty: string;
  /** env.step({tool: "run_tests"}) on freshly reset tasks: what an agent's call costs. */
  run_tests_step: CodeRunnerStats;
  /** The same test run straight on the sandbox (no env, no middleware). */
  sandbox_run: CodeRunnerStats;
  /** run_tests when one function loops forever (its tests end at the instruction budget). */
  infinite_loop_step: CodeRunnerStats;
  /** run_tests when a test calls a built-in over a huge sparse array in a loop (it ends at the instruction budget). */
  native_loop_step: CodeRunnerStats;
  tests_per_run: number;
}

const NATIVE_LOOP: Action = {
  type: "tool_call",
  tool: "write_file",
  args: { path: "test/zz_native_loop.test.js", content: `test("native loop", () => { const a = []; a.length = 2 ** 24 - 1; for (;;) a.indexOf(2); });\n` },
};

function stats(samplesNs: number[]): CodeRunnerStats {
  const { p50, p99, samples } = p50p99(samplesNs, 1e6, 2);
  return { p50_ms: p50, p99_ms: p99, samples };
}

/** Measure run_tests latency over `samples` tasks of one difficulty (after `warmup` untimed ones). */
export async function codeRunnerLatency(options: { difficulty?: string; samples?: number; warmup?: number; loops?: number } = {}): Promise<CodeRunnerLatency> {
  const difficulty = options.difficulty ?? "medium";
  const samples = options.samples ?? 300;
  const warmup = options.warmup ?? 30;
  const env = new CodeRepair();
  const ids = sampleTaskIds({ family: "code-repair", difficulties: [difficulty], n: samples + warmup, seed: 5 });
  const step: number[] = [];
  const raw: number[] = [];
  const loops: number[] = [];
  const nativeLoops: number[] = [];
  let tests = 0;
  const runTests: Action = { type: "tool_call", tool: "run_tests", args: { file: null } };
  for (const [i, id] of ids.entries()) {
    await env.reset(id, i);
    const [ns, result] = await timeOnce(() => env.step(runTests));
    const task = (env as unknown as { episode: { task: { files: Record<string, string>; protectedFiles: string[]; seed: number } } }).episode.task;
    const files = Object.fromEntries(Object.entries(task.files).filter(([p]) => /\.(js|json)$/.test(p)));
    const [rawNs] = await timeOnce(() => sharedCodeRunner().run({ files, entries: task.protectedFiles, seed: task.seed }));
    if (i >= warmup) {
      step.push(ns);
      raw.push(rawNs);
      tests += ((result as StepResult).info.tool_result as { output: { total: number } }).output.total;
    }
  }
  // Infinite loops are costly by design (each looping test runs to its budget): fewer samples.
  for (const [i, id] of ids.slice(0, options.loops ?? 20).entries()) {
    await env.reset(id, i);
    const probe = env.probes()["infinite-loop"]!;
    const write = (await probe.act({ step: 1, observation: { rendered: "", tokens: 0 }, tools: [], history: [] })) as Action;
    await env.step(write);
    const [ns] = await timeOnce(() => env.step(runTests));
    loops.push(ns);
  }
  for (const [i, id] of ids.slice(0, options.loops ?? 20).entries()) {
    await env.reset(id, i);
    await env.step(NATIVE_LOOP);
    const [ns] = await timeOnce(() => env.step(runTests));
    nativeLoops.push(ns);
  }
  await env.close();
  return {
    difficulty,
    run_tests_step: stats(step),
    sandbox_run: stats(raw),
    infinite_loop_step: stats(loops),
    native_loop_step: stats(nativeLoops),
    tests_per_run: Math.round(tests / step.length),
  };
}

// `tsx bench/code-runner.ts` prints the figures.
if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await codeRunnerLatency(), null, 2));
  process.exit(0);
}
