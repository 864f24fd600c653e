/**
 * Dataset export of stored trajectories (DESIGN §6): native JSONL, TRL (SFT conversations with tools,
 * GRPO prompts) and verl Parquet. Exports stream: episodes are read one at a time from the store's
 * iterator and written as they come (Parquet holds at most one row group), so a run of any size exports
 * in bounded memory. The file appears at `out` only once the export succeeded.
 *
 * Episodes with status `error` (infrastructure failures: the policy server was down, a timeout) are never
 * exported, in any format, JSONL included: their trajectories are cut short by something other than the
 * policy, so they are neither demonstrations nor outcomes, and the store still holds them for debugging.
 */
import { NotFoundError, ValidationError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import type { EpisodeRecord, RunRecord, StoredEpisode } from "../types.js";
import { inStepOrder, toJsonlLines } from "./jsonl.js";
import { ExportFile } from "./output.js";
import { parseJsonStrings, toFunctionTools, toGrpoRow, toJsonStringRow, toSftRow } from "./trl.js";
import { writeVerl } from "./verl.js";
import { writeVerlSft } from "./verl-sft.js";
import { redactedTools } from "./verl-tools.js";
import type { Redactor } from "../redaction.js";

export { toFunctionTools, toMessages, toSftRow, toGrpoRow, promptOf, renderResult, toJsonStringRow, JSON_STRING_FORMATS } from "./trl.js";
export type { ChatMessage, ChatMessageJson, ChatToolCall, ChatToolCallJson, FunctionTool, ToolMessage, TrlGrpoRow, TrlSftJsonRow, TrlSftRow } from "./trl.js";
export { verlSchema, toVerlRow, VERL_COLUMNS, VERL_AGENT_NAME, VERL_INTERACTION_NAME, VERL_TOOLS_KWARGS_KEY, VERL_COMMIT, VERL_VERSION, type VerlRow } from "./verl.js";
export { verlSftSchema, toVerlSftRow, VERL_SFT_COLUMNS, type VerlSftRow } from "./verl-sft.js";
export { exportRedactor, type Redactor } from "../redaction.js";
export { exportVerlTools, redactedTools, renderVerlToolConfig, toVerlToolSchema, verlToolConfig, VERL_TOOL_CLASS, type VerlToolSchema, type VerlToolsResult } from "./verl-tools.js";

/** Every export format, by name. */
export const EXPORT_FORMATS = ["jsonl", "trl-sft", "trl-grpo", "verl", "verl-sft"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Which episodes to export; fields combine with AND. */
export interface ExportFilter {
  /** Only episodes whose total reward is at least this. */
  minReward?: number;
  /** Only episodes whose verdict passed. */
  successesOnly?: boolean;
  /** Only episodes of this difficulty. */
  difficulty?: string;
  /** Only episodes of this environment id. */
  env?: string;
}

/** What to export and where. */
export interface ExportOptions {
  format: string;
  /** The file to write (its directory must exist). Replaced atomically when the export succeeds. */
  out: string;
  filter?: ExportFilter;
  /** `trl-sft` / `trl-grpo` only: tool lists and tool-call arguments as JSON strings (see trl.ts). */
  jsonStrings?: boolean;
  /**
   * Pass every episode (steps, verdict, error) and the run's tools through this redactor before any
   * format sees them: the second gate, for a store written before the data policy or under another
   * (`exportRedactor(rules)`, src/store/redaction.ts).
   */
  redactor?: Redactor;
}

/** What an export wrote. `rows` counts lines (one per step record for `jsonl`) or Parquet rows. */
export interface ExportResult {
  format: ExportFormat;
  path: string;
  rows: number;
  bytes: number;
}

/**
 * Export a run's episodes to a training dataset file. Unknown format: NotFoundError "unknown_format";
 * bad options: ValidationError "invalid_argument"; an unwritable `out`: LlmixError "store_error".
 * For `trl-grpo` and `verl` (prompt datasets, one row per task id + seed) a task is exported when any
 * of its episodes passes the filter.
 */
export async function exportEpisodes(
  input: { run: RunRecord; episodes: AsyncIterable<StoredEpisode> },
  options: ExportOptions,
): Promise<ExportResult> {
  const format = parseFormat(options.format);
  const filter = parseFilter(options.filter);
  const jsonStrings = parseJsonStrings(options.jsonStrings, format);
  if (typeof options.out !== "string" || options.out.length === 0) {
    throw new ValidationError("invalid_argument", "out must be a non-empty file path");
  }
  const { redactor } = options;
  const episodes = selected(input.episodes, filter, redactor);
  const run = redactor ? redactedTools(input.run, redactor) : input.run;
  const file = await ExportFile.open(options.out);
  try {
    const rows = await WRITERS[format](run, episodes, file, { jsonStrings });
    const bytes = await file.commit();
    return { format, path: options.out, rows, bytes };
  } catch (error) {
    await file.abort();
    throw error;
  }
}

type Writer = (run: RunRecord, episodes: AsyncIterable<StoredEpisode>, file: ExportFile, options: { jsonStrings: boolean }) => Promise<number>;

const WRITERS: Record<ExportFormat, Writer> = {
  async jsonl(_run, episodes, file) {
    let rows = 0;
    for await (const episode of episodes) {
      await file.write(toJsonlLines(episode.steps));
      rows += episode.steps.length;
    }
    return rows;
  },

  async "trl-sft"(run, episodes, file, { jsonStrings }) {
    const tools = toFunctionTools(run.tools);
    let rows = 0;
    for await (const episode of episodes) {
      const row = toSftRow(episode, tools);
      if (!row) continue;
      await file.write(`${JSON.stringify(jsonStrings ? toJsonStringRow(row) : row)}\n`);
      rows++;
    }
    return rows;
  },

  async "trl-grpo"(_run, episodes, file) {
    let rows = 0;
    for await (const episode of distinctTasks(episodes)) {
      const row = toGrpoRow(episode);
      if (!row) continue;
      await file.write(`${JSON.stringify(row)}\n`);
      rows++;
    }
    return rows;
  },

  verl: (run, episodes, file) => writeVerl(distinctTasks(episodes), run.tools, file, [metadata(run, "verl")]),

  "verl-sft": (run, episodes, file) => writeVerlSft(run, episodes, file, [metadata(run, "verl-sft")]),
};

/** Where a file came from, kept in Parquet metadata so a dataset can be traced back to its run. */
function metadata(run: RunRecord, format: ExportFormat): { key: string; value: string } {
  return { key: "llmix.export", value: JSON.stringify(provenance(run, format)) };
}

function provenance(run: RunRecord, format: ExportFormat): Record<string, JsonValue> {
  return { format, run_id: run.run_id, env: run.env, env_version: run.env_version, policy: run.policy, policy_checkpoint: run.policy_checkpoint };
}

/** What an exported episode must be, in order, each condition named as a person would know it. */
function conditions(filter: ExportFilter): Array<[name: string, holds: (e: EpisodeRecord) => boolean]> {
  const out: Array<[string, (e: EpisodeRecord) => boolean]> = [["not ended with an error (error episodes are never exported)", (e) => e.status === "ok"]];
  const { minReward, difficulty, env } = filter;
  if (minReward !== undefined) out.push([`--min-reward ${minReward}`, (e) => e.total_reward >= minReward]);
  if (filter.successesOnly) out.push(["--successes-only", (e) => passed(e.verdict)]);
  if (difficulty !== undefined) out.push([`--difficulty ${difficulty}`, (e) => e.difficulty === difficulty]);
  if (env !== undefined) out.push([`--env ${env}`, (e) => e.env === env]);
  return out;
}

/**
 * Why an export of these episodes (a run's, in full) with this filter has no row: the first condition
 * that leaves none, with the counts before it. Null when some episode would be exported.
 */
export function whyEmpty(episodes: readonly EpisodeRecord[], filter: ExportFilter = {}): string | null {
  if (episodes.length === 0) return "the run has no episodes";
  let left = episodes;
  for (const [name, holds] of conditions(filter)) {
    const next = left.filter(holds);
    if (next.length === 0) {
      const before = left.length === episodes.length ? `the run's ${episodes.length} episode(s)` : `the ${left.length} episode(s) left of the run's ${episodes.length}`;
      return `none of ${before} passed: ${name}`;
    }
    left = next;
  }
  return null;
}

/** The episodes an export takes: status ok, passing the filter, steps in order, redacted when a redactor is given. */
async function* selected(episodes: AsyncIterable<StoredEpisode>, filter: ExportFilter, redactor: Redactor | undefined): AsyncGenerator<StoredEpisode> {
  const checks = conditions(filter);
  for await (const stored of episodes) {
    const e = stored.episode;
    if (!checks.every(([, holds]) => holds(e))) continue;
    const steps = inStepOrder(stored.steps);
    const ordered = steps === stored.steps ? stored : { episode: e, steps };
    yield redactor ? redactor.redactEpisode(ordered) : ordered;
  }
}

/** The first episode of each (task id, seed): the members of a GRPO group share one prompt. */
async function* distinctTasks(episodes: AsyncIterable<StoredEpisode>): AsyncGenerator<StoredEpisode> {
  // Only keys are kept (one short string per task), never episodes.
  const seen = new Set<string>();
  for await (const stored of episodes) {
    if (stored.steps.length === 0) continue;
    const key = `${stored.episode.task_id}\u0000${stored.episode.seed}`;
    if (seen.has(key)) continue;
    seen.add(key);
    yield stored;
  }
}

function passed(verdict: JsonValue | null): boolean {
  return typeof verdict === "object" && verdict !== null && !Array.isArray(verdict) && verdict.passed === true;
}

function parseFormat(format: unknown): ExportFormat {
  if ((EXPORT_FORMATS as readonly unknown[]).includes(format)) return format as ExportFormat;
  throw new NotFoundError("unknown_format", `unknown export format "${String(format)}"; valid: ${EXPORT_FORMATS.join(", ")}`, {
    valid: [...EXPORT_FORMATS],
  });
}

function parseFilter(raw: unknown): ExportFilter {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) throw new ValidationError("invalid_argument", "filter must be an object");
  const f = raw as Record<string, unknown>;
  const filter: ExportFilter = {};
  if (f.minReward !== undefined) {
    if (typeof f.minReward !== "number" || !Number.isFinite(f.minReward)) {
      throw new ValidationError("invalid_argument", `filter.minReward must be a finite number, got ${String(f.minReward)}`);
    }
    filter.minReward = f.minReward;
  }
  if (f.successesOnly !== undefined) {
    if (typeof f.successesOnly !== "boolean") throw new ValidationError("invalid_argument", "filter.successesOnly must be a boolean");
    filter.successesOnly = f.successesOnly;
  }
  for (const key of ["difficulty", "env"] as const) {
    if (f[key] === undefined) continue;
    if (typeof f[key] !== "string" || f[key] === "") throw new ValidationError("invalid_argument", `filter.${key} must be a non-empty string`);
    filter[key] = f[key];
  }
  return filter;
}
