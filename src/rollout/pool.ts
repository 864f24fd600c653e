/**
 * Episode slots: `concurrency` of them on each thread of a worker pool (worker-pool.ts), or on the main
 * thread for environments registered only in code (worker threads cannot load those). Each slot owns
 * one environment instance and runs one episode at a time; a slot whose episode timed out gets a fresh
 * instance.
 */
import type { TrajectoryStepRecord } from "../core/contract.js";
import type { AnyEnvironment, EnvironmentRegistry } from "../core/registry.js";
import type { StoredEpisode } from "../store/types.js";
import { runEpisode, type EpisodeJob } from "./episode.js";
import type { RolloutConfig } from "./plan.js";
import type { PolicySource, PolicySpecOptions } from "./policies/index.js";

/** What a job runner needs. */
export interface JobRunnerOptions {
  config: RolloutConfig;
  concurrency: number;
  registry: EnvironmentRegistry;
  /** The parsed policy (main-thread slots use it; worker threads parse `config.policy` themselves). */
  source: PolicySource;
  policyOptions?: PolicySpecOptions["openai"];
  onResult: (result: StoredEpisode) => void;
}

/**
 * Run `concurrency` slots pulling jobs from `next` until it returns null. If a slot fails (e.g. the
 * result handler throws), no new job starts, the episodes in flight finish, then the error is thrown.
 */
export async function runSlots(
  next: () => Promise<EpisodeJob | null> | EpisodeJob | null,
  options: {
    config: RolloutConfig;
    concurrency: number;
    create: () => AnyEnvironment;
    source: PolicySource;
    onResult: (r: StoredEpisode) => void;
    /** Each step record as an episode takes it. */
    onStep?: (record: TrajectoryStepRecord) => void;
  },
): Promise<void> {
  let failed = false;
  const take = async () => (failed ? null : await next());
  const slot = async () => {
    let env = options.create();
    try {
      for (let job = await take(); job !== null; job = await take()) {
        const { stored, reusable } = await runEpisode(env, job, options.source, { timeoutMs: options.config.timeout_ms, onStep: options.onStep, redaction: options.config.redaction });
        options.onResult(stored);
        // An in-process episode may never leave the microtask queue: yield so the store write (and the
        // progress bar) run now, not after the whole run.
        await new Promise((resolve) => setImmediate(resolve));
        if (!reusable) {
          // The abandoned episode may still be inside a step: close its instance once nothing uses it.
          const old = env;
          setTimeout(() => void old.close().catch(() => undefined), 0);
          env = options.create();
        }
      }
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      await env.close();
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: options.concurrency }, slot));
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failure) throw failure.reason;
}

/** Run the jobs in `concurrency` slots on the main thread; every job yields exactly one result. */
export async function runJobsInProcess(jobs: readonly EpisodeJob[], options: JobRunnerOptions): Promise<void> {
  const queue = [...jobs];
  const entry = options.registry.get(options.config.env);
  await runSlots(() => queue.shift() ?? null, {
    config: options.config,
    concurrency: options.concurrency,
    create: () => entry.create(options.config.env_options),
    source: options.source,
    onResult: options.onResult,
  });
}
