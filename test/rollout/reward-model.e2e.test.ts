/**
 * `llmix rm train` and `llmix calibrate` as a user runs them (issue 18): a reward model learned from a
 * noisy-oracle run of billing-dispute separates successes from failures on another run (AUROC >= 0.8),
 * and calibrate reports it with its diagram and the failures it scores high; a rubric judge behind a
 * local OpenAI-compatible server is calibrated the same way, and a second calibration of the same run
 * makes no model call.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Action, StepResult } from "../../src/core/contract.js";
import { toDecision } from "../../src/core/policy.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { runCli as cli } from "../helpers.js";
import { say, startOpenAIServer } from "../fixtures/openai-server.js";

const dir = mkdtempSync(join(tmpdir(), "llmix-rm-"));
const store = join(dir, "llmix.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));


beforeAll(async () => {
  for (const [id, seed] of [["train", "1"], ["heldout", "2"]] as const) {
    const run = await cli("rollout", "--env", "billing-dispute", "--policy", "noisy-oracle:0.3", "-n", "200", "--seed", seed, "--run-id", id, "--store", store, "--concurrency", "8");
    expect(run.status, run.stderr).toBe(0);
  }
}, 120_000);

describe("reward models and calibration from the command line", () => {
  it("rm train learns a model that separates a held-out run, and calibrate reports it", async () => {
    const model = join(dir, "rm.json");
    const train = await cli("rm", "train", "--run", "train", "--heldout", "heldout", "--out", model, "--store", store, "--json");
    expect(train.status, train.stderr).toBe(0);
    const summary = JSON.parse(train.stdout) as { metrics: { heldout_auroc: number; train_auroc: number }; trained_on: { episodes: number; env: string } };
    expect(summary.trained_on).toMatchObject({ episodes: 200, env: "billing-dispute" });
    expect(summary.metrics.heldout_auroc).toBeGreaterThanOrEqual(0.8);

    const png = join(dir, "diagram.png");
    const calibrate = await cli("calibrate", "--run", "heldout", "--verifier", `rm:${model}`, "--png", png, "--store", store, "--json");
    expect(calibrate.status, calibrate.stderr).toBe(0);
    const report = JSON.parse(calibrate.stdout) as { n: number; auroc: number; bins: unknown[]; hacking_candidates: { total: number; groups: Array<{ group: string }> } };
    expect(report.n).toBe(200);
    expect(report.auroc).toBeCloseTo(summary.metrics.heldout_auroc, 2);
    expect(report.bins).toHaveLength(10);
    expect(readFileSync(png).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // Candidates are grouped by the task family billing-dispute declares.
    for (const g of report.hacking_candidates.groups) expect(["duplicate-charge", "partial-refund", "charge-after-cancellation", "chargeback-filed", "forgotten-renewal", "failed-verification"]).toContain(g.group);

    const text = await cli("calibrate", "--run", "heldout", "--verifier", `rm:${model}`, "--png", png, "--store", store);
    expect(text.stdout).toMatch(/AUROC 0\.\d{3} · Spearman/);
    expect(text.stdout).toContain("reliability diagram");

    // The model inside episodes: a rollout whose outcome it adjusts (gate: it may lower, never lift), reverified identically.
    const options = JSON.stringify({ rewardModel: { file: model } });
    const judged = await cli("rollout", "--env", "billing-dispute", "--policy", "noisy-oracle:0.3", "-n", "40", "--seed", "3", "--env-options", options, "--run-id", "rm-judged", "--store", store, "--json", "--concurrency", "8");
    expect(judged.status, judged.stderr).toBe(0);
    const plain = await cli("rollout", "--env", "billing-dispute", "--policy", "noisy-oracle:0.3", "-n", "40", "--seed", "3", "--run-id", "rm-plain", "--store", store, "--json", "--concurrency", "8");
    const outcomes = (out: string) => new Map((JSON.parse(out) as { groups: Array<{ task_id: string; outcomes: number[] }> }).groups.map((g) => [g.task_id, g.outcomes[0] as number]));
    const [withRm, without] = [outcomes(judged.stdout), outcomes(plain.stdout)];
    let lowered = 0;
    for (const [task, outcome] of withRm) {
      expect(outcome).toBeLessThanOrEqual(without.get(task) as number);
      if (outcome < (without.get(task) as number)) lowered++;
    }
    expect(lowered).toBeGreaterThan(0);
    const reverify = await cli("reverify", "--run", "rm-judged", "--store", store);
    expect(reverify.status, reverify.stdout + reverify.stderr).toBe(0);

    // The trajectory the model reads is part of the snapshot: a restored episode ends on the same verdict.
    const entry = builtinRegistry().get("billing-dispute");
    const [a, b] = [entry.create({ rewardModel: { file: model } }), entry.create({ rewardModel: { file: model } })];
    let observation = await a.reset("billing-dispute/medium/seed-4", 4);
    const solver = a.referenceSolver();
    const history: Array<{ action: Action; result: StepResult }> = [];
    let last: StepResult | undefined;
    for (let step = 1; step <= 40 && !(last?.terminated || last?.truncated); step++) {
      if (step === 3) {
        await b.restore(await a.snapshot());
        expect((await b.snapshot()).trace?.steps).toHaveLength(2);
      }
      const action = toDecision(await solver.act({ step, observation, tools: a.tools(), history })).action as Action;
      last = await a.step(action);
      if (step >= 3) expect(JSON.stringify(await b.step(action))).toBe(JSON.stringify(last));
      history.push({ action, result: last });
      observation = last.observation;
    }
    expect(JSON.stringify(last?.info.verdict)).toContain('"reward_model"');
    await a.close();
    await b.close();
  }, 90_000);

  it("calibrates a rubric judge, with no model call the second time; bad specs are usage errors", async () => {
    // A judge that passes a criterion when the trajectory mentions a refund, quoting it.
    const judge = await startOpenAIServer((request) => {
      const user = request.body.messages?.find((m) => m.role === "user")?.content ?? "";
      const passed = /refund/i.test(user);
      return say(JSON.stringify({ criteria: [{ id: "mentions_refund", passed, evidence: passed ? (/refund/i.exec(user)?.[0] ?? "") : "" }] }));
    });
    try {
      const rubric = join(dir, "rubric.json");
      writeFileSync(rubric, JSON.stringify({ name: "mentions-refund", version: "1", criteria: [{ id: "mentions_refund", description: "The agent talks about a refund." }] }));
      const args = ["calibrate", "--run", "heldout", "--verifier", `judge:${rubric}`, "--judge-base-url", judge.url, "--judge-model", "judge-1", "--store", store, "--json"];
      const first = await cli(...args);
      expect(first.status, first.stderr).toBe(0);
      expect(JSON.parse(first.stdout).n).toBe(200);
      const calls = judge.requests.length;
      expect(calls).toBeGreaterThan(0);
      const second = await cli(...args);
      expect(second.status, second.stderr).toBe(0);
      expect(judge.requests.length).toBe(calls);
      expect(JSON.parse(second.stdout).auroc).toBe(JSON.parse(first.stdout).auroc);
    } finally {
      await judge.close();
    }
    for (const [spec, message] of [
      ["bogus", /--verifier must be rm:FILE or judge:RUBRIC.json/],
      [`rm:${join(dir, "missing.json")}`, /cannot read the reward model/],
      [`judge:${join(dir, "rubric.json")}`, /needs --judge-base-url and --judge-model/],
    ] as const) {
      const bad = await cli("calibrate", "--run", "heldout", "--verifier", spec, "--store", store);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toMatch(message);
    }
    const unknown = await cli("calibrate", "--run", "nope", "--verifier", "bogus", "--store", store);
    expect(unknown.stderr).toContain("unknown_run");
  }, 60_000);
});
