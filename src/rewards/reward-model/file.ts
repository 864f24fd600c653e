/**
 * The reward-model file: versioned JSON that `llmix rm train` writes and the `reward-model` verifier
 * loads. Everything needed to score (the feature configuration, the weights) and to judge the model
 * (what it was trained on, how, and how well it separated outcomes) travels in the one file.
 */
import { ValidationError } from "../../core/errors.js";
import { checkFeatureConfig, featureDimension, type FeatureConfig } from "./features.js";

/** The `kind` every reward-model file carries. */
export const REWARD_MODEL_KIND = "llmix-reward-model";
/** The file version this code writes and reads. */
export const REWARD_MODEL_VERSION = 1;

/** What the model was fitted to. */
export interface RewardModelTrainedOn {
  /** Run ids of the training episodes, sorted. */
  runs: string[];
  /** Labelled episodes used. */
  episodes: number;
  /** Of those, verified successes (outcome >= 1). */
  positives: number;
  /** Episodes passed in but not used: infrastructure errors or no outcome. */
  skipped: number;
  env: string;
  env_version: string;
}

/** How it was fitted. */
export interface RewardModelTraining {
  algorithm: "logistic-regression-sgd";
  epochs: number;
  lr: number;
  l2: number;
  batch_size: number;
  seed: number;
  /** Weights smaller than this in magnitude were dropped from the file. */
  prune_below: number;
}

/** How well it separates verified successes from failures (computed with the weights as stored). */
export interface RewardModelMetrics {
  train_auroc: number;
  train_log_loss: number;
  heldout_auroc?: number;
  heldout_log_loss?: number;
  heldout_episodes?: number;
  heldout_positives?: number;
}

/** A reward-model file (version 1). */
export interface RewardModelFile {
  kind: typeof REWARD_MODEL_KIND;
  version: typeof REWARD_MODEL_VERSION;
  features: FeatureConfig;
  /** Nonzero weights only, as [index, weight] pairs in ascending index order. */
  weights: Array<[number, number]>;
  bias: number;
  trained_on: RewardModelTrainedOn;
  training: RewardModelTraining;
  metrics: RewardModelMetrics;
  created_at: string;
}

/** The file as JSON text (one line: the weights make it long, and nobody reads them by eye). */
export function serializeRewardModel(model: RewardModelFile): string {
  return `${JSON.stringify(model)}\n`;
}

/**
 * Parses and validates a reward-model file (JSON text or an already-parsed value). A malformed file, a
 * file of another kind or of a newer version is refused with ValidationError("invalid_argument") that
 * names the problem; a valid file is returned as a fresh, typed object.
 */
export function loadRewardModel(json: unknown): RewardModelFile {
  let value = json;
  if (typeof json === "string") {
    try {
      value = JSON.parse(json);
    } catch (error) {
      throw invalid(`is not JSON (${(error as Error).message})`, "");
    }
  }
  const root = record(value, "");
  if (root.kind !== REWARD_MODEL_KIND) throw invalid(`kind is ${JSON.stringify(root.kind)}, expected "${REWARD_MODEL_KIND}"`, "kind");
  const version = root.version;
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1) throw invalid(`version must be a positive integer, got ${JSON.stringify(version)}`, "version");
  if (version > REWARD_MODEL_VERSION) {
    throw invalid(`version ${version} is newer than this LLMix reads (${REWARD_MODEL_VERSION}); upgrade LLMix`, "version");
  }

  const f = record(root.features, "features");
  const features: FeatureConfig = {
    scheme: f.scheme as FeatureConfig["scheme"],
    version: f.version as FeatureConfig["version"],
    hash: f.hash as FeatureConfig["hash"],
    buckets: f.buckets as number,
    max_ngram: f.max_ngram as FeatureConfig["max_ngram"],
    signed: f.signed as boolean,
    max_chars_per_text: f.max_chars_per_text as number,
    dense: Array.isArray(f.dense) ? [...(f.dense as FeatureConfig["dense"])] : (f.dense as FeatureConfig["dense"]),
  };
  try {
    checkFeatureConfig(features, "reward model file: features");
  } catch (error) {
    if (error instanceof ValidationError) throw invalid(error.message.replace(/^reward model file: features: /, ""), "features");
    throw error;
  }

  const dimension = featureDimension(features);
  if (!Array.isArray(root.weights)) throw invalid("weights must be an array of [index, weight] pairs", "weights");
  const weights: Array<[number, number]> = [];
  let last = -1;
  root.weights.forEach((pair: unknown, i: number) => {
    if (!Array.isArray(pair) || pair.length !== 2) throw invalid(`weights[${i}] is not an [index, weight] pair`, "weights");
    const [index, weight] = pair as [unknown, unknown];
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= dimension) {
      throw invalid(`weights[${i}] index ${JSON.stringify(index)} is outside [0, ${dimension})`, "weights");
    }
    if (index <= last) throw invalid(`weights[${i}] index ${index} is not above the previous one (${last}): indices must ascend without repeats`, "weights");
    if (typeof weight !== "number" || !Number.isFinite(weight)) throw invalid(`weights[${i}] weight is not a finite number`, "weights");
    last = index;
    weights.push([index, weight]);
  });
  const bias = finite(root.bias, "bias");

  const t = record(root.trained_on, "trained_on");
  if (!Array.isArray(t.runs) || !t.runs.every((r) => typeof r === "string")) throw invalid("trained_on.runs must be an array of run ids", "trained_on.runs");
  const trainedOn: RewardModelTrainedOn = {
    runs: [...(t.runs as string[])],
    episodes: count(t.episodes, "trained_on.episodes"),
    positives: count(t.positives, "trained_on.positives"),
    skipped: count(t.skipped, "trained_on.skipped"),
    env: text(t.env, "trained_on.env"),
    env_version: text(t.env_version, "trained_on.env_version"),
  };
  if (trainedOn.positives > trainedOn.episodes) throw invalid("trained_on.positives exceeds trained_on.episodes", "trained_on.positives");

  const g = record(root.training, "training");
  if (g.algorithm !== "logistic-regression-sgd") throw invalid(`training.algorithm ${JSON.stringify(g.algorithm)} is unknown`, "training.algorithm");
  const training: RewardModelTraining = {
    algorithm: "logistic-regression-sgd",
    epochs: count(g.epochs, "training.epochs"),
    lr: finite(g.lr, "training.lr"),
    l2: finite(g.l2, "training.l2"),
    batch_size: count(g.batch_size, "training.batch_size"),
    seed: finite(g.seed, "training.seed"),
    prune_below: finite(g.prune_below, "training.prune_below"),
  };

  const m = record(root.metrics, "metrics");
  const metrics: RewardModelMetrics = {
    train_auroc: unit(m.train_auroc, "metrics.train_auroc"),
    train_log_loss: finite(m.train_log_loss, "metrics.train_log_loss"),
  };
  if (m.heldout_auroc !== undefined) metrics.heldout_auroc = unit(m.heldout_auroc, "metrics.heldout_auroc");
  if (m.heldout_log_loss !== undefined) metrics.heldout_log_loss = finite(m.heldout_log_loss, "metrics.heldout_log_loss");
  if (m.heldout_episodes !== undefined) metrics.heldout_episodes = count(m.heldout_episodes, "metrics.heldout_episodes");
  if (m.heldout_positives !== undefined) metrics.heldout_positives = count(m.heldout_positives, "metrics.heldout_positives");

  const createdAt = text(root.created_at, "created_at");
  if (!Number.isFinite(Date.parse(createdAt))) throw invalid(`created_at ${JSON.stringify(createdAt)} is not a date`, "created_at");

  return {
    kind: REWARD_MODEL_KIND,
    version: REWARD_MODEL_VERSION,
    features,
    weights,
    bias,
    trained_on: trainedOn,
    training,
    metrics,
    created_at: createdAt,
  };
}

function invalid(problem: string, field: string): ValidationError {
  return new ValidationError("invalid_argument", `reward model file: ${field ? `${field}: ` : ""}${problem}`, { field: field || null, problem });
}

function record(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid("must be an object", field);
  return value as Record<string, unknown>;
}

function finite(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value)) throw invalid(`must be a finite number, got ${JSON.stringify(value)}`, field);
  return value;
}

function unit(value: unknown, field: string): number {
  const v = finite(value, field);
  if (v < 0 || v > 1) throw invalid(`must be in [0, 1], got ${v}`, field);
  return v;
}

function count(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw invalid(`must be a non-negative integer, got ${JSON.stringify(value)}`, field);
  return value;
}

function text(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0) throw invalid(`must be a non-empty string, got ${JSON.stringify(value)}`, field);
  return value;
}
