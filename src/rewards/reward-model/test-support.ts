/**
 * Synthetic stored episodes for the reward-model tests: a billing-style conversation in which verified
 * successes call `verify_identity` and failures (almost) never do, surrounded by noise words and tool
 * calls that carry no signal. Every step also carries reward fields, a verdict and an end reason that
 * agree with the label, so a featurizer that read them would be caught by the leakage tests.
 */
import type { TrajectoryStepRecord } from "../../core/contract.js";
import { Rng } from "../../core/rng.js";
import type { EpisodeRecord, StoredEpisode } from "../../store/types.js";

const NOISE = ["invoice", "charge", "card", "plan", "renewal", "account", "billing", "monthly", "annual", "refund", "credit", "support", "please", "thanks", "cancel", "upgrade"];
const DISTRACTORS = ["list_charges", "refund_lookup", "get_plan", "search_docs"];

/** Options of `syntheticEpisode`. */
export interface SyntheticOptions {
  runId?: string;
  env?: string;
  envVersion?: string;
  /** Probability that a failure calls verify_identity anyway (default 0.05). */
  failureVerifies?: number;
}

/** The `index`-th synthetic episode of a stream: its success is drawn from `rng`, its steps follow. */
export function syntheticEpisode(rng: Rng, index: number, options: SyntheticOptions = {}): StoredEpisode {
  const success = rng.bool(0.5);
  const runId = options.runId ?? "run-synthetic";
  const episodeId = `${runId}/task-${index}/g0`;
  const taskId = `synthetic/easy/seed-${index}`;
  const actions: Array<{ rendered: string; action: TrajectoryStepRecord["action"]; status?: "ok" | "error" }> = [];
  const words = (n: number): string => Array.from({ length: n }, () => rng.pick(NOISE)).join(" ");
  actions.push({ rendered: `Customer ${index} writes: ${words(12)}`, action: { type: "message", content: `Hello, ${words(6)}` } });
  actions.push({ rendered: `Customer: my email is c${index}@example.com, ${words(5)}`, action: { type: "tool_call", tool: "lookup_customer", args: { query: `c${index}@example.com` } } });
  if (success || rng.bool(options.failureVerifies ?? 0.05)) {
    actions.push({ rendered: `matches: cus_${1000 + index} ${words(4)}`, action: { type: "tool_call", tool: "verify_identity", args: { customer_id: `cus_${1000 + index}`, card_last4: String(1000 + (index % 9000)) } } });
  }
  for (let k = rng.int(0, 3); k > 0; k--) {
    actions.push({ rendered: `${words(8)}`, action: { type: "tool_call", tool: rng.pick(DISTRACTORS), args: { customer_id: `cus_${1000 + index}`, note: rng.bool() ? words(2) : null } }, status: rng.bool(0.1) ? "error" : "ok" });
  }
  actions.push({ rendered: `${words(10)}`, action: { type: "message", content: `I have looked into it: ${words(8)}` } });

  const outcome = success ? 1 : rng.pick([0, 0.5]);
  const steps = actions.map((a, i): TrajectoryStepRecord => {
    const last = i === actions.length - 1;
    const components = { task: last ? outcome : 0, step_cost: -0.01, invalid_call: 0 };
    return {
      episode_id: episodeId,
      task_id: taskId,
      env_version: options.envVersion ?? "1.0.0",
      policy_checkpoint: null,
      step: i + 1,
      observation: { rendered: a.rendered, tokens: a.rendered.length },
      action: a.action,
      tool_result: a.action.type === "tool_call" ? { status: a.status ?? "ok", latency_ms: 10, cost: 0.001, output: { ok: true } } : null,
      reward_components: components,
      terminated: last,
      truncated: false,
      reward: components.task + components.step_cost,
      info: last ? { end_reason: success ? "resolved" : "wrong_resolution", verdict: { passed: success, score: outcome } } : {},
    };
  });
  const episode: EpisodeRecord = {
    episode_id: episodeId,
    run_id: runId,
    env: options.env ?? "synthetic",
    env_version: options.envVersion ?? "1.0.0",
    task_id: taskId,
    difficulty: "easy",
    seed: index,
    group_id: `${runId}/task-${index}`,
    group_index: 0,
    policy: "synthetic",
    policy_checkpoint: null,
    status: "ok",
    error: null,
    steps: steps.length,
    tokens: 0,
    total_reward: steps.reduce((a, s) => a + (s.reward ?? 0), 0),
    outcome,
    reward_components: { task: outcome, step_cost: -0.01 * steps.length },
    verdict: { passed: success, score: outcome },
    end_reason: success ? "resolved" : "wrong_resolution",
    terminated: true,
    truncated: false,
    cost: 0,
    tool_calls: {},
    advantages: null,
    started_at: "2026-01-01T00:00:00.000Z",
    finished_at: "2026-01-01T00:00:01.000Z",
    duration_ms: 1000,
  };
  return { episode, steps };
}

/** `n` synthetic episodes from the stream `key`. */
export function syntheticEpisodes(key: string, n: number, options: SyntheticOptions = {}): StoredEpisode[] {
  const rng = Rng.fromKey("reward-model-test", key);
  return Array.from({ length: n }, (_, i) => syntheticEpisode(rng, i, options));
}

/** AUROC the slow, obvious way: the share of (success, failure) pairs ranked right, ties half. */
export function pairwiseAuroc(scores: readonly number[], labels: readonly number[]): number {
  let right = 0;
  let pairs = 0;
  for (let i = 0; i < scores.length; i++) {
    if (labels[i] !== 1) continue;
    for (let j = 0; j < scores.length; j++) {
      if (labels[j] !== 0) continue;
      pairs++;
      if (scores[i]! > scores[j]!) right += 1;
      else if (scores[i] === scores[j]) right += 0.5;
    }
  }
  return right / pairs;
}
