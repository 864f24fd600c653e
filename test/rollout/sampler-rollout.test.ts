/**
 * Rollouts that draw their tasks with a sampler (issue 17): a mix draws up front and deterministically;
 * a curriculum runs in waves, each drawn from the outcomes stored so far, and a run interrupted after a
 * wave resumes with the same tasks an uninterrupted run draws (the sampler's state is rebuilt from the
 * stored outcomes). Bad sampler configs are refused before anything is stored.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/envs/index.js";
import { runJobsInProcess } from "../../src/rollout/pool.js";
import { rollout, type EpisodeExecutor } from "../../src/rollout/runner.js";
import { featuresOf } from "../../src/tasks/features.js";
import { parseTaskId } from "../../src/tasks/task-id.js";
import { openStore } from "../../src/store/sqlite-store.js";
import type { TrajectoryStore } from "../../src/store/types.js";
import { rejection, rolloutConfig } from "../helpers.js";

const stores: TrajectoryStore[] = [];
const dir = mkdtempSync(join(tmpdir(), "llmix-sampler-rollout-"));
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function memoryStore(): TrajectoryStore {
  const store = openStore(":memory:");
  stores.push(store);
  return store;
}

const CURRICULUM = { kind: "curriculum", cells: ["easy", "medium", "hard"], min_results: 2, window: 8 } as const;
const curriculumConfig = () => rolloutConfig({ n: 24, group: 2, difficulties: [], policy: "noisy-oracle:0.5", sampler: { spec: CURRICULUM, batch_groups: 3 } });

/** Task ids of a run in the order its waves drew them. */
async function tasksOf(store: TrajectoryStore, runId: string): Promise<string[]> {
  const episodes = await store.episodes({ run_id: runId });
  return [...new Set(episodes.filter((e) => e.group_index === 0).map((e) => e.task_id))].sort();
}

/** Runs the first wave of a run in this process, then fails: a rollout killed between two waves. */
class DiesAfterFirstWave implements EpisodeExecutor {
  waves = 0;
  async run(jobs: Parameters<EpisodeExecutor["run"]>[0], options: Parameters<EpisodeExecutor["run"]>[1]): Promise<void> {
    if (++this.waves > 1) throw new Error("the enqueuer died");
    await runJobsInProcess(jobs, options);
  }
}

describe("rollouts drawing tasks with a sampler", () => {
  it("a mix draws its tasks up front, from the run's seed, in the cells it weighs", async () => {
    const config = rolloutConfig({ n: 12, group: 2, difficulties: [], sampler: { spec: { kind: "mix", weights: { hard: 3, medium: 1 } } } });
    const [a, b] = [memoryStore(), memoryStore()];
    await rollout({ store: a, registry: builtinRegistry(), runId: "mix", config, concurrency: 4 });
    await rollout({ store: b, registry: builtinRegistry(), runId: "mix", config, concurrency: 4 });
    const tasks = await tasksOf(a, "mix");
    expect(tasks).toHaveLength(6);
    expect(await tasksOf(b, "mix")).toEqual(tasks);
    expect(new Set(tasks.map((id) => parseTaskId(id).difficulty))).toEqual(new Set(["hard", "medium"]));
  });

  it("knobs upweight an adversarial condition within a cell", async () => {
    const store = memoryStore();
    const registry = builtinRegistry();
    const config = rolloutConfig({ n: 40, group: 1, policy: "oracle", difficulties: [], sampler: { spec: { kind: "mix", weights: { hard: 1 }, knobs: { "variant=injection": 8 } } } });
    await rollout({ store, registry, runId: "knobs", config, concurrency: 8 });
    const env = registry.get("billing-dispute").create();
    const tasks = await tasksOf(store, "knobs");
    const injected = tasks.filter((id) => featuresOf(env.tasks, id).variant === "injection").length / tasks.length;
    await env.close();
    // About a quarter of hard tasks carry an injection; weighted 8:1 they are most of the run.
    expect(injected).toBeGreaterThan(0.6);
  });

  it("a curriculum runs in waves fed by its outcomes, and a resumed run draws what an uninterrupted one draws", async () => {
    const whole = memoryStore();
    const full = await rollout({ store: whole, registry: builtinRegistry(), runId: "cur", config: curriculumConfig(), concurrency: 4 });
    expect(full.episodes).toBe(24);
    // Every cell was fed (each keeps its last 8 outcomes): the sampler saw the waves' outcomes.
    const results = full.sampler?.results ?? {};
    expect(full.sampler?.drawn).toBeGreaterThanOrEqual(12);
    for (const list of Object.values(results)) expect(list.length).toBeGreaterThanOrEqual(2);
    expect(Object.keys(results).sort()).toEqual(["billing-dispute/easy", "billing-dispute/hard", "billing-dispute/medium"]);

    const broken = memoryStore();
    const executor = new DiesAfterFirstWave();
    await expect(rollout({ store: broken, registry: builtinRegistry(), runId: "cur", config: curriculumConfig(), concurrency: 4, executor })).rejects.toThrow("the enqueuer died");
    expect(await broken.countEpisodes({ run_id: "cur" })).toBe(6);
    expect((await broken.getRun("cur"))?.status).toBe("interrupted");
    const resumed = await rollout({ store: broken, registry: builtinRegistry(), resume: "cur", concurrency: 4 });
    expect(resumed.ran).toBe(18);
    expect(await tasksOf(broken, "cur")).toEqual(await tasksOf(whole, "cur"));
    expect(resumed.sampler).toEqual(full.sampler);
  });

  it("refuses a sampler with explicit tasks or difficulties, a bad spec, or a bad wave size, storing nothing", async () => {
    const store = memoryStore();
    const cases = [
      rolloutConfig({ difficulties: [], task_ids: ["billing-dispute/easy/seed-1"], sampler: { spec: { kind: "mix", weights: { easy: 1 } } } }),
      rolloutConfig({ difficulties: ["easy"], sampler: { spec: { kind: "mix", weights: { easy: 1 } } } }),
      rolloutConfig({ difficulties: [], sampler: { spec: { kind: "mix", weights: { impossible: 1 } } } }),
      rolloutConfig({ difficulties: [], sampler: { spec: CURRICULUM, batch_groups: 0 } }),
    ];
    for (const config of cases) {
      const error = await rejection(rollout({ store, registry: builtinRegistry(), config }));
      expect(["invalid_argument", "invalid_task_id"]).toContain(error.code);
    }
    expect(await store.listRuns()).toHaveLength(0);
  });

  it("llmix rollout --curriculum prints each cell's pass rate and next weight; --mix with --batch-groups is refused", () => {
    const bin = join(process.cwd(), "dist/cli/bin.js");
    const file = join(dir, "curriculum.json");
    writeFileSync(file, JSON.stringify(CURRICULUM));
    const store = join(dir, "llmix.db");
    const run = spawnSync(process.execPath, [bin, "rollout", "--env", "billing-dispute", "--policy", "noisy-oracle:0.5", "-n", "12", "--group", "2", "--curriculum", file, "--batch-groups", "2", "--store", store], { encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("curriculum after the last wave");
    expect(run.stdout).toMatch(/billing-dispute\/hard\s+\S+\s+0\.\d{3}/);
    // A mix that draws half its tasks from a named task set (a file llmix mine writes), beside the spec.
    const ids = ["billing-dispute/hard/seed-11", "billing-dispute/hard/seed-12", "billing-dispute/hard/seed-13"];
    writeFileSync(join(dir, "negatives.json"), JSON.stringify({ kind: "llmix-task-set", version: 1, name: "negatives", env: "billing-dispute", created_at: "", source: {}, task_ids: ids }));
    const mix = join(dir, "mix.json");
    writeFileSync(mix, JSON.stringify({ kind: "mix", weights: { easy: 1, "set:negatives": 1 }, sets: { negatives: "negatives.json" } }));
    const mixed = spawnSync(process.execPath, [bin, "rollout", "--env", "billing-dispute", "--policy", "oracle", "-n", "6", "--mix", mix, "--store", store, "--json"], { encoding: "utf8" });
    expect(mixed.status, mixed.stderr).toBe(0);
    const drawn = (JSON.parse(mixed.stdout) as { groups: Array<{ task_id: string }> }).groups.map((g) => g.task_id);
    expect(drawn.filter((id) => ids.includes(id)).length).toBeGreaterThan(0);
    expect(drawn.filter((id) => !ids.includes(id)).every((id) => id.startsWith("billing-dispute/easy/"))).toBe(true);
    const bad = spawnSync(process.execPath, [bin, "rollout", "--env", "billing-dispute", "--policy", "oracle", "-n", "4", "--mix", file, "--store", store], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--mix');
    expect(bad.stderr).toContain('"kind" must be "mix" or "schedule"');
  }, 60_000);
});
