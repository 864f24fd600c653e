/**
 * Run metrics per environment and difficulty (DESIGN §6): mean outcome and reward components, the
 * unbiased pass@k estimator (Chen et al. 2021), pass^k (the chance that k samples all succeed, as in
 * tau-bench), avg@k, steps, tokens and tool error rates. Episodes that failed for infrastructure reasons
 * (status "error") are counted apart and excluded from every rate, so an outage never reads as a policy
 * that got worse.
 */
import { ValidationError } from "../core/errors.js";
import type { EpisodeRecord } from "../store/types.js";

/** Metrics of one slice of a run (one env and difficulty, or "all"). */
export interface SliceMetrics {
  env: string;
  difficulty: string;
  /** Episodes that ran to the end (status ok). */
  episodes: number;
  /** Episodes lost to infrastructure errors (excluded from everything below). */
  errors: number;
  /** Distinct tasks with at least one ok episode. */
  tasks: number;
  mean_outcome: number | null;
  success_rate: number | null;
  mean_total_reward: number | null;
  /** Each reward component's per-episode sum, averaged over episodes. */
  mean_components: Record<string, number>;
  /** The k of pass@k / pass^k / avg@k, and how many tasks had at least k ok samples. */
  k: number;
  tasks_with_k: number;
  pass_at_k: number | null;
  pass_hat_k: number | null;
  avg_at_k: number | null;
  mean_steps: number | null;
  mean_tokens: number | null;
  tool_calls: number;
  /** Share of tool calls that did not end "ok". */
  tool_error_rate: number | null;
  /** Share of tool calls by status. */
  tool_status: Record<string, number>;
}

/** Did the episode succeed: the verdict's `passed`, else an outcome of 1. */
export function succeeded(episode: EpisodeRecord): boolean {
  const verdict = episode.verdict;
  if (verdict && typeof verdict === "object" && !Array.isArray(verdict) && typeof verdict.passed === "boolean") return verdict.passed;
  return episode.outcome !== null && episode.outcome >= 1 - 1e-9;
}

/** Unbiased pass@k from n samples with c successes: 1 - C(n-c, k) / C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  checkCounts(n, c, k);
  if (n - c < k) return 1;
  // The product form avoids huge binomials: C(n-c,k)/C(n,k) = prod_{i=n-c+1..n} (1 - k/i).
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** pass^k from n samples with c successes: C(c, k) / C(n, k), the chance that k draws all succeed. */
export function passHatK(n: number, c: number, k: number): number {
  checkCounts(n, c, k);
  let p = 1;
  for (let i = 0; i < k; i++) p *= (c - i) / (n - i);
  return Math.max(0, p);
}

function checkCounts(n: number, c: number, k: number): void {
  if (![n, c, k].every(Number.isSafeInteger) || k < 1 || c < 0 || c > n || n < k) {
    throw new ValidationError("invalid_argument", `pass@k needs integers with 1 <= k <= n and 0 <= c <= n, got n=${n} c=${c} k=${k}`);
  }
}

const mean = (xs: readonly number[]): number | null => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

/** Metrics of a set of episodes; `k` defaults to the largest group in it. */
export function sliceMetrics(episodes: readonly EpisodeRecord[], labels: { env: string; difficulty: string }, k?: number): SliceMetrics {
  const ok = episodes.filter((e) => e.status === "ok");
  const byTask = new Map<string, EpisodeRecord[]>();
  for (const e of ok) {
    const key = `${e.env}\u0000${e.task_id}\u0000${e.seed}`;
    const list = byTask.get(key);
    if (list) list.push(e);
    else byTask.set(key, [e]);
  }
  const groupSize = k ?? Math.max(1, ...episodes.map((e) => e.group_index + 1));
  const atK: Array<{ n: number; c: number }> = [];
  for (const list of byTask.values()) {
    if (list.length >= groupSize) atK.push({ n: list.length, c: list.filter(succeeded).length });
  }
  const components: Record<string, number> = {};
  for (const e of ok) for (const [name, v] of Object.entries(e.reward_components)) components[name] = (components[name] ?? 0) + v;
  for (const name of Object.keys(components)) components[name] = (components[name] as number) / ok.length;
  const status: Record<string, number> = {};
  let calls = 0;
  for (const e of ok) {
    for (const [s, count] of Object.entries(e.tool_calls)) {
      status[s] = (status[s] ?? 0) + count;
      calls += count;
    }
  }
  for (const s of Object.keys(status)) status[s] = (status[s] as number) / calls;
  return {
    ...labels,
    episodes: ok.length,
    errors: episodes.length - ok.length,
    tasks: byTask.size,
    mean_outcome: mean(ok.map((e) => e.outcome ?? 0)),
    success_rate: mean(ok.map((e) => (succeeded(e) ? 1 : 0))),
    mean_total_reward: mean(ok.map((e) => e.total_reward)),
    mean_components: components,
    k: groupSize,
    tasks_with_k: atK.length,
    pass_at_k: mean(atK.map(({ n, c }) => passAtK(n, c, groupSize))),
    pass_hat_k: mean(atK.map(({ n, c }) => passHatK(n, c, groupSize))),
    avg_at_k: mean(atK.map(({ n, c }) => c / n)),
    mean_steps: mean(ok.map((e) => e.steps)),
    mean_tokens: mean(ok.map((e) => e.tokens)),
    tool_calls: calls,
    tool_error_rate: calls === 0 ? null : 1 - (status.ok ?? 0),
    tool_status: status,
  };
}

/** Where a difficulty sorts: "all" first, then the usual tiers from easy to hard, then any other by name. */
const DIFFICULTY_ORDER = ["all", "easy", "medium", "hard"];
function difficultyRank(difficulty: string): number {
  const i = DIFFICULTY_ORDER.indexOf(difficulty);
  return i === -1 ? DIFFICULTY_ORDER.length : i;
}

/** Metrics per env: an "all" row, then one per difficulty (easy, medium, hard, then others by name). */
export function runMetrics(episodes: readonly EpisodeRecord[], k?: number): SliceMetrics[] {
  const slices = new Map<string, EpisodeRecord[]>();
  for (const e of episodes) {
    for (const key of [`${e.env}\u0000${e.difficulty}`, `${e.env}\u0000all`]) {
      const list = slices.get(key);
      if (list) list.push(e);
      else slices.set(key, [e]);
    }
  }
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...slices.entries()]
    .map(([key, list]) => ({ labels: key.split("\u0000") as [string, string], list }))
    .sort(({ labels: [envA, a] }, { labels: [envB, b] }) => byName(envA, envB) || difficultyRank(a) - difficultyRank(b) || byName(a, b))
    .map(({ labels: [env, difficulty], list }) => sliceMetrics(list, { env, difficulty }, k));
}
