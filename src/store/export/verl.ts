/**
 * verl RL Parquet (verl docs "Prepare Data for Post-Training", and the multi-turn tool / interaction
 * examples `examples/data_preprocess/gsm8k_multiturn_w_tool.py`, `gsm8k_multiturn_w_interaction.py`), read
 * against verl 0.8.0.dev at commit b178a3cd56f58b2d502255daba591e92833930a7 (see docs/verl.md).
 * One row per distinct task (task id + seed): verl samples prompts and generates its own rollouts, so
 * the group members of a stored run would only duplicate prompts.
 *
 * The schema is the SAME for every environment, so the files of several environments are one dataset:
 * verl's `RLHFDataset` concatenates its files with `datasets.concatenate_datasets`, which refuses
 * differing features, and DuckDB reads them together without `union_by_name`. Nested types are written
 * natively (hyparquet-writer encodes lists and structs from an explicit schema), because verl reads
 * `prompt` as a list of messages and `extra_info.tools_kwargs` as a dict.
 *
 * Columns:
 * - `data_source`: the environment id (verl picks the reward function by it).
 * - `agent_name`: "llmix_agent", the agent loop of `llmix_client.verl` (verl's `ToolAgentLoop` plus one
 *   LLMix session per trajectory, closed at the end, and the outcome handed to `compute_score`).
 * - `prompt`: list<struct{role, content}>: the first observation as the user message (as in `trl-grpo`).
 * - `ability`: "agent".
 * - `reward_model`: struct{style: "rule", ground_truth: JSON string of {env, task_id, seed}}: the reward is
 *   the LLMix verifier's, so the ground truth is what reproduces the episode, not an answer string.
 * - `extra_info`: struct{index, split, env, env_version, task_id, seed, difficulty, need_tools_kwargs,
 *   tools_kwargs, interaction_kwargs}. `split` is the task id's LLMix split ("train" / "eval"), null if
 *   the id is not in the standard form.
 *
 * `tools_kwargs` is `{llmix: {create_kwargs: {env, task_id, seed}}}` in every row, whatever the tools.
 * verl's `ToolAgentLoop._call_tool` looks up `tools_kwargs[tool_name]["create_kwargs"]`; a struct keyed by
 * tool name would give every environment its own schema (the issue this layout fixes), and a JSON string
 * or a list would break that lookup. Every LLMix tool of a row shares the same create kwargs (the task), so
 * they are written once under the fixed key `llmix`: the stock lookup finds nothing for a tool name and
 * passes `{}`, and `llmix_client.verl.LlmixTool` takes the task from the trajectory (bound by the agent loop
 * or the interaction) or from `agent_data.tools_kwargs["llmix"]`. `interaction_kwargs` is
 * `{name: "llmix", env, task_id, seed}` (verl starts the interaction named `name`).
 * Integers (index, seed) are INT64, as pandas writes them.
 */
import { parquetWriteRows, type SchemaElement } from "hyparquet-writer";
import type { ToolSpec } from "../../core/contract.js";
import { splitOf } from "../../tasks/splits.js";
import type { StoredEpisode } from "../types.js";
import { ParquetSink, type ExportFile } from "./output.js";
import { promptOf, type ChatMessage } from "./trl.js";

/** Parquet key/value metadata, as the writer takes it. */
export type KeyValue = NonNullable<Parameters<typeof parquetWriteRows>[0]["kvMetadata"]>[number];

/** The verl commit whose sources this export and `llmix_client.verl` were written against. */
export const VERL_COMMIT = "b178a3cd56f58b2d502255daba591e92833930a7";

/** The verl version at that commit (`verl/version/version`). */
export const VERL_VERSION = "0.8.0.dev";

/** The verl interaction name rows ask for (configure an interaction with this name). */
export const VERL_INTERACTION_NAME = "llmix";

/** The verl agent loop rows ask for (register `llmix_client.verl.LlmixAgentLoop` under this name). */
export const VERL_AGENT_NAME = "llmix_agent";

/** The fixed key of `extra_info.tools_kwargs` (the same in every environment's rows). */
export const VERL_TOOLS_KWARGS_KEY = "llmix";

/** The top-level columns, in file order. */
export const VERL_COLUMNS = ["data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"] as const;

/** The task an LLMix session is created with (INT64 seed as a bigint, as the Parquet writer wants it). */
export interface VerlTaskKwargs {
  env: string;
  task_id: string;
  seed: bigint;
}

/** One verl row as written. */
export interface VerlRow {
  data_source: string;
  agent_name: string;
  prompt: ChatMessage[];
  ability: string;
  reward_model: { style: "rule"; ground_truth: string };
  extra_info: {
    index: bigint;
    split: string | null;
    env: string;
    env_version: string;
    task_id: string;
    seed: bigint;
    difficulty: string;
    need_tools_kwargs: boolean;
    tools_kwargs: { llmix: { create_kwargs: VerlTaskKwargs } };
    interaction_kwargs: VerlTaskKwargs & { name: string };
  };
}

/** An optional UTF-8 string column. */
export const text = (name: string): SchemaElement => ({ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" });
/** An optional INT64 column. */
export const int64 = (name: string): SchemaElement => ({ name, type: "INT64", repetition_type: "OPTIONAL" });
/** An optional struct of the given children (each a flat, depth-first schema). */
export const struct = (name: string, children: SchemaElement[][]): SchemaElement[] => [
  { name, repetition_type: "OPTIONAL", num_children: children.length },
  ...children.flat(),
];
/** The standard three-level LIST: list (LIST) > repeated group "list" > "element" (a struct here). */
export const listOf = (name: string, element: SchemaElement[][]): SchemaElement[] => [
  { name, repetition_type: "OPTIONAL", converted_type: "LIST", num_children: 1 },
  { name: "list", repetition_type: "REPEATED", num_children: 1 },
  ...struct("element", element),
];
const taskKwargs = (name: string, extra: SchemaElement[][] = []): SchemaElement[] =>
  struct(name, [...extra, [text("env")], [text("task_id")], [int64("seed")]]);

/** The distinct tool names of a run, in order. */
export function toolNames(tools: readonly ToolSpec[]): string[] {
  return [...new Set(tools.map((t) => t.name))];
}

/** The Parquet schema of the verl RL export (flat, depth-first, as Parquet stores it): one for every run. */
export function verlSchema(): SchemaElement[] {
  const extraInfo: SchemaElement[][] = [
    [int64("index")],
    [text("split")],
    [text("env")],
    [text("env_version")],
    [text("task_id")],
    [int64("seed")],
    [text("difficulty")],
    [{ name: "need_tools_kwargs", type: "BOOLEAN", repetition_type: "OPTIONAL" }],
    struct("tools_kwargs", [struct(VERL_TOOLS_KWARGS_KEY, [taskKwargs("create_kwargs")])]),
    taskKwargs("interaction_kwargs", [[text("name")]]),
  ];
  return [
    { name: "root", num_children: VERL_COLUMNS.length },
    text("data_source"),
    text("agent_name"),
    ...listOf("prompt", [[text("role")], [text("content")]]),
    text("ability"),
    ...struct("reward_model", [[text("style")], [text("ground_truth")]]),
    ...struct("extra_info", extraInfo),
  ];
}

/** The verl row of an episode's task (`index` is the row's position in the file), or null without steps. */
export function toVerlRow(episode: StoredEpisode, index: number, hasTools: boolean): VerlRow | null {
  const prompt = promptOf(episode.steps);
  if (prompt.length === 0) return null;
  const e = episode.episode;
  const kwargs: VerlTaskKwargs = { env: e.env, task_id: e.task_id, seed: BigInt(e.seed) };
  return {
    data_source: e.env,
    agent_name: VERL_AGENT_NAME,
    prompt,
    ability: "agent",
    reward_model: { style: "rule", ground_truth: JSON.stringify({ env: e.env, task_id: e.task_id, seed: e.seed }) },
    extra_info: {
      index: BigInt(index),
      split: splitOrNull(e.task_id),
      env: e.env,
      env_version: e.env_version,
      task_id: e.task_id,
      seed: BigInt(e.seed),
      difficulty: e.difficulty,
      need_tools_kwargs: hasTools,
      tools_kwargs: { llmix: { create_kwargs: { ...kwargs } } },
      interaction_kwargs: { name: VERL_INTERACTION_NAME, ...kwargs },
    },
  };
}

/** Write the verl RL Parquet of `tasks` (one episode per distinct task); returns the number of rows. */
export async function writeVerl(tasks: AsyncIterable<StoredEpisode>, tools: readonly ToolSpec[], file: ExportFile, kvMetadata: KeyValue[]): Promise<number> {
  const hasTools = toolNames(tools).length > 0;
  // Rows are prompts (a few KB each): a couple of thousand per group keeps memory to a few MB.
  return writeParquetRows(tasks, (episode, index) => toVerlRow(episode, index, hasTools), file, { columns: VERL_COLUMNS, schema: verlSchema(), rowGroupSize: 2000 }, kvMetadata);
}

/**
 * Stream the rows `toRow` makes of `episodes` (null: no row for that one) into a Parquet file of the
 * given table; returns how many rows were written. `toRow` gets the index the row will have.
 */
export async function writeParquetRows<Row>(
  episodes: AsyncIterable<StoredEpisode>,
  toRow: (episode: StoredEpisode, index: number) => Row | null,
  file: ExportFile,
  table: { columns: readonly string[]; schema: SchemaElement[]; rowGroupSize: number },
  kvMetadata: KeyValue[],
): Promise<number> {
  let rows = 0;
  async function* made(): AsyncGenerator<Row> {
    for await (const episode of episodes) {
      const row = toRow(episode, rows);
      if (row === null) continue;
      rows++;
      yield row;
    }
  }
  await parquetWriteRows({
    writer: new ParquetSink(file),
    rows: made() as AsyncIterable<Record<string, unknown>>,
    columns: table.columns.map((name) => ({ name })),
    schema: table.schema,
    rowGroupSize: table.rowGroupSize,
    kvMetadata,
    createdBy: "llmix (hyparquet-writer)",
  });
  return rows;
}

function splitOrNull(taskId: string): string | null {
  try {
    return splitOf(taskId);
  } catch {
    return null;
  }
}
