import { describe, expect, it } from "vitest";
import { LlmixError } from "../../core/errors.js";
import type { StoredEpisode } from "../../store/types.js";
import { runVerifier } from "../verifier.js";
import { scoreEpisode, trainRewardModel } from "./model.js";
import { syntheticEpisodes } from "./test-support.js";
import { rewardModelVerifier } from "./verifier.js";

describe("rewardModelVerifier", () => {
  const model = trainRewardModel(syntheticEpisodes("verifier-train", 200), {
    holdout: syntheticEpisodes("verifier-heldout", 50),
    now: () => new Date("2026-01-01T00:00:00.000Z"),
  });
  const episodes = syntheticEpisodes("verifier-use", 20);

  it("scores with the model's probability and passes at the threshold", async () => {
    const verifier = rewardModelVerifier<StoredEpisode>("rm", model, (e) => e);
    for (const e of episodes) {
      const result = await runVerifier(verifier, e);
      const p = scoreEpisode(model, e);
      expect(result.score).toBe(p);
      expect(result.passed).toBe(p >= 0.5);
      expect(result.details).toEqual({
        model: {
          kind: "llmix-reward-model",
          version: 1,
          env: "synthetic",
          env_version: "1.0.0",
          runs: ["run-synthetic"],
          episodes: 200,
          positives: model.trained_on.positives,
          created_at: "2026-01-01T00:00:00.000Z",
          train_auroc: model.metrics.train_auroc,
          heldout_auroc: model.metrics.heldout_auroc!,
        },
        score: p,
        threshold: 0.5,
      });
    }
    const strict = rewardModelVerifier<StoredEpisode>("rm", model, async (e) => e, { threshold: 1 });
    expect((await runVerifier(strict, episodes[0]!)).passed).toBe(false);
  });

  it("refuses an episode of another environment, and a bad threshold", async () => {
    const verifier = rewardModelVerifier<StoredEpisode>("rm", model, (e) => e);
    const [other] = syntheticEpisodes("verifier-other", 1, { env: "billing-dispute" });
    const error = await runVerifier(verifier, other!).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmixError);
    expect((error as LlmixError).code).toBe("verifier_failed");
    expect((error as LlmixError).message).toMatch(/trained on synthetic, not billing-dispute/);
    // Steps alone (no episode row) are scored: the env check needs an env to compare.
    const stepsOnly = await runVerifier(rewardModelVerifier<StoredEpisode>("rm", model, (e) => ({ steps: e.steps })), other!);
    expect(stepsOnly.score).toBe(scoreEpisode(model, other!));
    expect(() => rewardModelVerifier("rm", model, (e: StoredEpisode) => e, { threshold: 2 })).toThrow(/threshold must be a number in \[0, 1\]/);
  });
});
