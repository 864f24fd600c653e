/**
 * Rollout worker threads, for CPU-bound environments: a slot is busy on the CPU for most of an episode,
 * so async concurrency alone cannot use a second core. The threads outlive a run: a pool handed to
 * several `rollout` calls (one per training step, say) keeps its threads, so their JIT-compiled code
 * stays warm instead of being compiled again in new threads each time.
 */
import { Worker } from "node:worker_threads";
import { LlmixError, ValidationError, toLlmixError } from "../core/errors.js";
import type { StoredEpisode } from "../store/types.js";
import { episodeRecord, type EpisodeJob } from "./episode.js";
import type { RolloutConfig } from "./plan.js";
import type { PolicySpecOptions } from "./policies/index.js";
import type { JobRunnerOptions } from "./pool.js";
import { siblingModule, startThread } from "../hosts/thread.js";

/** What a worker thread needs to run its part of one rollout. */
export interface WorkerRun {
  config: RolloutConfig;
  concurrency: number;
  policyOptions?: PolicySpecOptions["openai"];
}

/**
 * Messages from a worker: a request for `count` more jobs (0: none) that also names the job a slot has
 * just started, a result, the end of its part of the run, or a fatal start-up error (the thread then exits).
 */
export type WorkerMessage =
  | { type: "next"; count: number; started: string | null }
  | { type: "result"; stored: StoredEpisode }
  | { type: "idle" }
  | { type: "fatal"; error: { code: string; message: string } };
/** Messages to a worker: start a run, or the answer to one request (fewer jobs than asked: the queue is empty). */
export type MainMessage = { type: "run"; run: WorkerRun } | { type: "jobs"; jobs: EpisodeJob[] };

/**
 * `size` worker threads that run rollouts, one rollout at a time (later calls wait their turn). Workers
 * see the built-in environments and the config's `--module` files (not environments registered in
 * code). Threads start on first use; idle ones do not keep the process alive. Close the pool when done.
 */
export class WorkerPool {
  private readonly idle: Worker[] = [];
  private queue: Promise<void> = Promise.resolve();
  private isClosed = false;
  private started = 0;

  constructor(readonly size: number) {
    if (!Number.isSafeInteger(size) || size < 1 || size > 64) {
      throw new ValidationError("invalid_argument", `workers must be an integer in [1, 64], got ${size}`);
    }
  }

  /** True once `close` was called: the pool takes no more runs. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Threads this pool has started so far (a run on a warm pool starts none, unless a thread died). */
  get threadsStarted(): number {
    return this.started;
  }

  /** Run the jobs on the pool's threads; resolves once every job has delivered its one result. */
  run(jobs: readonly EpisodeJob[], options: JobRunnerOptions): Promise<void> {
    if (this.isClosed) return Promise.reject(new ValidationError("invalid_argument", "this worker pool is closed"));
    const turn = this.queue.then(() => this.runNow(jobs, options));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /** Stop every thread (after the runs already asked for). */
  async close(): Promise<void> {
    this.isClosed = true;
    await this.queue;
    await Promise.all(this.idle.splice(0).map((worker) => worker.terminate()));
  }

  private async runNow(jobs: readonly EpisodeJob[], options: JobRunnerOptions): Promise<void> {
    const queue = [...jobs];
    const run: WorkerRun = { config: options.config, concurrency: options.concurrency, policyOptions: options.policyOptions };
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
    await new Promise<void>((resolveRun, rejectRun) => {
      const active = new Set<Worker>();
      let respawns = this.size * 2;
      let settled = false;
      const settle = (error: LlmixError | null) => {
        if (settled) return;
        settled = true;
        if (error === null) return resolveRun();
        // A run that cannot start on one thread cannot on the others: stop them rather than leave them busy.
        for (const worker of active) void worker.terminate();
        rejectRun(error);
      };
      const assign = (worker: Worker) => {
        active.add(worker);
        worker.ref();
        // Jobs sent to this worker and not finished; `started` are the ones a slot has begun.
        const inFlight = new Map<string, EpisodeJob>();
        const started = new Set<string>();
        let fatal: LlmixError | null = null;
        const detach = () => {
          active.delete(worker);
          worker.off("message", onMessage).off("error", onError).off("exit", onExit);
        };
        const onMessage = (message: WorkerMessage) => {
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
          } else if (message.type === "idle") {
            detach();
            worker.unref();
            this.idle.push(worker);
            if (active.size === 0) settle(null);
          } else {
            fatal = new LlmixError(message.error.code as never, message.error.message);
          }
        };
        const onError = (error: unknown) => {
          fatal ??= toLlmixError(error);
        };
        const onExit = () => {
          detach();
          if (settled) return;
          if (fatal && inFlight.size === 0 && queue.length === jobs.length) return settle(fatal);
          queue.unshift(...[...inFlight.values()].filter((job) => !started.has(job.episode_id)));
          for (const job of inFlight.values()) {
            if (!started.has(job.episode_id)) continue;
            const crash = fatal ?? new LlmixError("internal", "the worker thread exited during the episode");
            const now = new Date();
            deliver({ episode: episodeRecord(job, [], crash, now, now), steps: [] });
          }
          if (queue.length > 0 && respawns-- > 0) assign(this.spawn());
          else if (active.size === 0) settle(queue.length > 0 ? (fatal ?? new LlmixError("internal", "every worker thread died")) : null);
        };
        worker.on("message", onMessage).on("error", onError).on("exit", onExit);
        worker.postMessage({ type: "run", run } satisfies MainMessage);
      };
      const threads = Math.min(this.size, Math.max(1, Math.ceil(jobs.length / options.concurrency)));
      for (let i = 0; i < threads; i++) assign(this.idle.pop() ?? this.spawn());
    });
    if (handlerError !== null) throw handlerError;
  }

  /** A new thread; one that fails while idle (its error is not a run's) exits and leaves the pool. */
  private spawn(): Worker {
    const worker = startWorker();
    this.started++;
    worker.on("error", () => undefined);
    worker.once("exit", () => {
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
    });
    return worker;
  }
}

/** A rollout worker thread (worker.js, or worker.ts through tsx from source), under the thread memory cap. */
function startWorker(): Worker {
  return startThread(siblingModule(import.meta.url, "worker"), { name: "llmix-rollout" });
}
