/**
 * Rollout throughput: billing-dispute with the oracle, on the main thread (`--workers 1`, the baseline)
 * and on 2 worker threads, both with 2 episodes in flight per thread, into an in-memory store. Runs the
 * compiled runner from dist/ (`npm run bench` builds first), so worker threads load plain JavaScript as
 * they do for users. Reports wall-clock rates (thread start-up included) and steady-state rates (the
 * episodes after the first 15%, when every thread is warm), as medians over repeats.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { median } from "./harness.js";

export interface RolloutRate {
  workers: number;
  episodes: number;
  /** Episodes and steps per second over the whole run, thread start-up included (median of repeats). */
  episodes_per_s: number;
  steps_per_s: number;
  /** Episodes per second after the first 15% finished (median of repeats). */
  steady_episodes_per_s: number;
  /** Steady-state rate / the workers=1 steady-state rate of the same run. */
  speedup: number;
}

interface DistRunner {
  rollout: typeof import("../src/rollout/runner.js").rollout;
  openStore: typeof import("../src/store/sqlite-store.js").openStore;
  builtinRegistry: typeof import("../src/envs/index.js").builtinRegistry;
}

/** The compiled modules: the environment, the runner and its workers all run the same JavaScript. */
async function loadDist(): Promise<DistRunner> {
  const load = (path: string) => import(new URL(`../dist/${path}`, import.meta.url).href);
  const [runner, store, envs] = await Promise.all([load("rollout/runner.js"), load("store/sqlite-store.js"), load("envs/index.js")]);
  return { rollout: runner.rollout, openStore: store.openStore, builtinRegistry: envs.builtinRegistry };
}

async function once(dist: DistRunner, workers: number, episodes: number, seed: number) {
  const store = dist.openStore(":memory:");
  const marks: number[] = [];
  const started = performance.now();
  const result = await dist.rollout({
    store,
    registry: dist.builtinRegistry(),
    workers,
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
 * workers=1 rollout, at the same time. Their summed steady rate over one process's is the most any
 * worker pool can reach here (memory-bound work slows down when both cores run).
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


/** Oracle rollouts of billing-dispute at workers 1 and 2 (interleaved repeats, so noise hits both). */
export async function rolloutRates(options: { episodes?: number; repeats?: number } = {}): Promise<{ rates: RolloutRate[]; two_processes_ratio: number }> {
  const episodes = options.episodes ?? 800;
  const repeats = options.repeats ?? 3;
  const dist = await loadDist();
  await once(dist, 1, 40, 99); // warm-up: JIT and the tokenizer's tables
  const runs: Record<number, Array<Awaited<ReturnType<typeof once>>>> = { 1: [], 2: [] };
  const pairs: number[] = [];
  for (let r = 0; r < repeats; r++) {
    for (const workers of [1, 2]) runs[workers]?.push(await once(dist, workers, episodes, r));
    pairs.push(await twoProcesses(episodes, r));
  }
  const base = median((runs[1] ?? []).map((x) => x.steady_episodes_per_s));
  const rates = [1, 2].map((workers) => {
    const list = runs[workers] ?? [];
    const steady = median(list.map((x) => x.steady_episodes_per_s));
    return {
      workers,
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
  await once(dist, 1, 40, 99);
  console.log((await once(dist, 1, Number(process.argv[3]), Number(process.argv[4]))).steady_episodes_per_s);
} else if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await rolloutRates());
}
