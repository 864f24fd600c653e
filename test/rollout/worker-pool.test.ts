import { afterEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/envs/index.js";
import { planJobs, type RolloutConfig } from "../../src/rollout/plan.js";
import { parsePolicySpec } from "../../src/rollout/policies/index.js";
import type { JobRunnerOptions } from "../../src/rollout/pool.js";
import { WorkerPool } from "../../src/rollout/worker-pool.js";
import type { StoredEpisode } from "../../src/store/types.js";
import { rolloutConfig } from "../helpers.js";

const pools: WorkerPool[] = [];
afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.close();
});

/** 8 oracle episodes of easy billing-dispute tasks in groups of 2, plus `over`. */
function config(over: Partial<RolloutConfig> = {}): RolloutConfig {
  return rolloutConfig({ policy: "oracle", group: 2, seed: 3, ...over });
}

/** The jobs of a run of `config` and the options to run them with, results collected in `results`. */
async function plan(cfg: RolloutConfig, onResult?: (stored: StoredEpisode) => void) {
  const registry = builtinRegistry();
  const planner = registry.get("billing-dispute").create({});
  const jobs = planJobs("run-pool", { ...cfg, env: "billing-dispute" }, planner);
  await planner.close();
  for (const job of jobs) job.env = cfg.env;
  const results: StoredEpisode[] = [];
  const options: JobRunnerOptions = {
    config: cfg,
    concurrency: 2,
    registry,
    source: parsePolicySpec(cfg.policy),
    onResult: onResult ?? ((stored) => results.push(stored)),
  };
  return { jobs, options, results };
}

function openPool(size: number): WorkerPool {
  const pool = new WorkerPool(size);
  pools.push(pool);
  return pool;
}

describe("WorkerPool", () => {
  it("delivers one result per job, each run on the same threads", async () => {
    const pool = openPool(2);
    for (const seed of [1, 2]) {
      const { jobs, options, results } = await plan(config({ seed }));
      await pool.run(jobs, options);
      expect(results.map((r) => r.episode.episode_id).sort()).toEqual(jobs.map((j) => j.episode_id).sort());
      expect(results.every((r) => r.episode.status === "ok" && r.steps.length > 0)).toBe(true);
    }
    expect(pool.threadsStarted).toBe(2);
  }, 60_000);

  it("stops a run whose result handler throws (no new jobs, the error is thrown) and stays usable", async () => {
    const pool = openPool(2);
    let seen = 0;
    const { jobs, options } = await plan(config({ n: 16 }), () => {
      if (++seen === 3) throw new Error("the store is full");
    });
    await expect(pool.run(jobs, options)).rejects.toThrow("the store is full");
    // The episodes already handed to the threads finish; the rest of the queue never starts.
    expect(seen).toBeLessThan(jobs.length);
    const next = await plan(config({ seed: 9 }));
    await pool.run(next.jobs, next.options);
    expect(next.results).toHaveLength(next.jobs.length);
  }, 60_000);

  it("fails a run that cannot start on its threads with the threads' error, then runs the next one", async () => {
    const pool = openPool(2);
    const bad = await plan(config({ env: "no-such-env" }));
    const error = await pool.run(bad.jobs, bad.options).catch((e: { code?: string; message: string }) => e);
    expect(error).toMatchObject({ code: "unknown_env" });
    expect(bad.results).toEqual([]);
    const good = await plan(config());
    await pool.run(good.jobs, good.options);
    expect(good.results).toHaveLength(good.jobs.length);
  }, 60_000);
});
