/**
 * Rollout throughput: billing-dispute with the oracle on worker threads (every episode runs on one; the
 * main thread plans, stores and watches), 2 episodes in flight per thread, into an in-memory store. The
 * baseline is one warm worker thread (`--workers 1` on a pool kept between runs). Runs the compiled
 * runner from dist/ (`npm run bench` builds first), so worker threads load plain JavaScript as they do
 * for users. Reports wall-clock rates (thread start-up included) and steady-state rates (the episodes
 * after the first 15%), as medians over repeats.
 *
 * Two ways to run: a warm pool (a WorkerPool kept between runs, as a training loop keeps one), the
 * like-for-like comparison with the warm baseline, and new threads for each run (what one `llmix
 * rollout --workers w` does): new threads JIT-compile the environment's code again (seconds of
 * optimising-compiler time per thread), on the same two cores, for about the first thousand episodes.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { median } from "./harness.js";

export interface RolloutRate {
  workers: number;
  /** Where the episodes ran: a pool kept warm between runs, or threads new to this run. */
  threads: "warm pool" | "new threads";
  episodes: number;
  /** Episodes and steps per second over the whole run, thread start-up included (median of repeats). */
  episodes_per_s: number;
  steps_per_s: number;
  /** Episodes per second after the first 15% finished (median of repeats). */
  steady_episodes_per_s: number;
  /** Steady-state rate / the steady-state rate of one warm worker thread. */
  speedup: number;
}

interface DistRunner {
  rollout: typeof import("../src/rollout/runner.js").rollout;
  WorkerPool: typeof import("../src/rollout/worker-pool.js").WorkerPool;
  openStore: typeof import("../src/store/sqlite-store.js").openStore;
  builtinRegistry: typeof import("../src/envs/index.js").builtinRegistry;
}

/** The compiled modules: the environment, the runner and its workers all run the same JavaScript. */
async function loadDist(): Promise<DistRunner> {
  const load = (path: string) => import(new URL(`../dist/${path}`, import.meta.url).href);
  const [runner, pool, store, envs] = await Promise.all([load("rollout/runner.js"), load("rollout/worker-pool.js"), load("store/sqlite-store.js"), load("envs/index.js")]);
  return { rollout: runner.rollout, WorkerPool: pool.WorkerPool, openStore: store.openStore, builtinRegistry: envs.builtinRegistry };
}

type Threads = { workers: number } | { pool: InstanceType<DistRunner["WorkerPool"]> };

async function once(dist: DistRunner, threads: Threads, episodes: number, seed: number) {
  const store = dist.openStore(":memory:");
  const marks: number[] = [];
  const started = performance.now();
  const result = await dist.rollout({
    store,
    registry: dist.builtinRegistry(),
    ...threads,
    concurrency: 2,
    config: {
      env: "billing-dispute", policy: "oracle", policy_checkpoint: null, n: episodes, group: 1, difficulties: [], split: null,
      task_ids: null, seed, timeout_ms: 600_000, env_options: {}, modules: [],
    },
    onProgress: (p) => {
      marks[p.done] = performance.now();
    },
  });
  const ended = performance.now();
  await store.close();
  const warm = Math.ceil(episodes * 0.15);
  const seconds = (ended - started) / 1000;
  return {
    episodes_per_s: result.ran / seconds,
    steps_per_s: result.steps / seconds,
    steady_episodes_per_s: (episodes - warm) / ((ended - (marks[warm] as number)) / 1000),
  };
}

/**
 * The machine's own ceiling for two CPU-bound episode streams: two separate processes, each running the
 * baseline rollout (one warm worker thread), at the same time. Their summed steady rate over one
 * process's is the most any worker pool can reach here (memory-bound work slows down when both cores run).
 */
async function twoProcesses(episodes: number, seed: number): Promise<number> {
  const child = () =>
    new Promise<number>((resolve, reject) => {
      const proc = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--child", String(episodes), String(seed)], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      proc.stdout.on("data", (d: Buffer) => (out += d));
      proc.on("exit", (code) => (code === 0 ? resolve(Number(out.trim())) : reject(new Error(`bench child exited with ${code}`))));
    });
  const rates = await Promise.all([child(), child()]);
  return rates.reduce((a, b) => a + b, 0);
}


/** Episodes a thread runs before it is measured: the JIT has then compiled the hot code. */
export const WARM_UP_EPISODES = 1000;

/** A pool of one worker thread that has run WARM_UP_EPISODES episodes: the baseline. */
async function warmBaseline(dist: DistRunner): Promise<InstanceType<DistRunner["WorkerPool"]>> {
  const pool = new dist.WorkerPool(1);
  await once(dist, { pool }, WARM_UP_EPISODES, 99);
  return pool;
}

/** Oracle rollouts of billing-dispute at workers 1 and 2 (interleaved repeats, so noise hits all). */
export async function rolloutRates(options: { episodes?: number; repeats?: number } = {}): Promise<{ rates: RolloutRate[]; two_processes_ratio: number }> {
  const episodes = options.episodes ?? 800;
  const repeats = options.repeats ?? 3;
  const dist = await loadDist();
  // Warm-up: as many episodes per thread for the baseline's thread and for each thread of the pair.
  const single = await warmBaseline(dist);
  const pair = new dist.WorkerPool(2);
  await once(dist, { pool: pair }, 2 * WARM_UP_EPISODES, 99);
  const modes: Array<{ workers: number; threads: RolloutRate["threads"]; run: (seed: number) => ReturnType<typeof once> }> = [
    { workers: 1, threads: "warm pool", run: (seed) => once(dist, { pool: single }, episodes, seed) },
    { workers: 2, threads: "warm pool", run: (seed) => once(dist, { pool: pair }, episodes, seed) },
    { workers: 1, threads: "new threads", run: (seed) => once(dist, { workers: 1 }, episodes, seed) },
    { workers: 2, threads: "new threads", run: (seed) => once(dist, { workers: 2 }, episodes, seed) },
  ];
  const runs = modes.map(() => [] as Array<Awaited<ReturnType<typeof once>>>);
  const pairs: number[] = [];
  for (let r = 0; r < repeats; r++) {
    for (const [i, mode] of modes.entries()) runs[i]?.push(await mode.run(r));
    pairs.push(await twoProcesses(episodes, r));
  }
  await Promise.all([single.close(), pair.close()]);
  const base = median((runs[0] ?? []).map((x) => x.steady_episodes_per_s));
  const rates = modes.map(({ workers, threads }, i) => {
    const list = runs[i] ?? [];
    const steady = median(list.map((x) => x.steady_episodes_per_s));
    return {
      workers,
      threads,
      episodes,
      episodes_per_s: round(median(list.map((x) => x.episodes_per_s))),
      steps_per_s: round(median(list.map((x) => x.steps_per_s))),
      steady_episodes_per_s: round(steady),
      speedup: Math.round((steady / base) * 100) / 100,
    };
  });
  return { rates, two_processes_ratio: Math.round((median(pairs) / base) * 100) / 100 };
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

if (process.argv[2] === "--child") {
  // One process of the two-process ceiling: print its steady episodes/s.
  const dist = await loadDist();
  const pool = await warmBaseline(dist);
  console.log((await once(dist, { pool }, Number(process.argv[3]), Number(process.argv[4]))).steady_episodes_per_s);
  await pool.close();
} else if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await rolloutRates());
}
