import { describe, expect, it } from "vitest";
import { LlmixError, ValidationError } from "../../core/errors.js";
import { Rng } from "../../core/rng.js";
import { loadRewardModel, serializeRewardModel } from "./file.js";
import { auroc } from "../calibration.js";
import { MAX_TRAIN_EPOCHS, scoreEpisode, trainRewardModel, verifiedLabel } from "./model.js";
import { pairwiseAuroc, syntheticEpisodes } from "./test-support.js";

const now = (): Date => new Date("2026-02-03T04:05:06.000Z");

function refusal(fn: () => unknown): LlmixError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as LlmixError).code).toBe("invalid_argument");
    return error as LlmixError;
  }
  throw new Error("expected a ValidationError");
}

describe("trainRewardModel", () => {
  const train = syntheticEpisodes("train", 300);
  const heldout = syntheticEpisodes("heldout", 200, { runId: "run-heldout" });

  it("separates held-out successes from failures when success correlates with a tool call", () => {
    const model = trainRewardModel(train, { holdout: heldout, now });
    const scores = heldout.map((e) => scoreEpisode(model, e));
    const labels = heldout.map((e) => verifiedLabel(e)!);
    const separation = pairwiseAuroc(scores, labels);
    expect(separation).toBeGreaterThan(0.9);
    expect(model.metrics.heldout_auroc).toBeCloseTo(separation, 5);
    expect(model.metrics.heldout_episodes).toBe(200);
    expect(model.metrics.heldout_positives).toBe(labels.filter((y) => y === 1).length);
    expect(model.trained_on).toEqual({
      runs: ["run-synthetic"],
      episodes: 300,
      positives: train.filter((e) => e.episode.outcome === 1).length,
      skipped: 0,
      env: "synthetic",
      env_version: "1.0.0",
    });
    for (const s of scores) expect(s >= 0 && s <= 1).toBe(true);
  });

  it("is deterministic for a seed, and the seed matters", () => {
    const a = trainRewardModel(train, { seed: 7, now });
    const b = trainRewardModel(train, { seed: 7, now });
    expect(serializeRewardModel(b)).toBe(serializeRewardModel(a));
    const c = trainRewardModel(train, { seed: 8, now });
    expect(c.weights).not.toEqual(a.weights);
    expect(c.training.seed).toBe(8);
  });

  it("labels outcome >= 1 as success and skips episodes without a verified outcome", () => {
    const [ok, partial, broken, unfinished] = syntheticEpisodes("labels", 4).map((e) => structuredClone(e));
    ok!.episode.outcome = 1;
    partial!.episode.outcome = 0.99;
    broken!.episode.status = "error";
    unfinished!.episode.outcome = null;
    expect([ok, partial, broken, unfinished].map((e) => verifiedLabel(e!))).toEqual([1, 0, null, null]);
    const model = trainRewardModel([...train, broken!, unfinished!], { now, epochs: 2 });
    expect(model.trained_on.skipped).toBe(2);
    expect(model.trained_on.episodes).toBe(300);
  });

  it("is bounded: too many episodes, too many epochs, one outcome only and mixed environments are refused", () => {
    expect(refusal(() => trainRewardModel(train, { maxEpisodes: 100 })).message).toMatch(/more than 100 labelled episodes/);
    expect(refusal(() => trainRewardModel(train, { epochs: MAX_TRAIN_EPOCHS + 1 })).message).toMatch(/epochs must be/);
    const successes = train.filter((e) => e.episode.outcome === 1);
    expect(refusal(() => trainRewardModel(successes)).message).toMatch(/both outcomes must occur/);
    const other = syntheticEpisodes("other", 5, { env: "other-env" });
    expect(refusal(() => trainRewardModel([...train, ...other])).message).toMatch(/other-env@1\.0\.0.*synthetic@1\.0\.0/);
    const newer = syntheticEpisodes("newer", 5, { envVersion: "2.0.0" });
    expect(refusal(() => trainRewardModel(train, { holdout: newer })).message).toMatch(/held-out episode .* synthetic@2\.0\.0/);
  });

  it("trains on 2,000 episodes in a few seconds", () => {
    const many = syntheticEpisodes("many", 2000);
    const started = performance.now();
    const model = trainRewardModel(many, { now });
    const seconds = (performance.now() - started) / 1000;
    expect(model.trained_on.episodes).toBe(2000);
    // Generous: the point is "seconds, not minutes" on a shared 2-core machine.
    expect(seconds).toBeLessThan(20);
  });
});

describe("reward-model file", () => {
  const model = trainRewardModel(syntheticEpisodes("file", 120), { holdout: syntheticEpisodes("file-heldout", 40), now, epochs: 5 });

  it("round-trips through JSON and loadRewardModel, scoring the same", () => {
    const text = serializeRewardModel(model);
    const loaded = loadRewardModel(text);
    expect(loaded).toEqual(model);
    expect(loadRewardModel(JSON.parse(text))).toEqual(model);
    for (const e of syntheticEpisodes("file-score", 10)) expect(scoreEpisode(loaded, e)).toBe(scoreEpisode(model, e));
    expect(model.kind).toBe("llmix-reward-model");
    expect(model.version).toBe(1);
    expect(model.created_at).toBe("2026-02-03T04:05:06.000Z");
    expect(model.training).toMatchObject({ algorithm: "logistic-regression-sgd", epochs: 5, seed: 0 });
    expect(model.features).toMatchObject({ buckets: 2 ** 18, hash: "fnv1a32-fmix32", signed: true });
    for (const [, w] of model.weights) expect(w).not.toBe(0);
  });

  const mutations: Array<[string, (m: Record<string, any>) => unknown, RegExp]> = [
    ["not JSON", () => "{nope", /is not JSON/],
    ["not an object", () => [1, 2], /must be an object/],
    ["another kind", (m) => ({ ...m, kind: "something-else" }), /kind is "something-else"/],
    ["a newer version", (m) => ({ ...m, version: 2 }), /version 2 is newer than this LLMix reads \(1\)/],
    ["a version that is not a positive integer", (m) => ({ ...m, version: "1" }), /version must be a positive integer/],
    ["no features", (m) => ({ ...m, features: undefined }), /features: must be an object/],
    ["a newer feature scheme", (m) => ({ ...m, features: { ...m.features, version: 3 } }), /features: version 3 is newer/],
    ["buckets that are not a power of two", (m) => ({ ...m, features: { ...m.features, buckets: 1000 } }), /buckets must be a power of two/],
    ["an unknown dense feature", (m) => ({ ...m, features: { ...m.features, dense: ["log_steps", "outcome"] } }), /unknown dense feature "outcome"/],
    ["weights that are not pairs", (m) => ({ ...m, weights: [[1, 0.5, 3]] }), /weights\[0\] is not an \[index, weight\] pair/],
    ["a weight index out of range", (m) => ({ ...m, weights: [[2 ** 18 + 99, 0.5]] }), /weights\[0\] index 262243 is outside/],
    ["weights out of order", (m) => ({ ...m, weights: [[5, 0.1], [5, 0.2]] }), /indices must ascend/],
    ["a weight that is not finite", (m) => ({ ...m, weights: [[5, Number.NaN]] }), /weights\[0\] weight is not a finite number/],
    ["a bias that is not a number", (m) => ({ ...m, bias: "0.1" }), /bias: must be a finite number/],
    ["no trained_on", (m) => ({ ...m, trained_on: null }), /trained_on: must be an object/],
    ["more positives than episodes", (m) => ({ ...m, trained_on: { ...m.trained_on, positives: 10_000 } }), /positives exceeds/],
    ["an AUROC above 1", (m) => ({ ...m, metrics: { ...m.metrics, train_auroc: 1.5 } }), /metrics\.train_auroc: must be in \[0, 1\]/],
    ["an unknown algorithm", (m) => ({ ...m, training: { ...m.training, algorithm: "magic" } }), /training\.algorithm "magic" is unknown/],
    ["a created_at that is no date", (m) => ({ ...m, created_at: "yesterday" }), /created_at "yesterday" is not a date/],
  ];
  it.each(mutations)("refuses a file with %s", (_what, mutate, message) => {
    const input = mutate(JSON.parse(serializeRewardModel(model)) as Record<string, any>);
    const error = refusal(() => loadRewardModel(input));
    expect(error.message).toMatch(/^reward model file: /);
    expect(error.message).toMatch(message);
  });
});

describe("auroc", () => {
  it("agrees with the pairwise count, ties included, and is null with one class", () => {
    const rng = Rng.fromKey("auroc-test");
    for (let trial = 0; trial < 20; trial++) {
      const n = rng.int(2, 60);
      const scores = Array.from({ length: n }, () => rng.int(0, 8) / 8);
      const labels = Array.from({ length: n }, () => (rng.bool() ? 1 : 0));
      if (!labels.includes(0) || !labels.includes(1)) continue;
      expect(auroc(scores, labels)).toBeCloseTo(pairwiseAuroc(scores, labels), 12);
    }
    expect(auroc([0.1, 0.2], [1, 1])).toBeNull();
  });
});
