/**
 * One rollout run on a worker pool's threads, and what happens when a thread goes wrong.
 *
 * Threads pull jobs from the run's shared queue (`concurrency` episodes in flight each). Each thread
 * reports when a slot starts an episode and sends step records ahead of their episode (batched, see
 * worker.ts), so the main thread knows, per thread, which episodes are running, since when, and their
 * steps so far.
 *
 * - Watchdog: an episode still running `timeout + grace` after it started has kept its thread past the
 *   in-thread cooperative timeout, so the thread is blocked (a synchronous loop, say): the thread is
 *   terminated. If that episode was the only one running there, it is recorded as `episode_timeout`
 *   with the steps the thread had sent ahead. If others were running too, nobody can tell which one blocked the
 *   thread, so they are all retried apart: in two halves, each on a thread of its own that runs nothing
 *   else, halving again until the blocking episode runs alone, times out alone and is recorded. Episodes that were
 *   only waiting (an HTTP policy, a promise that never settles) end by the cooperative timeout inside
 *   the thread, which keeps running.
 * - A thread that dies (exits, crashes, exceeds its heap cap) is replaced. The episodes it had started
 *   are retried apart the same way (on other threads), and one that then kills a thread running it
 *   alone, having killed one before, is recorded as an error: `resource_exhausted` for the heap cap, `host_failed` otherwise.
 *   Jobs a dead or stopped thread had received but not started go back to where they came from. A run
 *   does not stop because a thread died; it fails only when its threads cannot start at all.
 * - Open runs (a queue worker's, rollout/queue): jobs keep arriving through `OpenJobs` after the run
 *   started. A thread asking for jobs while none are queued is answered when the next ones arrive, not
 *   with "no more", and the run settles only after `end()`, once its threads have drained.
 */
import type { Worker } from "node:worker_threads";
import type { TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError, type ErrorCode } from "../core/errors.js";
import { isOutOfMemory } from "../hosts/thread.js";
import type { EpisodeRecord, StoredEpisode } from "../store/types.js";
import { Redactor } from "../store/redaction.js";
import { episodeRecord, type EpisodeJob } from "./episode.js";
import type { JobRunnerOptions } from "./pool.js";
import type { MainMessage, WorkerMessage, WorkerRun } from "./worker-pool.js";

/** Where a run gets its threads and returns them. */
export interface ThreadSource {
  readonly size: number;
  readonly heapMb: number;
  /** An idle thread (warm code), or a new one. */
  warm(): Worker;
  /** A thread the run is done with, in good health. */
  park(worker: Worker): void;
}

/**
 * The jobs of an open run: more can be added while it runs; `end()` says no more will come (the run then
 * finishes what it holds and settles). Made by the caller before the run starts, as the run may wait its
 * turn on the pool.
 */
export class OpenJobs {
  /** Jobs added while no run is attached yet. */
  private pending: EpisodeJob[] = [];
  private isEnded = false;
  private listener: ((jobs: EpisodeJob[]) => void) | null = null;

  /** True once `end` was called. */
  get ended(): boolean {
    return this.isEnded;
  }

  /** Hand more jobs to the run. */
  add(jobs: readonly EpisodeJob[]): void {
    if (this.isEnded) throw new LlmixError("internal", "jobs added to an open run after its end");
    if (this.listener) this.listener([...jobs]);
    else this.pending.push(...jobs);
  }

  /** No more jobs will come: the run finishes those it has and settles. */
  end(): void {
    this.isEnded = true;
    this.listener?.([]);
  }

  /** Attach the run: it receives the jobs added so far, then each later addition (and `end`, as an empty one). */
  attach(listener: (jobs: EpisodeJob[]) => void): EpisodeJob[] {
    this.listener = listener;
    return this.pending.splice(0);
  }
}

/** How long past its time limit an episode may keep its thread before the watchdog stops the thread. */
export function watchdogGraceMs(timeoutMs: number): number {
  return Math.max(1000, timeoutMs / 20);
}

/** One job handed to a thread. */
interface Attempt {
  job: EpisodeJob;
  /** When a slot started it (null: received, not started). */
  startedAt: Date | null;
  steps: TrajectoryStepRecord[];
  watchdog: NodeJS.Timeout | null;
}

/** A thread working for the run: on the shared queue, or on a batch of suspects retried apart. */
interface Host {
  worker: Worker;
  /** The suspects this thread runs, alone; null for a thread on the shared queue. */
  batch: EpisodeJob[] | null;
  attempts: Map<string, Attempt>;
  /** Sizes of its job requests not answered yet, oldest first (open runs hold them until jobs arrive). */
  requests: number[];
  /** The episode the watchdog stopped the thread for. */
  late: Attempt | null;
  /** The thread's error event (an uncaught exception, or ERR_WORKER_OUT_OF_MEMORY). */
  error: unknown;
  /** A start-up failure the thread reported: the run cannot run on these threads. */
  fatal: LlmixError | null;
  detach: () => void;
}

/** Threads in a row that may die before starting any episode before the run gives up. */
const BARREN_DEATHS_PER_THREAD = 2;

/** The run of `jobs` on threads from `threads`; `done` resolves once every job has delivered its one result. */
export class PoolRun {
  readonly done: Promise<void>;
  private readonly queue: EpisodeJob[];
  /** Suspects waiting to be retried apart from everything else, a batch per thread. */
  private readonly batches: EpisodeJob[][] = [];
  /** Episode id -> threads that died while it ran there. */
  private readonly deaths = new Map<string, number>();
  private readonly hosts = new Set<Host>();
  private readonly workerRun: WorkerRun;
  private readonly deadlineMs: number;
  /** Where more jobs come from (an open run), or null: the run has all its jobs from the start. */
  private readonly source: OpenJobs | null;
  private barrenDeaths = 0;
  /** A throwing result handler stops the run: no new jobs, in-flight results still delivered, then it is thrown. */
  private handlerError: unknown = null;
  private settled = false;
  private resolveRun!: () => void;
  private rejectRun!: (error: unknown) => void;

  constructor(
    private readonly threads: ThreadSource,
    jobs: readonly EpisodeJob[] | OpenJobs,
    private readonly options: JobRunnerOptions,
  ) {
    this.source = jobs instanceof OpenJobs ? jobs : null;
    this.queue = jobs instanceof OpenJobs ? [] : [...jobs];
    this.workerRun = { config: options.config, concurrency: options.concurrency, policyOptions: options.policyOptions };
    this.deadlineMs = options.config.timeout_ms + watchdogGraceMs(options.config.timeout_ms);
    this.done = new Promise<void>((resolve, reject) => {
      this.resolveRun = resolve;
      this.rejectRun = reject;
    }).then(() => {
      if (this.handlerError !== null) throw this.handlerError;
    });
    if (this.source) {
      this.queue.push(
        ...this.source.attach((more) => {
          if (this.settled) return;
          this.queue.push(...more);
          this.fill();
        }),
      );
    }
    this.fill();
  }

  /** True while more jobs may still arrive: an open run before its end (and before a result handler failed). */
  private get accepting(): boolean {
    return this.source !== null && !this.source.ended && this.handlerError === null;
  }

  /** Put threads to work: suspects first (a thread per batch), then the shared queue; settle when nothing is left. */
  private fill(): void {
    if (this.settled) return;
    if (this.handlerError !== null) {
      this.queue.length = 0;
      this.batches.length = 0;
    }
    let batchHosts = [...this.hosts].filter((h) => h.batch !== null).length;
    while (this.batches.length > 0 && batchHosts < this.threads.size) {
      this.open(this.threads.warm(), this.batches.shift() as EpisodeJob[]);
      batchHosts++;
    }
    // An open run keeps all its threads while it is open: jobs may arrive at any moment.
    const wanted = this.accepting ? this.threads.size : Math.min(this.threads.size, Math.ceil(this.queue.length / this.options.concurrency));
    let sharedHosts = this.hosts.size - batchHosts;
    while (sharedHosts < wanted) {
      this.open(this.threads.warm(), null);
      sharedHosts++;
    }
    if (this.hosts.size === 0) this.settle(null);
    for (const host of this.hosts) this.answer(host);
  }

  private open(worker: Worker, batch: EpisodeJob[] | null): void {
    const host: Host = { worker, batch, attempts: new Map(), requests: [], late: null, error: null, fatal: null, detach: () => undefined };
    const onMessage = (message: WorkerMessage) => this.onMessage(host, message);
    const onError = (error: unknown) => {
      host.error ??= error;
    };
    const onExit = (code: number) => this.onExit(host, code);
    host.detach = () => worker.off("message", onMessage).off("error", onError).off("exit", onExit);
    worker.on("message", onMessage).on("error", onError).on("exit", onExit);
    worker.ref();
    this.hosts.add(host);
    const concurrency = batch ? batch.length : this.options.concurrency;
    worker.postMessage({ type: "run", run: { ...this.workerRun, concurrency } } satisfies MainMessage);
  }

  private onMessage(host: Host, message: WorkerMessage): void {
    switch (message.type) {
      case "next":
        if (message.started !== null) this.started(host, message.started);
        if (message.count > 0) {
          host.requests.push(message.count);
          this.answer(host);
        }
        return;
      case "steps":
        for (const record of message.records) host.attempts.get(record.episode_id)?.steps.push(record);
        return;
      case "result":
        this.finished(host, message.episode, message.steps);
        return;
      case "idle":
        this.release(host);
        return;
      case "fatal":
        host.fatal = new LlmixError(message.error.code as ErrorCode, message.error.message);
        return;
    }
  }

  /**
   * Answer a thread's pending job requests in order. Fewer jobs than asked tells a thread there are no
   * more, so while an open run has none queued a request waits; answered early, it says `more`.
   */
  private answer(host: Host): void {
    while (host.requests.length > 0) {
      const shared = host.batch === null;
      if (shared && this.accepting && this.queue.length === 0) return;
      const count = host.requests.shift() as number;
      host.worker.postMessage({ type: "jobs", jobs: this.take(host, count), more: shared && this.accepting } satisfies MainMessage);
    }
  }

  private take(host: Host, count: number): EpisodeJob[] {
    const jobs = (host.batch ?? this.queue).splice(0, count);
    for (const job of jobs) host.attempts.set(job.episode_id, { job, startedAt: null, steps: [], watchdog: null });
    return jobs;
  }

  private started(host: Host, episodeId: string): void {
    const attempt = host.attempts.get(episodeId);
    if (!attempt) return;
    attempt.startedAt = new Date();
    attempt.watchdog = setTimeout(() => this.expired(host, attempt), this.deadlineMs);
  }

  /** The watchdog: the episode kept its thread past its time limit and the grace; stop the thread. */
  private expired(host: Host, attempt: Attempt): void {
    if (host.late !== null) return;
    host.late = attempt;
    void host.worker.terminate();
  }

  private finished(host: Host, episode: EpisodeRecord, rest: TrajectoryStepRecord[]): void {
    const attempt = host.attempts.get(episode.episode_id);
    if (!attempt) return;
    clearTimeout(attempt.watchdog ?? undefined);
    host.attempts.delete(episode.episode_id);
    this.deliver({ episode, steps: attempt.steps.concat(rest) });
  }

  private release(host: Host): void {
    this.forget(host);
    this.threads.park(host.worker);
    this.fill();
  }

  /** Stop listening to a thread and watching its episodes. */
  private forget(host: Host): void {
    host.detach();
    this.hosts.delete(host);
    for (const a of host.attempts.values()) clearTimeout(a.watchdog ?? undefined);
  }

  private onExit(host: Host, exitCode: number): void {
    this.forget(host);
    if (this.settled) return;
    if (host.fatal) return this.fail(host.fatal);
    const attempts = [...host.attempts.values()];
    const unstarted = [...attempts.filter((a) => a.startedAt === null).map((a) => a.job), ...(host.batch ?? [])];
    if (unstarted.length > 0) {
      if (host.batch) this.batches.push(unstarted);
      else this.queue.unshift(...unstarted);
    }
    const running = attempts.filter((a) => a.startedAt !== null);
    if (host.late) this.afterStop(host.late, running);
    else this.afterDeath(host, running, exitCode);
    this.fill();
  }

  /** The watchdog stopped a thread for `late`; `running` were the episodes on it. */
  private afterStop(late: Attempt, running: Attempt[]): void {
    if (!running.includes(late)) {
      // The late episode delivered its result after all: the thread was not blocked, so the others are
      // not suspects either.
      this.queue.unshift(...running.map((a) => a.job));
    } else if (running.length === 1) {
      const grace = watchdogGraceMs(this.options.config.timeout_ms);
      const message = `episode ${late.job.episode_id} exceeded its time limit of ${this.options.config.timeout_ms} ms and kept its worker thread ${grace} ms more; the thread was stopped`;
      this.deliverFailure(late, new LlmixError("episode_timeout", message));
    } else {
      this.retryApart(running);
    }
  }

  /** A thread died on its own; `running` were the episodes on it. */
  private afterDeath(host: Host, running: Attempt[], exitCode: number): void {
    if (running.length === 0) {
      if (++this.barrenDeaths > BARREN_DEATHS_PER_THREAD * this.threads.size) {
        this.fail(new LlmixError("host_failed", `rollout worker threads keep dying before they start an episode: ${this.causeOf(host, exitCode).what}`));
      }
      return;
    }
    this.barrenDeaths = 0;
    for (const a of running) this.deaths.set(a.job.episode_id, (this.deaths.get(a.job.episode_id) ?? 0) + 1);
    const only = running.length === 1 ? (running[0] as Attempt) : null;
    if (only && (this.deaths.get(only.job.episode_id) ?? 0) >= 2) {
      const cause = this.causeOf(host, exitCode);
      this.deliverFailure(only, new LlmixError(cause.code, `episode ${only.job.episode_id} ${cause.what}, alone on its thread, after an earlier thread it ran on had died too`));
    } else {
      this.retryApart(running);
    }
  }

  /** What killed a thread, as an error code and the words of a message. */
  private causeOf(host: Host, exitCode: number): { code: ErrorCode; what: string } {
    if (isOutOfMemory(host.error)) return { code: "resource_exhausted", what: `ran its worker thread out of its ${this.threads.heapMb} MiB heap cap` };
    if (host.error !== null) return { code: "host_failed", what: `crashed its worker thread (${host.error instanceof Error ? host.error.message : String(host.error)})` };
    return { code: "host_failed", what: `ended its worker thread (exit code ${exitCode})` };
  }

  /** Retry suspects apart from everything else: one batch if alone, else two halves, each on a thread of its own. */
  private retryApart(running: Attempt[]): void {
    const jobs = running.map((a) => a.job);
    const half = Math.ceil(jobs.length / 2);
    this.batches.push(jobs.slice(0, half));
    if (jobs.length > half) this.batches.push(jobs.slice(half));
  }

  private deliverFailure(attempt: Attempt, failure: LlmixError): void {
    const steps = attempt.steps.slice();
    // The steps were redacted on their thread; a crash's message (environment code's words) is redacted
    // here, by the rules alone: the episode's values died with its thread.
    const rules = this.options.config.redaction;
    const error = rules ? new LlmixError(failure.code, new Redactor(rules).redactText(failure.message).value) : failure;
    this.deliver({ episode: episodeRecord(attempt.job, steps, error, attempt.startedAt ?? new Date(), new Date()), steps });
  }

  private deliver(stored: StoredEpisode): void {
    if (this.handlerError !== null) return;
    try {
      this.options.onResult(stored);
    } catch (error) {
      this.handlerError = error;
      this.queue.length = 0;
      this.batches.length = 0;
    }
  }

  private fail(error: LlmixError): void {
    // A run that cannot start on one thread cannot on the others: stop them rather than leave them busy.
    for (const host of [...this.hosts]) {
      this.forget(host);
      void host.worker.terminate();
    }
    this.settle(error);
  }

  private settle(error: LlmixError | null): void {
    if (this.settled) return;
    this.settled = true;
    if (error === null) this.resolveRun();
    else this.rejectRun(error);
  }
}
