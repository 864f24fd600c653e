/**
 * A rollout worker thread: builds the environment (built-ins plus the config's `--module` files) and the
 * policy, then runs `concurrency` slots that ask the main thread for jobs and send back stored episodes.
 */
import { parentPort, workerData } from "node:worker_threads";
import { LlmixError, toLlmixError } from "../core/errors.js";
import { addModules } from "../core/load-module.js";
import { builtinRegistry } from "../envs/index.js";
import type { EpisodeJob } from "./episode.js";
import { parsePolicySpec } from "./policies/index.js";
import { runSlots, type MainMessage, type WorkerData, type WorkerMessage } from "./pool.js";

if (!parentPort) throw new LlmixError("internal", "rollout worker: not started as a worker thread");
const port = parentPort;
const data = workerData as WorkerData;
const send = (message: WorkerMessage) => port.postMessage(message);

/**
 * The worker's side of the job queue: jobs arrive ahead of need (up to `ahead` beyond the ones running),
 * so a slot that finishes takes its next job at once. Taking a job tells the main thread it started (a
 * crash then records it as failed; queued jobs go back to the main queue) and asks for one more.
 */
class JobFeed {
  private readonly queued: EpisodeJob[] = [];
  /** Sizes of the requests not answered yet, oldest first (the main thread answers in order). */
  private readonly asked: number[] = [];
  private exhausted = false;
  /** Slots waiting for jobs to arrive. */
  private waiters: Array<() => void> = [];

  constructor(private readonly ahead: number) {
    port.on("message", (message: MainMessage) => this.receive(message.jobs));
  }

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

  private ask(count: number, started: string | null): void {
    if (count > 0) this.asked.push(count);
    send({ type: "next", count, started });
  }

  private receive(jobs: EpisodeJob[]): void {
    const count = this.asked.shift() ?? 0;
    if (jobs.length < count) this.exhausted = true;
    this.queued.push(...jobs);
    for (const wake of this.waiters.splice(0)) wake();
  }
}

async function main(): Promise<void> {
  const registry = builtinRegistry();
  await addModules(registry, data.config.modules);
  const entry = registry.get(data.config.env);
  const source = parsePolicySpec(data.config.policy, { openai: data.policyOptions });
  const feed = new JobFeed(data.concurrency);
  await runSlots(
    () => feed.take(),
    {
      config: data.config,
      concurrency: data.concurrency,
      create: () => entry.create(data.config.env_options),
      source,
      onResult: (stored) => send({ type: "result", stored }),
    },
  );
  port.close();
}

main().catch((error: unknown) => {
  const e = toLlmixError(error);
  send({ type: "fatal", error: { code: e.code, message: e.message } });
  port.close();
});
