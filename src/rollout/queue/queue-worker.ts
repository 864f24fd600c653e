/**
 * The worker side of a distributed rollout (`llmix worker`): takes episode jobs from a BullMQ queue and
 * runs them on this process's worker threads (a WorkerPool, through an open PoolRun), never on the
 * thread that talks to Redis, so lock renewals keep going while environment code runs and the same
 * watchdog, heap caps and retries of dead threads apply as in a local rollout (pool-run.ts).
 *
 * Jobs of one run share a config; consecutive jobs with the same config (and policy flags) go to one
 * open run on the pool. A job of another config ends that run (its episodes in flight finish) and opens
 * the next, which starts once the pool is free. A job's return value is its stored episode (row and
 * steps); the enqueuer stores it and removes the job. A malformed job, a config naming module files
 * this machine lacks, or a policy spec this worker cannot build fails that job only.
 */
import { hostname } from "node:os";
import { Worker as BullWorker, UnrecoverableError, type Job } from "bullmq";
import { LlmixError, toLlmixError } from "../../core/errors.js";
import type { EnvironmentRegistry } from "../../core/registry.js";
import { builtinRegistry } from "../../envs/index.js";
import type { StoredEpisode } from "../../store/types.js";
import { parsePolicySpec } from "../policies/index.js";
import { OpenJobs } from "../pool-run.js";
import { WorkerPool } from "../worker-pool.js";
import { parseJobData, requireModules, type QueueJobData } from "./payload.js";
import { checkRedis, connectionOf, DEFAULT_LOCK_MS, DEFAULT_QUEUE_NAME, MAX_STALLS, stalledCheckMs } from "./queue-names.js";

/** How a queue worker runs. */
export interface QueueWorkerOptions {
  /** `redis://HOST:PORT[/DB]`. */
  redisUrl: string;
  queueName?: string;
  /** BullMQ's key prefix (default "bull"); tests use one of their own. */
  prefix?: string;
  /** Episodes in flight per thread (default 4). */
  concurrency?: number;
  /** Worker threads (default 1). */
  workers?: number;
  /** Heap cap of each thread, in MiB. */
  heapMb?: number;
  /** Lock duration of a job, in ms (default 10 s): a job whose worker stopped renewing it for this long is stalled and goes back to the queue (up to MAX_STALLS times). */
  lockMs?: number;
  onEvent?: (event: QueueWorkerEvent) => void;
}

/** What a queue worker reports. */
export type QueueWorkerEvent =
  | { type: "connected" }
  | { type: "episode"; done: number; errors: number }
  | { type: "job_failed"; jobId: string; error: string }
  | { type: "redis_error"; message: string };

/** One open run on the pool: the jobs of one config, and the episodes waiting for their results. */
interface Stream {
  key: string;
  jobs: OpenJobs;
  waiters: Map<string, { resolve: (stored: StoredEpisode) => void; reject: (error: unknown) => void }>;
}

/** A running queue worker; `close` stops it. */
export class QueueWorker {
  private readonly pool: WorkerPool;
  private readonly registry: EnvironmentRegistry = builtinRegistry();
  private readonly bull: BullWorker;
  private stream: Stream | null = null;
  private done = 0;
  private errors = 0;
  private closing: Promise<void> | null = null;

  private constructor(private readonly options: QueueWorkerOptions) {
    const concurrency = options.concurrency ?? 4;
    const workers = options.workers ?? 1;
    this.pool = new WorkerPool(workers, { heapMb: options.heapMb });
    const lockMs = options.lockMs ?? DEFAULT_LOCK_MS;
    this.bull = new BullWorker(options.queueName ?? DEFAULT_QUEUE_NAME, (job) => this.process(job), {
      connection: connectionOf(options.redisUrl),
      prefix: options.prefix,
      // Stored on each job it takes (processedBy), so an operator can tell which machine ran what.
      name: `${hostname()}/${process.pid}`,
      concurrency: workers * concurrency,
      lockDuration: lockMs,
      // A dead worker's jobs go back to the queue at the first check after their locks lapse: between
      // half a lock and a lock after its death, plus at most one check interval (queue-names.ts).
      stalledInterval: stalledCheckMs(lockMs),
      // A job back from a stall runs again; stalled more than MAX_STALLS times, it fails and the enqueuer records an error episode.
      maxStalledCount: MAX_STALLS,
      autorun: false,
    });
    let redisDown = false;
    this.bull.on("error", (error) => {
      // One line per outage, not one per retry.
      if (redisDown) return;
      redisDown = true;
      options.onEvent?.({ type: "redis_error", message: error.message });
    });
    this.bull.on("ready", () => {
      redisDown = false;
    });
    this.bull.on("failed", (job, error) => options.onEvent?.({ type: "job_failed", jobId: job?.id ?? "?", error: error.message }));
  }

  /** Check that Redis answers, then start taking jobs (queue_unavailable if Redis does not answer). */
  static async start(options: QueueWorkerOptions): Promise<QueueWorker> {
    await checkRedis(options.redisUrl);
    const worker = new QueueWorker(options);
    void worker.bull.run().catch((error: unknown) => options.onEvent?.({ type: "redis_error", message: (error as Error).message }));
    await worker.bull.waitUntilReady();
    options.onEvent?.({ type: "connected" });
    return worker;
  }

  /** Episodes this worker has finished (and of them, error episodes). */
  get counts(): { done: number; errors: number } {
    return { done: this.done, errors: this.errors };
  }

  /**
   * Stop: take no more jobs; with `force` false the active ones finish and are completed first, with
   * `force` true they are abandoned (their locks lapse and stall detection hands them to other workers).
   */
  close(force = false): Promise<void> {
    this.closing ??= (async () => {
      await this.bull.close(force);
      this.stream?.jobs.end();
      this.stream = null;
      await this.pool.close();
    })();
    return this.closing;
  }

  /** BullMQ's processor: check the job, run its episode on the pool, return the stored episode. */
  private async process(job: Job): Promise<StoredEpisode> {
    let data: QueueJobData;
    try {
      data = parseJobData(job.data, job.id);
      requireModules(data.config);
      // A bad policy spec fails here, not inside a thread.
      parsePolicySpec(data.config.policy, { openai: data.policy_options });
    } catch (error) {
      const e = toLlmixError(error);
      // Not retried: the same payload fails the same way on any worker.
      throw new UnrecoverableError(`${e.code}: ${e.message}`);
    }
    try {
      const stored = await this.run(data);
      this.done++;
      if (stored.episode.status === "error") this.errors++;
      this.options.onEvent?.({ type: "episode", done: this.done, errors: this.errors });
      return stored;
    } catch (error) {
      const e = toLlmixError(error);
      throw new UnrecoverableError(`${e.code}: ${e.message}`);
    }
  }

  /** Run one episode on the pool, in the open run of its config. */
  private run(data: QueueJobData): Promise<StoredEpisode> {
    const stream = this.streamFor(data);
    const id = data.job.episode_id;
    if (stream.waiters.has(id)) return Promise.reject(new LlmixError("internal", `episode ${id} is already running on this worker`));
    const result = new Promise<StoredEpisode>((resolve, reject) => stream.waiters.set(id, { resolve, reject }));
    stream.jobs.add([data.job]);
    return result;
  }

  /** The open run for this job's config: the current one, or a new one (ending the current). */
  private streamFor(data: QueueJobData): Stream {
    const key = JSON.stringify([data.config, data.policy_options ?? null]);
    if (this.stream?.key === key) return this.stream;
    this.stream?.jobs.end();
    const stream: Stream = { key, jobs: new OpenJobs(), waiters: new Map() };
    this.stream = stream;
    const settle = (error: unknown) => {
      if (this.stream === stream) this.stream = null;
      for (const waiter of stream.waiters.values()) waiter.reject(error);
      stream.waiters.clear();
    };
    this.pool
      .run(stream.jobs, {
        config: data.config,
        concurrency: this.options.concurrency ?? 4,
        registry: this.registry,
        source: parsePolicySpec(data.config.policy, { openai: data.policy_options }),
        policyOptions: data.policy_options,
        onResult: (stored) => {
          const waiter = stream.waiters.get(stored.episode.episode_id);
          stream.waiters.delete(stored.episode.episode_id);
          waiter?.resolve(stored);
        },
      })
      .then(
        () => settle(new LlmixError("internal", "the worker's run ended before the episode's result")),
        (error: unknown) => settle(error),
      );
    return stream;
  }
}
