/**
 * verl multi-turn SFT Parquet (`--format verl-sft`): what verl's `MultiTurnSFTDataset`
 * (`verl/utils/dataset/multiturn_sft_dataset.py`, verl 0.8.0.dev, commit b178a3cd) reads: `pd.read_parquet`,
 * then `messages` (`data.multiturn.messages_key`, default "messages") and `tools` (`tools_key`, default
 * "tools") of each row, each message tokenized with the chat template and the tools given with the first.
 * One row per episode, the conversation of `trl-sft` (same message order, same skipped episodes: see
 * trl.ts), in a schema that is the same for every environment:
 *
 * - `messages`: list<struct{role, content, tool_calls: list<struct{id, type, function: struct{name,
 *   arguments}}>, name, tool_call_id}>. A tool call's `arguments` is a JSON string (the OpenAI form, and
 *   the form of verl's own multi-turn SFT test data): a struct would need one schema per tool. The
 *   assistant turn of a tool call has content "". Fields a message does not have are null, as pandas
 *   writes a list of dicts with different keys.
 * - `tools`: list<struct{type, function: struct{name, description, parameters}}>: the same tool schemas
 *   as the `verl-tools` config (verl's property form), so SFT and RL prompts render the same tools;
 *   `parameters` is a JSON string, since each tool's parameters have their own shape.
 * - `extra_info`: struct{index, env, env_version, task_id, seed, difficulty, episode_id, total_reward,
 *   outcome} (MultiTurnSFTDataset ignores other columns; these trace a row to its episode).
 *
 * The JSON strings render as strings through the stock dataset; `llmix_client.verl.LlmixMultiTurnSFTDataset`
 * (set `data.custom_cls`) decodes them into objects and drops the null fields before the chat template.
 */
import type { SchemaElement } from "hyparquet-writer";
import type { RunRecord, StoredEpisode } from "../types.js";
import type { ExportFile } from "./output.js";
import { toMessages, type ChatMessage } from "./trl.js";
import { toVerlToolSchema } from "./verl-tools.js";
import { int64, listOf, struct, text, writeParquetRows, type KeyValue } from "./verl.js";

/** The top-level columns, in file order. */
export const VERL_SFT_COLUMNS = ["messages", "tools", "extra_info"] as const;

/** A message as a `verl-sft` row holds it (null: the message has no such field). */
export interface VerlSftMessage {
  role: string;
  content: string;
  tool_calls: Array<{ id: string | null; type: "function"; function: { name: string; arguments: string } }> | null;
  name: string | null;
  tool_call_id: string | null;
}

/** A tool as a `verl-sft` row holds it (`parameters` as JSON). */
export interface VerlSftTool {
  type: "function";
  function: { name: string; description: string; parameters: string };
}

/** One `verl-sft` row. */
export interface VerlSftRow {
  messages: VerlSftMessage[];
  tools: VerlSftTool[];
  extra_info: {
    index: bigint;
    env: string;
    env_version: string;
    task_id: string;
    seed: bigint;
    difficulty: string;
    episode_id: string;
    total_reward: number;
    outcome: number | null;
  };
}

const double = (name: string): SchemaElement => ({ name, type: "DOUBLE", repetition_type: "OPTIONAL" });

/** The Parquet schema of the `verl-sft` export (the same for every run). */
export function verlSftSchema(): SchemaElement[] {
  return [
    { name: "root", num_children: VERL_SFT_COLUMNS.length },
    ...listOf("messages", [
      [text("role")],
      [text("content")],
      listOf("tool_calls", [[text("id")], [text("type")], struct("function", [[text("name")], [text("arguments")]])]),
      [text("name")],
      [text("tool_call_id")],
    ]),
    ...listOf("tools", [[text("type")], struct("function", [[text("name")], [text("description")], [text("parameters")]])]),
    ...struct("extra_info", [
      [int64("index")],
      [text("env")],
      [text("env_version")],
      [text("task_id")],
      [int64("seed")],
      [text("difficulty")],
      [text("episode_id")],
      [double("total_reward")],
      [double("outcome")],
    ]),
  ];
}

/** A run's tools as `verl-sft` rows hold them (verl's schema form, parameters as JSON). */
export function verlSftTools(run: RunRecord): VerlSftTool[] {
  const seen = new Set<string>();
  return run.tools.flatMap((tool) => {
    if (seen.has(tool.name)) return [];
    seen.add(tool.name);
    const f = toVerlToolSchema(tool).function;
    return [{ type: "function" as const, function: { name: f.name, description: f.description, parameters: JSON.stringify(f.parameters) } }];
  });
}

/** A chat message in the `verl-sft` form. */
export function toVerlSftMessage(message: ChatMessage): VerlSftMessage {
  const out: VerlSftMessage = { role: message.role, content: "", tool_calls: null, name: null, tool_call_id: null };
  if ("tool_calls" in message) {
    out.tool_calls = message.tool_calls.map((call) => ({
      id: call.id ?? null,
      type: "function",
      function: { name: call.function.name, arguments: JSON.stringify(call.function.arguments) },
    }));
  } else {
    out.content = message.content;
  }
  if (message.role === "tool") {
    out.name = message.name;
    out.tool_call_id = message.tool_call_id ?? null;
  }
  return out;
}

/** The `verl-sft` row of an episode, or null when `trl-sft` skips it (no steps, an invalid action). */
export function toVerlSftRow(episode: StoredEpisode, index: number, tools: VerlSftTool[]): VerlSftRow | null {
  const messages = toMessages(episode.steps);
  if (!messages) return null;
  const e = episode.episode;
  return {
    messages: messages.map(toVerlSftMessage),
    tools,
    extra_info: {
      index: BigInt(index),
      env: e.env,
      env_version: e.env_version,
      task_id: e.task_id,
      seed: BigInt(e.seed),
      difficulty: e.difficulty,
      episode_id: e.episode_id,
      total_reward: e.total_reward,
      outcome: e.outcome,
    },
  };
}

/** Write the `verl-sft` Parquet of `episodes`; returns the number of rows. */
export async function writeVerlSft(run: RunRecord, episodes: AsyncIterable<StoredEpisode>, file: ExportFile, kvMetadata: KeyValue[]): Promise<number> {
  const tools = verlSftTools(run);
  // Rows are whole conversations (tens of KB with long tool outputs): a few hundred per group.
  return writeParquetRows(episodes, (episode, index) => toVerlSftRow(episode, index, tools), file, { columns: VERL_SFT_COLUMNS, schema: verlSftSchema(), rowGroupSize: 500 }, kvMetadata);
}
