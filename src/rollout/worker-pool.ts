/**
 * Rollout worker threads. Every episode of a built-in or `--module` environment runs on one (DESIGN §7:
 * code an agent can influence never runs on the thread that plans, stores and watches), each thread
 * under a heap cap, and a watchdog on the main thread stops a thread an episode keeps past its time
 * limit (pool-run.ts has the rules). The threads outlive a run: a pool handed to several `rollout`
 * calls (one per training step, say) keeps its threads, so their JIT-compiled code stays warm instead of
 * being compiled again in new threads each time.
 */
import type { Worker } from "node:worker_threads";
import { ValidationError } from "../core/errors.js";
import type { TrajectoryStepRecord } from "../core/contract.js";
import type { EpisodeRecord } from "../store/types.js";
import type { EpisodeJob } from "./episode.js";
import type { RolloutConfig } from "./plan.js";
import type { PolicySpecOptions } from "./policies/index.js";
import type { JobRunnerOptions } from "./pool.js";
import { PoolRun, type OpenJobs, type ThreadSource } from "./pool-run.js";
import { DEFAULT_THREAD_HEAP_MB, siblingModule, startThread } from "../hosts/thread.js";

/** What a worker thread needs to run its part of one rollout. */
export interface WorkerRun {
  config: RolloutConfig;
  concurrency: number;
  policyOptions?: PolicySpecOptions["openai"];
}

/**
 * Messages from a worker: a request for `count` more jobs (0: none) that also names the job a slot has
 * just started, step records of episodes in progress, an episode's row once it ended with its step
 * records not sent ahead, the end of its part of the run, or a fatal start-up error (the thread then exits).
 */
export type WorkerMessage =
  | { type: "next"; count: number; started: string | null }
  | { type: "steps"; records: TrajectoryStepRecord[] }
  | { type: "result"; episode: EpisodeRecord; steps: TrajectoryStepRecord[] }
  | { type: "idle" }
  | { type: "fatal"; error: { code: string; message: string } };
/**
 * Messages to a worker: start a run, or the answer to one request (fewer jobs than asked: the queue is
 * empty, unless `more` says jobs may still come, in an open run).
 */
export type MainMessage = { type: "run"; run: WorkerRun } | { type: "jobs"; jobs: EpisodeJob[]; more?: boolean };

/** Limits of a pool's threads. */
export interface WorkerPoolOptions {
  /** Heap cap of each thread, in MiB (default DEFAULT_THREAD_HEAP_MB); an episode that exceeds it is stopped with its thread. */
  heapMb?: number;
}

/** Smallest heap cap a rollout thread may have: below it a thread cannot load an environment. */
export const MIN_WORKER_HEAP_MB = 16;

/** A worker heap cap in MiB, checked (invalid_argument unless an integer in [16, 1048576]); undefined: the default. */
export function workerHeapMb(value: number | undefined): number {
  const heapMb = value ?? DEFAULT_THREAD_HEAP_MB;
  if (!Number.isSafeInteger(heapMb) || heapMb < MIN_WORKER_HEAP_MB || heapMb > 1_048_576) {
    throw new ValidationError("invalid_argument", `worker memory must be an integer number of MiB in [${MIN_WORKER_HEAP_MB}, 1048576], got ${heapMb}`);
  }
  return heapMb;
}

/**
 * `size` worker threads that run rollouts, one rollout at a time (later calls wait their turn). Workers
 * see the built-in environments and the config's `--module` files (not environments registered in
 * code). Threads start on first use; idle ones do not keep the process alive. A run may briefly use up
 * to `size` more threads to retry apart the episodes of a thread that died or was stopped.
 * Close the pool when done.
 */
export class WorkerPool implements ThreadSource {
  /** Heap cap of each thread, in MiB. */
  readonly heapMb: number;
  private readonly idle: Worker[] = [];
  private queue: Promise<void> = Promise.resolve();
  private isClosed = false;
  private started = 0;

  constructor(
    readonly size: number,
    options: WorkerPoolOptions = {},
  ) {
    if (!Number.isSafeInteger(size) || size < 1 || size > 64) {
      throw new ValidationError("invalid_argument", `workers must be an integer in [1, 64], got ${size}`);
    }
    this.heapMb = workerHeapMb(options.heapMb);
  }

  /** True once `close` was called: the pool takes no more runs. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Threads this pool has started so far (a run on a warm pool starts none, unless a thread died or was stopped). */
  get threadsStarted(): number {
    return this.started;
  }

  /**
   * Run the jobs on the pool's threads; resolves once every job has delivered its one result. With
   * `OpenJobs` (a queue worker's) jobs keep coming until its `end()`, and the run holds the pool till then.
   */
  run(jobs: readonly EpisodeJob[] | OpenJobs, options: JobRunnerOptions): Promise<void> {
    if (this.isClosed) return Promise.reject(new ValidationError("invalid_argument", "this worker pool is closed"));
    const turn = this.queue.then(() => new PoolRun(this, jobs, options).done);
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /** Stop every thread (after the runs already asked for). */
  async close(): Promise<void> {
    this.isClosed = true;
    await this.queue;
    await Promise.all(this.idle.splice(0).map((worker) => worker.terminate()));
  }

  /** A thread for a run: a warm idle one if there is one, else a new one. */
  warm(): Worker {
    return this.idle.pop() ?? this.fresh();
  }

  /** A new thread; one that fails while idle (its error is not a run's) exits and leaves the pool. */
  private fresh(): Worker {
    const worker = startThread(siblingModule(import.meta.url, "worker"), { name: "llmix-rollout", limits: { heapMb: this.heapMb } });
    this.started++;
    worker.on("error", () => undefined);
    worker.once("exit", () => {
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
    });
    return worker;
  }

  /** Take back a thread a run is done with: kept warm (not keeping the process alive) up to `size` threads. */
  park(worker: Worker): void {
    if (this.idle.length >= this.size) {
      void worker.terminate();
      return;
    }
    worker.unref();
    this.idle.push(worker);
  }
}
