/**
 * Train and eval splits, disjoint by construction: a task id's split is a pure function of the id, so
 * no id can ever be in both. `llmix check` also confirms that no generated *content* is shared.
 */
import { createHash } from "node:crypto";
import { ValidationError } from "../core/errors.js";
import { Rng } from "../core/rng.js";
import { formatTaskId, parseTaskId } from "./task-id.js";

export const SPLITS = ["train", "eval"] as const;
export type Split = (typeof SPLITS)[number];

/** Share of ids that belong to the eval split. */
export const EVAL_FRACTION = 0.1;

/** The split a task id belongs to. */
export function splitOf(taskId: string): Split {
  const { id } = parseTaskId(taskId);
  const bucket = createHash("sha256").update(`split\u241f${id}`).digest().readUInt32LE(0) / 0x100000000;
  return bucket < EVAL_FRACTION ? "eval" : "train";
}

/** Parse a split name with a clear error. */
export function parseSplit(raw: unknown): Split {
  if (raw === "train" || raw === "eval") return raw;
  throw new ValidationError("invalid_argument", `unknown split "${String(raw)}"; valid: ${SPLITS.join(", ")}`);
}

/** What to sample. */
export interface SampleOptions {
  family: string;
  difficulties: readonly string[];
  n: number;
  split?: Split;
  /** Sampling seed: the same options always give the same ids. */
  seed?: number;
}

/**
 * Sample n distinct task ids per the options, spread round-robin over the difficulties, in a stable
 * order. Seeds in ids are drawn from [0, 2^31) so they do not cluster at seed-0..n.
 */
export function sampleTaskIds(options: SampleOptions): string[] {
  const { family, difficulties, n, split, seed = 0 } = options;
  if (!Number.isSafeInteger(n) || n < 0) throw new ValidationError("invalid_argument", `n must be an integer >= 0, got ${n}`);
  if (difficulties.length === 0) throw new ValidationError("invalid_argument", "at least one difficulty is needed");
  if (split !== undefined) parseSplit(split);
  // Parsing one id per difficulty checks the family and difficulty segments.
  for (const difficulty of difficulties) parseTaskId(formatTaskId(family, difficulty, 0));
  const rng = Rng.fromKey("sample", family, difficulties.join(","), split ?? "any", seed);
  const ids: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; ids.length < n; i++) {
    const difficulty = difficulties[i % difficulties.length] as string;
    let id: string;
    do {
      id = formatTaskId(family, difficulty, rng.int(0, 0x7fffffff));
    } while (seen.has(id) || (split !== undefined && splitOf(id) !== split));
    seen.add(id);
    ids.push(id);
  }
  return ids;
}

/** Share of a held-out difficulty's scenario combinations that belong to the eval split. */
export const EVAL_SCENARIO_FRACTION = 0.15;

/**
 * The split a scenario combination belongs to: a hash of the environment, the difficulty and the
 * scenario's key (features.ts scenarioKey), EVAL_SCENARIO_FRACTION of them eval. Environments use it so
 * that eval holds out whole combinations, not only ids.
 */
export function combinationSplit(envId: string, difficulty: string, key: string): Split {
  const bucket = createHash("sha256").update(`holdout\u241f${envId}\u241f${difficulty}\u241f${key}`).digest().readUInt32LE(0) / 0x100000000;
  return bucket < EVAL_SCENARIO_FRACTION ? "eval" : "train";
}

/** Draws before drawHeldOut keeps a scenario of the other split (options that leave none of the id's). */
const MAX_HELD_OUT_DRAWS = 200;

/**
 * Draw a scenario whose combination is in the task id's split `want`: `draw` is called again (on the
 * task's own rng, so deterministically) while `splitOfScenario` names the other split. A null split means
 * the difficulty is not held out by combination. Options that leave no combination of the id's split keep
 * the last draw (forced scenarios are for tests and curricula, not for the splits).
 */
export function drawHeldOut<Scenario>(want: Split, draw: () => Scenario, splitOfScenario: (scenario: Scenario) => Split | null): Scenario {
  for (let k = 1; ; k++) {
    const scenario = draw();
    const split = splitOfScenario(scenario);
    if (split === null || split === want || k >= MAX_HELD_OUT_DRAWS) return scenario;
  }
}
