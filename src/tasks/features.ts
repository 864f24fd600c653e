/**
 * Task features: what an environment says makes two tasks the same scenario (issue 17). A generator
 * declares its features — the scenario family, adversarial knobs (an injection, a decoy, a failing
 * gateway), and parameters that change the solution (a tier, a remedy) — and computes them from a
 * generated task. Everything else a task id decides (names, amounts, dates) is surface: two tasks with
 * the same features are one scenario with different surfaces.
 *
 * Features are what the rest of the loop reasons with: `llmix tasks --stats` counts distinct scenarios
 * per difficulty and split, a sampler can weigh knobs, and `llmix mine` groups a policy's failures by
 * feature to draw new tasks near them.
 */
import { ValidationError } from "../core/errors.js";
import { Rng } from "../core/rng.js";
import { generateTask, type TaskGenerator } from "./generator.js";
import { splitOf, type Split } from "./splits.js";
import { formatTaskId } from "./task-id.js";

/** A task's features: name -> value. */
export type TaskFeatures = Readonly<Record<string, string | number | boolean>>;

/** One declared feature. */
export interface FeatureSpec {
  name: string;
  /** scenario: what the task is about; knob: an adversarial condition; parameter: a value the solution depends on. */
  kind: "scenario" | "knob" | "parameter";
  description: string;
}

/** What a generator declares about its tasks' features. */
export interface TaskFeatureSet<Task> {
  declared: readonly FeatureSpec[];
  /** The features of a generated task (must name exactly the declared features). */
  of(task: Task): TaskFeatures;
}

/** A generator that declares features. */
export type FeaturedGenerator<Task> = TaskGenerator<Task> & { features: TaskFeatureSet<Task> };

/** Whether the generator declares features. */
export function hasFeatures<Task>(generator: TaskGenerator<Task>): generator is FeaturedGenerator<Task> {
  return generator.features !== undefined;
}

/** The features of a task id (its task is generated; throws invalid_task_id for a bad id). */
export function featuresOf<Task>(generator: TaskGenerator<Task>, taskId: string): TaskFeatures {
  if (!hasFeatures(generator)) throw new ValidationError("invalid_argument", `this environment declares no task features (TaskGenerator.features)`);
  const features = generator.features.of(generateTask(generator, taskId).task);
  const declared = generator.features.declared.map((f) => f.name);
  const missing = declared.filter((name) => !(name in features));
  if (missing.length > 0) throw new ValidationError("invalid_argument", `task ${taskId}: features ${missing.join(", ")} are declared but not computed`);
  return features;
}

/** The scenario a set of features is: its values in declared order, e.g. "duplicate-charge|injection|2". */
export function scenarioKey(features: TaskFeatures, declared: readonly FeatureSpec[]): string {
  return declared.map((f) => String(features[f.name])).join("|");
}

/** How many distinct scenarios a difficulty has, by split, from a sample of task ids. */
export interface ScenarioStats {
  difficulty: string;
  /** Task ids looked at per split. */
  samples: number;
  train: number;
  eval: number;
  /** Scenarios that occur in both splits (0 when eval holds out whole combinations). */
  shared: number;
  /** Per feature: value -> share of the train sample. */
  values: Record<string, Record<string, number>>;
}

/** Task ids of a cell in a split, in index order from a seeded start (deterministic). */
export function* idsOfSplit(family: string, difficulty: string, split: Split, seed = 0): Generator<string> {
  const rng = Rng.fromKey("llmix/feature-scan", family, difficulty, seed);
  for (;;) {
    const id = formatTaskId(family, difficulty, rng.int(0, 0x7fffffff));
    if (splitOf(id) === split) yield id;
  }
}

/**
 * Count distinct scenarios per difficulty: `samples` ids of each split are generated and keyed by
 * their features. A scenario space larger than the sample is reported as at least the count found.
 */
export function scenarioStats<Task>(generator: TaskGenerator<Task>, options: { samples?: number; seed?: number } = {}): ScenarioStats[] {
  if (!hasFeatures(generator)) throw new ValidationError("invalid_argument", "this environment declares no task features (TaskGenerator.features)");
  const samples = options.samples ?? 2000;
  if (!Number.isSafeInteger(samples) || samples < 1 || samples > 1_000_000) throw new ValidationError("invalid_argument", `samples must be an integer in [1, 1000000], got ${samples}`);
  const family = generator.families[0] as string;
  const declared = generator.features.declared;
  return generator.difficulties.map((difficulty) => {
    const keys: Record<Split, Set<string>> = { train: new Set(), eval: new Set() };
    const values: Record<string, Record<string, number>> = Object.fromEntries(declared.map((f) => [f.name, {}]));
    for (const split of ["train", "eval"] as const) {
      const ids = idsOfSplit(family, difficulty, split, options.seed);
      for (let i = 0; i < samples; i++) {
        const features = featuresOf(generator, ids.next().value as string);
        keys[split].add(scenarioKey(features, declared));
        if (split === "train") {
          for (const f of declared) {
            const counts = values[f.name] as Record<string, number>;
            const value = String(features[f.name]);
            counts[value] = (counts[value] ?? 0) + 1 / samples;
          }
        }
      }
    }
    const shared = [...keys.eval].filter((k) => keys.train.has(k)).length;
    return { difficulty, samples, train: keys.train.size, eval: keys.eval.size, shared, values };
  });
}
