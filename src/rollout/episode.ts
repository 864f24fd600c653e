/**
 * One episode job: reset, drive the policy to the end, and turn what happened into the stored episode
 * (its row and its step records). Failures of the policy or the environment never escape: they become
 * an episode with status "error" and the steps taken so far, so one bad episode never stops a run.
 */
import type { ToolResult, TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError, toLlmixError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import type { AnyEnvironment } from "../core/registry.js";
import { runPolicy } from "../core/run-policy.js";
import { toStepRecord } from "../core/trajectory.js";
import { parseTaskId } from "../tasks/task-id.js";
import { Redactor, restoreRedacted, type RedactionRules } from "../store/redaction.js";
import type { EpisodeRecord, StoredEpisode } from "../store/types.js";
import type { PolicySource } from "./policies/index.js";

/** Everything a worker needs to run one episode; plain JSON so it can cross a thread or a queue. */
export interface EpisodeJob {
  run_id: string;
  episode_id: string;
  env: string;
  task_id: string;
  seed: number;
  group_id: string;
  group_index: number;
  policy: string;
  policy_checkpoint: string | null;
  /** For `replay:RUN` policies: the actions to send, as they were sent. */
  replay_actions?: unknown[];
}

/** How an episode job ended: the stored episode, and whether the environment instance may be reused. */
export interface EpisodeOutcome {
  stored: StoredEpisode;
  /** False after a timeout: the abandoned episode may still be inside a step, so use a fresh instance. */
  reusable: boolean;
}

/** How to run an episode job. */
export interface EpisodeOptions {
  /** The cooperative time limit: the episode is abandoned at its next step boundary. */
  timeoutMs?: number;
  /** Each step record as it is taken (none after the episode was abandoned): the same records the outcome holds. */
  onStep?: (record: TrajectoryStepRecord) => void;
  /**
   * Redact each record as it is made, before anything sees it (src/store/redaction.ts): with the
   * environment's declaration and its values for the episode (known once it is reset). Absent: none.
   */
  redaction?: RedactionRules;
}

/** Run one episode job on `env` (not in use by anything else) with a policy from `source`. */
export async function runEpisode(env: AnyEnvironment, job: EpisodeJob, source: PolicySource, options: EpisodeOptions = {}): Promise<EpisodeOutcome> {
  const startedAt = new Date();
  const steps: TrajectoryStepRecord[] = [];
  const state: DriveState = { aborted: false, redactor: null };
  const loop = driveEpisode(env, job, source, (made) => {
    // An abandoned episode may still finish the step it was in: that record is not the episode's.
    if (state.aborted) return;
    const record = state.redactor ? state.redactor.redactRecord(made) : made;
    steps.push(record);
    options.onStep?.(record);
  }, state, options.redaction);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    if (options.timeoutMs !== undefined) timer = setTimeout(() => resolve("timeout"), options.timeoutMs);
  });
  let error: LlmixError | null = null;
  let reusable = true;
  try {
    const ended = await Promise.race([loop, timeout]);
    if (ended === "timeout") {
      state.aborted = true;
      reusable = false;
      // The loop stops at its next step boundary; its late failures are of no interest any more.
      loop.catch(() => undefined);
      error = new LlmixError("episode_timeout", `episode ${job.episode_id} exceeded its time limit of ${options.timeoutMs} ms`);
    }
  } catch (thrown) {
    error = toLlmixError(thrown);
  } finally {
    clearTimeout(timer);
  }
  const finishedAt = new Date();
  if (error && options.redaction) {
    // An error message can quote the world (a tool's crash); before reset there are no episode values.
    const redactor = state.redactor ?? new Redactor(options.redaction);
    error = new LlmixError(error.code, redactor.redactText(error.message).value);
  }
  return { stored: { episode: episodeRecord(job, steps.slice(), error, startedAt, finishedAt), steps: steps.slice() }, reusable };
}

/** What an episode's loop shares with its caller: whether it was abandoned, and its redactor once reset. */
interface DriveState {
  aborted: boolean;
  redactor: Redactor | null;
}

async function driveEpisode(env: AnyEnvironment, job: EpisodeJob, source: PolicySource, record: (step: TrajectoryStepRecord) => void, state: DriveState, redaction: RedactionRules | undefined): Promise<void> {
  const initial = await env.reset(job.task_id, job.seed);
  let replayActions = job.replay_actions;
  if (redaction) {
    state.redactor = Redactor.forEpisode(redaction, env);
    // Replayed actions were stored redacted: the episode's own values go back where their markers are.
    if (replayActions) replayActions = restoreRedacted(replayActions, env.sensitiveValues());
  }
  const policy = source.create({ env, taskId: job.task_id, seed: job.seed, groupIndex: job.group_index, replayActions });
  let step = 0;
  await runPolicy(env, policy, {
    maxSteps: env.maxSteps,
    initial,
    shouldStop: () => state.aborted,
    onStep: (t) =>
      record(
        toStepRecord({
          episodeId: job.episode_id,
          taskId: job.task_id,
          envVersion: env.info.version,
          policyCheckpoint: job.policy_checkpoint,
          step: ++step,
          observation: t.observation,
          action: t.action,
          result: t.result,
          policy: t.policy,
        }),
      ),
  });
}

/**
 * Running totals of an episode's steps: everything its row needs, without keeping the steps (a service
 * session can run for many thousands). Plain JSON, so it travels in a checkpoint.
 */
export interface EpisodeTally {
  steps: number;
  tokens: number;
  total_reward: number;
  cost: number;
  reward_components: Record<string, number>;
  tool_calls: Record<string, number>;
  /** The last step (its end, verdict and version make the row's). */
  last: TrajectoryStepRecord | null;
}

/** A tally of no steps. */
export function emptyTally(): EpisodeTally {
  return { steps: 0, tokens: 0, total_reward: 0, cost: 0, reward_components: {}, tool_calls: {}, last: null };
}

/** Add one step to a tally (in place). */
export function tallyStep(tally: EpisodeTally, step: TrajectoryStepRecord): void {
  tally.steps++;
  tally.total_reward += step.reward ?? 0;
  // The observations the policy acted on: the reset observation, then each step's result.
  tally.tokens += step.observation.tokens;
  for (const [name, v] of Object.entries(step.reward_components)) tally.reward_components[name] = (tally.reward_components[name] ?? 0) + v;
  const tool = step.tool_result as ToolResult | null;
  if (tool) {
    tally.tool_calls[tool.status] = (tally.tool_calls[tool.status] ?? 0) + 1;
    tally.cost += tool.cost;
  }
  tally.last = step;
}

/** The episode row of a job's step records. */
export function episodeRecord(job: EpisodeJob, steps: readonly TrajectoryStepRecord[], error: LlmixError | null, startedAt: Date, finishedAt: Date): EpisodeRecord {
  const tally = emptyTally();
  for (const step of steps) tallyStep(tally, step);
  return episodeRecordOf(job, tally, error, startedAt, finishedAt);
}

/** The episode row of a job from the tally of its steps. */
export function episodeRecordOf(job: EpisodeJob, tally: EpisodeTally, error: LlmixError | null, startedAt: Date, finishedAt: Date): EpisodeRecord {
  const last = tally.last;
  const ended = last !== null && (last.terminated || last.truncated);
  const finalInfo = (last?.info ?? {}) as Record<string, unknown>;
  const failed = error !== null || !ended;
  return {
    episode_id: job.episode_id,
    run_id: job.run_id,
    env: job.env,
    env_version: last?.env_version ?? "",
    task_id: job.task_id,
    difficulty: difficultyOf(job.task_id),
    seed: job.seed,
    group_id: job.group_id,
    group_index: job.group_index,
    policy: job.policy,
    policy_checkpoint: job.policy_checkpoint,
    status: failed ? "error" : "ok",
    error: error ? { code: error.code, message: error.message } : failed ? { code: "internal", message: "the episode stopped before it ended (closed early, interrupted or cut off)" } : null,
    steps: tally.steps,
    tokens: tally.tokens,
    total_reward: tally.total_reward,
    outcome: ended ? (last.reward_components.task ?? 0) : null,
    reward_components: { ...tally.reward_components },
    verdict: ended ? ((finalInfo.verdict as JsonValue | undefined) ?? null) : null,
    end_reason: ended ? ((finalInfo.end_reason as string | undefined) ?? null) : null,
    terminated: ended && last.terminated,
    truncated: ended && last.truncated,
    cost: tally.cost,
    tool_calls: { ...tally.tool_calls },
    advantages: null,
    started_at: startedAt.toISOString(),
    finished_at: finishedAt.toISOString(),
    duration_ms: finishedAt.getTime() - startedAt.getTime(),
  };
}

function difficultyOf(taskId: string): string {
  try {
    return parseTaskId(taskId).difficulty;
  } catch {
    return "";
  }
}
