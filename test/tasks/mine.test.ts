/**
 * Hard negatives mined from failures (issue 17): against a policy whose failures depend on the task's
 * features (noisy-oracle with more noise on injection tasks), the mined set fails at least twice as
 * often as the run it was mined from. Mined ids are new, of the train split, of failing scenarios only;
 * the CLI writes a task set that `rollout --tasks-file` runs, and `tasks --stats` counts scenarios.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/envs/index.js";
import { parsePolicySpec } from "../../src/rollout/policies/index.js";
import { rollout } from "../../src/rollout/runner.js";
import { featuresOf, scenarioKey, scenarioStats } from "../../src/tasks/features.js";
import { mineHardNegatives, parseTaskSet } from "../../src/tasks/mine.js";
import { splitOf } from "../../src/tasks/splits.js";
import { openStore } from "../../src/store/sqlite-store.js";
import type { EpisodeRecord } from "../../src/store/types.js";
import { rolloutConfig } from "../helpers.js";

const POLICY = "noisy-oracle:0.02,variant=injection@0.8";
const dir = mkdtempSync(join(tmpdir(), "llmix-mine-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const failureRate = (records: readonly EpisodeRecord[]) => records.filter((r) => r.status !== "ok" || (r.outcome ?? 0) < 1).length / records.length;

describe("mining hard negatives", () => {
  it("a mined set fails at least twice as often as the run it came from, with new train ids of failing scenarios only", async () => {
    const store = openStore(":memory:");
    const registry = builtinRegistry();
    try {
      const base = await rollout({ store, registry, runId: "base", config: rolloutConfig({ policy: POLICY, n: 80, group: 1, difficulties: ["hard"] }), concurrency: 8 });
      const env = registry.get("billing-dispute").create();
      const mined = mineHardNegatives(env.tasks, base.records, { n: 40, seed: 3 });
      // billing-dispute 1.3.0 has hundreds of hard scenarios and holds some out of train: where a failing
      // scenario's exact features are too rare, the miner takes its scenario and knobs with other parameters.
      expect(mined.task_ids).toHaveLength(40);
      expect(mined.scenarios.reduce((sum, s) => sum + s.perturbed, 0)).toBeLessThan(40);
      expect(mineHardNegatives(env.tasks, base.records, { n: 40, seed: 3 }).task_ids).toEqual(mined.task_ids);
      const declared = env.tasks.features?.declared ?? [];
      const failing = new Set(mined.scenarios.map((s) => `${s.difficulty}|${scenarioKey(s.features, declared)}`));
      const baseIds = new Set(base.records.map((r) => r.task_id));
      for (const id of mined.task_ids) {
        expect(baseIds.has(id)).toBe(false);
        expect(splitOf(id)).toBe("train");
        const core = declared.filter((f) => f.kind !== "parameter");
        const near = mined.scenarios.some((s) => scenarioKey(s.features, core) === scenarioKey(featuresOf(env.tasks, id), core));
        expect(failing.has(`hard|${scenarioKey(featuresOf(env.tasks, id), declared)}`) || near).toBe(true);
      }
      expect(new Set(mined.task_ids).size).toBe(40);
      // Scenarios with more failures get more tasks.
      const sorted = [...mined.scenarios].sort((a, b) => b.failures - a.failures);
      expect(sorted[0]!.mined).toBeGreaterThanOrEqual(sorted.at(-1)!.mined);
      await env.close();

      const again = await rollout({ store, registry, runId: "mined", config: rolloutConfig({ policy: POLICY, n: mined.task_ids.length, group: 1, difficulties: [], task_ids: mined.task_ids }), concurrency: 8 });
      const [before, after] = [failureRate(base.records), failureRate(again.records)];
      expect(before).toBeGreaterThan(0);
      expect(after).toBeGreaterThanOrEqual(2 * before);
    } finally {
      await store.close();
    }
  }, 60_000);

  it("mines nothing from a run without failures, and refuses a bad n", async () => {
    const env = builtinRegistry().get("billing-dispute").create();
    const ok = [{ task_id: "billing-dispute/hard/seed-1", status: "ok", outcome: 1 }];
    expect(mineHardNegatives(env.tasks, ok, { n: 5 })).toEqual({ task_ids: [], failures: 0, scenarios: [] });
    expect(() => mineHardNegatives(env.tasks, ok, { n: 0 })).toThrow(/n must be an integer/);
    await env.close();
  });

  it("a noisy-oracle rule must name a declared feature", () => {
    const env = builtinRegistry().get("billing-dispute").create();
    const source = parsePolicySpec("noisy-oracle:0.1,colour=blue@0.5");
    expect(() => source.create({ env, taskId: "billing-dispute/hard/seed-1", seed: 1, groupIndex: 0 })).toThrow(/has no task feature "colour"/);
    expect(() => parsePolicySpec("noisy-oracle:0.1,variant=injection")).toThrow(/FEATURE=VALUE@Q/);
    expect(() => parsePolicySpec("noisy-oracle:0.1,variant=injection@2")).toThrow(/probability/);
  });

  it("every built-in environment declares features, and the stats count scenarios per split", () => {
    for (const entry of builtinRegistry().list()) {
      const env = entry.create();
      const stats = scenarioStats(env.tasks, { samples: 50 });
      expect(stats.map((s) => s.difficulty)).toEqual([...env.tasks.difficulties]);
      for (const s of stats) {
        expect(s.train).toBeGreaterThan(0);
        expect(s.shared).toBeLessThanOrEqual(Math.min(s.train, s.eval));
      }
      void env.close();
    }
  });

  it("llmix mine writes a task set that rollout --tasks-file runs; tasks --stats prints the counts", () => {
    const bin = join(process.cwd(), "dist/cli/bin.js");
    const store = join(dir, "llmix.db");
    const cli = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: "utf8" });
    const base = cli("rollout", "--env", "billing-dispute", "--policy", POLICY, "-n", "40", "--difficulty", "hard", "--run-id", "base", "--store", store, "--concurrency", "8");
    expect(base.status, base.stderr).toBe(0);
    const mine = cli("mine", "--run", "base", "-n", "12", "--store", store);
    expect(mine.status, mine.stderr).toBe(0);
    const file = join(dir, "task-sets", "hard-negatives-base.json");
    expect(mine.stdout).toContain(`-> ${file}`);
    const set = parseTaskSet(JSON.parse(readFileSync(file, "utf8")), file);
    expect(set).toMatchObject({ name: "hard-negatives-base", env: "billing-dispute", source: { run_id: "base", policy: POLICY, episodes: 40 } });
    const n = set.task_ids.length;
    expect(n).toBe(12);
    const run = cli("rollout", "--env", "billing-dispute", "--policy", "oracle", "--tasks-file", file, "-n", String(n), "--store", store, "--json");
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).episodes).toBe(n);
    const wrongEnv = cli("rollout", "--env", "code-repair", "--policy", "oracle", "--tasks-file", file, "-n", "1", "--store", store);
    expect(wrongEnv.status).toBe(2);
    expect(wrongEnv.stderr).toContain("the task set is of billing-dispute, not code-repair");
    const stats = cli("tasks", "billing-dispute", "--stats", "--samples", "100");
    expect(stats.status, stats.stderr).toBe(0);
    expect(stats.stdout).toMatch(/difficulty\s+train\s+eval\s+in both/);
    expect(stats.stdout).toContain("variant (knob:");
  }, 90_000);
});
