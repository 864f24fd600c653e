/**
 * The service's JSON as the inspector reads it. These mirror src/store/types.ts, src/rollout/metrics.ts,
 * src/rollout/replay.ts and src/core/contract.ts; they are copied rather than imported because those
 * modules pull in Node's libraries, which the browser build has no types for. test/inspector.e2e.test.ts
 * checks at compile time that the server's types still fit these.
 */

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A run as GET /v1/runs lists it. */
export interface RunSummary {
  run_id: string;
  env: string;
  env_version: string;
  policy: string;
  policy_checkpoint: string | null;
  config: Json;
  status: string;
  planned_episodes: number;
  created_at: string;
  finished_at: string | null;
  tenant?: string | null;
  /** Episodes stored so far (the list only). */
  episodes?: number;
}

/** Metrics of one slice of a run (difficulty "all" is the whole run). */
export interface SliceMetrics {
  env: string;
  difficulty: string;
  episodes: number;
  errors: number;
  tasks: number;
  mean_outcome: number | null;
  success_rate: number | null;
  mean_total_reward: number | null;
  mean_components: Record<string, number>;
  k: number;
  tasks_with_k: number;
  pass_at_k: number | null;
  pass_hat_k: number | null;
  avg_at_k: number | null;
  mean_steps: number | null;
  mean_tokens: number | null;
  tool_calls: number;
  tool_error_rate: number | null;
  tool_status: Record<string, number>;
}

/** One stored episode (the row beside its steps). */
export interface Episode {
  episode_id: string;
  run_id: string;
  env: string;
  env_version: string;
  task_id: string;
  difficulty: string;
  seed: number;
  group_id: string;
  group_index: number;
  policy: string;
  policy_checkpoint: string | null;
  status: "ok" | "error";
  error: { code: string; message: string } | null;
  steps: number;
  tokens: number;
  total_reward: number;
  outcome: number | null;
  reward_components: Record<string, number>;
  verdict: Json | null;
  end_reason: string | null;
  terminated: boolean;
  truncated: boolean;
  cost: number;
  tool_calls: Record<string, number>;
  started_at: string;
  finished_at: string;
  duration_ms: number;
}

/** The envelope of a tool call's result. */
export interface ToolResult {
  status: string;
  latency_ms: number;
  cost: number;
  output: Json;
  error?: { code: string; message: string };
  partial?: boolean;
}

/** What a policy did at one step. */
export type StepAction =
  | { type: "tool_call"; tool: string; args: Record<string, unknown>; call_id?: string }
  | { type: "message"; content: string }
  | { type: "invalid"; raw: Json };

/** One step of a trajectory, as stored. */
export interface Step {
  step: number;
  observation: { rendered: string; tokens: number };
  action: StepAction;
  tool_result: ToolResult | null;
  reward_components: Record<string, number>;
  terminated: boolean;
  truncated: boolean;
  reward?: number;
  info?: Record<string, unknown>;
  policy?: { prompt_token_ids?: number[]; completion_token_ids?: number[]; logprobs?: number[]; model?: string };
}

/** What a replay of a stored episode found. */
export interface ReplayReport {
  episode_id: string;
  steps: number;
  matched: boolean;
  env_version: string;
  recorded_env_version: string;
  diffs: Array<{ step: number; field: string; recorded: Json; replayed: Json }>;
  recorded: { total_reward: number; outcome: number | null; verdict: Json | null };
  replayed: { total_reward: number; outcome: number | null; verdict: Json | null };
}

/** GET /v1/runs. */
export interface RunListResponse {
  runs: RunSummary[];
}
/** GET /v1/runs/:id. */
export interface RunResponse {
  run: RunSummary;
  metrics: SliceMetrics[];
}
/** GET /v1/runs/:id/episodes. */
export interface EpisodePage {
  episodes: Episode[];
  total: number;
}
/** GET /v1/runs/:id/tasks. */
export interface TaskFeaturesResponse {
  tasks: Record<string, { family: string | null; features: string[] }>;
}
/** GET /v1/episodes/:id. */
export interface EpisodeResponse {
  episode: Episode;
  steps: Step[];
}

/** A verdict node: passed, score, details and named parts (each a verdict). */
export interface Verdict {
  passed?: boolean;
  score?: number;
  details?: Json;
  parts?: Record<string, Json>;
}

/** The value as a verdict node, or null when it is not one. */
export function asVerdict(value: Json | null | undefined): Verdict | null {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Verdict) : null;
}

/** Did the episode pass: its verdict says so (the store's `passed` filter reads the same). */
export function passed(episode: Episode): boolean {
  return asVerdict(episode.verdict)?.passed === true;
}
