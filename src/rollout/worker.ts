/**
 * A rollout worker thread of a WorkerPool. For each run the main thread sends, it builds the environment
 * (built-ins plus the config's `--module` files) and the policy, runs `concurrency` slots that ask the
 * main thread for jobs, sends each finished episode, then reports itself idle and waits for the next run.
 * Step records also go ahead of their episode, a batch every STEP_FLUSH_MS of free thread time, so the
 * main thread holds an episode's earlier steps if it has to stop this thread.
 */
import { parentPort } from "node:worker_threads";
import type { TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError, toLlmixError } from "../core/errors.js";
import { addModules } from "../core/load-module.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import { builtinRegistry } from "../envs/index.js";
import type { EpisodeJob } from "./episode.js";
import { parsePolicySpec } from "./policies/index.js";
import { runSlots } from "./pool.js";
import type { MainMessage, WorkerMessage, WorkerRun } from "./worker-pool.js";

if (!parentPort) throw new LlmixError("internal", "rollout worker: not started as a worker thread");
const port = parentPort;
const send = (message: WorkerMessage) => port.postMessage(message);

/**
 * The worker's side of one run's job queue: jobs arrive ahead of need (up to `ahead` beyond the ones
 * running), so a slot that finishes takes its next job at once. Taking a job tells the main thread it
 * started (a crash then records it as failed; queued jobs go back to the main queue) and asks for one more.
 */
class JobFeed {
  private readonly queued: EpisodeJob[] = [];
  /** Sizes of the requests not answered yet, oldest first (the main thread answers in order). */
  private readonly asked: number[] = [];
  private exhausted = false;
  /** Slots waiting for jobs to arrive. */
  private waiters: Array<() => void> = [];

  constructor(private readonly ahead: number) {}

  /** The next job, or null when the main thread has no more. */
  async take(): Promise<EpisodeJob | null> {
    if (this.asked.length === 0 && this.queued.length === 0 && !this.exhausted) this.ask(this.ahead + 1, null);
    while (this.queued.length === 0) {
      if (this.exhausted && this.asked.length === 0) return null;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    const job = this.queued.shift() as EpisodeJob;
    this.ask(this.exhausted ? 0 : 1, job.episode_id);
    return job;
  }

  /** Jobs answering the oldest request (`more`: fewer than asked does not mean the end, in an open run). */
  receive(jobs: EpisodeJob[], more = false): void {
    const count = this.asked.shift() ?? 0;
    if (jobs.length < count && !more) this.exhausted = true;
    this.queued.push(...jobs);
    for (const wake of this.waiters.splice(0)) wake();
  }

  private ask(count: number, started: string | null): void {
    if (count > 0) this.asked.push(count);
    send({ type: "next", count, started });
  }
}

/** How long a step record may wait in the thread before it is sent ahead of its episode. */
const STEP_FLUSH_MS = 50;

/**
 * The step records of episodes in progress, sent to the main thread in one batch at most every
 * STEP_FLUSH_MS (a message per step costs a CPU-bound rollout a tenth of its throughput). A thread that
 * blocks keeps only the records of its last STEP_FLUSH_MS; an episode's row carries the records still here.
 */
class StepStream {
  private readonly pending = new Map<string, TrajectoryStepRecord[]>();
  private timer: NodeJS.Timeout | null = null;

  add(record: TrajectoryStepRecord): void {
    const list = this.pending.get(record.episode_id);
    if (list) list.push(record);
    else this.pending.set(record.episode_id, [record]);
    this.timer ??= setTimeout(() => this.flush(), STEP_FLUSH_MS);
  }

  /** The records of an ended episode not sent yet (they go with its row). */
  take(episodeId: string): TrajectoryStepRecord[] {
    const list = this.pending.get(episodeId) ?? [];
    this.pending.delete(episodeId);
    return list;
  }

  private flush(): void {
    this.timer = null;
    const records = [...this.pending.values()].flat();
    this.pending.clear();
    if (records.length > 0) send({ type: "steps", records });
  }
}

/** Registries by `--module` list: a module is loaded once per thread, however many runs use it. */
const registries = new Map<string, Promise<EnvironmentRegistry>>();

function registryFor(modules: readonly string[]): Promise<EnvironmentRegistry> {
  const key = JSON.stringify(modules);
  let registry = registries.get(key);
  if (!registry) {
    const fresh = builtinRegistry();
    registry = addModules(fresh, modules).then(() => fresh);
    // A module that failed to load is tried again by the next run that names it.
    registry.catch(() => registries.delete(key));
    registries.set(key, registry);
  }
  return registry;
}

let feed: JobFeed | null = null;

async function run(data: WorkerRun): Promise<void> {
  const entry = (await registryFor(data.config.modules)).get(data.config.env);
  const source = parsePolicySpec(data.config.policy, { openai: data.policyOptions });
  const jobs = new JobFeed(data.concurrency);
  const steps = new StepStream();
  feed = jobs;
  await runSlots(() => jobs.take(), {
    config: data.config,
    concurrency: data.concurrency,
    create: () => entry.create(data.config.env_options),
    source,
    onStep: (record) => steps.add(record),
    onResult: (stored) => send({ type: "result", episode: stored.episode, steps: steps.take(stored.episode.episode_id) }),
  });
  feed = null;
  send({ type: "idle" });
}

port.on("message", (message: MainMessage) => {
  if (message.type === "jobs") {
    feed?.receive(message.jobs, message.more);
    return;
  }
  run(message.run).catch((error: unknown) => {
    const e = toLlmixError(error);
    send({ type: "fatal", error: { code: e.code, message: e.message } });
    port.close();
  });
});
