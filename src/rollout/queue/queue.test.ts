/**
 * The queue's two sides against the real Redis at 127.0.0.1:6379 (LLMIX_TEST_REDIS_URL points elsewhere):
 * idempotent enqueuing, collecting results (also those finished while no enqueuer was alive), a
 * worker's processing of good and malformed jobs, and an episode whose worker stalls twice becoming an
 * error episode. Each test has a queue name of its own, obliterated after. Without Redis these tests
 * fail (never skip): the first one checks that Redis answers.
 */
import { randomBytes } from "node:crypto";
import { Queue, Worker as BullWorker } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../envs/index.js";
import type { StoredEpisode } from "../../store/types.js";
import type { EpisodeJob } from "../episode.js";
import { planJobs, type RolloutConfig } from "../plan.js";
import { parsePolicySpec } from "../policies/index.js";
import type { ExecutorOptions } from "../runner.js";
import { enqueueEpisodes, QueueExecutor } from "./enqueue.js";
import { jobData, parseJobData } from "./payload.js";
import { checkRedis, connectionOf, episodeIdOfJob, jobIdOf } from "./queue-names.js";
import { QueueWorker, type QueueWorkerEvent } from "./queue-worker.js";

const REDIS = process.env.LLMIX_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** A queue of the test's own, obliterated after the test. */
function testQueue(): { name: string; queue: Queue } {
  const name = `llmix-test-${randomBytes(4).toString("hex")}`;
  const queue = new Queue(name, { connection: connectionOf(REDIS) });
  closers.push(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
  });
  return { name, queue };
}

function config(over: Partial<RolloutConfig> = {}): RolloutConfig {
  return {
    env: "billing-dispute", policy: "noisy-oracle:0.3", policy_checkpoint: null, n: 4, group: 2, difficulties: ["easy"], split: null,
    task_ids: null, seed: 3, timeout_ms: 60_000, env_options: {}, modules: [], advantage_on: "reward", ...over,
  };
}

function plan(runId: string, c: RolloutConfig): EpisodeJob[] {
  const env = builtinRegistry().get(c.env).create();
  return planJobs(runId, c, env);
}

/** Executor options that collect results in memory (each "stored" at once). */
function collector(c: RolloutConfig, storedIds: string[] = []): { options: ExecutorOptions; results: StoredEpisode[] } {
  const results: StoredEpisode[] = [];
  const options: ExecutorOptions = {
    config: c, concurrency: 2, registry: builtinRegistry(), source: parsePolicySpec(c.policy), storedIds,
    onResult: async (r) => {
      results.push(r);
      return true;
    },
  };
  return { options, results };
}

async function startWorker(name: string, events: QueueWorkerEvent[] = []): Promise<QueueWorker> {
  const worker = await QueueWorker.start({ redisUrl: REDIS, queueName: name, workers: 1, concurrency: 2, lockMs: 5000, onEvent: (e) => events.push(e) });
  closers.push(() => worker.close());
  return worker;
}

async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("queue names and payloads", () => {
  it("Redis answers at the test URL (these tests fail, not skip, without it)", async () => {
    await checkRedis(REDIS);
  });

  it("an unreachable Redis is queue_unavailable, naming the URL without its password", async () => {
    const error = await checkRedis("redis://user:secret@127.0.0.1:1", 1000).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "queue_unavailable" });
    expect((error as Error).message).toContain("127.0.0.1:1");
    expect((error as Error).message).not.toContain("secret");
  });

  it("job ids are episode ids, with colons escaped reversibly", () => {
    for (const id of ["run-1/billing-dispute/easy/seed-3/g0", "a:b%3A/c%/g1"]) {
      expect(jobIdOf(id)).not.toContain(":");
      expect(episodeIdOfJob(jobIdOf(id))).toBe(id);
    }
    expect(jobIdOf("run-1/t/g0")).toBe("run-1/t/g0");
  });

  it("parseJobData accepts a payload it made and refuses malformed ones with invalid_argument", () => {
    const c = config();
    const job = plan("r", c)[0] as EpisodeJob;
    const data = jobData(job, c, { apiKey: "secret", model: "m" });
    expect(data.policy_options).toEqual({ model: "m" });
    expect(parseJobData(JSON.parse(JSON.stringify(data)), jobIdOf(job.episode_id)).job).toEqual(job);
    for (const bad of [null, 42, { v: 2 }, { ...data, job: { ...job, seed: -1 } }, { ...data, config: { ...c, group: 0 } }, { ...data, job: { ...job, env: "other" } }]) {
      expect(() => parseJobData(bad, jobIdOf(job.episode_id))).toThrow(expect.objectContaining({ code: "invalid_argument" }));
    }
    expect(() => parseJobData(data, "another-id")).toThrow(/not its episode's/);
  });
});

describe("enqueue and collect", () => {
  it("enqueuing the same episodes twice adds each job once, under its episode id", async () => {
    const { queue } = testQueue();
    const c = config();
    const jobs = plan("run-idem", c);
    await enqueueEpisodes(queue, jobs, c);
    await enqueueEpisodes(queue, jobs, c);
    expect(await queue.getWaitingCount()).toBe(jobs.length);
    const ids = (await queue.getWaiting()).map((j) => j.id).sort();
    expect(ids).toEqual(jobs.map((j) => jobIdOf(j.episode_id)).sort());
  });

  it("a worker runs the jobs; the executor collects each result once and removes its job", async () => {
    const { name, queue } = testQueue();
    const events: QueueWorkerEvent[] = [];
    await startWorker(name, events);
    const c = config();
    const jobs = plan("run-collect", c);
    const { options, results } = collector(c);
    await new QueueExecutor({ redisUrl: REDIS, queueName: name, pollMs: 50 }).run(jobs, options);
    expect(results.map((r) => r.episode.episode_id).sort()).toEqual(jobs.map((j) => j.episode_id).sort());
    expect(results.every((r) => r.episode.status === "ok" && r.steps.length === r.episode.steps)).toBe(true);
    const counts = await queue.getJobCounts("waiting", "active", "completed", "failed");
    expect(counts).toEqual({ waiting: 0, active: 0, completed: 0, failed: 0 });
    expect(events[0]).toEqual({ type: "connected" });
    expect(events.filter((e) => e.type === "episode")).toHaveLength(jobs.length);
  });

  it("collects results that completed while no enqueuer was alive, and drops jobs of episodes already stored", async () => {
    const { name, queue } = testQueue();
    const c = config();
    const jobs = plan("run-late", c);
    await enqueueEpisodes(queue, jobs, c);
    const worker = await startWorker(name);
    await until(async () => (await queue.getCompletedCount()) === jobs.length);
    await worker.close();
    // The first episode counts as stored already (an enqueuer stored it and died before removing its job).
    const [first, ...rest] = jobs as [EpisodeJob, ...EpisodeJob[]];
    const { options, results } = collector(c, [first.episode_id]);
    await new QueueExecutor({ redisUrl: REDIS, queueName: name, pollMs: 50 }).run(rest, options);
    expect(results.map((r) => r.episode.episode_id).sort()).toEqual(rest.map((j) => j.episode_id).sort());
    expect(await queue.getCompletedCount()).toBe(0);
  });

  it("adds again, and only, the jobs Redis lost while the run goes on (one fresh job each, nothing duplicated)", async () => {
    const { name, queue } = testQueue();
    const c = config({ n: 6, group: 2 });
    const jobs = plan("run-lost", c);
    const { options, results } = collector(c);
    const events: QueueWorkerEvent[] = [];
    const run = new QueueExecutor({ redisUrl: REDIS, queueName: name, pollMs: 50, reenqueueMs: 300 }).run(jobs, options);
    await until(async () => (await queue.getWaitingCount()) === jobs.length);
    // Redis loses two waiting jobs (a restart without persistence loses them all; two are enough here).
    const lost = jobs.slice(0, 2).map((j) => jobIdOf(j.episode_id));
    for (const id of lost) await queue.remove(id);
    await until(async () => (await Promise.all(lost.map((id) => queue.getJob(id)))).every((j) => j !== undefined), 5000);
    // A few more rounds: the jobs still there are not sent again (BullMQ would log a "duplicated" event for each).
    await new Promise((r) => setTimeout(r, 1000));
    expect(await queue.getWaitingCount()).toBe(jobs.length);
    const redis = new Redis(REDIS);
    closers.push(async () => redis.disconnect());
    const stream = await redis.xrange(`bull:${name}:events`, "-", "+");
    expect(stream.filter(([, fields]) => fields.includes("duplicated"))).toEqual([]);
    await startWorker(name, events);
    await run;
    expect(results.map((r) => r.episode.episode_id).sort()).toEqual(jobs.map((j) => j.episode_id).sort());
    expect(events.filter((e) => e.type === "episode")).toHaveLength(jobs.length);
    expect(await queue.getJobCounts("waiting", "active", "completed", "failed")).toEqual({ waiting: 0, active: 0, completed: 0, failed: 0 });
  });
});

describe("the worker", () => {
  it("fails malformed jobs and jobs naming missing modules with clear errors, and goes on with good ones", async () => {
    const { name, queue } = testQueue();
    const events: QueueWorkerEvent[] = [];
    await startWorker(name, events);
    const c = config({ n: 1, group: 1 });
    const [job] = plan("run-mixed", c) as [EpisodeJob];
    await queue.add("episode", { hello: "world" }, { jobId: "junk" });
    await queue.add("episode", "not even an object", { jobId: "junk-2" });
    const missing = config({ n: 1, group: 1, modules: ["/nonexistent/llmix-env.ts"] });
    const [other] = plan("run-missing", missing) as [EpisodeJob];
    await queue.add("episode", jobData(other, missing, undefined), { jobId: jobIdOf(other.episode_id) });
    await queue.add("episode", jobData(job, c, undefined), { jobId: jobIdOf(job.episode_id) });
    await until(async () => (await queue.getFailedCount()) === 3 && (await queue.getCompletedCount()) === 1);
    const reasons = Object.fromEntries((await queue.getFailed()).map((j) => [j.id, j.failedReason]));
    expect(reasons.junk).toMatch(/^invalid_argument: malformed episode job junk: payload version/);
    expect(reasons["junk-2"]).toMatch(/^invalid_argument: malformed episode job junk-2: the payload is not an object/);
    expect(reasons[jobIdOf(other.episode_id)]).toMatch(/^module_load_failed: the run's --module file \/nonexistent\/llmix-env.ts is not on this worker's machine/);
    const done = await queue.getJob(jobIdOf(job.episode_id));
    expect(done?.returnvalue.episode).toMatchObject({ episode_id: job.episode_id, status: "ok" });
    expect(events.filter((e) => e.type === "job_failed")).toHaveLength(3);
  });

  it("an episode whose worker stops twice while running it is collected as a host_failed error episode", async () => {
    const { name, queue } = testQueue();
    const c = config({ n: 1, group: 1 });
    const [job] = plan("run-stall", c) as [EpisodeJob];
    await enqueueEpisodes(queue, [job], c);
    const lock = { lockDuration: 600, stalledInterval: 600, maxStalledCount: 1, connection: connectionOf(REDIS) };
    // Workers that take the job and hang, then stop without a word: what a SIGKILLed `llmix worker` does to its jobs.
    for (let stop = 0; stop < 2; stop++) {
      let taken!: () => void;
      const took = new Promise<void>((resolve) => (taken = resolve));
      const hung = new BullWorker(name, () => {
        taken();
        return new Promise(() => undefined);
      }, lock);
      await took;
      await hung.close(true);
    }
    // A healthy worker's stall checker notices the second stall and fails the job.
    const checker = new BullWorker(name, async () => undefined, lock);
    closers.push(() => checker.close());
    await until(async () => (await queue.getFailedCount()) === 1, 20_000);
    const { options, results } = collector(c);
    await new QueueExecutor({ redisUrl: REDIS, queueName: name, pollMs: 50 }).run([job], options);
    expect(results).toHaveLength(1);
    expect(results[0]?.episode).toMatchObject({ episode_id: job.episode_id, status: "error", error: { code: "host_failed" } });
    expect(await queue.getFailedCount()).toBe(0);
  });
});
