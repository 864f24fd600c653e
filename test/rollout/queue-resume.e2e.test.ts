/**
 * End-to-end: an interrupted queued run finished by `llmix rollout --resume RUN --queue`, the way a user
 * runs them (the built dist/cli/bin.js), on the real Redis at 127.0.0.1:6379 (LLMIX_TEST_REDIS_URL points
 * elsewhere). The enqueuer is SIGKILLed mid-run; while no enqueuer is alive the workers go on, then one
 * is SIGKILLed mid-episode and the other stopped, so Redis holds every kind of leftover at once: results
 * no enqueuer collected, jobs never started, jobs whose worker died holding them, and a job of an
 * episode already stored (what an enqueuer killed between storing an episode and removing its job
 * leaves). The resume, with new workers, must store every missing episode exactly once, give every group
 * its advantages, finish the run, leave nothing in Redis, and store the same episodes as an in-process
 * run of the same config. Without Redis it fails, never skips.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/envs/index.js";
import { enqueueEpisodes } from "../../src/rollout/queue/enqueue.js";
import { jobIdOf } from "../../src/rollout/queue/queue-names.js";
import { planJobs, type RolloutConfig } from "../../src/rollout/plan.js";
import { queueHarness, type Proc } from "./queue-harness.js";

const EPISODES = 800;
const RUN = "run-queue-resume-e2e";
const harness = queueHarness("queue-resume");
const { root, bin, redisUrl: REDIS, dir, queueName, queue, redis, start, until, cleanup } = harness;

afterAll(cleanup);

const startWorker = (): Promise<Proc> => harness.startWorker({ concurrency: 2, reportEvery: 100 });

interface Row {
  episode_id: string;
  status: string;
  outcome: number | null;
  total_reward: number;
  has_advantages: number;
}

function episodes(store: string): Row[] {
  const db = new Database(store, { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT episode_id, status, json_extract(record, '$.outcome') AS outcome, total_reward, advantages IS NOT NULL AS has_advantages FROM episodes WHERE run_id = ? ORDER BY episode_id").all(RUN) as Row[];
  } finally {
    db.close();
  }
}

function stored(store: string): number {
  try {
    return episodes(store).length;
  } catch {
    return 0;
  }
}

/** The run as `llmix runs --json` shows it. */
function runRow(store: string): { status: string; stored_episodes: number; planned_episodes: number } {
  const run = spawnSync(process.execPath, [bin, "runs", "--store", store, "--json"], { cwd: root, encoding: "utf8" });
  expect(run.status, run.stderr).toBe(0);
  const rows = JSON.parse(run.stdout) as Array<{ run_id: string; status: string; stored_episodes: number; planned_episodes: number }>;
  const row = rows.find((r) => r.run_id === RUN);
  if (!row) throw new Error(`run ${RUN} is not in ${store}: ${run.stdout}`);
  return row;
}

/** The job ids of the run's jobs the worker with this pid holds (BullMQ's processedBy is host/pid). */
async function heldBy(pid: number | undefined): Promise<string[]> {
  const active = (await queue.getActive()).map((j) => j.id as string);
  const owners = await Promise.all(active.map((id) => redis.hget(`bull:${queueName}:${id}`, "pb")));
  return active.filter((_, i) => owners[i]?.endsWith(`/${pid}`));
}

describe("llmix rollout --resume RUN --queue", () => {
  it(`finishes a queued run whose enqueuer was SIGKILLed: ${EPISODES} episodes each stored once, equal to an in-process run`, { timeout: 120_000 }, async () => {
    const common = ["rollout", "--env", "billing-dispute", "--policy", "noisy-oracle:0.3", "-n", String(EPISODES), "--group", "4", "--seed", "23", "--run-id", RUN];
    const store = join(dir, "queue.db");
    const baselineStore = join(dir, "in-process.db");
    const baseline = start([...common, "--store", baselineStore]);
    const workers = await Promise.all([startWorker(), startWorker()]);

    // 1. The enqueuer dies without a word once a tenth of the run is stored.
    const first = start([...common, "--queue", REDIS, "--queue-name", queueName, "--store", store, "--json"]);
    let over = false;
    void first.exited.then(() => (over = true));
    await until("a tenth of the run stored", () => over || stored(store) >= EPISODES / 10);
    expect(over, `the enqueuer ended before it could be killed: ${first.out()}`).toBe(false);
    first.child.kill("SIGKILL");
    expect(await first.exited).toBeNull();
    const before = stored(store);
    expect(runRow(store)).toMatchObject({ status: "interrupted", stored_episodes: before, planned_episodes: EPISODES });

    // 2. With no enqueuer alive, the workers finish more episodes (their results wait in Redis); then one
    // dies holding episodes (their locks lapse) and the other stops taking jobs.
    await until("results finished with no enqueuer alive", async () => (await queue.getCompletedCount()) >= 20);
    const victim = workers[0]?.child.pid;
    await until("a worker with episodes in flight", async () => (await heldBy(victim)).length > 0, 20_000);
    workers[0]?.child.kill("SIGKILL");
    workers[1]?.child.kill("SIGTERM");
    expect(await workers[1]?.exited).toBe(0);
    await workers[0]?.exited;
    // Its jobs stay active under its name until their locks lapse and a worker's stall check hands them on.
    const stranded = await heldBy(victim);

    // 3. A job of an episode that is stored already: what an enqueuer killed between storing an episode
    // and removing its job leaves behind. The resume must drop it, not run it again.
    const db = new Database(store, { readonly: true, fileMustExist: true });
    const config = JSON.parse((db.prepare("SELECT record FROM runs WHERE run_id = ?").get(RUN) as { record: string }).record).config as RolloutConfig;
    const storedIds = new Set((db.prepare("SELECT episode_id FROM episodes WHERE run_id = ?").all(RUN) as Array<{ episode_id: string }>).map((r) => r.episode_id));
    db.close();
    const planner = builtinRegistry().get(config.env).create(config.env_options);
    const planned = planJobs(RUN, config, planner);
    await planner.close();
    const leftover = planned.find((j) => storedIds.has(j.episode_id));
    if (!leftover) throw new Error("no stored episode");
    await enqueueEpisodes(queue, [leftover], config);

    const counts = await queue.getJobCounts("waiting", "active", "completed", "failed");
    expect(counts.completed, JSON.stringify(counts)).toBeGreaterThan(0);
    expect(counts.waiting, JSON.stringify(counts)).toBeGreaterThan(1);
    expect(stranded.length).toBeGreaterThan(0);
    const collectable = counts.completed;

    // 4. The resume, through the same queue; new workers join once it has dropped the stored episode's job.
    const resume = start(["rollout", "--resume", RUN, "--queue", REDIS, "--queue-name", queueName, "--store", store, "--json"]);
    await until("the resume to drop the stored episode's job", async () => (await queue.getJob(jobIdOf(leftover.episode_id))) === undefined, 30_000);
    const fresh = await Promise.all([startWorker(), startWorker()]);
    const code = await resume.exited;
    expect(code, resume.out()).toBe(0);
    const summary = JSON.parse(resume.stdout().slice(resume.stdout().indexOf("{")));
    expect(summary).toMatchObject({ episodes: EPISODES, ran: EPISODES - before, errors: 0, run: { run_id: RUN, status: "finished" } });
    expect(summary.ran).toBeGreaterThan(collectable);
    console.log(`queue resume e2e: enqueuer killed at ${before} stored; then ${collectable} results uncollected in Redis, ${counts.waiting - 1} jobs not started, ${stranded.length} held by a killed worker; the resume stored ${summary.ran}`);

    // Every planned episode stored once, every group with its advantages, the same as in-process.
    expect(await baseline.exited, baseline.out()).toBe(0);
    const viaQueue = episodes(store);
    expect(viaQueue).toHaveLength(EPISODES);
    expect(new Set(viaQueue.map((e) => e.episode_id))).toEqual(new Set(planned.map((j) => j.episode_id)));
    expect(viaQueue.every((e) => e.status === "ok" && e.has_advantages === 1)).toBe(true);
    expect(viaQueue).toEqual(episodes(baselineStore));
    expect(runRow(store)).toMatchObject({ status: "finished", stored_episodes: EPISODES, planned_episodes: EPISODES });
    // The killed worker's episodes ran again elsewhere (each stalled once, so none is an error episode), and nothing is left in Redis.
    expect(await queue.getJobCounts("waiting", "active", "completed", "failed", "delayed")).toEqual({ waiting: 0, active: 0, completed: 0, failed: 0, delayed: 0 });

    for (const w of fresh) w.child.kill("SIGTERM");
    for (const w of fresh) expect(await w.exited, w.out()).toBe(0);
  });
});
