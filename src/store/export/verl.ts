/**
 * verl Parquet (verl docs "Prepare Data for Post-Training", and the multi-turn tool / interaction
 * examples `examples/data_preprocess/gsm8k_multiturn_w_tool.py`, `gsm8k_multiturn_w_interaction.py`).
 * One row per distinct task (task id + seed): verl samples prompts and generates its own rollouts, so
 * the group members of a stored run would only duplicate prompts.
 *
 * Columns, with nested types written natively (hyparquet-writer encodes lists and structs from an
 * explicit schema), because verl reads `prompt` as a list of messages and `extra_info.tools_kwargs` as a
 * dict — a JSON string there would not work:
 * - `data_source`: the environment id (verl picks the reward function by it).
 * - `agent_name`: "tool_agent", verl's agent loop for multi-turn tool use.
 * - `prompt`: list<struct{role, content}>: the first observation as the user message (as in `trl-grpo`).
 * - `ability`: "agent".
 * - `reward_model`: struct{style: "rule", ground_truth: JSON string of {env, task_id, seed}}: the reward is
 *   the LLMix verifier's, so the ground truth is what reproduces the episode, not an answer string.
 * - `extra_info`: struct{index, split, env, env_version, task_id, seed, difficulty, need_tools_kwargs,
 *   tools_kwargs, interaction_kwargs}. `tools_kwargs` maps every tool of the run to
 *   `{create_kwargs: {env, task_id, seed}}` (verl passes these to `BaseTool.create`);
 *   `interaction_kwargs` is `{name: "llmix", env, task_id, seed}` (verl picks the interaction named
 *   `name`, which plays the simulated user of environments that have one). `split` is the task id's
 *   LLMix split ("train" / "eval"), null if the id is not in the standard form.
 * Integers (index, seed) are INT64, as pandas writes them. The tools column is omitted from
 * `tools_kwargs` when the run has no tools (Parquet has no empty struct).
 */
import type { SchemaElement } from "hyparquet-writer";
import type { ToolSpec } from "../../core/contract.js";
import { splitOf } from "../../tasks/splits.js";
import type { RunRecord, StoredEpisode } from "../types.js";
import { promptOf, type ChatMessage } from "./trl.js";

/** The verl interaction name rows ask for (configure an interaction with this name). */
export const VERL_INTERACTION_NAME = "llmix";

/** The verl agent loop rows ask for. */
export const VERL_AGENT_NAME = "tool_agent";

/** The top-level columns, in file order. */
export const VERL_COLUMNS = ["data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"] as const;

/** One verl row as written (INT64 fields are bigints, as the Parquet writer wants them). */
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
    tools_kwargs?: Record<string, { create_kwargs: TaskKwargs }>;
    interaction_kwargs: TaskKwargs & { name: string };
  };
}

interface TaskKwargs {
  env: string;
  task_id: string;
  seed: bigint;
}

const text = (name: string): SchemaElement => ({ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" });
const int64 = (name: string): SchemaElement => ({ name, type: "INT64", repetition_type: "OPTIONAL" });
const struct = (name: string, children: SchemaElement[][]): SchemaElement[] => [
  { name, repetition_type: "OPTIONAL", num_children: children.length },
  ...children.flat(),
];
const taskKwargs = (name: string, extra: SchemaElement[][] = []): SchemaElement[] =>
  struct(name, [...extra, [text("env")], [text("task_id")], [int64("seed")]]);

/** The distinct tool names of a run, in order (a struct cannot have two fields with one name). */
export function toolNames(tools: readonly ToolSpec[]): string[] {
  return [...new Set(tools.map((t) => t.name))];
}

/** The Parquet schema of a run's verl export (flat, depth-first, as Parquet stores it). */
export function verlSchema(run: RunRecord): SchemaElement[] {
  const names = toolNames(run.tools);
  const extraInfo: SchemaElement[][] = [
    [int64("index")],
    [text("split")],
    [text("env")],
    [text("env_version")],
    [text("task_id")],
    [int64("seed")],
    [text("difficulty")],
    [{ name: "need_tools_kwargs", type: "BOOLEAN", repetition_type: "OPTIONAL" }],
    ...(names.length > 0 ? [struct("tools_kwargs", names.map((n) => struct(n, [taskKwargs("create_kwargs")])))] : []),
    taskKwargs("interaction_kwargs", [[text("name")]]),
  ];
  return [
    { name: "root", num_children: VERL_COLUMNS.length },
    text("data_source"),
    text("agent_name"),
    // The standard three-level LIST: list (LIST) > repeated group "list" > "element".
    { name: "prompt", repetition_type: "OPTIONAL", converted_type: "LIST", num_children: 1 },
    { name: "list", repetition_type: "REPEATED", num_children: 1 },
    ...struct("element", [[text("role")], [text("content")]]),
    text("ability"),
    ...struct("reward_model", [[text("style")], [text("ground_truth")]]),
    ...struct("extra_info", extraInfo),
  ];
}

/** The verl row of an episode's task (`index` is the row's position in the file), or null without steps. */
export function toVerlRow(episode: StoredEpisode, index: number, tools: readonly string[]): VerlRow | null {
  const prompt = promptOf(episode.steps);
  if (prompt.length === 0) return null;
  const e = episode.episode;
  const kwargs: TaskKwargs = { env: e.env, task_id: e.task_id, seed: BigInt(e.seed) };
  const row: VerlRow = {
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
      need_tools_kwargs: tools.length > 0,
      interaction_kwargs: { name: VERL_INTERACTION_NAME, ...kwargs },
    },
  };
  if (tools.length > 0) row.extra_info.tools_kwargs = Object.fromEntries(tools.map((n) => [n, { create_kwargs: kwargs }]));
  return row;
}

function splitOrNull(taskId: string): string | null {
  try {
    return splitOf(taskId);
  } catch {
    return null;
  }
}
