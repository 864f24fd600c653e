import { afterEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/envs/index.js";
import { rollout, type EpisodeExecutor, type RolloutOptions } from "../../src/rollout/runner.js";
import type { RolloutConfig } from "../../src/rollout/plan.js";
import { openStore } from "../../src/store/sqlite-store.js";
import { addModules } from "../../src/core/load-module.js";
import { CRASH_TASK } from "../fixtures/worker-crash-env.js";
import { WorkerPool } from "../../src/rollout/worker-pool.js";
import type { StoredEpisode, TrajectoryStore } from "../../src/store/types.js";
import { rolloutConfig } from "../helpers.js";

const stores: TrajectoryStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

const config = rolloutConfig;

function memoryStore(): TrajectoryStore {
  const store = openStore(":memory:");
  stores.push(store);
  return store;
}

/** Episode id -> [status, total reward, steps] of a run: what must not depend on how it was executed. */
async function fingerprintOf(store: TrajectoryStore, runId: string) {
  const out: Record<string, [string, number, number, number | null]> = {};
  for (const e of await store.episodes({ run_id: runId })) out[e.episode_id] = [e.status, e.total_reward, e.steps, e.advantages?.grpo ?? null];
  return out;
}

describe("rollout runner", () => {
  it("runs groups of k with one seed per task, stores every episode and sets group advantages", async () => {
    const store = memoryStore();
    const result = await rollout({ store, registry: builtinRegistry(), runId: "run-a", config: config(), concurrency: 2 });
    expect(result.episodes).toBe(8);
    expect(result.errors).toBe(0);
    const episodes = await store.episodes({ run_id: "run-a" });
    expect(episodes).toHaveLength(8);
    const groups = new Map<string, typeof episodes>();
    for (const e of episodes) groups.set(e.group_id, [...(groups.get(e.group_id) ?? []), e]);
    expect(groups.size).toBe(2);
    for (const members of groups.values()) {
      expect(new Set(members.map((m) => `${m.task_id}|${m.seed}`)).size).toBe(1);
      expect(members.map((m) => m.group_index).sort()).toEqual([0, 1, 2, 3]);
      expect(members.every((m) => m.advantages !== null)).toBe(true);
      expect(members.reduce((s, m) => s + (m.advantages?.dr_grpo ?? 0), 0)).toBeCloseTo(0, 9);
    }
    // Noise gives mixed rewards within groups: what GRPO needs.
    expect(new Set(episodes.map((e) => e.total_reward.toFixed(6))).size).toBeGreaterThan(2);
    const all = result.metrics.find((m) => m.difficulty === "all");
    expect(all?.k).toBe(4);
    expect(all?.tasks_with_k).toBe(2);
    expect(all?.pass_at_k).toBeGreaterThanOrEqual(all?.pass_hat_k ?? 1);
    const steps = await store.getSteps(episodes[0]!.episode_id);
    expect(steps.map((s) => s.step)).toEqual(steps.map((_, i) => i + 1));
    expect(steps.at(-1)?.terminated || steps.at(-1)?.truncated).toBe(true);
    expect((await store.getRun("run-a"))?.status).toBe("finished");
  });

  it("--advantage-on outcome: advantages rank a group by its outcomes alone; reward (the default) by total reward", async () => {
    const store = memoryStore();
    await rollout({ store, registry: builtinRegistry(), runId: "run-on-reward", config: config(), concurrency: 2 });
    await rollout({ store, registry: builtinRegistry(), runId: "run-on-outcome", config: config({ advantage_on: "outcome" }), concurrency: 2 });
    const byGroup = async (runId: string) => {
      const groups = new Map<string, Awaited<ReturnType<typeof store.episodes>>>();
      for (const e of await store.episodes({ run_id: runId })) groups.set(e.group_id, [...(groups.get(e.group_id) ?? []), e]);
      return [...groups.values()].map((g) => g.sort((a, b) => a.group_index - b.group_index));
    };
    for (const [runId, value] of [["run-on-reward", (e: { total_reward: number }) => e.total_reward], ["run-on-outcome", (e: { outcome: number | null }) => e.outcome ?? 0]] as const) {
      for (const group of await byGroup(runId)) {
        const values = group.map(value);
        const mean = values.reduce((a, b) => a + b, 0) / values.length;
        // dr_grpo is value - group mean: it shows which value the advantages were computed on.
        group.forEach((e, i) => expect(e.advantages?.dr_grpo).toBeCloseTo((values[i] as number) - mean, 9));
        if (runId === "run-on-outcome" && new Set(values).size === 1) expect(group.every((e) => e.advantages?.grpo === 0)).toBe(true);
      }
    }
    // The same episodes either way: only the advantages differ.
    const rewards = async (runId: string) => (await store.episodes({ run_id: runId })).map((e) => e.total_reward).sort();
    expect(await rewards("run-on-outcome")).toEqual(await rewards("run-on-reward"));
    expect((await store.getRun("run-on-outcome"))?.config).toMatchObject({ advantage_on: "outcome" });
  });

  it("gives the same episodes whatever the concurrency (episode ids, seeds and policies are deterministic)", async () => {
    const a = memoryStore();
    const b = memoryStore();
    await rollout({ store: a, registry: builtinRegistry(), runId: "run-d", config: config(), concurrency: 1 });
    await rollout({ store: b, registry: builtinRegistry(), runId: "run-d", config: config(), concurrency: 3 });
    expect(await fingerprintOf(b, "run-d")).toEqual(await fingerprintOf(a, "run-d"));
  });

  it("resumes an interrupted run without duplicates, ending with the same episodes as an uninterrupted one", async () => {
    const store = memoryStore();
    let seen = 0;
    await expect(
      rollout({
        store, registry: builtinRegistry(), runId: "run-r", config: config(), concurrency: 1,
        onProgress: () => {
          if (++seen === 5) throw new Error("killed");
        },
      }),
    ).rejects.toThrow("killed");
    const partial = await store.countEpisodes({ run_id: "run-r" });
    expect(partial).toBeLessThan(8);
    expect((await store.getRun("run-r"))?.status).toBe("interrupted");
    const resumed = await rollout({ store, registry: builtinRegistry(), resume: "run-r" });
    expect(resumed.ran).toBe(8 - partial);
    expect(resumed.episodes).toBe(8);
    expect(resumed.run.status).toBe("finished");
    const reference = memoryStore();
    await rollout({ store: reference, registry: builtinRegistry(), runId: "run-r", config: config() });
    expect(await fingerprintOf(store, "run-r")).toEqual(await fingerprintOf(reference, "run-r"));
  });

  it("records a timed-out episode as an error and finishes the run", async () => {
    const store = memoryStore();
    // Real latency: every tool call sleeps its simulated latency (15-150 ms), far over the 20 ms limit.
    const result = await rollout({
      store, registry: builtinRegistry(), runId: "run-t", concurrency: 2,
      config: config({ policy: "oracle", n: 3, group: 1, timeout_ms: 20, env_options: { realLatencyScale: 1 } }),
    });
    expect(result.episodes).toBe(3);
    expect(result.errors).toBe(3);
    const episodes = await store.episodes({ run_id: "run-t" });
    expect(episodes.every((e) => e.status === "error" && e.error?.code === "episode_timeout")).toBe(true);
    const all = result.metrics.find((m) => m.difficulty === "all");
    expect(all?.errors).toBe(3);
    expect(all?.episodes).toBe(0);
  });

  it("gives the same results on two worker threads as on one", async () => {
    const a = memoryStore();
    const b = memoryStore();
    await rollout({ store: a, registry: builtinRegistry(), runId: "run-w", config: config(), concurrency: 2 });
    const r = await rollout({ store: b, registry: builtinRegistry(), runId: "run-w", config: config(), concurrency: 2, workers: 2 });
    expect(r.episodes).toBe(8);
    expect(await fingerprintOf(b, "run-w")).toEqual(await fingerprintOf(a, "run-w"));
  }, 60_000);

  it("survives a worker that dies: the episode that kills a thread twice is an error, the others run elsewhere, the pool goes on", async () => {
    const store = memoryStore();
    const module = new URL("../fixtures/worker-crash-env.ts", import.meta.url).pathname;
    const tasks = ["tiny/easy/seed-1", "tiny/easy/seed-2", CRASH_TASK, "tiny/easy/seed-4", "tiny/easy/seed-5", "tiny/easy/seed-6", "tiny/easy/seed-7", "tiny/easy/seed-8"];
    const registry = builtinRegistry();
    await addModules(registry, [module]);
    const pool = new WorkerPool(2);
    const crashConfig = (taskIds: string[]) => config({ env: "worker-crash", policy: "oracle", n: taskIds.length, group: 1, difficulties: [], task_ids: taskIds, modules: [module] });
    try {
      // One slot per worker: the dead worker's only started episode is the crashing one.
      const r = await rollout({ store, registry, runId: "run-crash", config: crashConfig(tasks), concurrency: 1, pool });
      expect(r.episodes).toBe(8);
      const episodes = await store.episodes({ run_id: "run-crash" });
      const failed = episodes.filter((e) => e.status === "error");
      expect(failed.map((e) => e.task_id)).toEqual([CRASH_TASK]);
      expect(failed[0]?.error).toEqual({
        code: "host_failed",
        message: `episode run-crash/${CRASH_TASK}/g0 ended its worker thread (exit code 1), alone on its thread, after an earlier thread it ran on had died too`,
      });
      expect(episodes.filter((e) => e.status === "ok" && e.outcome === 1)).toHaveLength(7);

      const next = await rollout({ store, registry, runId: "run-after-crash", config: crashConfig(tasks.filter((t) => t !== CRASH_TASK)), concurrency: 1, pool });
      expect([next.episodes, next.errors]).toEqual([7, 0]);
    } finally {
      await pool.close();
    }
  }, 60_000);

  it("keeps a worker pool's threads between runs; runs asked for at once take turns; a closed pool refuses", async () => {
    const reference = memoryStore();
    await rollout({ store: reference, registry: builtinRegistry(), runId: "run-p", config: config(), concurrency: 2 });
    const pool = new WorkerPool(2);
    const stores = [memoryStore(), memoryStore(), memoryStore()];
    const onPool = (store: TrajectoryStore) => rollout({ store, registry: builtinRegistry(), runId: "run-p", config: config(), concurrency: 2, pool });
    await onPool(stores[0] as TrajectoryStore);
    await Promise.all([onPool(stores[1] as TrajectoryStore), onPool(stores[2] as TrajectoryStore)]);
    expect(pool.threadsStarted).toBe(2);
    for (const store of stores) expect(await fingerprintOf(store, "run-p")).toEqual(await fingerprintOf(reference, "run-p"));
    await pool.close();
    const untouched = memoryStore();
    const refused = await onPool(untouched).catch((e: { code?: string; message: string }) => `${e.code}: ${e.message}`);
    expect(refused).toBe("invalid_argument: this worker pool is closed");
    expect(await untouched.listRuns()).toEqual([]);
    expect(() => new WorkerPool(0)).toThrow(/workers must be an integer in \[1, 64\]/);
  }, 60_000);

  it("refuses bad configs before storing anything", async () => {
    const store = memoryStore();
    const attempt = (over: Partial<RolloutConfig>, extra: Partial<RolloutOptions> = {}) =>
      rollout({ store, registry: builtinRegistry(), runId: "run-bad", config: config(over), ...extra }).then(
        () => "ok",
        (e: { code?: string }) => e.code,
      );
    expect(await attempt({ env: "nope" })).toBe("unknown_env");
    expect(await attempt({ policy: "genius" })).toBe("unknown_policy");
    expect(await attempt({ policy: "noisy-oracle:1.5" })).toBe("invalid_argument");
    expect(await attempt({ n: 0 })).toBe("invalid_argument");
    expect(await attempt({ difficulties: ["impossible"] })).toBe("invalid_argument");
    expect(await attempt({ task_ids: ["billing-dispute/easy/seed-1", "billing-dispute/easy/seed-1"], group: 1, n: 2 })).toBe("invalid_argument");
    expect(await attempt({}, { concurrency: 0 })).toBe("invalid_argument");
    expect(await attempt({ advantage_on: "vibes" as never })).toBe("invalid_argument");
    expect(await store.listRuns()).toEqual([]);
    expect(await rollout({ store, registry: builtinRegistry(), resume: "run-missing" }).catch((e) => e.code)).toBe("unknown_run");
  });

  it("replays a stored run's actions exactly", async () => {
    const store = memoryStore();
    await rollout({ store, registry: builtinRegistry(), runId: "run-src", config: config() });
    await rollout({ store, registry: builtinRegistry(), runId: "run-rep", config: config({ policy: "replay:run-src" }) });
    const src = await fingerprintOf(store, "run-src");
    const rep = await fingerprintOf(store, "run-rep");
    expect(Object.values(rep)).toEqual(Object.values(src));
  });
});

describe("resuming a run stopped between a group's last episode and its advantages", () => {
  it("sets the advantages of complete groups stored without them", async () => {
    const whole = memoryStore();
    await rollout({ store: whole, registry: builtinRegistry(), runId: "run-adv", config: config(), concurrency: 2 });
    const all: StoredEpisode[] = [];
    for await (const e of whole.streamEpisodes({ run_id: "run-adv" })) all.push(e);
    const firstGroup = all.filter((e) => e.episode.group_id === all[0]!.episode.group_id);
    expect(firstGroup.every((e) => e.episode.advantages !== null)).toBe(true);

    // The same run, stopped right after storing the first group's episodes: their advantages were never set.
    const broken = memoryStore();
    const dies: EpisodeExecutor = { run: async () => Promise.reject(new Error("killed")) };
    await expect(rollout({ store: broken, registry: builtinRegistry(), runId: "run-adv", config: config(), executor: dies })).rejects.toThrow("killed");
    await broken.writeEpisodes(firstGroup.map((e) => ({ ...e, episode: { ...e.episode, advantages: null } })));
    const resumed = await rollout({ store: broken, registry: builtinRegistry(), resume: "run-adv", concurrency: 2 });
    expect(resumed.ran).toBe(all.length - firstGroup.length);
    const fingerprint = async (s: TrajectoryStore) => (await s.episodes({ run_id: "run-adv" })).map((e) => [e.episode_id, e.advantages]);
    expect(await fingerprint(broken)).toEqual(await fingerprint(whole));
  });
});
