/**
 * Work of the service that belongs to no session but runs environment code (a constructor, a task
 * generator, a replay), so it runs on a host like sessions do, never on the serving thread: the
 * environments' summaries, one environment's detail, task listing and the replay of a stored episode.
 */
import type { ComponentBounds } from "../core/environment.js";
import type { ToolSpec } from "../core/contract.js";
import { ValidationError } from "../core/errors.js";
import { summarize, type EnvironmentRegistry, type EnvironmentSummary } from "../core/registry.js";
import { replayEpisode, type ReplayReport } from "../rollout/replay.js";
import type { RedactionRules } from "../store/redaction.js";
import { parseSplit, sampleTaskIds } from "../tasks/splits.js";
import { featuresOf, hasFeatures } from "../tasks/features.js";
import { restoreSampler, TaskSampler, type SamplerConfig, type SamplerSpec, type SamplerState } from "../tasks/sampler.js";
import type { HostJob, SampleTasksRequest } from "./protocol.js";

/** One environment as GET /v1/envs/:env describes it. */
export interface EnvDetail extends EnvironmentSummary {
  tools: ToolSpec[];
  reward_components: Record<string, ComponentBounds>;
}

/** Most task ids one listing may ask for. */
export const MAX_TASK_LISTING = 100_000;

/** What jobs run under besides the registry. */
export interface JobOptions {
  /** The data policy's redaction rules: a replay report holds only redacted values (src/rollout/replay.ts). */
  redaction?: RedactionRules;
}

/** Run a job against the host's registry. */
export async function runJob(registry: EnvironmentRegistry, job: HostJob, options: JobOptions = {}): Promise<unknown> {
  switch (job.kind) {
    case "summaries":
      return registry.list().map(summarize);
    case "env_detail":
      return envDetail(registry, job.env);
    case "tasks":
      return listTasks(registry, job.env, job.query);
    case "sample":
      return sampleTasks(registry, job.env, job.request);
    case "replay":
      return replay(registry, job, options.redaction);
    case "task_features":
      return taskFeatures(registry, job.env, job.task_ids);
  }
}

/** Most task ids one task_features job describes. */
export const MAX_FEATURE_TASKS = 10_000;

/** One task as the inspector filters by it: its scenario family and its features as `name=value`. */
export interface TaskDescription {
  family: string | null;
  features: string[];
}

/**
 * The features of stored tasks (for filtering a run by family or knob). An environment that declares
 * none describes each task by its id's family alone; an id its generator refuses gets no features.
 */
async function taskFeatures(registry: EnvironmentRegistry, id: string, taskIds: readonly string[]): Promise<{ tasks: Record<string, TaskDescription> }> {
  if (taskIds.length > MAX_FEATURE_TASKS) throw new ValidationError("invalid_argument", `at most ${MAX_FEATURE_TASKS} task ids per request, got ${taskIds.length}`);
  const env = registry.get(id).create();
  try {
    const declared = hasFeatures(env.tasks) ? env.tasks.features.declared : [];
    const scenario = declared.find((f) => f.kind === "scenario")?.name;
    const tasks: Record<string, TaskDescription> = {};
    for (const taskId of new Set(taskIds)) {
      try {
        const features = declared.length > 0 ? featuresOf(env.tasks, taskId) : {};
        const family = scenario !== undefined ? String(features[scenario]) : (taskId.split("/")[0] ?? null);
        tasks[taskId] = { family, features: declared.map((f) => `${f.name}=${String(features[f.name])}`) };
      } catch {
        tasks[taskId] = { family: null, features: [] };
      }
    }
    return { tasks };
  } finally {
    await env.close();
  }
}

/** The summary plus the tools of a sampled task and the reward components with bounds. */
async function envDetail(registry: EnvironmentRegistry, id: string): Promise<EnvDetail> {
  const entry = registry.get(id);
  const env = entry.create();
  try {
    // Tools are per episode; those of one sampled task stand for the environment.
    const [taskId] = sampleTaskIds({ family: env.tasks.families[0] as string, difficulties: [env.tasks.difficulties[0] as string], n: 1, seed: 0 });
    await env.reset(taskId as string, 0);
    return { ...summarize(entry), tools: env.tools(), reward_components: { ...env.componentBounds() } };
  } finally {
    await env.close();
  }
}

/** Task ids of an environment, validated as `llmix tasks` validates its flags. */
async function listTasks(registry: EnvironmentRegistry, id: string, query: Record<string, unknown>): Promise<{ task_ids: string[] }> {
  const env = registry.get(id).create();
  try {
    const difficulties = env.tasks.difficulties;
    const difficulty = query.difficulty;
    if (difficulty !== undefined && (typeof difficulty !== "string" || !difficulties.includes(difficulty))) {
      throw new ValidationError("invalid_argument", `unknown difficulty ${JSON.stringify(difficulty)} for ${id}; valid: ${difficulties.join(", ")}`, { valid: [...difficulties] });
    }
    return {
      task_ids: sampleTaskIds({
        family: env.tasks.families[0] as string,
        difficulties: typeof difficulty === "string" ? [difficulty] : difficulties,
        n: intParam(query.n, "n", 0, MAX_TASK_LISTING, 10),
        split: parseSplit(query.split ?? "train"),
        seed: intParam(query.seed, "seed", 0, 0xffffffff, 0),
      }),
    };
  } finally {
    await env.close();
  }
}

/** What POST /v1/tasks/sample answers: the ids, and the state to send back with the next request. */
export interface SampledTasks {
  task_ids: string[];
  state: SamplerState;
  /** Each cell's weight at this step (they sum to 1). */
  weights: Record<string, number>;
  /** Each cell's recent pass rate, null with too few results. */
  pass_rates: Record<string, number | null>;
}

/**
 * Feed a sampler the results of its last tasks and draw the next ones. Stateless on the service: a new
 * sampler from `spec` (with split and seed), or one continued from the `state` the last answer gave.
 */
async function sampleTasks(registry: EnvironmentRegistry, id: string, request: SampleTasksRequest): Promise<SampledTasks> {
  const env = registry.get(id).create();
  try {
    const { families, difficulties } = env.tasks;
    let sampler: TaskSampler;
    // Knobs weigh tasks by the environment's declared features.
    const runtime = { features: (taskId: string) => featuresOf(env.tasks, taskId) };
    if (request.state !== undefined) {
      sampler = restoreSampler(request.state as SamplerState, runtime);
    } else {
      const config: SamplerConfig = { spec: request.spec as SamplerSpec, family: families[0] as string, split: request.split ?? "train", seed: request.seed ?? 0 };
      sampler = new TaskSampler(config, undefined, runtime);
    }
    for (const cell of sampler.cellKeys) {
      const [family, difficulty] = cell.split("/") as [string, string];
      if (!families.includes(family) || !difficulties.includes(difficulty)) {
        throw new ValidationError("invalid_argument", `cell ${cell} is not one of ${id}'s: families ${families.join(", ")}; difficulties ${difficulties.join(", ")}`);
      }
    }
    sampler.observe(request.results ?? []);
    const task_ids = sampler.next(request.n ?? 10, request.step ?? 0);
    return { task_ids, state: sampler.state(), weights: sampler.weights(request.step ?? 0), pass_rates: sampler.passRates() };
  } finally {
    await env.close();
  }
}

/** Re-run a stored episode's actions on a fresh instance (with the run's environment options). */
async function replay(registry: EnvironmentRegistry, job: Extract<HostJob, { kind: "replay" }>, redaction: RedactionRules | undefined): Promise<ReplayReport> {
  const env = registry.get(job.stored.episode.env).create({ ...job.env_options });
  try {
    return await replayEpisode(env, job.stored, { redaction });
  } finally {
    await env.close();
  }
}

/** An integer query or message parameter in [min, max], or its default when absent. */
export function intParam(value: unknown, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = typeof value === "string" && /^\s*-?\d+\s*$/.test(value) ? Number(value) : typeof value === "number" ? value : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new ValidationError("invalid_argument", `${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`);
  return n;
}
