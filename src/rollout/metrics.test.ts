import { describe, expect, it } from "vitest";
import type { EpisodeRecord } from "../store/types.js";
import { passAtK, passHatK, runMetrics, sliceMetrics, succeeded } from "./metrics.js";

function choose(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

function episode(over: Partial<EpisodeRecord>): EpisodeRecord {
  return {
    episode_id: "r/t/g0", run_id: "r", env: "e", env_version: "1.0.0", task_id: "e/easy/seed-1", difficulty: "easy", seed: 1,
    group_id: "r/t", group_index: 0, policy: "oracle", policy_checkpoint: null, status: "ok", error: null, steps: 4, tokens: 100,
    total_reward: 1, outcome: 1, reward_components: { task: 1, step_cost: -0.04 }, verdict: { passed: true, score: 1 },
    end_reason: "done", terminated: true, truncated: false, cost: 0, tool_calls: { ok: 3 }, advantages: null,
    started_at: "", finished_at: "", duration_ms: 1, ...over,
  };
}

describe("pass@k and pass^k", () => {
  it("match the binomial definitions", () => {
    for (const [n, c, k] of [[10, 3, 1], [10, 3, 5], [8, 0, 4], [8, 8, 8], [20, 7, 10], [5, 4, 2]] as const) {
      expect(passAtK(n, c, k)).toBeCloseTo(1 - choose(n - c, k) / choose(n, k), 12);
      expect(passHatK(n, c, k)).toBeCloseTo(choose(c, k) / choose(n, k), 12);
    }
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 12);
    expect(passHatK(10, 3, 1)).toBeCloseTo(0.3, 12);
  });

  it("refuses impossible counts with a typed error", () => {
    for (const [n, c, k] of [[3, 4, 1], [3, 1, 4], [3, 1, 0], [3.5, 1, 1], [3, -1, 1]]) {
      expect(() => passAtK(n as number, c as number, k as number)).toThrow(expect.objectContaining({ code: "invalid_argument" }));
    }
  });
});

describe("sliceMetrics", () => {
  it("computes rates per task group and keeps infrastructure errors apart", () => {
    const eps = [
      episode({ task_id: "e/easy/seed-1", group_index: 0 }),
      episode({ task_id: "e/easy/seed-1", group_index: 1, outcome: 0, total_reward: -0.1, verdict: { passed: false, score: 0 }, reward_components: { task: 0, step_cost: -0.1 }, tool_calls: { ok: 1, error: 1 } }),
      episode({ task_id: "e/easy/seed-2", group_index: 0, outcome: 0, verdict: { passed: false, score: 0 }, reward_components: { task: 0, step_cost: 0 } }),
      episode({ task_id: "e/easy/seed-2", group_index: 1, outcome: 0, verdict: { passed: false, score: 0 }, reward_components: { task: 0, step_cost: 0 } }),
      episode({ task_id: "e/easy/seed-3", group_index: 0, status: "error", error: { code: "episode_timeout", message: "x" }, outcome: null }),
    ];
    const m = sliceMetrics(eps, { env: "e", difficulty: "easy" });
    expect(m.episodes).toBe(4);
    expect(m.errors).toBe(1);
    expect(m.k).toBe(2);
    expect(m.tasks_with_k).toBe(2);
    expect(m.pass_at_k).toBeCloseTo(0.5, 12); // task 1: 1 - C(1,2)/C(2,2) = 1; task 2: 0
    expect(m.pass_hat_k).toBeCloseTo(0, 12);
    expect(m.avg_at_k).toBeCloseTo(0.25, 12);
    expect(m.mean_outcome).toBeCloseTo(0.25, 12);
    expect(m.mean_components.step_cost).toBeCloseTo(-0.035, 12);
    expect(m.tool_calls).toBe(11);
    expect(m.tool_error_rate).toBeCloseTo(1 / 11, 12);
  });

  it("reports nulls, not NaN, when every episode failed", () => {
    const m = sliceMetrics([episode({ status: "error", outcome: null })], { env: "e", difficulty: "easy" });
    expect(m.episodes).toBe(0);
    expect(m.mean_outcome).toBeNull();
    expect(m.pass_at_k).toBeNull();
    expect(m.tool_error_rate).toBeNull();
  });

  it("falls back to the outcome when a verdict has no passed flag", () => {
    expect(succeeded(episode({ verdict: null, outcome: 1 }))).toBe(true);
    expect(succeeded(episode({ verdict: null, outcome: 0.5 }))).toBe(false);
  });
});

describe("runMetrics", () => {
  it("gives an all row and one row per difficulty per env", () => {
    const rows = runMetrics([episode({}), episode({ difficulty: "hard", task_id: "e/hard/seed-1", outcome: 0, verdict: { passed: false } })]);
    expect(rows.map((r) => `${r.env}/${r.difficulty}:${r.episodes}`)).toEqual(["e/all:2", "e/easy:1", "e/hard:1"]);
    expect(rows[0]?.success_rate).toBe(0.5);
  });

  it("orders difficulties all, easy, medium, hard, then others by name, within each env", () => {
    const at = (env: string, difficulty: string) => episode({ env, difficulty, task_id: `${env}/${difficulty}/seed-1` });
    const rows = runMetrics([at("b", "hard"), at("a", "medium"), at("a", "extreme"), at("a", "easy"), at("a", "hard"), at("a", "bonus")]);
    expect(rows.map((r) => `${r.env}/${r.difficulty}`)).toEqual(["a/all", "a/easy", "a/medium", "a/hard", "a/bonus", "a/extreme", "b/all", "b/hard"]);
  });
});
