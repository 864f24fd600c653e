/**
 * Queue throughput (issue 16): the same queued rollout — billing-dispute, the oracle, an `llmix rollout
 * --queue` enqueuer storing into SQLite — run by 1 and by 2 `llmix worker` processes (one episode thread
 * each, 4 episodes in flight), on the Redis at LLMIX_BENCH_REDIS_URL (default redis://127.0.0.1:6379).
 * Every process is the built CLI (dist/, `npm run bench` builds first), as a user runs it.
 *
 * Each measurement has a queue name and a store of its own: its workers start, run a warm-up run (so
 * their threads have JIT-compiled the environment, as in bench/rollout.ts), then the measured run of
 * EPISODES episodes; the rate is the enqueuer's own (`--json`: episodes / seconds from its first job to
 * its last stored episode, process start-up excluded). 1- and 2-worker measurements alternate, so noise
 * from the rest of the machine hits both; the figures are medians over the repeats.
 *
 * What bounds the ratio here: the machine has two cores, and with two workers they also carry each
 * worker's main thread (BullMQ, results to Redis), Redis, and the enqueuer (collecting, storing); with
 * one worker those run beside its episode thread on the otherwise idle second core. bench/rollout.ts's
 * two-process ceiling (two separate local rollouts at once) is the most two CPU-bound streams of these
 * episodes reach on this machine with no queue at all.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Queue } from "bullmq";
import { median } from "./harness.js";

export interface QueueRate {
  /** `llmix worker` processes (each --workers 1 --concurrency 4). */
  workers: number;
  /** Episodes of each measured run. */
  episodes: number;
  /** Median episodes/s over the repeats. */
  episodes_per_s: number;
  /** Median steps/s over the repeats. */
  steps_per_s: number;
  /** Each repeat's episodes/s, in order. */
  runs: number[];
  /** Median episodes/s / the 1-worker median. */
  ratio: number;
}

export interface QueueBench {
  rates: QueueRate[];
  /** 2 workers' median / 1 worker's median. */
  ratio: number;
  repeats: number;
  warm_up_episodes_per_worker: number;
  seconds: number;
}

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = join(root, "dist/cli/bin.js");
const REDIS = process.env.LLMIX_BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const CONCURRENCY = 4;

/** A CLI process; `done` resolves with its exit code and output. */
function cli(args: string[]): { child: ChildProcess; output: () => string; done: Promise<{ code: number | null; output: string }> } {
  const child = spawn(process.execPath, [bin, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d));
  child.stderr?.on("data", (d: Buffer) => (output += d));
  const done = new Promise<{ code: number | null; output: string }>((resolve) => child.on("exit", (code) => resolve({ code, output })));
  return { child, output: () => output, done };
}

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`queue bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One enqueuer run through the queue; its --json summary's rate. */
async function enqueue(queueName: string, store: string, runId: string, episodes: number, seed: number): Promise<{ episodes_per_s: number; steps_per_s: number }> {
  const { code, output } = await cli([
    "rollout", "--env", "billing-dispute", "--policy", "oracle", "-n", String(episodes), "--seed", String(seed), "--run-id", runId,
    "--queue", REDIS, "--queue-name", queueName, "--store", store, "--json",
  ]).done;
  if (code !== 0) throw new Error(`queue bench: the enqueuer exited with ${code}: ${output.slice(-2000)}`);
  const summary = JSON.parse(output.slice(output.indexOf("{"))) as { ran: number; errors: number; episodes_per_s: number; steps_per_s: number };
  if (summary.ran !== episodes || summary.errors !== 0) throw new Error(`queue bench: ran ${summary.ran} of ${episodes} episodes, ${summary.errors} errors`);
  return { episodes_per_s: summary.episodes_per_s, steps_per_s: summary.steps_per_s };
}

/** One measurement: `workers` fresh worker processes on a fresh queue, warmed up, then the measured run into a fresh store. */
async function measureOnce(workers: number, episodes: number, warmUp: number, seed: number): Promise<{ episodes_per_s: number; steps_per_s: number }> {
  const queueName = `llmix-bench-${randomBytes(4).toString("hex")}`;
  const dir = mkdtempSync(join(tmpdir(), "llmix-bench-queue-"));
  const procs = Array.from({ length: workers }, () =>
    cli(["worker", "--redis", REDIS, "--queue-name", queueName, "--workers", "1", "--concurrency", String(CONCURRENCY), "--report-every", "1000000"]),
  );
  try {
    for (const p of procs) await until("a worker to connect", () => p.output().includes("connected to queue"), 30_000);
    await enqueue(queueName, join(dir, "warm-up.db"), "warm-up", warmUp * workers, 1000 + seed);
    return await enqueue(queueName, join(dir, "bench.db"), "bench", episodes, seed);
  } finally {
    for (const p of procs) p.child.kill("SIGTERM");
    await Promise.all(procs.map((p) => p.done));
    const queue = new Queue(queueName, { connection: { url: REDIS, maxRetriesPerRequest: null } });
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * 1 and 2 worker processes on the same rollout of `episodes` oracle episodes, `repeats` times each,
 * alternating. Defaults: 2400 episodes (LLMIX_BENCH_QUEUE_EPISODES), 3 repeats (LLMIX_BENCH_QUEUE_REPEATS),
 * 400 warm-up episodes per worker: about 115 s on an idle 2-core machine (a pair takes ~38 s).
 */
export async function queueRates(options: { episodes?: number; repeats?: number; warmUp?: number } = {}): Promise<QueueBench> {
  const episodes = options.episodes ?? Number(process.env.LLMIX_BENCH_QUEUE_EPISODES ?? 2400);
  const repeats = options.repeats ?? Number(process.env.LLMIX_BENCH_QUEUE_REPEATS ?? 3);
  const warmUp = options.warmUp ?? 400;
  const started = Date.now();
  const counts = [1, 2];
  const runs = counts.map(() => [] as Array<{ episodes_per_s: number; steps_per_s: number }>);
  for (let r = 0; r < repeats; r++) {
    for (const [i, workers] of counts.entries()) runs[i]?.push(await measureOnce(workers, episodes, warmUp, r));
  }
  const base = median((runs[0] ?? []).map((x) => x.episodes_per_s));
  const rates = counts.map((workers, i) => {
    const list = runs[i] ?? [];
    const rate = median(list.map((x) => x.episodes_per_s));
    return {
      workers,
      episodes,
      episodes_per_s: round(rate),
      steps_per_s: round(median(list.map((x) => x.steps_per_s))),
      runs: list.map((x) => round(x.episodes_per_s)),
      ratio: Math.round((rate / base) * 100) / 100,
    };
  });
  return { rates, ratio: rates[1]?.ratio ?? 0, repeats, warm_up_episodes_per_worker: warmUp, seconds: Math.round((Date.now() - started) / 1000) };
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await queueRates(), null, 2));
}
