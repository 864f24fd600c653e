/**
 * The base class every LLMix environment extends. It owns the lifecycle and everything that must be
 * the same in every environment, so an environment author writes only the world, the tools, the
 * message handling and the verifier:
 *
 * - `reset(taskId, seed)` parses the id, generates the task (a pure function of the id), derives the
 *   episode's streams from `(env, taskId, seed)` and builds the world.
 * - `step(action)` validates the action, runs tool calls through the middleware, applies process
 *   reward components, truncates at `maxSteps`, and scores the outcome once the episode ends.
 *   `reward` is always the sum of `rewardComponents`; every declared component appears in every step.
 * - `step` before `reset` throws a LifecycleError. A step after the episode ended changes nothing and
 *   is answered with an error observation (`info.error.code` "episode_ended", the end and its outcome)
 *   and the `invalid_call` component, so a batched training loop never crashes; `strictLifecycle` makes
 *   it throw instead.
 * - `snapshot()` captures everything (world, RNG streams, clock, step, call log); `restore()` continues
 *   from it byte-for-byte, in this instance or any other.
 *
 * Subclasses take `(options?: EnvironmentOptions)` as their constructor, so the base can build a fresh
 * peer to replay the reference solution (for state-difference verifiers).
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import type {
  Action,
  AgentEnvironment,
  Observation,
  RewardComponents,
  StepResult,
  ToolResult,
  ToolSpec,
  TrajectoryStepRecord,
} from "./contract.js";
import { LifecycleError, LlmixError, ValidationError } from "./errors.js";
import { cloneJson, toJsonValue, type JsonValue } from "./json.js";
import { Rng, type RngState } from "./rng.js";
import { VirtualClock, type ClockState } from "./clock.js";
import { getDefaultTokenizer, type Tokenizer } from "./tokenizer.js";
import { parseAction } from "./action.js";
import { formatIssues } from "./validation.js";
import type { Policy } from "./policy.js";
import { runPolicy } from "./run-policy.js";
import { ReferenceCache, referenceKey } from "./reference-cache.js";
import type { AnyTool, ToolContext } from "../tools/define.js";
import { runToolCall } from "../tools/runner.js";
import { FailureProfileSchema, LatencyModelSchema, type ToolOverrides } from "../tools/profile.js";
import type { Sandbox } from "../sandboxes/sandbox.js";
import { deepFreeze, generateTask, type TaskGenerator } from "../tasks/generator.js";
import type { TaskId } from "../tasks/task-id.js";
import { defineVerifier, runVerifier, type VerifierResult } from "../rewards/verifier.js";
import { judged, type JudgeCombine } from "../rewards/judged.js";
import { loadRewardModel, scoreEpisode, type RewardModelFile } from "../rewards/reward-model/index.js";
import { sumComponents } from "../rewards/components.js";

/** Penalties applied by the base on every step. Values are rewards (<= 0). */
export interface ProcessRewardWeights {
  /** Added when an action or tool call is invalid. */
  invalidCall: number;
  /** Added when a tool call is denied by a permission. */
  deniedCall: number;
  /** Added on every step. */
  stepCost: number;
  /** Multiplies a call's cost into the (negative) `tool_cost` component. */
  toolCostWeight: number;
}

export const DEFAULT_PROCESS_REWARDS: ProcessRewardWeights = {
  invalidCall: -0.1,
  deniedCall: -0.1,
  stepCost: -0.01,
  toolCostWeight: 1,
};

/** Per-step bounds of one reward component, as declared by the environment. */
export interface ComponentBounds {
  min: number;
  max: number;
  description: string;
  /**
   * The value depends on the task's hidden ground truth (which address is an attacker, which charge is
   * wrong). Such a component is not paid on the step it is earned: the base accumulates it and pays the
   * total (clamped to [min, max]) on the step that ends the episode, so a policy cannot act, read the
   * reward, and undo — the reward would be an oracle for the hidden labels.
   */
  hiddenLabel?: boolean;
  /** With `hiddenLabel`: pay on the step anyway (an explicit opt-in; `llmix check`'s leakage check warns about it). */
  payOnStep?: boolean;
}

/**
 * A condition the final world must meet for the task to count as done, stated from the task alone —
 * not from a run of the reference solver. A verifier that compares against the reference's final
 * world inherits the reference's bugs; `llmix check` runs the reference against these conditions, so a
 * reference that stops early or does the wrong thing fails the checklist instead of defining "correct".
 */
export interface GoalCondition<World> {
  /** Stable id, e.g. `refund_issued`. */
  id: string;
  /** What must hold, in words. */
  description: string;
  holds(world: World): boolean;
}

/** A goal condition evaluated on the current world. */
export interface GoalStatus {
  id: string;
  description: string;
  met: boolean;
}

/** Static facts about an environment: its id, semantic version and reward design. */
export interface EnvironmentInfo {
  id: string;
  version: string;
  description: string;
  /** Steps after which an episode is truncated. */
  maxSteps: number;
  /** Highest cost one tool call can have (bounds `tool_cost`). Default 1. */
  maxToolCost?: number;
  /** Environment-specific components beyond the standard ones, e.g. `policy_violation`. */
  components?: Record<string, ComponentBounds>;
  processRewards?: Partial<ProcessRewardWeights>;
  /**
   * What a `{type: "message"}` action is in this environment, or null when nobody reads messages (a
   * message only costs a step). Undeclared: unknown to clients (the base `onMessage` takes a message as
   * the final answer). MCP clients get a `send_message` tool for a declared channel.
   */
  messages?: MessageChannel | null;
  /**
   * What this environment's records may hold of personal data, beyond what `sensitiveValues` lists for an
   * episode. A deployment's redaction rules (src/store/redaction.ts) apply it before anything is stored,
   * exported or replayed; it changes nothing the agent sees.
   */
  sensitive?: SensitiveDeclaration;
}

/**
 * Personal data an environment declares (`EnvironmentInfo.sensitive`). Rule names are lowercase
 * letters, digits, "_" and "-"; a redacted value becomes `[redacted:<rule>]`.
 */
export interface SensitiveDeclaration {
  /** JSON keys whose string and number values are personal data wherever they appear (any case): replaced whole. */
  fields?: readonly string[];
  /** Forms of personal data in text, as POSIX extended regular expressions (run by a linear-time engine, line by line). */
  patterns?: ReadonlyArray<{ name: string; regex: string; flags?: "i" }>;
}

/** One personal value of the current episode's world: the rule it is redacted under, and the value. */
export interface SensitiveValue {
  rule: string;
  value: string;
}

/** What a message action is in an environment (`EnvironmentInfo.messages`). */
export interface MessageChannel {
  /**
   * `conversation`: a turn with a simulated user, whose reply is the next observation (the user may end
   * the episode); `final_answer`: the agent's answer, which ends the episode.
   */
  kind: "conversation" | "final_answer";
  /** Who reads the messages, in a few words: "the customer". Default "the user". */
  recipient?: string;
}

/** Options every environment constructor accepts. */
export interface EnvironmentOptions {
  /** Override the environment's `maxSteps`. */
  maxSteps?: number;
  /** Truncate once the episode's observations (the first included) total more tokens than this. */
  maxTokens?: number;
  /** Tokenizer for observation token counts. Default: the process default (o200k_base). */
  tokenizer?: Tokenizer;
  /** Real sleep per virtual millisecond of tool latency (0 = none). */
  realLatencyScale?: number;
  /** Override process reward weights. */
  processRewards?: Partial<ProcessRewardWeights>;
  /** When false, the outcome is not scored (used for the reference replay itself). Default true. */
  scoring?: boolean;
  /** Throw LifecycleError("episode_ended") on a step after the end instead of answering it. Default false. */
  strictLifecycle?: boolean;
  /**
   * Adjust the verified outcome by a reward model file (`llmix rm train`, src/rewards/reward-model),
   * combined as `judged` declares (src/rewards/judged.ts; default "gate": it can lower a verified
   * success, never lift a failure). The episode keeps the trajectory the model reads (in its snapshot too).
   */
  rewardModel?: { file: string; combine?: JudgeCombine; floor?: number; weight?: number; threshold?: number };
}

/** One step as a reward model reads it: what the action acted on, the action, and its tool result. */
interface TraceStep {
  observation: { rendered: string };
  action: JsonValue;
  tool_result: { status: string; error?: { code: string }; partial?: boolean } | null;
}

/** One tool call as the episode logged it; verifiers read this for process checks (order of calls). */
export interface CallRecord {
  step: number;
  tool: string;
  args: JsonValue;
  status: ToolResult["status"];
  /** Virtual time when the call finished. */
  at: number;
}

/** The state every snapshot carries. `world` is the environment's own part. */
export interface EnvironmentSnapshot {
  format: "llmix.snapshot/1";
  env: string;
  version: string;
  task_id: string;
  seed: number;
  step: number;
  /** Observation tokens so far, the first observation included. */
  tokens: number;
  status: "running" | "terminated" | "truncated";
  end_reason: string | null;
  clock: ClockState;
  rng: { world: RngState; tools: RngState };
  calls: CallRecord[];
  messages: string[];
  world: JsonValue;
  /** Hidden-label components earned so far and not yet paid (see `ComponentBounds.hiddenLabel`). */
  deferred?: Record<string, number>;
  /** With the `rewardModel` option: the steps so far as the model reads them, and the last observation. */
  trace?: { last: string; steps: TraceStep[] };
}

/** What environment hooks see of the running episode. */
export interface Episode<Task, World> {
  id: TaskId;
  seed: number;
  task: Task;
  world: World;
  /** The world stream: use it for all episode dynamics. */
  rng: Rng;
  clock: VirtualClock;
  step: number;
  /** Every tool call so far. */
  calls: readonly CallRecord[];
  /** Every message the agent sent so far. */
  messages: readonly string[];
  endReason: string | null;
}

/** How a message action was handled. */
export interface MessageOutcome {
  rendered: string;
  /** End the episode (terminated) with this reason. */
  end?: string;
  /** Extra process components for this step (must be declared). */
  components?: RewardComponents;
}

/** The `source` an observation reports: what produced its text. */
export type ObservationSource = "task" | "tool" | "user" | "error";


const SnapshotSchema = z.object({
  format: z.literal("llmix.snapshot/1"),
  env: z.string(),
  version: z.string(),
  task_id: z.string(),
  seed: z.number().int(),
  step: z.number().int().min(0),
  tokens: z.number().int().min(0),
  status: z.enum(["running", "terminated", "truncated"]),
  end_reason: z.string().nullable(),
  clock: z.object({ nowMs: z.number().finite() }),
  rng: z.object({ world: z.any(), tools: z.any() }),
  calls: z.array(
    z.object({
      step: z.number().int().min(0),
      tool: z.string(),
      args: z.any(),
      status: z.enum(["ok", "error", "denied", "invalid", "timeout"]),
      at: z.number().finite(),
    }),
  ),
  messages: z.array(z.string()),
  world: z.any(),
  deferred: z.record(z.string(), z.number().finite()).optional(),
  trace: z.object({ last: z.string(), steps: z.array(z.object({ observation: z.object({ rendered: z.string() }), action: z.any(), tool_result: z.any() })) }).optional(),
});

interface RunningEpisode<Task, World> extends Episode<Task, World> {
  toolRng: Rng;
  tokens: number;
  /** This episode's tools by name, grants and validated profile overrides: fixed at reset. */
  tools: ReadonlyMap<string, AnyTool<World, Task>>;
  grants: ReadonlySet<string>;
  overrides: ToolOverrides;
  status: EnvironmentSnapshot["status"];
  calls: CallRecord[];
  messages: string[];
  /** Hidden-label components earned and not yet paid. */
  deferred: Record<string, number>;
  /** The outcome once the episode ended and was scored (kept in memory only; a restore scores again). */
  outcome?: number;
  /** With the `rewardModel` option (see EnvironmentSnapshot.trace). */
  trace?: { last: string; steps: TraceStep[] };
}

/** Check a seed argument: integers in the unsigned 32-bit range keep every client (Python, JSON) exact. */
export function assertSeed(seed: unknown): asserts seed is number {
  if (typeof seed !== "number" || !Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new ValidationError("invalid_argument", `seed must be an integer in [0, 4294967295], got ${String(seed)}`);
  }
}

/** What a step after the end answers: how the episode ended, its outcome, and that nothing was applied. */
export function episodeEndedMessage(status: string, endReason: string | null, outcome: number | null): string {
  const scored = outcome === null ? "" : `; outcome ${outcome}`;
  return `The episode has ended (${status}: ${endReason ?? "no reason"}${scored}); this action was not applied. Start a new episode to go on.`;
}

/** Reference replay results of every environment instance in this thread. */
const REFERENCES = new ReferenceCache();
/** The view key of `referenceWorld`'s results (whole-world snapshots). */
const SNAPSHOT_VIEW = {};

/** The base environment. `Task` is the generated task spec (JSON); `World` the live world state. */
export abstract class BaseEnvironment<Task = unknown, World = unknown>
  implements AgentEnvironment<EnvironmentSnapshot, Observation, Action>
{
  /** Id, version, step budget and reward design. */
  abstract readonly info: EnvironmentInfo;
  /** Turns task ids into tasks. */
  abstract readonly tasks: TaskGenerator<Task>;

  /** Build the world for a task. Draw randomness only from `episode.rng`, time only from `episode.clock`. */
  protected abstract createWorld(episode: Omit<Episode<Task, never>, "world">): World | Promise<World>;
  /** The first observation's text: the task as the agent sees it. */
  protected abstract describeTask(episode: Episode<Task, World>): string;
  /** The tools of this episode (may depend on the task). Called once per episode, at reset and restore. */
  protected abstract toolset(episode: Episode<Task, World>): readonly AnyTool<World, Task>[];
  /** Score the episode once it ended (terminated or truncated). Score 1 means the task was solved. */
  protected abstract evaluate(episode: Episode<Task, World>): VerifierResult | Promise<VerifierResult>;
  /** The world's full state as JSON. Anything left out here cannot be restored. */
  protected abstract snapshotWorld(world: World): JsonValue;
  /** Rebuild a world from `snapshotWorld` output. */
  protected abstract restoreWorld(state: JsonValue, task: Task): World;

  /**
   * The schema of this environment's `snapshotWorld` output. `restore` checks a snapshot's world
   * against it before `restoreWorld` runs, so a malformed or edited world is refused with
   * `invalid_snapshot` naming the field, never a failure on a later step. Checks a schema cannot
   * express (a database's tables, references between parts) belong in `restoreWorld`, which may
   * throw: its errors are reported as `invalid_snapshot` too. Default: none (the world is unchecked).
   */
  protected worldSchema(): z.ZodType | null {
    return null;
  }

  /** Handle a message action. Default: the message is the final answer and ends the episode. */
  protected onMessage(_content: string, _episode: Episode<Task, World>): MessageOutcome | Promise<MessageOutcome> {
    return { rendered: "Final answer recorded.", end: "final_answer" };
  }
  /** Permissions granted in this episode (once, at reset and restore). Default: every permission the tools name. */
  protected grants(episode: Episode<Task, World>): ReadonlySet<string> {
    return new Set(this.toolset(episode).flatMap((t) => (t.permission ? [t.permission] : [])));
  }
  /** Per-task overrides of tool failure, latency and cost profiles. Default: none. */
  protected toolOverrides(_episode: Episode<Task, World>): ToolOverrides {
    return {};
  }
  /** Sandboxes whose access follows each tool's read/write effect. */
  protected sandboxes(_world: World): readonly Sandbox[] {
    return [];
  }
  /** Release the world's resources (database handles). */
  protected disposeWorld(world: World): void {
    for (const sandbox of this.sandboxes(world)) sandbox.close?.();
  }
  /** The virtual start time of an episode. Default: the fixed epoch. */
  protected startTime(_task: Task): number | undefined {
    return undefined;
  }
  /** Render a tool result as observation text (an `ok` result of a tool with its own `render` never comes here). */
  protected renderToolResult(tool: string, result: ToolResult): string {
    if (result.status === "ok") {
      return typeof result.output === "string" ? result.output : JSON.stringify(result.output, null, 2);
    }
    return `[${tool} ${result.status}] ${result.error?.message ?? String(result.output)}`;
  }

  /** The reference solver for the current episode (call after reset). Must solve every task. */
  referenceSolver(): Policy {
    throw new LlmixError("internal", `${this.info.id} declares no reference solver`);
  }
  /**
   * The personal values of the current episode's world — the names, emails, addresses, card digits
   * drawn for this task — in an order fixed by the task and seed (call after reset). Redaction replaces
   * each wherever it appears in a record by `[redacted:<rule>#<index in this list>]`, so a replay can
   * send the value again (src/store/redaction.ts). Default: none.
   */
  sensitiveValues(): SensitiveValue[] {
    return [];
  }
  /** Probe policies that try to score without doing the task (call after reset), by name. */
  probes(): Record<string, Policy> {
    return {};
  }

  /** The task's goal conditions (see `GoalCondition`); none by default. Read `this.episode` for the task. */
  protected goalConditions(): readonly GoalCondition<World>[] {
    return [];
  }

  /** Each goal condition of the current episode, evaluated on its world as it stands. */
  goals(): GoalStatus[] {
    const world = this.require().world;
    return this.goalConditions().map((g) => ({ id: g.id, description: g.description, met: g.holds(world) }));
  }

  protected readonly options: EnvironmentOptions;
  private current: RunningEpisode<Task, World> | null = null;
  private closed = false;
  private readonly taskCache = new Map<string, { id: TaskId; task: Task }>();
  private bounds?: Record<string, ComponentBounds>;

  constructor(options: EnvironmentOptions = {}) {
    for (const key of ["maxSteps", "maxTokens"] as const) {
      const value = options[key];
      if (value !== undefined && !(Number.isSafeInteger(value) && value >= 1)) {
        throw new ValidationError("invalid_config", `${key} must be an integer >= 1, got ${String(value)}`);
      }
    }
    const scale = options.realLatencyScale;
    if (scale !== undefined && !(Number.isFinite(scale) && scale >= 0)) {
      throw new ValidationError("invalid_config", `realLatencyScale must be a finite number >= 0, got ${String(scale)}`);
    }
    this.options = options;
  }

  /** Steps after which an episode is truncated. */
  get maxSteps(): number {
    return this.options.maxSteps ?? this.info.maxSteps;
  }

  /** The process reward weights in force. */
  get processRewards(): ProcessRewardWeights {
    return { ...DEFAULT_PROCESS_REWARDS, ...this.info.processRewards, ...this.options.processRewards };
  }

  /** Every reward component with its per-step bounds: `task`, the standard process ones, then the env's own. */
  componentBounds(): Readonly<Record<string, ComponentBounds>> {
    // Computed once: `info` and the options never change, and every step needs the component names.
    if (this.bounds) return this.bounds;
    const w = this.processRewards;
    const maxCost = this.info.maxToolCost ?? 1;
    this.bounds = {
      task: { min: 0, max: 1, description: "Outcome: the verifier's score, given on the last step." },
      invalid_call: { min: Math.min(0, w.invalidCall), max: 0, description: "Malformed action, unknown tool or invalid arguments." },
      denied_call: { min: Math.min(0, w.deniedCall), max: 0, description: "A tool call refused by a permission." },
      tool_cost: { min: -maxCost * w.toolCostWeight, max: 0, description: "The cost of the tool call, negated." },
      step_cost: { min: Math.min(0, w.stepCost), max: 0, description: "A constant cost per step." },
      ...this.info.components,
    };
    return this.bounds;
  }

  /** Every declared component at 0: the start of each step's components. */
  private zeroComponents(): RewardComponents {
    const components: RewardComponents = {};
    for (const name of Object.keys(this.componentBounds())) components[name] = 0;
    return components;
  }

  /** The running episode, for subclasses (throws before reset). */
  protected get episode(): Episode<Task, World> {
    return this.require();
  }

  async reset(taskId: string, seed: number): Promise<Observation> {
    this.assertOpen();
    assertSeed(seed);
    const { id, task } = this.generate(taskId);
    const stream = Rng.fromKey(this.info.id, id.id, seed);
    const partial = {
      id,
      seed,
      task,
      rng: stream.fork("world"),
      clock: new VirtualClock(this.startTime(task)),
      step: 0,
      calls: [] as CallRecord[],
      messages: [] as string[],
      deferred: {} as Record<string, number>,
      endReason: null,
    };
    const world = await this.createWorld(partial);
    let setup: ReturnType<typeof this.setUpTools>;
    try {
      setup = this.setUpTools({ ...partial, world });
    } catch (error) {
      this.disposeWorld(world);
      throw error;
    }
    this.dispose();
    const episode: RunningEpisode<Task, World> = { ...partial, world, toolRng: stream.fork("tools"), status: "running", tokens: 0, ...setup };
    this.current = episode;
    const observation = this.observe(this.describeTask(episode), "task");
    episode.tokens = observation.tokens;
    if (this.options.rewardModel) episode.trace = { last: observation.rendered, steps: [] };
    return observation;
  }

  async step(action: Action): Promise<StepResult> {
    const ep = this.require();
    if (ep.status !== "running") return this.afterEnd(ep);
    ep.step += 1;
    const weights = this.processRewards;
    const components = this.zeroComponents();
    components.step_cost = weights.stepCost;
    const info: Record<string, unknown> = {};
    let rendered: string;
    let source: ObservationSource;

    const parsed = parseAction(action);
    const problem = parsed.problem;
    if (!parsed.success) {
      components.invalid_call = weights.invalidCall;
      rendered = `Invalid action: ${problem}. An action is {"type":"tool_call","tool":...,"args":{...}} or {"type":"message","content":...}.`;
      info.error = { code: "invalid_action", message: rendered };
      source = "error";
    } else if (parsed.data.type === "tool_call") {
      const call = parsed.data;
      const result = await this.callTool(ep, call.tool, call.args, components, (crash) => {
        info.tool_crash = { tool: call.tool, args: toJsonValue(call.args), stack: crash.stack };
      });
      if (call.call_id !== undefined) info.call_id = call.call_id;
      info.tool_result = result;
      if (result.status === "invalid") components.invalid_call = weights.invalidCall;
      if (result.status === "denied") components.denied_call = weights.deniedCall;
      components.tool_cost = -result.cost * weights.toolCostWeight;
      const render = result.status === "ok" ? ep.tools.get(call.tool)?.render : undefined;
      rendered = render ? render(result.output) : this.renderToolResult(call.tool, result);
      source = "tool";
    } else {
      ep.messages.push(parsed.data.content);
      const outcome = await this.onMessage(parsed.data.content, ep);
      this.addComponents(components, outcome.components);
      if (outcome.end && ep.status === "running") this.end(ep, outcome.end);
      rendered = outcome.rendered;
      source = "user";
    }

    const observation = this.observe(rendered, source);
    ep.tokens += observation.tokens;
    if (ep.trace) {
      const tool = info.tool_result as ToolResult | undefined;
      ep.trace.steps.push({
        observation: { rendered: ep.trace.last },
        action: parsed.success ? toJsonValue(parsed.data) : { type: "invalid" },
        tool_result: tool ? { status: tool.status, ...(tool.error ? { error: { code: tool.error.code } } : {}), ...(tool.partial ? { partial: true } : {}) } : null,
      });
      ep.trace.last = observation.rendered;
    }
    if (ep.status === "running" && ep.step >= this.maxSteps) {
      ep.status = "truncated";
      ep.endReason = "max_steps";
    } else if (ep.status === "running" && this.options.maxTokens !== undefined && ep.tokens > this.options.maxTokens) {
      ep.status = "truncated";
      ep.endReason = "token_budget";
    }
    if (ep.status !== "running") {
      info.end_reason = ep.endReason;
      if (this.options.scoring !== false) {
        const verdict = await this.score(ep);
        components.task = verdict.score;
        ep.outcome = verdict.score;
        info.verdict = verdict;
        if (verdict.details.verifier_error !== undefined) info.verifier_error = verdict.details.verifier_error;
      }
    }
    this.deferHiddenLabels(ep, components);
    const reward = sumComponents(components);
    const status = ep.status as EnvironmentSnapshot["status"];
    return {
      observation,
      reward,
      rewardComponents: components,
      terminated: status === "terminated",
      truncated: status === "truncated",
      info,
    };
  }

  async snapshot(): Promise<EnvironmentSnapshot> {
    const ep = this.require();
    return {
      format: "llmix.snapshot/1",
      env: this.info.id,
      version: this.info.version,
      task_id: ep.id.id,
      seed: ep.seed,
      step: ep.step,
      tokens: ep.tokens,
      status: ep.status,
      end_reason: ep.endReason,
      clock: ep.clock.state(),
      rng: { world: ep.rng.state(), tools: ep.toolRng.state() },
      calls: cloneJson(ep.calls),
      messages: [...ep.messages],
      ...(Object.keys(ep.deferred).length > 0 ? { deferred: { ...ep.deferred } } : {}),
      ...(ep.trace ? { trace: cloneJson(ep.trace as unknown as JsonValue) as unknown as EnvironmentSnapshot["trace"] } : {}),
      // A copy: a snapshot must not change when the episode goes on, whatever snapshotWorld returns.
      world: cloneJson(this.snapshotWorld(ep.world)),
    };
  }

  async restore(state: EnvironmentSnapshot): Promise<void> {
    this.assertOpen();
    const parsed = SnapshotSchema.safeParse(state);
    if (!parsed.success) throw new ValidationError("invalid_snapshot", `invalid snapshot: ${formatIssues(parsed.error, "snapshot")}`);
    const snap = parsed.data as EnvironmentSnapshot;
    if (snap.env !== this.info.id || snap.version !== this.info.version) {
      throw new ValidationError(
        "invalid_snapshot",
        `snapshot is of ${snap.env}@${snap.version}; this environment is ${this.info.id}@${this.info.version}`,
      );
    }
    const schema = this.worldSchema();
    if (schema) {
      const world = schema.safeParse(snap.world);
      if (!world.success) throw new ValidationError("invalid_snapshot", `invalid snapshot: ${formatIssues(world.error, "snapshot.world")}`);
    }
    // Every part is validated before anything is replaced: a bad snapshot leaves the episode as it was.
    const episode = asSnapshotError(() => {
      assertSeed(snap.seed);
      const { id, task } = this.generate(snap.task_id);
      return {
        id,
        seed: snap.seed,
        task,
        rng: Rng.fromState(snap.rng.world),
        toolRng: Rng.fromState(snap.rng.tools),
        clock: VirtualClock.fromState(snap.clock),
        step: snap.step,
        tokens: snap.tokens,
        status: snap.status,
        endReason: snap.end_reason,
        calls: cloneJson(snap.calls),
        messages: [...snap.messages],
        deferred: { ...(snap.deferred ?? {}) },
        ...(this.options.rewardModel ? { trace: snap.trace ? (cloneJson(snap.trace as unknown as JsonValue) as unknown as { last: string; steps: TraceStep[] }) : { last: "", steps: [] } } : {}),
      };
    });
    const world = asSnapshotError(() => this.restoreWorld(cloneJson(snap.world), episode.task));
    let setup: ReturnType<typeof this.setUpTools>;
    try {
      setup = this.setUpTools({ ...episode, world });
    } catch (error) {
      this.disposeWorld(world);
      throw error;
    }
    this.dispose();
    this.current = { ...episode, world, ...setup };
  }

  tools(): ToolSpec[] {
    return [...this.require().tools.values()].map((t) => t.spec());
  }

  /** The declared tools of the current episode (OpenAI / MCP forms come from these). */
  toolDefinitions(): readonly AnyTool<World, Task>[] {
    return [...this.require().tools.values()];
  }

  async close(): Promise<void> {
    this.dispose();
    this.closed = true;
  }

  /**
   * The world state the reference solver reaches on a fresh copy of this episode's task and seed,
   * as `snapshotWorld` JSON. State-difference verifiers compare the episode's final world against it.
   */
  protected referenceWorld(): Promise<JsonValue> {
    return this.reference(SNAPSHOT_VIEW, (peer) => peer.snapshotWorld(peer.require().world));
  }

  /**
   * What `view` makes of the reference solver's final world (see `referenceWorld`). The view runs on
   * the live world before it is closed, so a verifier that compares only part of it (a table dump, say)
   * skips the snapshot's round trip. Pass the same function each time: results are cached per view.
   */
  protected async referenceView<T extends JsonValue>(view: (world: World) => T): Promise<T> {
    return (await this.reference(view, (peer) => view(peer.require().world))) as T;
  }

  /**
   * Replay the reference solver on a peer instance and read its final world, once per view, class,
   * options, task and seed in this thread (REFERENCES); every caller gets its own copy.
   */
  private async reference(view: object, read: (peer: BaseEnvironment<Task, World>) => JsonValue): Promise<JsonValue> {
    const ep = this.require();
    // The tokenizer decides token-budget truncation, so the process default is part of the key too.
    const options = { ...this.options, tokenizer: this.options.tokenizer ?? getDefaultTokenizer() };
    const key = referenceKey(this.constructor, options, ep.id.id, ep.seed);
    const result = await REFERENCES.get(view, key, async () => {
      const Peer = this.constructor as new (options: EnvironmentOptions) => BaseEnvironment<Task, World>;
      const peer = new Peer({ ...this.options, scoring: false });
      try {
        const initial = await peer.reset(ep.id.id, ep.seed);
        await runPolicy(peer, peer.referenceSolver(), { maxSteps: peer.maxSteps, initial });
        return read(peer);
      } finally {
        await peer.close();
      }
    });
    return cloneJson(result);
  }

  private async callTool(
    ep: RunningEpisode<Task, World>,
    name: string,
    args: Record<string, unknown>,
    components: RewardComponents,
    onCrash: (crash: { stack: string }) => void,
  ): Promise<ToolResult> {
    const ctx: ToolContext<World, Task> = {
      world: ep.world,
      task: ep.task,
      rng: ep.rng,
      clock: ep.clock,
      step: ep.step,
      grants: ep.grants,
      end: (reason) => this.end(ep, reason),
      reward: (component, value) => this.addComponents(components, { [component]: value }),
    };
    const result = await runToolCall(name, args, {
      tools: ep.tools,
      ctx: ctx as ToolContext<unknown, unknown>,
      rng: ep.toolRng,
      clock: ep.clock,
      overrides: ep.overrides,
      sandboxes: this.sandboxes(ep.world),
      realLatencyScale: this.options.realLatencyScale,
      onCrash,
    });
    ep.calls.push({ step: ep.step, tool: name, args: toJsonValue(args), status: result.status, at: ep.clock.now() });
    return result;
  }

  /**
   * The task for an id. Tasks are pure functions of their id, so recent ones are kept (a GRPO group
   * resets the same id k times; restore regenerates it); they are frozen, since episodes share them.
   */
  private generate(taskId: string): { id: TaskId; task: Task } {
    const hit = this.taskCache.get(taskId);
    if (hit) return hit;
    const generated = generateTask(this.tasks, taskId);
    deepFreeze(generated.task);
    if (this.taskCache.size >= 64) this.taskCache.delete(this.taskCache.keys().next().value as string);
    this.taskCache.set(taskId, generated);
    return generated;
  }

  /**
   * A step after the end: nothing changes; the answer repeats how the episode ended and its outcome
   * (`info.outcome`, null when scoring is off). The words name no API: each surface says what its
   * client can do next (a reset, a new session, a restarted MCP server).
   */
  private async afterEnd(ep: RunningEpisode<Task, World>): Promise<StepResult> {
    if (ep.outcome === undefined && this.options.scoring !== false) ep.outcome = (await this.score(ep)).score;
    const outcome = ep.outcome ?? null;
    const message = episodeEndedMessage(ep.status, ep.endReason, outcome);
    if (this.options.strictLifecycle) throw new LifecycleError("episode_ended", message, { status: ep.status, end_reason: ep.endReason, outcome });
    const components = this.zeroComponents();
    components.invalid_call = this.processRewards.invalidCall;
    return {
      observation: this.observe(message, "error"),
      reward: sumComponents(components),
      rewardComponents: components,
      terminated: ep.status === "terminated",
      truncated: ep.status === "truncated",
      info: { error: { code: "episode_ended", message }, end_reason: ep.endReason, outcome },
    };
  }

  /** The episode's tools, grants and overrides; a bad override fails here, at reset, not mid-episode. */
  private setUpTools(episode: Episode<Task, World>): Pick<RunningEpisode<Task, World>, "tools" | "grants" | "overrides"> {
    const tools = new Map<string, AnyTool<World, Task>>();
    for (const tool of this.toolset(episode)) {
      if (tools.has(tool.name)) throw new ValidationError("invalid_config", `${this.info.id}: two tools are named "${tool.name}"`);
      tools.set(tool.name, tool);
    }
    const overrides = this.toolOverrides(episode);
    for (const [tool, override] of Object.entries(overrides)) {
      const checks = [
        override.failures === undefined || FailureProfileSchema.safeParse(override.failures).success,
        override.latency === undefined || LatencyModelSchema.safeParse(override.latency).success,
        override.cost === undefined || (Number.isFinite(override.cost) && override.cost >= 0),
      ];
      if (checks.includes(false)) {
        throw new ValidationError("invalid_config", `${this.info.id}: bad tool override for "${tool}": ${JSON.stringify(override)}`);
      }
    }
    return { tools, grants: this.grants(episode), overrides };
  }

  /** Hold back this step's hidden-label components; on the episode's last step, pay what was held. */
  private deferHiddenLabels(ep: RunningEpisode<Task, World>, components: RewardComponents): void {
    for (const [name, bounds] of Object.entries(this.info.components ?? {})) {
      if (!bounds.hiddenLabel || bounds.payOnStep) continue;
      const earned = components[name] ?? 0;
      if (earned !== 0) ep.deferred[name] = (ep.deferred[name] ?? 0) + earned;
      components[name] = 0;
      if (ep.status !== "running" && ep.deferred[name] !== undefined) {
        components[name] = Math.min(bounds.max, Math.max(bounds.min, ep.deferred[name]));
        delete ep.deferred[name];
      }
    }
  }

  private addComponents(target: RewardComponents, extra: RewardComponents | undefined): void {
    for (const [name, value] of Object.entries(extra ?? {})) {
      if (!(name in target) || name === "task") {
        throw new LlmixError("internal", `${this.info.id} emitted undeclared reward component "${name}"`);
      }
      target[name] = (target[name] ?? 0) + value;
    }
  }

  /**
   * The outcome. A verifier that throws or returns a score outside [0, 1] scores the episode 0, with
   * `verifier_error` in the verdict's details: the state it choked on was made by the agent (an odd file
   * name, a huge output), and a failure the agent can cause must be scored, never dropped as an
   * infrastructure error — else a failing policy could turn its 0 into no sample at all. `llmix check`
   * fails an environment whose verifier does this in any of its episodes. Faults of the host (a
   * deadline, a memory cap) are not the agent's and propagate.
   */
  private async score(ep: RunningEpisode<Task, World>): Promise<VerifierResult> {
    try {
      const verdict = await this.evaluate(ep);
      if (!Number.isFinite(verdict.score) || verdict.score < 0 || verdict.score > 1) {
        throw new LlmixError("verifier_failed", `${this.info.id} verifier returned score ${verdict.score}; scores lie in [0, 1]`);
      }
      const rm = this.options.rewardModel;
      if (rm && ep.trace) return await withRewardModel(verdict, ep.trace.steps, rm, this.info.id);
      return verdict;
    } catch (error) {
      if (error instanceof LlmixError && HOST_FAULTS.has(error.code)) throw error;
      const code = error instanceof LlmixError ? error.code : "verifier_failed";
      const message = error instanceof Error ? error.message : String(error);
      const stack = error instanceof Error ? (error.stack ?? message) : message;
      return { score: 0, passed: false, details: { verifier_error: { code, message, stack } } };
    }
  }

  private end(ep: RunningEpisode<Task, World>, reason: string): void {
    if (ep.status !== "running") return;
    ep.status = "terminated";
    ep.endReason = reason;
  }

  private observe(rendered: string, source: ObservationSource): Observation {
    const tokenizer = this.options.tokenizer ?? getDefaultTokenizer();
    return { rendered, tokens: tokenizer.count(rendered), source };
  }

  private require(): RunningEpisode<Task, World> {
    this.assertOpen();
    if (!this.current) throw new LifecycleError("episode_not_started", "no episode: call reset(taskId, seed) first");
    return this.current;
  }

  private assertOpen(): void {
    if (this.closed) throw new LifecycleError("environment_closed", `this ${this.info.id} instance was closed`);
  }

  private dispose(): void {
    if (this.current) this.disposeWorld(this.current.world);
    this.current = null;
  }
}

/** Errors of the machinery around an episode, never of the agent: they propagate out of scoring. */
const HOST_FAULTS: ReadonlySet<string> = new Set(["step_timeout", "resource_exhausted", "host_failed", "episode_timeout", "environment_closed"]);

/** Why a value is not plain JSON (a BigInt, a function, a cycle, a non-finite number), or null if it is. */

/** Run a restore step, reporting any validation failure as invalid_snapshot. */
function asSnapshotError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ValidationError("invalid_snapshot", `snapshot cannot be restored: ${message}`);
  }
}

/** Reward model files by path: loaded once per thread. */
const rewardModels = new Map<string, RewardModelFile>();

/** The verified verdict adjusted by the reward model's score of the trajectory, as `judged` combines them. */
async function withRewardModel(verdict: VerifierResult, steps: readonly TraceStep[], options: NonNullable<EnvironmentOptions["rewardModel"]>, envId: string): Promise<VerifierResult> {
  let model = rewardModels.get(options.file);
  if (!model) {
    try {
      model = loadRewardModel(JSON.parse(readFileSync(options.file, "utf8")) as unknown);
    } catch (error) {
      throw new LlmixError("verifier_failed", `reward model ${options.file}: ${(error as Error).message}`);
    }
    rewardModels.set(options.file, model);
  }
  if (model.trained_on.env !== envId) throw new LlmixError("verifier_failed", `reward model ${options.file} was trained on ${model.trained_on.env}, not ${envId}`);
  const score = scoreEpisode(model, { steps: steps as unknown as TrajectoryStepRecord[] });
  const threshold = options.threshold ?? 0.5;
  const verified = defineVerifier<null>("verified", () => verdict);
  const rmVerifier = defineVerifier<null>("reward_model", () => ({ score, passed: score >= threshold, details: { file: options.file, trained_on: `${model.trained_on.env}@${model.trained_on.env_version}` } }));
  return runVerifier(judged("outcome", verified, rmVerifier, { combine: options.combine, floor: options.floor, weight: options.weight }), null);
}
