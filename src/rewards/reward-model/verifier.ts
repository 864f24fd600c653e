/**
 * The `reward-model` verifier: scores an episode with a trained reward-model file. Its score is the
 * model's probability of a verified success — an estimate, not a check; compose it under a verified
 * outcome (a gate or a min) so it can never lift a verified failure (DESIGN §5).
 */
import { LlmixError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { requireName, requireThreshold } from "../config.js";
import { defineVerifier, type Verifier } from "../verifier.js";
import type { ScorableEpisode } from "./features.js";
import { scoreEpisode, type RewardModelFile } from "./model.js";

/** Options of `rewardModelVerifier`. */
export interface RewardModelVerifierOptions {
  /** Passed when score >= threshold (default 0.5). */
  threshold?: number;
}

/** The trajectory to score, and optionally its environment (checked against the model's). */
export type RewardModelEpisode = ScorableEpisode & { episode?: { env?: string } };

/** A verifier whose score is the model's probability that the episode `toEpisode` gives is a verified success. */
export function rewardModelVerifier<Input>(
  name: string,
  model: RewardModelFile,
  toEpisode: (input: Input) => RewardModelEpisode | Promise<RewardModelEpisode>,
  options: RewardModelVerifierOptions = {},
): Verifier<Input> {
  requireName(name);
  const threshold = requireThreshold(options.threshold, name, 0.5);
  const summary = modelSummary(model);
  return defineVerifier(name, async (input: Input) => {
    const episode = await toEpisode(input);
    const env = episode.episode?.env;
    // A model fitted to one environment's trajectories says nothing about another's.
    if (env !== undefined && env !== model.trained_on.env) {
      throw new LlmixError("verifier_failed", `reward model "${name}" was trained on ${model.trained_on.env}, not ${env}`, {
        verifier: name,
        model_env: model.trained_on.env,
        env,
      });
    }
    const score = scoreEpisode(model, episode);
    return { score, passed: score >= threshold, details: { model: summary, score, threshold } };
  });
}

/** What a verdict says about the model that produced it: enough to tell two models apart. */
function modelSummary(model: RewardModelFile): Record<string, JsonValue> {
  const t = model.trained_on;
  const summary: Record<string, JsonValue> = {
    kind: model.kind,
    version: model.version,
    env: t.env,
    env_version: t.env_version,
    runs: [...t.runs],
    episodes: t.episodes,
    positives: t.positives,
    created_at: model.created_at,
    train_auroc: model.metrics.train_auroc,
  };
  if (model.metrics.heldout_auroc !== undefined) summary.heldout_auroc = model.metrics.heldout_auroc;
  return summary;
}
