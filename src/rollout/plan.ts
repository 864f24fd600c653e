/**
 * A rollout run's plan: which tasks, seeds and group indexes it has, as episode jobs with deterministic
 * ids. The plan is a pure function of the run id and its config, so `--resume` rebuilds the same jobs
 * and runs only those whose episodes are not in the store yet.
 *
 * With a task sampler (src/tasks/sampler.ts): a mix or a schedule draws the run's tasks up front, from
 * the sampler's seed. An adaptive curriculum cannot: which tasks come next depends on how the last ones
 * went. Its run comes in waves of `batch_groups` groups; each wave is drawn after the previous one's
 * outcomes were fed to the sampler, in plan order. Since those outcomes are in the store, a resume
 * feeds the same outcomes in the same order and draws the same waves: the sampler's state is rebuilt
 * from the run, never stored beside it.
 */
import { ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import type { AnyEnvironment } from "../core/registry.js";
import { Rng } from "../core/rng.js";
import { featuresOf } from "../tasks/features.js";
import { TaskSampler, type SamplerSpec } from "../tasks/sampler.js";
import { parseSplit, sampleTaskIds, type Split } from "../tasks/splits.js";
import { parseTaskId } from "../tasks/task-id.js";
import { parseRedactionRules, type RedactionRules } from "../store/redaction.js";
import { checkTenant } from "../store/records.js";
import { episodeIdOf } from "../store/types.js";
import type { EpisodeJob } from "./episode.js";

/** What a run does; stored with the run (plain JSON) so it can be resumed. */
export interface RolloutConfig {
  env: string;
  policy: string;
  policy_checkpoint: string | null;
  /** Episodes in the run: groups × group size (rounded up to whole groups). */
  n: number;
  /** Rollouts per task with the same seed (a GRPO group). */
  group: number;
  /** Difficulties to sample from (all of the env's when empty). */
  difficulties: string[];
  split: Split | null;
  /** Explicit task ids instead of sampling. */
  task_ids: string[] | null;
  /** Seed of task sampling and episode seeds. */
  seed: number;
  /** Per-episode wall-clock limit. */
  timeout_ms: number;
  /** Environment options (e.g. maxSteps) passed to every instance. */
  env_options: Record<string, JsonValue>;
  /** Absolute paths of `--module` files, so workers and resumes load the same environments. */
  modules: string[];
  /**
   * What group advantages are computed on (default "reward"; runs stored before the option have none):
   * "reward", each episode's total reward, step and tool costs included; "outcome", the verifier's
   * outcome alone (see ADVANTAGE_ON).
   */
  advantage_on?: AdvantageOn;
  /** Draw the tasks with a sampler (`--mix FILE`, `--curriculum FILE`) instead of uniformly over `difficulties`. */
  sampler?: RolloutSampler;
  /**
   * The data policy's redaction rules (src/store/redaction.ts): every step record and episode row is
   * redacted on the thread that ran it, before it is stored. Kept with the run, so a resume redacts alike.
   */
  redaction?: RedactionRules;
  /** The tenant whose data the run is (the run record's `tenant`); absent: the deployment's. */
  tenant?: string;
}

/** A run's task sampler: its spec (seeded by the run's seed, in the run's split). */
export interface RolloutSampler {
  spec: SamplerSpec;
  /** A mix or schedule: the training step whose weights apply (default 0). */
  train_step?: number;
  /** A curriculum: groups per wave (default 8); each wave is drawn after the previous one's outcomes. */
  batch_groups?: number;
  /** Named task sets the spec weighs as cells "set:NAME" (their ids, kept in the run so a resume draws the same). */
  sets?: Record<string, string[]>;
}

/**
 * The values an advantage can be computed on. "reward" ranks a group's episodes by everything they
 * earned and paid (so of two successes the cheaper one is preferred: a group where all succeed still
 * has nonzero advantages); "outcome" ranks them by success alone (an all-success group has advantages
 * 0 and teaches nothing, as in RLVR with a binary verifier).
 */
export const ADVANTAGE_ON = ["reward", "outcome"] as const;
export type AdvantageOn = (typeof ADVANTAGE_ON)[number];

/**
 * The longest episode time limit: half of the longest timer Node keeps (2^31 - 1 ms; a longer one fires
 * at once), so the limit plus the watchdog's grace (at most 5% more) always fits in a timer.
 */
export const MAX_TIMEOUT_MS = 2 ** 30;

/** Check a config's shape and values; errors name the field. */
export function validateConfig(config: RolloutConfig): RolloutConfig {
  const bad = (field: string, why: string) => new ValidationError("invalid_argument", `${field} ${why}`, { field });
  if (!Number.isSafeInteger(config.n) || config.n < 1) throw bad("n", `must be an integer >= 1, got ${config.n}`);
  if (!Number.isSafeInteger(config.group) || config.group < 1 || config.group > 1024) throw bad("group", `must be an integer in [1, 1024], got ${config.group}`);
  if (!Number.isSafeInteger(config.seed) || config.seed < 0) throw bad("seed", `must be an integer >= 0, got ${config.seed}`);
  if (!Number.isFinite(config.timeout_ms) || config.timeout_ms <= 0 || config.timeout_ms > MAX_TIMEOUT_MS) {
    throw bad("timeout", `must be a positive number of milliseconds up to ${MAX_TIMEOUT_MS} (12 days), got ${config.timeout_ms}`);
  }
  if (config.split !== null) parseSplit(config.split);
  if (config.advantage_on !== undefined && !(ADVANTAGE_ON as readonly string[]).includes(config.advantage_on)) {
    throw bad("advantage_on", `must be one of ${ADVANTAGE_ON.join(", ")}, got "${String(config.advantage_on)}"`);
  }
  if (config.redaction !== undefined) parseRedactionRules(config.redaction, "redaction");
  if (config.tenant !== undefined) checkTenant(config.tenant, "tenant");
  if (config.sampler !== undefined) {
    const { sampler } = config;
    if (typeof sampler !== "object" || sampler === null || typeof sampler.spec !== "object" || sampler.spec === null) throw bad("sampler", "must be {spec, train_step?, batch_groups?}");
    if (config.task_ids) throw bad("sampler", "and explicit task ids exclude each other: a sampler draws the tasks");
    if (config.difficulties.length > 0) throw bad("sampler", "and --difficulty exclude each other: the sampler's spec names the cells it draws from");
    if (sampler.train_step !== undefined && (!Number.isSafeInteger(sampler.train_step) || sampler.train_step < 0)) throw bad("train_step", `must be an integer >= 0, got ${sampler.train_step}`);
    if (sampler.batch_groups !== undefined && (!Number.isSafeInteger(sampler.batch_groups) || sampler.batch_groups < 1 || sampler.batch_groups > 1_000_000)) {
      throw bad("batch_groups", `must be an integer in [1, 1000000], got ${sampler.batch_groups}`);
    }
  }
  return config;
}

/**
 * A run's episode jobs, wave by wave: `next` gives the first wave, then, once the caller has stored a
 * wave, the next one (`outcomeOf` reads a stored episode's outcome; null counts as a failure), and null
 * after the last. A run without a curriculum is one wave.
 */
export interface PlanWaves {
  /** Episodes in the whole run. */
  total: number;
  next(outcomeOf: (job: EpisodeJob) => number | null): EpisodeJob[] | null;
  /** A curriculum's sampler, for its pass rates and weights (null otherwise). */
  sampler: TaskSampler | null;
}

/** The run's waves (see PlanWaves). Throws invalid_argument on a bad config, before anything runs. */
export function planWaves(runId: string, config: RolloutConfig, env: AnyEnvironment): PlanWaves {
  const groups = Math.ceil(config.n / config.group);
  const total = groups * config.group;
  if (config.sampler?.spec.kind !== "curriculum") {
    let jobs: EpisodeJob[] | null = planJobs(runId, config, env);
    return {
      total,
      sampler: null,
      next: () => {
        const wave = jobs;
        jobs = null;
        return wave;
      },
    };
  }
  const sampler = runSampler(config, env);
  const batch = config.sampler.batch_groups ?? 8;
  const seen = new Set<string>();
  let wave: EpisodeJob[] = [];
  let drawnGroups = 0;
  return {
    total,
    sampler,
    next(outcomeOf) {
      if (wave.length > 0) sampler.observe(wave.map((job) => ({ task_id: job.task_id, outcome: outcomeOf(job) ?? 0 })));
      if (drawnGroups >= groups) return null;
      const want = Math.min(batch, groups - drawnGroups);
      const ids = drawUnique(sampler, want, Math.floor(drawnGroups / batch), seen);
      drawnGroups += want;
      wave = jobsOf(runId, config, ids);
      return wave;
    },
  };
}

/** The run's sampler: its spec over the environment's first family, seeded by the run, in its split. */
function runSampler(config: RolloutConfig, env: AnyEnvironment): TaskSampler {
  const { spec, sets } = config.sampler as RolloutSampler;
  return new TaskSampler({ spec, family: env.tasks.families[0] as string, split: config.split ?? undefined, seed: config.seed, ...(sets ? { sets } : {}) }, undefined, {
    features: (id) => featuresOf(env.tasks, id),
  });
}

/** `n` task ids not drawn before in this run (a task drawn twice would repeat its episode ids). */
function drawUnique(sampler: TaskSampler, n: number, step: number, seen: Set<string>): string[] {
  const ids: string[] = [];
  for (let tries = 0; ids.length < n; tries++) {
    if (tries > 100 * n + 1000) throw new ValidationError("invalid_argument", `the sampler keeps drawing tasks this run already has (${ids.length} of ${n} new after ${tries} draws)`);
    const [id] = sampler.next(1, step);
    if (id !== undefined && !seen.has(id)) {
      seen.add(id);
      ids.push(id);
    }
  }
  return ids;
}

/** The episode jobs of a run, in a stable order (task by task, group index within a task). */
export function planJobs(runId: string, config: RolloutConfig, env: AnyEnvironment): EpisodeJob[] {
  const groups = Math.ceil(config.n / config.group);
  if (config.sampler?.spec.kind === "curriculum") throw new ValidationError("invalid_argument", "a curriculum's tasks depend on its outcomes: plan it with planWaves");
  return jobsOf(runId, config, selectTasks(config, env, groups));
}

/** The episode jobs of these tasks, `config.group` per task. */
function jobsOf(runId: string, config: RolloutConfig, taskIds: readonly string[]): EpisodeJob[] {
  const jobs: EpisodeJob[] = [];
  for (const taskId of taskIds) {
    const seed = episodeSeed(config.seed, taskId);
    for (let g = 0; g < config.group; g++) {
      jobs.push({
        run_id: runId,
        episode_id: episodeIdOf(runId, taskId, g),
        env: config.env,
        task_id: taskId,
        seed,
        group_id: `${runId}/${taskId}`,
        group_index: g,
        policy: config.policy,
        policy_checkpoint: config.policy_checkpoint,
      });
    }
  }
  return jobs;
}

/** The seed all rollouts of a task share in a run with this config seed. */
export function episodeSeed(configSeed: number, taskId: string): number {
  return Rng.fromKey("llmix/rollout-seed", configSeed, taskId).int(0, 0x7fffffff);
}

function selectTasks(config: RolloutConfig, env: AnyEnvironment, groups: number): string[] {
  if (config.sampler) return drawUnique(runSampler(config, env), groups, config.sampler.train_step ?? 0, new Set());
  const family = env.tasks.families[0] as string;
  const valid = env.tasks.difficulties as readonly string[];
  if (config.task_ids) {
    if (config.task_ids.length === 0) throw new ValidationError("invalid_argument", "the task id list is empty");
    const rules = { families: env.tasks.families, difficulties: valid };
    const ids = config.task_ids.map((raw) => parseTaskId(raw, rules).id);
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup) throw new ValidationError("invalid_argument", `task id ${dup} is listed twice; use --group for several rollouts of one task`);
    if (ids.length < groups) {
      throw new ValidationError("invalid_argument", `${ids.length} task ids give ${ids.length * config.group} episodes, fewer than -n ${config.n}`);
    }
    return ids.slice(0, groups);
  }
  const difficulties = config.difficulties.length > 0 ? config.difficulties : [...valid];
  for (const d of difficulties) {
    if (!valid.includes(d)) throw new ValidationError("invalid_argument", `unknown difficulty "${d}"; valid: ${valid.join(", ")}`);
  }
  return sampleTaskIds({ family, difficulties, n: groups, split: config.split ?? undefined, seed: config.seed });
}
