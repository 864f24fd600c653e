/**
 * Replay and re-verification of stored episodes (DESIGN §6): re-run the recorded actions on a fresh
 * environment and compare every observation, tool result, reward component and the verdict with the
 * record. A replay that matches proves the record is what the environment does; `reverify` uses the same
 * replay to see what the current verifiers make of old trajectories.
 */
import type { Action, Observation, StepResult, TrajectoryStepRecord } from "../core/contract.js";
import { canonicalJson, type JsonValue, toJsonValue } from "../core/json.js";
import type { AnyEnvironment } from "../core/registry.js";
import { Redactor, restoreRedacted, type RedactionRules } from "../store/redaction.js";
import type { StoredEpisode } from "../store/types.js";

/** The action a step record says was sent: the raw value for an invalid action, so a replay resends it. */
export function sentAction(record: TrajectoryStepRecord): unknown {
  return record.action.type === "invalid" ? (record.action as { raw: unknown }).raw : record.action;
}

/** One field of one step that differs between the record and the replay. */
export interface ReplayDiff {
  step: number;
  field: string;
  recorded: JsonValue;
  replayed: JsonValue;
}

/** What a replay found. */
export interface ReplayReport {
  episode_id: string;
  task_id: string;
  seed: number;
  recorded_env_version: string;
  env_version: string;
  steps: number;
  /** True when every compared field of every step is equal. */
  matched: boolean;
  diffs: ReplayDiff[];
  recorded: { total_reward: number; outcome: number | null; verdict: JsonValue | null };
  replayed: { total_reward: number; outcome: number | null; verdict: JsonValue | null };
}

/** How to replay. */
export interface ReplayOptions {
  /**
   * The data policy's redaction rules: the stored actions' known-value markers are replaced by the
   * episode's values before they are sent, and both sides of every comparison are redacted alike, so a
   * redacted episode replays as matched and the report holds no raw value (src/store/redaction.ts).
   */
  redaction?: RedactionRules;
}

/** Re-run a stored episode's actions on `env` (reset to its task and seed) and compare step by step. */
export async function replayEpisode(env: AnyEnvironment, stored: StoredEpisode, options: ReplayOptions = {}): Promise<ReplayReport> {
  const { episode, steps } = stored;
  const diffs: ReplayDiff[] = [];
  let observation: Observation = await env.reset(episode.task_id, episode.seed);
  const redactor = options.redaction ? Redactor.forEpisode(options.redaction, env) : null;
  const values = redactor ? env.sensitiveValues() : [];
  const red = (value: unknown): unknown => (redactor ? redactor.redactJson(toJsonValue(value ?? null)).value : value);
  const check = (step: number, field: string, recorded: unknown, replayed: unknown) => compare(diffs, step, field, red(recorded), red(replayed));
  let total = 0;
  let last: StepResult | undefined;
  for (const record of steps) {
    check(record.step, "observation", record.observation, { rendered: observation.rendered, tokens: observation.tokens });
    const action = sentAction(record);
    last = await env.step((redactor ? restoreRedacted(action, values) : action) as Action);
    total += last.reward;
    const toolResult = last.info.tool_result ?? null;
    check(record.step, "tool_result", record.tool_result, toolResult);
    check(record.step, "reward_components", record.reward_components, last.rewardComponents);
    check(record.step, "terminated", record.terminated, last.terminated);
    check(record.step, "truncated", record.truncated, last.truncated);
    check(record.step, "info", record.info ?? null, last.info);
    observation = last.observation;
  }
  const ended = last !== undefined && (last.terminated || last.truncated);
  const verdict = ended ? (red(toJsonValue(last?.info.verdict ?? null)) as JsonValue) : null;
  return {
    episode_id: episode.episode_id,
    task_id: episode.task_id,
    seed: episode.seed,
    recorded_env_version: episode.env_version,
    env_version: env.info.version,
    steps: steps.length,
    matched: diffs.length === 0,
    diffs,
    recorded: { total_reward: episode.total_reward, outcome: episode.outcome, verdict: red(episode.verdict) as JsonValue | null },
    replayed: { total_reward: total, outcome: ended ? (last?.rewardComponents.task ?? 0) : null, verdict },
  };
}

function compare(diffs: ReplayDiff[], step: number, field: string, recorded: unknown, replayed: unknown): void {
  const a = toJsonValue(recorded ?? null);
  const b = toJsonValue(replayed ?? null);
  if (canonicalJson(a) !== canonicalJson(b)) diffs.push({ step, field, recorded: a, replayed: b });
}

/** A replay report as readable text: the verdict line, then each differing field (clipped). */
export function formatReplayReport(report: ReplayReport): string {
  const head = `${report.episode_id}: ${report.matched ? "reproduced exactly" : `${report.diffs.length} difference(s)`} over ${report.steps} steps (env ${report.recorded_env_version} -> ${report.env_version})`;
  const totals = `total reward ${report.recorded.total_reward.toFixed(4)} -> ${report.replayed.total_reward.toFixed(4)}, outcome ${report.recorded.outcome ?? "-"} -> ${report.replayed.outcome ?? "-"}`;
  const clip = (v: JsonValue) => {
    const text = JSON.stringify(v);
    return text.length > 200 ? `${text.slice(0, 197)}...` : text;
  };
  const lines = report.diffs.slice(0, 20).map((d) => `  step ${d.step} ${d.field}:\n    recorded ${clip(d.recorded)}\n    replayed ${clip(d.replayed)}`);
  if (report.diffs.length > 20) lines.push(`  ... ${report.diffs.length - 20} more`);
  return [head, totals, ...lines].join("\n");
}
