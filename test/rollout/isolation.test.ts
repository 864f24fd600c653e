/**
 * How a rollout survives episodes that hang their thread, stall, exhaust its heap or end it: the
 * watchdog on the main thread, retries apart on new threads, and the run that always goes on.
 */
import { isMainThread } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { addModules } from "../../src/core/load-module.js";
import { EnvironmentRegistry, entryFor } from "../../src/core/registry.js";
import { builtinRegistry } from "../../src/envs/index.js";
import type { Action, StepResult } from "../../src/index.js";
import type { RolloutConfig } from "../../src/rollout/plan.js";
import { rollout, type RolloutOptions } from "../../src/rollout/runner.js";
import { WorkerPool } from "../../src/rollout/worker-pool.js";
import { openStore } from "../../src/store/sqlite-store.js";
import type { EpisodeRecord, TrajectoryStore } from "../../src/store/types.js";
import { CRASH_TASK } from "../fixtures/worker-crash-env.js";
import { TinyEnv } from "../fixtures/tiny-env.js";
import { rolloutConfig } from "../helpers.js";

const fixture = (name: string) => new URL(`../fixtures/${name}`, import.meta.url).pathname;
const HOSTILE = fixture("hostile-env.ts");
const VARIANTS = fixture("hostile-variants-env.ts");
const CRASH = fixture("worker-crash-env.ts");
const EXIT_ON_LOAD = fixture("exit-on-load-env.ts");

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function memoryStore(): TrajectoryStore {
  const store = openStore(":memory:");
  cleanups.push(() => store.close());
  return store;
}

function openPool(size: number, heapMb?: number): WorkerPool {
  const pool = new WorkerPool(size, { heapMb });
  cleanups.push(() => pool.close());
  return pool;
}

/** Oracle rollouts of these tasks of a module's environment, one episode per task. */
function config(env: string, module: string, tasks: string[], over: Partial<RolloutConfig> = {}): RolloutConfig {
  return rolloutConfig({ env, policy: "oracle", n: tasks.length, group: 1, difficulties: [], task_ids: tasks, modules: [module], ...over });
}

async function run(cfg: RolloutConfig, options: Partial<RolloutOptions> = {}) {
  const store = memoryStore();
  const registry = builtinRegistry();
  await addModules(registry, cfg.modules);
  const result = await rollout({ store, registry, runId: "run-x", config: cfg, ...options });
  const episodes = new Map((await store.episodes({ run_id: "run-x" })).map((e) => [e.task_id, e]));
  return { result, episodes, store };
}

/** Task id -> "ok <outcome>" or the error code, of every stored episode. */
function outcomes(episodes: ReadonlyMap<string, EpisodeRecord>): Record<string, string> {
  return Object.fromEntries([...episodes].map(([task, e]) => [task, e.status === "ok" ? `ok ${e.outcome}` : (e.error?.code ?? "?")]));
}

const easy = (...seeds: number[]) => seeds.map((s) => `hostile/easy/seed-${s}`);

describe("the watchdog", () => {
  it("stops a thread an episode blocks past its time limit: that episode is episode_timeout, the others on the thread run again and are ok", async () => {
    const tasks = [...easy(1), "hostile/hard/seed-2", ...easy(3, 4, 5, 6)];
    const { result, episodes } = await run(config("hostile", HOSTILE, tasks, { timeout_ms: 1000 }), { concurrency: 4 });
    expect(outcomes(episodes)).toEqual({ ...Object.fromEntries(easy(1, 3, 4, 5, 6).map((t) => [t, "ok 1"])), "hostile/hard/seed-2": "episode_timeout" });
    const hung = episodes.get("hostile/hard/seed-2") as EpisodeRecord;
    expect(hung.error?.message).toMatch(/exceeded its time limit of 1000 ms and kept its worker thread 1000 ms more; the thread was stopped/);
    expect(hung.steps).toBe(0);
    expect([result.episodes, result.errors, result.run.status]).toEqual([6, 1, "finished"]);
  }, 60_000);

  it("records the steps a stopped episode had taken (threads send them ahead of the episode)", async () => {
    // The hard episode takes a step, waits a second, then blocks its thread: the step went ahead meanwhile.
    const { episodes, store } = await run(config("hostile-late", VARIANTS, ["hostile/hard/seed-1", ...easy(2)], { timeout_ms: 3000 }), { concurrency: 1 });
    expect(outcomes(episodes)).toEqual({ "hostile/hard/seed-1": "episode_timeout", "hostile/easy/seed-2": "ok 1" });
    const hung = episodes.get("hostile/hard/seed-1") as EpisodeRecord;
    expect(hung.steps).toBe(1);
    const steps = await store.getSteps(hung.episode_id);
    expect(steps.map((s) => [s.step, s.action])).toEqual([[1, { type: "tool_call", tool: "count", args: { by: 1 } }]]);
  }, 60_000);

  it("leaves a thread whose episode only waits (a step that never settles) to the cooperative timeout: the thread lives on", async () => {
    const pool = openPool(1);
    const { episodes } = await run(config("hostile-stall", VARIANTS, ["hostile/hard/seed-1", ...easy(2, 3)], { timeout_ms: 1000 }), { concurrency: 2, pool });
    expect(outcomes(episodes)).toEqual({ "hostile/hard/seed-1": "episode_timeout", "hostile/easy/seed-2": "ok 1", "hostile/easy/seed-3": "ok 1" });
    expect(episodes.get("hostile/hard/seed-1")?.error?.message).toBe("episode run-x/hostile/hard/seed-1/g0 exceeded its time limit of 1000 ms");
    expect(pool.threadsStarted).toBe(1);
  }, 60_000);
});

describe("threads that die", () => {
  it("retries the episodes of a dead thread apart: the one that ends its thread twice is host_failed, the others are ok", async () => {
    const tasks = ["tiny/easy/seed-1", "tiny/easy/seed-2", CRASH_TASK, "tiny/easy/seed-4", "tiny/easy/seed-5", "tiny/easy/seed-6"];
    const { episodes, result } = await run(config("worker-crash", CRASH, tasks), { concurrency: 4 });
    expect(outcomes(episodes)).toEqual({ ...Object.fromEntries(tasks.map((t) => [t, "ok 1"])), [CRASH_TASK]: "host_failed" });
    expect(episodes.get(CRASH_TASK)?.error?.message).toBe(`episode run-x/${CRASH_TASK}/g0 ended its worker thread (exit code 1), alone on its thread, after an earlier thread it ran on had died too`);
    expect(result.run.status).toBe("finished");
  }, 60_000);

  it("records an episode that exhausts its thread's heap cap twice as resource_exhausted; the run goes on", async () => {
    const tasks = [...easy(1), "hostile/hard/seed-2", ...easy(3)];
    const { episodes } = await run(config("hostile-oom", VARIANTS, tasks), { concurrency: 2, workerMemoryMb: 128 });
    expect(outcomes(episodes)).toEqual({ "hostile/easy/seed-1": "ok 1", "hostile/hard/seed-2": "resource_exhausted", "hostile/easy/seed-3": "ok 1" });
    expect(episodes.get("hostile/hard/seed-2")?.error?.message).toMatch(/ran its worker thread out of its 128 MiB heap cap, alone on its thread, after an earlier thread/);
  }, 60_000);

  it("fails a run whose threads keep dying before they start an episode, and leaves the run interrupted", async () => {
    const store = memoryStore();
    const registry = builtinRegistry();
    await addModules(registry, [EXIT_ON_LOAD]);
    const attempt = rollout({ store, registry, runId: "run-dead", config: config("exit-on-load", EXIT_ON_LOAD, ["tiny/easy/seed-1"]) });
    await expect(attempt).rejects.toMatchObject({
      code: "host_failed",
      message: "rollout worker threads keep dying before they start an episode: ended its worker thread (exit code 4)",
    });
    expect((await store.getRun("run-dead"))?.status).toBe("interrupted");
  }, 60_000);

  it("refuses a heap cap below 16 MiB before storing anything", async () => {
    const store = memoryStore();
    const attempt = rollout({ store, registry: builtinRegistry(), runId: "run-m", config: rolloutConfig(), workerMemoryMb: 8 });
    await expect(attempt).rejects.toMatchObject({ code: "invalid_argument", message: expect.stringContaining("worker memory") });
    expect(await store.listRuns()).toEqual([]);
  });
});

/** Threads the tiny environment below took steps on: true for the main thread. */
const stepThreads: boolean[] = [];

class CodeOnlyEnv extends TinyEnv {
  override async step(action: Action): Promise<StepResult> {
    stepThreads.push(isMainThread);
    return super.step(action);
  }
}

describe("environments registered only in code", () => {
  it("run on the calling thread, since a worker thread cannot load them", async () => {
    const registry = new EnvironmentRegistry();
    registry.register(entryFor(CodeOnlyEnv));
    const store = memoryStore();
    stepThreads.length = 0;
    const result = await rollout({ store, registry, runId: "run-code", config: rolloutConfig({ env: "tiny", policy: "oracle", n: 2, group: 1, difficulties: ["easy"] }), workers: 2 });
    expect([result.episodes, result.errors]).toEqual([2, 0]);
    expect(stepThreads.length).toBeGreaterThan(0);
    expect(stepThreads.every(Boolean)).toBe(true);
  });
});
