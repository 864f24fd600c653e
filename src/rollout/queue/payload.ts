/**
 * The data of an episode job on the queue: the episode job itself, its run's config (so a worker loads
 * the same environment and policy) and the enqueuer's policy flags. Plain JSON; a worker checks it
 * before running anything, since anyone who can write to the queue can put anything there.
 */
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { LlmixError, ValidationError } from "../../core/errors.js";
import type { EpisodeJob } from "../episode.js";
import { validateConfig, type RolloutConfig } from "../plan.js";
import type { PolicySpecOptions } from "../policies/index.js";
import { jobIdOf } from "./queue-names.js";

/** Version of the payload format; a worker refuses others. */
export const PAYLOAD_VERSION = 1;

/** What an episode job on the queue carries. */
export interface QueueJobData {
  v: typeof PAYLOAD_VERSION;
  job: EpisodeJob;
  config: RolloutConfig;
  /** The enqueuer's openai flags, without any API key (a worker takes its key from its own environment). */
  policy_options?: PolicySpecOptions["openai"];
}

/** The payload of one episode job. */
export function jobData(job: EpisodeJob, config: RolloutConfig, policyOptions: PolicySpecOptions["openai"] | undefined): QueueJobData {
  const data: QueueJobData = { v: PAYLOAD_VERSION, job, config };
  if (policyOptions && Object.keys(policyOptions).length > 0) {
    // Secrets never go to Redis.
    const { apiKey: _secret, ...rest } = policyOptions;
    data.policy_options = rest;
  }
  return data;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Check a job's payload (invalid_argument naming what is wrong): its shape, its config, and that its id
 * is its episode's (a job stored under another id would break exactly-once storage).
 */
export function parseJobData(data: unknown, jobId: string | undefined): QueueJobData {
  const bad = (why: string) => new ValidationError("invalid_argument", `malformed episode job ${jobId ?? "(no id)"}: ${why}`);
  if (!isObject(data)) throw bad("the payload is not an object");
  if (data.v !== PAYLOAD_VERSION) throw bad(`payload version ${JSON.stringify(data.v)}, this worker reads version ${PAYLOAD_VERSION}`);
  const job = data.job;
  if (!isObject(job)) throw bad("no job object");
  for (const field of ["run_id", "episode_id", "env", "task_id", "group_id", "policy"] as const) {
    if (typeof job[field] !== "string" || job[field] === "") throw bad(`job.${field} must be a non-empty string`);
  }
  for (const field of ["seed", "group_index"] as const) {
    if (!Number.isSafeInteger(job[field]) || (job[field] as number) < 0) throw bad(`job.${field} must be an integer >= 0`);
  }
  if (job.policy_checkpoint !== null && typeof job.policy_checkpoint !== "string") throw bad("job.policy_checkpoint must be a string or null");
  if (job.replay_actions !== undefined && !Array.isArray(job.replay_actions)) throw bad("job.replay_actions must be an array");
  if (jobId !== undefined && jobIdOf(job.episode_id as string) !== jobId) throw bad(`its id is not its episode's (${String(job.episode_id)})`);
  const config = data.config;
  if (!isObject(config)) throw bad("no config object");
  if (typeof config.env !== "string" || typeof config.policy !== "string") throw bad("config.env and config.policy must be strings");
  if (!Array.isArray(config.modules) || !config.modules.every((m) => typeof m === "string")) throw bad("config.modules must be a list of paths");
  if (!isObject(config.env_options)) throw bad("config.env_options must be an object");
  if (config.env !== job.env) throw bad(`job.env ${String(job.env)} differs from config.env ${config.env}`);
  try {
    validateConfig(config as unknown as RolloutConfig);
  } catch (error) {
    throw bad(`config: ${(error as Error).message}`);
  }
  if (data.policy_options !== undefined && !isObject(data.policy_options)) throw bad("policy_options must be an object");
  return data as unknown as QueueJobData;
}

/** Refuse a config whose module files are not on this machine (module_load_failed, naming them and the host). */
export function requireModules(config: RolloutConfig): void {
  const missing = config.modules.filter((m) => !existsSync(m));
  if (missing.length > 0) {
    throw new LlmixError(
      "module_load_failed",
      `the run's --module file${missing.length === 1 ? "" : "s"} ${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} not on this worker's machine (${hostname()}); put ${missing.length === 1 ? "it" : "them"} at the same absolute path on every worker`,
    );
  }
}
