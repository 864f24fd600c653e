/**
 * Where episode jobs run: `concurrency` slots on the main thread, or on each of `workers` worker
 * threads (for CPU-bound environments: a slot is busy on the CPU for most of an episode, so async
 * concurrency alone cannot use a second core). Each slot owns one environment instance and runs one
 * episode at a time; a slot whose episode timed out gets a fresh instance.
 */
import { Worker } from "node:worker_threads";
import { LlmixError, toLlmixError } from "../core/errors.js";
import type { AnyEnvironment, EnvironmentRegistry } from "../core/registry.js";
import type { StoredEpisode } from "../store/types.js";
import { episodeRecord, runEpisode, type EpisodeJob } from "./episode.js";
import type { RolloutConfig } from "./plan.js";
import type { PolicySource, PolicySpecOptions } from "./policies/index.js";

/** What a job runner needs. */
export interface JobRunnerOptions {
  config: RolloutConfig;
  concurrency: number;
  workers: number;
  registry: EnvironmentRegistry;
  /** The parsed policy (main-thread slots use it; worker threads parse `config.policy` themselves). */
  source: PolicySource;
  policyOptions?: PolicySpecOptions["openai"];
  onResult: (result: StoredEpisode) => void;
}

/** Runs jobs until none is left; every job yields exactly one result. */
export type JobRunner = (jobs: readonly EpisodeJob[], options: JobRunnerOptions) => Promise<void>;

/**
 * Run `concurrency` slots pulling jobs from `next` until it returns null. If a slot fails (e.g. the
 * result handler throws), no new job starts, the episodes in flight finish, then the error is thrown.
 */
export async function runSlots(
  next: () => Promise<EpisodeJob | null> | EpisodeJob | null,
  options: { config: RolloutConfig; concurrency: number; create: () => AnyEnvironment; source: PolicySource; onResult: (r: StoredEpisode) => void },
): Promise<void> {
  let failed = false;
  const take = async () => (failed ? null : await next());
  const slot = async () => {
    let env = options.create();
    try {
      for (let job = await take(); job !== null; job = await take()) {
        const { stored, reusable } = await runEpisode(env, job, options.source, { timeoutMs: options.config.timeout_ms });
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

/** All slots on the main thread. */
export const runJobsInProcess: JobRunner = async (jobs, options) => {
  const queue = [...jobs];
  const entry = options.registry.get(options.config.env);
  await runSlots(() => queue.shift() ?? null, {
    config: options.config,
    concurrency: options.concurrency,
    create: () => entry.create(options.config.env_options),
    source: options.source,
    onResult: options.onResult,
  });
};

/** The data a worker thread starts with. */
export interface WorkerData {
  config: RolloutConfig;
  concurrency: number;
  policyOptions?: PolicySpecOptions["openai"];
}

/**
 * Messages from a worker: a request for `count` more jobs (0: none) that also names the job a slot has just
 * started, a result, or a fatal start-up error.
 */
export type WorkerMessage =
  | { type: "next"; count: number; started: string | null }
  | { type: "result"; stored: StoredEpisode }
  | { type: "fatal"; error: { code: string; message: string } };
/** The answer to one request: up to `count` jobs; fewer means the queue is empty. */
export type MainMessage = { type: "jobs"; jobs: EpisodeJob[] };

/**
 * Slots on `workers` worker threads. Workers see the built-in environments and the config's `--module`
 * files (not environments registered in code). Each worker keeps a few jobs queued ahead of its slots, so
 * a slot that finishes starts the next episode at once instead of waiting for a busy main thread. A
 * worker that dies has its started jobs recorded as error episodes and its queued ones given back; a
 * replacement starts while jobs remain.
 */
export const runJobsOnWorkers: JobRunner = async (jobs, options) => {
  const queue = [...jobs];
  const data: WorkerData = { config: options.config, concurrency: options.concurrency, policyOptions: options.policyOptions };
  let respawns = options.workers * 2;
  // A throwing result handler stops the run: no new jobs, in-flight results still delivered, then it is thrown.
  let handlerError: unknown = null;
  const deliver = (stored: StoredEpisode) => {
    if (handlerError !== null) return;
    try {
      options.onResult(stored);
    } catch (error) {
      handlerError = error;
      queue.length = 0;
    }
  };
  await new Promise<void>((resolveAll, rejectAll) => {
    let alive = 0;
    const start = () => {
      alive++;
      const worker = startWorker(data);
      // Jobs sent to this worker and not finished; `started` are the ones a slot has begun.
      const inFlight = new Map<string, EpisodeJob>();
      const started = new Set<string>();
      let fatal: LlmixError | null = null;
      worker.on("message", (message: WorkerMessage) => {
        if (message.type === "next") {
          if (message.started !== null) started.add(message.started);
          if (message.count > 0) {
            const sent = queue.splice(0, message.count);
            for (const job of sent) inFlight.set(job.episode_id, job);
            worker.postMessage({ type: "jobs", jobs: sent } satisfies MainMessage);
          }
        } else if (message.type === "result") {
          inFlight.delete(message.stored.episode.episode_id);
          started.delete(message.stored.episode.episode_id);
          deliver(message.stored);
        } else {
          fatal = new LlmixError(message.error.code as never, message.error.message);
        }
      });
      worker.on("error", (error) => {
        fatal ??= toLlmixError(error);
      });
      worker.on("exit", () => {
        alive--;
        if (fatal && inFlight.size === 0 && queue.length === jobs.length) return rejectAll(fatal);
        const unstarted = [...inFlight.values()].filter((job) => !started.has(job.episode_id));
        queue.unshift(...unstarted);
        for (const job of inFlight.values()) {
          if (!started.has(job.episode_id)) continue;
          const crash = fatal ?? new LlmixError("internal", "the worker thread exited during the episode");
          const now = new Date();
          deliver({ episode: episodeRecord(job, [], crash, now, now), steps: [] });
        }
        if (queue.length > 0 && respawns-- > 0) start();
        else if (alive === 0) {
          if (queue.length > 0) return rejectAll(fatal ?? new LlmixError("internal", "every worker thread died"));
          resolveAll();
        }
      });
    };
    for (let i = 0; i < Math.min(options.workers, Math.max(1, Math.ceil(jobs.length / options.concurrency))); i++) start();
  });
  if (handlerError !== null) throw handlerError;
};

/** A worker thread running worker.js, or worker.ts through tsx when this module runs from source (tests, bench). */
function startWorker(data: WorkerData): Worker {
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL("./worker.js", import.meta.url), { workerData: data });
  // Node 20 applies neither the parent's loader hooks nor `--import` to a worker's entry module.
  const entry = new URL("./worker.ts", import.meta.url).href;
  const tsx = import.meta.resolve("tsx/esm/api");
  const boot = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData: data });
}
