/**
 * Hard negatives mined from a policy's failures (issue 17): group a run's episodes by the scenario
 * their task is (its difficulty and declared features, features.ts), and draw *new* tasks of the
 * scenarios that failed — same features, fresh ids, so every surface detail (names, amounts, dates,
 * the world's other records) is new. Never a task of the run itself, never an eval-split id: a mined
 * set is training data. The set records where it came from.
 */
import { ValidationError } from "../core/errors.js";
import type { TaskGenerator } from "./generator.js";
import { featuresOf, hasFeatures, idsOfSplit, scenarioKey, type TaskFeatures } from "./features.js";
import { parseTaskId } from "./task-id.js";

/** A named set of task ids on disk (`llmix mine` writes one; `rollout --tasks-file` and mixes read it). */
export interface TaskSet {
  kind: "llmix-task-set";
  version: 1;
  name: string;
  env: string;
  created_at: string;
  /** Where the set came from. */
  source: { run_id: string; policy: string; episodes: number; failures: number; seed: number; scenarios: MinedScenario[] };
  task_ids: string[];
}

/** One failing scenario of the run and what was mined from it. */
export interface MinedScenario {
  difficulty: string;
  features: TaskFeatures;
  episodes: number;
  failures: number;
  /** New tasks drawn of this scenario: `exact` of the same features, the rest of the same scenario and knobs with other parameters. */
  mined: number;
  /** Of `mined`, tasks whose parameters differ (the scenario and knobs match): found when exact ones were too rare. */
  perturbed: number;
}

/** What mining reads of an episode. */
export interface EpisodeOutcome {
  task_id: string;
  status: string;
  outcome: number | null;
}

/** Draws tried per wanted task before a rare scenario is given up (the rest goes to other scenarios). */
const TRIES_PER_TASK = 400;

/**
 * Mine `n` new task ids near the failures among `episodes` (an episode fails when it errored or its
 * outcome is below 1). Scenarios get tasks in proportion to their failures times their cell's failure
 * rate (see below), each failing scenario at least one while `n` allows, heaviest first. Deterministic
 * for a seed.
 */
export function mineHardNegatives<Task>(
  generator: TaskGenerator<Task>,
  episodes: readonly EpisodeOutcome[],
  options: { n: number; seed?: number },
): { task_ids: string[]; failures: number; scenarios: MinedScenario[] } {
  if (!hasFeatures(generator)) throw new ValidationError("invalid_argument", "this environment declares no task features, so its failures cannot be grouped (TaskGenerator.features)");
  if (!Number.isSafeInteger(options.n) || options.n < 1 || options.n > 100_000) throw new ValidationError("invalid_argument", `n must be an integer in [1, 100000], got ${options.n}`);
  const declared = generator.features.declared;
  const family = generator.families[0] as string;
  const seen = new Set(episodes.map((e) => e.task_id));
  const byTask = new Map<string, { difficulty: string; features: TaskFeatures; key: string }>();
  const groups = new Map<string, MinedScenario & { key: string }>();
  let failures = 0;
  for (const e of episodes) {
    let task = byTask.get(e.task_id);
    if (!task) {
      const features = featuresOf(generator, e.task_id);
      const difficulty = parseTaskId(e.task_id).difficulty;
      task = { difficulty, features, key: `${difficulty}|${scenarioKey(features, declared)}` };
      byTask.set(e.task_id, task);
    }
    const group = groups.get(task.key) ?? { key: task.key, difficulty: task.difficulty, features: task.features, episodes: 0, failures: 0, mined: 0, perturbed: 0 };
    groups.set(task.key, group);
    group.episodes++;
    const failed = e.status !== "ok" || e.outcome === null || e.outcome < 1;
    if (failed) {
      group.failures++;
      failures++;
    }
  }
  // Near a failure: the same features first; where those are too rare (a held-out eval combination has
  // none in train), the same scenario and adversarial knobs with perturbed parameters.
  const core = declared.filter((f) => f.kind !== "parameter");
  const coreKey = (difficulty: string, features: TaskFeatures) => `${difficulty}|${scenarioKey(features, core)}`;
  // With hundreds of scenarios most are seen once, so a scenario's own failures say little; its core cell's
  // failure rate (scenario and knobs, over every episode of the run, Laplace-smoothed) says which failures
  // are the policy's weakness rather than noise. A scenario weighs its failures times that rate.
  const cells = new Map<string, { episodes: number; failures: number }>();
  for (const g of groups.values()) {
    const cell = cells.get(coreKey(g.difficulty, g.features)) ?? { episodes: 0, failures: 0 };
    cell.episodes += g.episodes;
    cell.failures += g.failures;
    cells.set(coreKey(g.difficulty, g.features), cell);
  }
  const weight = (g: MinedScenario) => {
    const cell = cells.get(coreKey(g.difficulty, g.features)) as { episodes: number; failures: number };
    return g.failures * ((cell.failures + 1) / (cell.episodes + 2));
  };
  const failing = [...groups.values()].filter((g) => g.failures > 0).sort((a, b) => weight(b) - weight(a) || b.failures - a.failures || a.key.localeCompare(b.key));
  if (failing.length === 0) return { task_ids: [], failures: 0, scenarios: [] };
  const quota = allocate(options.n, failing.map(weight));
  const taskIds: string[] = [];
  failing.forEach((group, i) => {
    const want = quota[i] as number;
    const wantCore = coreKey(group.difficulty, group.features);
    for (const exact of [true, false]) {
      if (!exact && core.length === declared.length) break;
      const ids = idsOfSplit(family, group.difficulty, "train", options.seed ?? 0);
      for (let tries = 0; group.mined < want && tries < want * TRIES_PER_TASK; tries++) {
        const id = ids.next().value as string;
        if (seen.has(id)) continue;
        const features = featuresOf(generator, id);
        if (exact ? `${group.difficulty}|${scenarioKey(features, declared)}` !== group.key : coreKey(group.difficulty, features) !== wantCore) continue;
        seen.add(id);
        taskIds.push(id);
        group.mined++;
        if (!exact) group.perturbed++;
      }
    }
  });
  return { task_ids: taskIds, failures, scenarios: failing.map(({ key: _key, ...rest }) => rest) };
}

/** Split `n` over weights in proportion (largest remainders), after one each to the first `n` (the heaviest). */
function allocate(n: number, weights: readonly number[]): number[] {
  const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
  const out: number[] = weights.map((_, i) => (i < n ? 1 : 0));
  const rest = n - sum(out);
  if (rest <= 0) return out;
  const exact = weights.map((w) => (rest * w) / sum(weights));
  exact.forEach((x, i) => (out[i] = (out[i] as number) + Math.floor(x)));
  let left = n - sum(out);
  const byRemainder = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of byRemainder) {
    if (left-- <= 0) break;
    out[i] = (out[i] as number) + 1;
  }
  return out;
}

/** Read a task set (a file's parsed JSON); invalid_argument naming what is wrong. */
export function parseTaskSet(value: unknown, where: string): TaskSet {
  const set = value as Partial<TaskSet> | null;
  if (!set || typeof set !== "object" || set.kind !== "llmix-task-set") throw new ValidationError("invalid_argument", `${where}: not a task set (kind must be "llmix-task-set")`);
  if (set.version !== 1) throw new ValidationError("invalid_argument", `${where}: task set version ${String(set.version)} is not supported (1 is)`);
  if (typeof set.env !== "string" || typeof set.name !== "string") throw new ValidationError("invalid_argument", `${where}: a task set needs "name" and "env"`);
  if (!Array.isArray(set.task_ids) || set.task_ids.some((id) => typeof id !== "string")) throw new ValidationError("invalid_argument", `${where}: "task_ids" must be an array of task ids`);
  return set as TaskSet;
}
