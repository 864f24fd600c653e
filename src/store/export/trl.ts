/**
 * TRL rows (https://huggingface.co/docs/trl/dataset_formats).
 *
 * `trl-sft` is TRL's conversational language-modeling type with tool calling: one row per episode,
 * `{"messages": [...], "tools": [...]}`. `trl-grpo` is TRL's conversational prompt-only type: one row per
 * distinct task with the task columns GRPOTrainer hands to reward functions as keyword arguments.
 *
 * Choices made here, where the trajectory record does not dictate the chat form:
 * - No system message. The reset observation (the task as the environment describes it, role and
 *   policy included) is the first user message, exactly the text the policy saw; inventing a system
 *   prompt would make the training prompt differ from the rollout prompt.
 * - Step k's `observation` is what the policy saw before acting, so the result of step k's action is
 *   step k+1's observation. The last action's result is not an observation in the records: a final tool
 *   call gets its tool message from `tool_result` (output as text, or the error), a final message needs
 *   nothing after it.
 * - An episode with an invalid action (`{type: "invalid", raw}`, or a tool call whose `args` is not an
 *   object: the `openai` policy stores unparseable arguments raw) is skipped by `trl-sft`: it has no
 *   well-formed chat form, and writing the raw output as assistant text would teach the model to emit
 *   malformed actions. (`trl-grpo` keeps such episodes' tasks: it only uses the first observation.)
 *   A tool call the environment rejected (unknown tool, bad arguments) is a well-formed action: it stays,
 *   with the error observation as its tool turn.
 * - Tool-call `arguments` are objects, as TRL's chat templates expect; `id` / `tool_call_id` appear
 *   only when the policy gave a `call_id` (the records hold no other id, and none is invented).
 *
 * Two forms of the same rows (https://huggingface.co/docs/trl/dataset_formats#tool-calling, TRL
 * docs/source/dataset_formats.md at huggingface/trl f2cd577):
 * - object form (default): `tools` a list of objects, `arguments` objects. Tool schemas and arguments are
 *   free-form JSON whose keys differ from row to row, so `datasets` must load them with its `Json()`
 *   feature (datasets >= 4.7); plain Arrow inference would merge every row's keys into one struct.
 * - JSON-string form (`jsonStrings`): `tools` is one JSON string of the whole list (`json.dumps([...])`,
 *   which TRL's SFTTrainer parses itself) and each tool call's `arguments` a JSON string (the OpenAI wire
 *   form), for `datasets` without `Json()`. Every string parses back to exactly the object form.
 *   `trl-grpo` rows hold neither tools nor tool calls, so both forms of them are the same.
 */
import type { ToolResult, ToolSpec, TrajectoryStepRecord } from "../../core/contract.js";
import { ValidationError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import type { StoredEpisode } from "../types.js";

/** An OpenAI-style function tool definition, the form chat templates render. */
export interface FunctionTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One tool call of an assistant message. */
export interface ChatToolCall {
  id?: string;
  type: "function";
  function: { name: string; arguments: Record<string, unknown> };
}

/** The result of a tool call, as the tool's turn. */
export interface ToolMessage {
  role: "tool";
  name: string;
  content: string;
  tool_call_id?: string;
}

/** A chat message in the OpenAI / Hugging Face form. */
export type ChatMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; content: string }
  | { role: "assistant"; tool_calls: ChatToolCall[] }
  | ToolMessage;

/** A `trl-sft` row. */
export interface TrlSftRow {
  messages: ChatMessage[];
  tools: FunctionTool[];
}

/** A tool call in the JSON-string form: `arguments` is the JSON text of the arguments object. */
export interface ChatToolCallJson {
  id?: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A chat message in the JSON-string form (only assistant tool calls differ from `ChatMessage`). */
export type ChatMessageJson = Exclude<ChatMessage, { tool_calls: ChatToolCall[] }> | { role: "assistant"; tool_calls: ChatToolCallJson[] };

/** A `trl-sft` row in the JSON-string form: `tools` is the JSON text of the tool list. */
export interface TrlSftJsonRow {
  messages: ChatMessageJson[];
  tools: string;
}

/** The export formats that take the `jsonStrings` option. */
export const JSON_STRING_FORMATS = ["trl-sft", "trl-grpo"] as const;

/** A `trl-grpo` row: the prompt plus the columns that identify the task. */
export interface TrlGrpoRow {
  prompt: ChatMessage[];
  env: string;
  task_id: string;
  seed: number;
  difficulty: string;
  env_version: string;
}

/** The tools of a run as OpenAI function definitions (LLMix's `effect` is not part of that form). */
export function toFunctionTools(tools: readonly ToolSpec[]): FunctionTool[] {
  return tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

/** The prompt of an episode: its first observation as the user message ([] if it has no steps). */
export function promptOf(steps: readonly TrajectoryStepRecord[]): ChatMessage[] {
  const first = steps[0];
  return first ? [{ role: "user", content: first.observation.rendered }] : [];
}

/** The whole conversation of an episode, or null when it has no chat form (no steps, an invalid action). */
export function toMessages(steps: readonly TrajectoryStepRecord[]): ChatMessage[] | null {
  if (steps.length === 0) return null;
  const messages = promptOf(steps);
  for (const [i, step] of steps.entries()) {
    const action = step.action;
    const next = steps[i + 1];
    if (action.type === "tool_call") {
      // A model's unparseable arguments are stored raw (not an object): as malformed as an invalid action.
      if (!isObject(action.args)) return null;
      const call: ChatToolCall = { type: "function", function: { name: action.tool, arguments: action.args } };
      if (action.call_id !== undefined) call.id = action.call_id;
      messages.push({ role: "assistant", tool_calls: [call] });
      const content = next ? next.observation.rendered : step.tool_result ? renderResult(action.tool, step.tool_result) : null;
      if (content !== null) {
        const tool: ToolMessage = { role: "tool", name: action.tool, content };
        if (action.call_id !== undefined) tool.tool_call_id = action.call_id;
        messages.push(tool);
      }
    } else if (action.type === "message") {
      messages.push({ role: "assistant", content: action.content });
      // The reply (the simulated user's turn) is the next observation; after the last step there is none.
      if (next) messages.push({ role: "user", content: next.observation.rendered });
    } else {
      return null;
    }
  }
  return messages;
}

/** The `trl-sft` row of an episode, or null when it is skipped (see the module comment). */
export function toSftRow(episode: StoredEpisode, tools: FunctionTool[]): TrlSftRow | null {
  const messages = toMessages(episode.steps);
  return messages ? { messages, tools } : null;
}

/** The `trl-grpo` row of an episode's task, or null when the episode has no steps (so no prompt). */
export function toGrpoRow(episode: StoredEpisode): TrlGrpoRow | null {
  const prompt = promptOf(episode.steps);
  if (prompt.length === 0) return null;
  const e = episode.episode;
  return { prompt, env: e.env, task_id: e.task_id, seed: e.seed, difficulty: e.difficulty, env_version: e.env_version };
}

/** A `trl-sft` row in the JSON-string form: `tools` and every tool call's `arguments` as JSON text. */
export function toJsonStringRow(row: TrlSftRow): TrlSftJsonRow {
  const messages = row.messages.map((m): ChatMessageJson => {
    if (!("tool_calls" in m)) return m;
    return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, function: { name: c.function.name, arguments: JSON.stringify(c.function.arguments) } })) };
  });
  return { messages, tools: JSON.stringify(row.tools) };
}

/**
 * The `jsonStrings` export option, checked: undefined is false; anything but a boolean, or true with a
 * format other than `trl-sft` / `trl-grpo`, is a ValidationError "invalid_argument".
 */
export function parseJsonStrings(value: unknown, format: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== "boolean") throw new ValidationError("invalid_argument", `jsonStrings must be a boolean, got ${typeof value === "string" ? JSON.stringify(value) : String(value)}`);
  if (value && !(JSON_STRING_FORMATS as readonly string[]).includes(format)) {
    throw new ValidationError("invalid_argument", `jsonStrings applies to ${JSON_STRING_FORMATS.join(" and ")} only, not ${format}`);
  }
  return value;
}

/**
 * A final tool call's result as text. Environments may render results their own way (tables); the record
 * keeps only the envelope, so this follows the base environment's rendering: text output as it is, other
 * output as JSON, a failure as `[tool status] message`.
 */
export function renderResult(tool: string, result: ToolResult): string {
  if (result.status === "ok") return typeof result.output === "string" ? result.output : json(result.output);
  return `[${tool} ${result.status}] ${result.error?.message ?? json(result.output)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function json(value: JsonValue | undefined): string {
  return JSON.stringify(value ?? null);
}
