/**
 * The in-process reward model: logistic regression over the hashed trajectory features of features.ts,
 * fitted to verified outcomes (label = outcome >= 1) by seeded mini-batch SGD with L2 regularisation.
 *
 * Small on purpose, and honest: it sees only what features.ts lets it see (never the reward or the
 * verdict), its training is deterministic for a seed and bounded in episodes and epochs, and the file
 * it produces says what it was trained on and how well it separated outcomes — on held-out episodes
 * when the caller gives some, which is the figure to trust.
 */
import { ValidationError } from "../../core/errors.js";
import { Rng } from "../../core/rng.js";
import type { StoredEpisode } from "../../store/types.js";
import {
  checkFeatureConfig,
  defaultFeatureConfig,
  featureDimension,
  featurize,
  type FeatureConfig,
  type ScorableEpisode,
  type SparseVector,
} from "./features.js";
import { REWARD_MODEL_KIND, REWARD_MODEL_VERSION, type RewardModelFile, type RewardModelMetrics } from "./file.js";
import { auroc } from "../calibration.js";
import { logLoss } from "./metrics.js";

export { loadRewardModel, serializeRewardModel, type RewardModelFile } from "./file.js";

/** Hard ceilings: whatever the options say, training stays a matter of seconds. */
export const MAX_TRAIN_EPISODES = 200_000;
export const MAX_TRAIN_EPOCHS = 500;

/** Options of `trainRewardModel`; every field has a default. */
export interface TrainRewardModelOptions {
  /** Seed of the example order (default 0). */
  seed?: number;
  /** Passes over the training episodes (default 30, at most MAX_TRAIN_EPOCHS). */
  epochs?: number;
  /** Initial learning rate; epoch e uses lr / sqrt(1 + e) (default 4: the hashed part of a vector has unit norm). */
  lr?: number;
  /** L2 penalty on the weights, not the bias (default 1e-4). */
  l2?: number;
  /** Episodes per SGD step (default 8). */
  batchSize?: number;
  /** More labelled episodes than this is an error, not a silent cut (default 20,000, at most MAX_TRAIN_EPISODES). */
  maxEpisodes?: number;
  /** Weights smaller in magnitude are left out of the file (default 1e-6). */
  pruneBelow?: number;
  /** Hashing settings other than the defaults of `defaultFeatureConfig`. */
  features?: Partial<Pick<FeatureConfig, "buckets" | "max_ngram" | "signed" | "max_chars_per_text" | "dense">>;
  /** Episodes kept out of training, to measure `heldout_auroc` on (same env and version). */
  holdout?: Iterable<StoredEpisode>;
  /** Clock for `created_at` (default: now). */
  now?: () => Date;
}

/**
 * The training label of a stored episode: 1 if its verified outcome is >= 1, 0 if below, null if it has
 * none (an infrastructure error, or it never ended) and must not be used.
 */
export function verifiedLabel(stored: StoredEpisode): 0 | 1 | null {
  const { status, outcome } = stored.episode;
  if (status !== "ok" || outcome === null || typeof outcome !== "number" || !Number.isFinite(outcome)) return null;
  return outcome >= 1 ? 1 : 0;
}

interface Example {
  x: SparseVector;
  y: 0 | 1;
}

/** Fits a reward model to the verified outcomes of stored episodes (all of one env and env version). */
export function trainRewardModel(episodes: Iterable<StoredEpisode>, options: TrainRewardModelOptions = {}): RewardModelFile {
  const seed = option(options.seed, 0, "seed", (v) => Number.isSafeInteger(v), "a safe integer");
  const epochs = option(options.epochs, 30, "epochs", (v) => Number.isInteger(v) && v >= 1 && v <= MAX_TRAIN_EPOCHS, `an integer in [1, ${MAX_TRAIN_EPOCHS}]`);
  const lr = option(options.lr, 4, "lr", (v) => v > 0 && v <= 10, "a number in (0, 10]");
  const l2 = option(options.l2, 1e-4, "l2", (v) => v >= 0 && v * lr < 1, "a number >= 0 with l2 * lr < 1");
  const batchSize = option(options.batchSize, 8, "batchSize", (v) => Number.isInteger(v) && v >= 1 && v <= 65_536, "an integer in [1, 65536]");
  const maxEpisodes = option(options.maxEpisodes, 20_000, "maxEpisodes", (v) => Number.isInteger(v) && v >= 2 && v <= MAX_TRAIN_EPISODES, `an integer in [2, ${MAX_TRAIN_EPISODES}]`);
  const pruneBelow = option(options.pruneBelow, 1e-6, "pruneBelow", (v) => v >= 0 && v < 1, "a number in [0, 1)");
  const features = checkFeatureConfig({ ...defaultFeatureConfig(), ...options.features }, "features");

  const identity: { env?: string; env_version?: string } = {};
  const runs = new Set<string>();
  let skipped = 0;
  const train: Example[] = [];
  for (const stored of episodes) {
    const y = verifiedLabel(stored);
    if (y === null) {
      skipped++;
      continue;
    }
    if (train.length >= maxEpisodes) {
      throw new ValidationError("invalid_argument", `more than ${maxEpisodes} labelled episodes to train on; select fewer runs or raise maxEpisodes (at most ${MAX_TRAIN_EPISODES})`, {
        max_episodes: maxEpisodes,
      });
    }
    sameEnvironment(identity, stored, "training");
    runs.add(stored.episode.run_id);
    train.push({ x: featurize(stored.steps, features), y });
  }
  const positives = train.reduce((a, e) => a + e.y, 0);
  if (positives === 0 || positives === train.length) {
    throw new ValidationError(
      "invalid_argument",
      `cannot train a reward model on ${train.length} labelled episodes with ${positives} verified successes: both outcomes must occur`,
      { episodes: train.length, positives, skipped },
    );
  }
  const holdout: Example[] = [];
  for (const stored of options.holdout ?? []) {
    const y = verifiedLabel(stored);
    if (y === null) continue;
    sameEnvironment(identity, stored, "held-out");
    holdout.push({ x: featurize(stored.steps, features), y });
  }

  const { weights, bias } = fit(train, featureDimension(features), { seed, epochs, lr, l2, batchSize });
  const stored: Array<[number, number]> = [];
  for (let j = 0; j < weights.length; j++) {
    const w = weights[j]!;
    if (Math.abs(w) >= pruneBelow && w !== 0) stored.push([j, round(w)]);
  }
  const model: RewardModelFile = {
    kind: REWARD_MODEL_KIND,
    version: REWARD_MODEL_VERSION,
    features,
    weights: stored,
    bias: round(bias),
    trained_on: {
      runs: [...runs].sort(),
      episodes: train.length,
      positives,
      skipped,
      env: identity.env!,
      env_version: identity.env_version!,
    },
    training: { algorithm: "logistic-regression-sgd", epochs, lr, l2, batch_size: batchSize, seed, prune_below: pruneBelow },
    metrics: { train_auroc: 0, train_log_loss: 0 },
    created_at: (options.now ?? (() => new Date()))().toISOString(),
  };
  // Measured with the rounded, pruned weights: the figures describe the file, not the float arrays.
  model.metrics = measure(model, train, holdout);
  return model;
}

/** The model's probability that an episode is a verified success, in [0, 1]. */
export function scoreEpisode(model: RewardModelFile, episode: ScorableEpisode): number {
  return scoreVector(model, featurize(episode.steps, model.features));
}

/** The model's probability for an already-featurised trajectory (featurised with `model.features`). */
export function scoreVector(model: RewardModelFile, x: SparseVector): number {
  return sigmoid(dot(denseWeights(model), x) + model.bias);
}

const DENSE_CACHE = new WeakMap<RewardModelFile, Float64Array>();

/** The weights as a dense array, built once per model object (models are not mutated after loading). */
function denseWeights(model: RewardModelFile): Float64Array {
  let w = DENSE_CACHE.get(model);
  if (w === undefined) {
    w = new Float64Array(featureDimension(model.features));
    for (const [j, v] of model.weights) w[j] = v;
    DENSE_CACHE.set(model, w);
  }
  return w;
}

interface FitSettings {
  seed: number;
  epochs: number;
  lr: number;
  l2: number;
  batchSize: number;
}

/**
 * Mini-batch SGD on the mean log loss plus (l2 / 2)·|w|². The weights are kept as scale·v so the
 * per-step L2 shrink costs one multiplication instead of a pass over all 2^18 buckets.
 */
function fit(examples: readonly Example[], dimension: number, s: FitSettings): { weights: Float64Array; bias: number } {
  const v = new Float64Array(dimension);
  let scale = 1;
  let bias = 0;
  const stream = Rng.fromKey("llmix.reward-model.train", s.seed);
  const indices = examples.map((_, i) => i);
  const gradients = new Float64Array(s.batchSize);
  for (let epoch = 0; epoch < s.epochs; epoch++) {
    const order = stream.fork(`epoch-${epoch}`).shuffle(indices);
    const rate = s.lr / Math.sqrt(1 + epoch);
    for (let start = 0; start < order.length; start += s.batchSize) {
      const end = Math.min(order.length, start + s.batchSize);
      const m = end - start;
      // Gradients first, all from the same weights: a true mini-batch step.
      let biasGradient = 0;
      for (let k = 0; k < m; k++) {
        const e = examples[order[start + k]!]!;
        const g = sigmoid(scale * dot(v, e.x) + bias) - e.y;
        gradients[k] = g;
        biasGradient += g;
      }
      scale *= 1 - rate * s.l2;
      const step = rate / (m * scale);
      for (let k = 0; k < m; k++) {
        const g = gradients[k]!;
        if (g === 0) continue;
        const { indices: idx, values } = examples[order[start + k]!]!.x;
        for (let t = 0; t < idx.length; t++) v[idx[t]!]! -= step * g * values[t]!;
      }
      bias -= (rate * biasGradient) / m;
      if (scale < 1e-6) {
        for (let j = 0; j < dimension; j++) v[j]! *= scale;
        scale = 1;
      }
    }
  }
  for (let j = 0; j < dimension; j++) v[j]! *= scale;
  return { weights: v, bias };
}

/** Train and held-out figures of a finished model. */
function measure(model: RewardModelFile, train: readonly Example[], holdout: readonly Example[]): RewardModelMetrics {
  const score = (set: readonly Example[]): { p: number[]; y: number[] } => ({
    p: set.map((e) => scoreVector(model, e.x)),
    y: set.map((e) => e.y),
  });
  const t = score(train);
  const metrics: RewardModelMetrics = {
    train_auroc: round(auroc(t.p, t.y) ?? 0.5),
    train_log_loss: round(logLoss(t.p, t.y)),
  };
  if (holdout.length > 0) {
    const h = score(holdout);
    const a = auroc(h.p, h.y);
    // A held-out set with one outcome only has no AUROC; its size and loss are still reported.
    if (a !== null) metrics.heldout_auroc = round(a);
    metrics.heldout_log_loss = round(logLoss(h.p, h.y));
    metrics.heldout_episodes = holdout.length;
    metrics.heldout_positives = h.y.reduce((a2, y) => a2 + y, 0);
  }
  return metrics;
}

/** Records the first episode's env and version; refuses any episode of another. */
function sameEnvironment(identity: { env?: string; env_version?: string }, stored: StoredEpisode, set: string): void {
  const { env, env_version: version, episode_id: id } = stored.episode;
  if (identity.env === undefined) {
    identity.env = env;
    identity.env_version = version;
    return;
  }
  if (env !== identity.env || version !== identity.env_version) {
    throw new ValidationError(
      "invalid_argument",
      `${set} episode ${id} is of ${env}@${version}, but the model is trained on ${identity.env}@${identity.env_version}: a reward model is fitted to one environment version`,
      { episode_id: id, env, env_version: version, expected_env: identity.env, expected_env_version: identity.env_version },
    );
  }
}

function option(value: number | undefined, fallback: number, name: string, ok: (v: number) => boolean, expected: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || !ok(value)) {
    throw new ValidationError("invalid_argument", `trainRewardModel: ${name} must be ${expected}, got ${String(value)}`, { option: name });
  }
  return value;
}

function dot(w: Float64Array, x: SparseVector): number {
  const { indices, values } = x;
  let sum = 0;
  for (let t = 0; t < indices.length; t++) sum += w[indices[t]!]! * values[t]!;
  return sum;
}

function sigmoid(z: number): number {
  if (z >= 0) return 1 / (1 + Math.exp(-z));
  const e = Math.exp(z);
  return e / (1 + e);
}

/** Six significant digits: plenty for a linear model's weights, and a file a third the size. */
function round(x: number): number {
  return x === 0 ? 0 : Number(x.toPrecision(6));
}
