/**
 * The enqueuer side of a distributed rollout (`llmix rollout --queue`): an EpisodeExecutor that puts a
 * run's missing episodes on a BullMQ queue, one job per episode whose job id is the episode id (so
 * enqueuing twice, or from a resume, adds nothing new), and collects the finished jobs: each result is
 * stored through the runner's writer and its job removed from Redis only once it is stored. It polls
 * the queue's completed and failed sets rather than listening to events, so results that completed
 * while no enqueuer was alive are collected the same way (`--resume`).
 *
 * Exactly once: a job id names one episode, an episode is handed to the store once per enqueuer
 * (later sightings of it are ignored), and a job is removed only after its episode is stored; an
 * enqueuer killed between the two leaves a job whose episode is stored, which the next resume drops.
 */
import { Job, Queue } from "bullmq";
import { LlmixError, type ErrorCode, ERROR_CODES } from "../../core/errors.js";
import type { StoredEpisode } from "../../store/types.js";
import { episodeRecord, type EpisodeJob } from "../episode.js";
import type { RolloutConfig } from "../plan.js";
import type { PolicySpecOptions } from "../policies/index.js";
import type { EpisodeExecutor, ExecutorOptions } from "../runner.js";
import { jobData } from "./payload.js";
import { checkRedis, connectionOf, DEFAULT_QUEUE_NAME, episodeIdOfJob, EPISODE_JOB_NAME, jobIdOf, STALLED_TOO_OFTEN } from "./queue-names.js";

/** Where the queue is. */
export interface QueueTarget {
  /** `redis://HOST:PORT[/DB]`. */
  redisUrl: string;
  queueName?: string;
  /** BullMQ's key prefix (default "bull"). */
  prefix?: string;
  /** How often the queue is polled for finished jobs (default 250 ms). */
  pollMs?: number;
  /** How often jobs Redis lost are added again (default 15 s). */
  reenqueueMs?: number;
}

/** How often the missing jobs are added again, in case Redis lost them (a restart without persistence). */
const REENQUEUE_MS = 15_000;

/** Every state a job can be in (BullMQ's names). */
const JOB_STATES = ["waiting", "prioritized", "waiting-children", "delayed", "active", "completed", "failed"] as const;

/** Jobs fetched from Redis at a time. */
const FETCH_CHUNK = 50;

/**
 * The length BullMQ trims the queue's event stream to (approximately: Redis trims whole stream nodes).
 * Nothing here reads the events (the enqueuer polls the job sets), but every job adds about five,
 * its "completed" one carrying the whole stored episode: at BullMQ's default of 10,000 a queue kept the
 * last ~2,000 episodes a second time in Redis (19 MB per 1,000 oracle episodes of billing-dispute; far
 * more with an LLM's token ids and logprobs). The enqueuer sets it on the queue (BullMQ's meta hash),
 * which the workers' scripts read.
 */
export const EVENTS_MAX_LEN = 1000;

/** Add one job per episode, its id the episode's; an id already in the queue is left as it is (idempotent). */
export async function enqueueEpisodes(queue: Queue, jobs: readonly EpisodeJob[], config: RolloutConfig, policyOptions?: PolicySpecOptions["openai"]): Promise<void> {
  for (let i = 0; i < jobs.length; i += 500) {
    await queue.addBulk(
      jobs.slice(i, i + 500).map((job) => ({
        name: EPISODE_JOB_NAME,
        data: jobData(job, config, policyOptions),
        opts: { jobId: jobIdOf(job.episode_id), attempts: 1 },
      })),
    );
  }
}

/** An executor that runs a rollout's episodes on queue workers (`llmix worker`). */
export class QueueExecutor implements EpisodeExecutor {
  constructor(private readonly target: QueueTarget) {}

  /** Enqueue `jobs`, collect their results (also those finished earlier), drop leftovers of stored episodes. */
  async run(jobs: readonly EpisodeJob[], options: ExecutorOptions): Promise<void> {
    await checkRedis(this.target.redisUrl);
    const queue = new Queue(this.target.queueName ?? DEFAULT_QUEUE_NAME, {
      connection: connectionOf(this.target.redisUrl),
      prefix: this.target.prefix,
      streams: { events: { maxLen: EVENTS_MAX_LEN } },
    });
    queue.on("error", () => undefined);
    try {
      await new Collection(queue, jobs, options, this.target.pollMs ?? 250, this.target.reenqueueMs ?? REENQUEUE_MS).run();
    } finally {
      await queue.close();
    }
  }
}

/** One invocation's bookkeeping: the jobs it waits for, and the results being stored. */
class Collection {
  /** Job id -> episode job, for the episodes not collected yet. */
  private readonly outstanding = new Map<string, EpisodeJob>();
  /** Job ids whose results were handed to the store (a later sighting is a duplicate, ignored). */
  private readonly collected = new Set<string>();
  /** Job ids of the run's episodes stored before this invocation: a job of one is a leftover, dropped. */
  private readonly stored: Set<string>;
  private readonly writes: Array<Promise<void>> = [];
  private failure: unknown = null;

  constructor(
    private readonly queue: Queue,
    private readonly jobs: readonly EpisodeJob[],
    private readonly options: ExecutorOptions,
    private readonly pollMs: number,
    private readonly reenqueueMs: number,
  ) {
    for (const job of jobs) this.outstanding.set(jobIdOf(job.episode_id), job);
    this.stored = new Set(options.storedIds.map(jobIdOf));
  }

  async run(): Promise<void> {
    // Jobs of episodes stored already: an earlier enqueuer stored them and stopped before removing them.
    // Only the jobs in the queue are looked at (one listing), not every stored episode of a long run.
    if (this.stored.size > 0) await this.drop(await this.queue.getRanges([...JOB_STATES], 0, -1, true));
    // Results that finished while no enqueuer was alive; failed jobs of an earlier attempt are retried.
    await this.sweep(true);
    await this.enqueue();
    let lastEnqueue = Date.now();
    // Until every episode has been handed to the store (each id is collected once).
    while (this.collected.size < this.jobs.length && this.failure === null) {
      await new Promise((resolve) => setTimeout(resolve, this.pollMs));
      await this.sweep(false);
      if (Date.now() - lastEnqueue >= this.reenqueueMs) {
        await this.enqueue();
        lastEnqueue = Date.now();
      }
    }
    await Promise.all(this.writes);
    if (this.failure !== null) throw this.failure;
  }

  /**
   * Add a job for every episode not collected yet whose job is not in the queue: the ids in the queue
   * are listed first (one script, ids only), so repeating this costs a listing, not every outstanding
   * job's payload (and a "duplicated" event for each). It brings back jobs Redis lost: no job of an
   * episode not collected yet leaves the queue otherwise (the enqueuer alone removes jobs, once their
   * episode is collected, and a failed job of an earlier attempt just before this). BullMQ leaves a job
   * whose id is in the queue as it is, so adding one that is there after all does nothing.
   */
  private async enqueue(): Promise<void> {
    const missing = this.jobs.filter((j) => this.outstanding.has(jobIdOf(j.episode_id)) && !this.collected.has(jobIdOf(j.episode_id)));
    if (missing.length === 0) return;
    const present = new Set(await this.queue.getRanges([...JOB_STATES], 0, -1, true));
    const fresh = missing.filter((j) => !present.has(jobIdOf(j.episode_id)) && !this.collected.has(jobIdOf(j.episode_id)));
    await enqueueEpisodes(this.queue, fresh, this.options.config, this.options.policyOptions);
  }

  /** Remove the jobs among `ids` whose episodes were stored before this invocation (one still running stays, and is dropped once finished). */
  private async drop(ids: readonly string[]): Promise<void> {
    await Promise.all(ids.filter((id) => this.stored.has(id)).map((id) => this.queue.remove(id).catch(() => 0)));
  }

  /** Collect this run's finished jobs: store completed ones, record or retry failed ones; drop leftovers of stored episodes. */
  private async sweep(initial: boolean): Promise<void> {
    for (const state of ["completed", "failed"] as const) {
      const finished = await this.queue.getRanges([state], 0, -1, true);
      if (this.stored.size > 0) await this.drop(finished);
      const ids = finished.filter((id) => this.outstanding.has(id) && !this.collected.has(id));
      for (let i = 0; i < ids.length; i += FETCH_CHUNK) {
        const found = await Promise.all(ids.slice(i, i + FETCH_CHUNK).map((id) => Job.fromId(this.queue, id)));
        for (const job of found) if (job?.id) await this.finished(job, state, initial);
      }
    }
  }

  private async finished(job: Job, state: "completed" | "failed", initial: boolean): Promise<void> {
    const id = job.id as string;
    const planned = this.outstanding.get(id) as EpisodeJob;
    if (state === "completed") return this.collect(id, resultOf(job.returnvalue, planned));
    const reason = job.failedReason ?? "unknown";
    if (reason.includes(STALLED_TOO_OFTEN)) {
      // Its worker stopped twice while running it (killed, crashed, out of memory, cut off from Redis):
      // recorded as an error rather than retried on worker after worker.
      const message = `episode ${planned.episode_id} was running on a queue worker that stopped (killed, crashed or cut off from Redis) twice; not retried again`;
      return this.collect(id, failedEpisode(planned, new LlmixError("host_failed", message)));
    }
    if (initial) {
      // A failure left by an earlier attempt (a worker without the run's module files, say): try again.
      await this.queue.remove(id);
      return;
    }
    this.failure ??= new LlmixError(codeOf(reason), `episode ${episodeIdOfJob(id)} failed on a queue worker: ${reason}`);
  }

  /** Hand a result to the store once; remove its job after it is stored. */
  private collect(id: string, result: StoredEpisode): void {
    this.collected.add(id);
    const write = this.options.onResult(result).then(async (stored) => {
      if (!stored) {
        this.failure ??= new LlmixError("store_error", "the trajectory store failed to write an episode");
        return;
      }
      this.outstanding.delete(id);
      await this.queue.remove(id).catch(() => 0);
    });
    this.writes.push(write.catch((error: unknown) => {
      this.failure ??= error;
    }));
  }
}

/** The stored episode a worker returned, checked against the planned job; an error episode if it is not one. */
function resultOf(value: unknown, planned: EpisodeJob): StoredEpisode {
  const v = value as Partial<StoredEpisode> | null;
  if (v && typeof v === "object" && v.episode?.episode_id === planned.episode_id && Array.isArray(v.steps)) return v as StoredEpisode;
  return failedEpisode(planned, new LlmixError("host_failed", `episode ${planned.episode_id}: its queue worker returned a malformed result`));
}

/** An error episode with no steps for a planned job. */
function failedEpisode(planned: EpisodeJob, error: LlmixError): StoredEpisode {
  const now = new Date();
  return { episode: episodeRecord(planned, [], error, now, now), steps: [] };
}

/** The error code a worker put at the start of a failure reason ("code: message"), else host_failed. */
function codeOf(reason: string): ErrorCode {
  const code = /^([a-z_]+): /.exec(reason)?.[1];
  return code !== undefined && code in ERROR_CODES ? (code as ErrorCode) : "host_failed";
}
