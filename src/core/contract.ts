/**
 * The contract every LLMix environment honours (DESIGN §1). Trainers integrate against these types and
 * never against one environment's quirks. Field names of the trajectory record are part of the
 * contract: snake_case on the wire and on disk.
 */
import type { JsonValue } from "./json.js";

/** Call one of the episode's tools. `call_id` is echoed back so policies can match results. */
export interface ToolCallAction {
  type: "tool_call";
  tool: string;
  args: Record<string, unknown>;
  call_id?: string;
}

/** A reply to the simulated user, or a final answer. */
export interface MessageAction {
  type: "message";
  content: string;
}

/** Everything a policy can do. Anything else handed to `step` is an invalid action. */
export type Action = ToolCallAction | MessageAction;

/** What a policy sees. `rendered` is the text; `tokens` its length under the configured tokenizer. */
export interface Observation {
  rendered: string;
  tokens: number;
  [extra: string]: JsonValue | undefined;
}

/** How a tool call ended. */
export type ToolStatus = "ok" | "error" | "denied" | "invalid" | "timeout";

/** The envelope every tool call returns, whatever happened inside. */
export interface ToolResult {
  status: ToolStatus;
  latency_ms: number;
  cost: number;
  output: JsonValue;
  /** Set when a failure was injected or the handler failed: a stable code and a message. */
  error?: { code: string; message: string };
  /** True when an injected fault cut the output short. */
  partial?: boolean;
}

/** Named reward components; `reward` is always their sum. */
export type RewardComponents = Record<string, number>;

/** What `step` returns. */
export interface StepResult<O = Observation> {
  observation: O;
  reward: number;
  rewardComponents: RewardComponents;
  terminated: boolean;
  truncated: boolean;
  info: Record<string, unknown>;
}

/** One JSON-Schema tool definition as offered to a policy. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments, OpenAI strict-mode compatible. */
  parameters: Record<string, unknown>;
  effect: "read" | "write";
}

/** The interface of DESIGN §1, plus restore, tools and close. */
export interface AgentEnvironment<State, O, A> {
  /** Restore initial state for a task. Same seed, same episode. */
  reset(taskId: string, seed: number): Promise<O>;
  /** Apply one action and advance world state. */
  step(action: A): Promise<StepResult<O>>;
  /** Full world state for replay, debugging, and verifiers. */
  snapshot(): Promise<State>;
  /** Continue exactly from a snapshot (branching, crash recovery, tree search). */
  restore(state: State): Promise<void>;
  /** The JSON-Schema tool definitions valid in this episode. */
  tools(): ToolSpec[];
  /** Release resources. The instance must not be used afterwards. */
  close(): Promise<void>;
}

/** One step of a trajectory, exactly as stored and exported (DESIGN §1). */
export interface TrajectoryStepRecord {
  episode_id: string;
  task_id: string;
  env_version: string;
  policy_checkpoint: string | null;
  step: number;
  observation: { rendered: string; tokens: number };
  action: Action | { type: "invalid"; raw: JsonValue };
  tool_result: ToolResult | null;
  reward_components: RewardComponents;
  terminated: boolean;
  truncated: boolean;
  reward?: number;
  info?: Record<string, unknown>;
  policy?: {
    prompt_token_ids?: number[];
    completion_token_ids?: number[];
    logprobs?: number[];
    model?: string;
  };
}
