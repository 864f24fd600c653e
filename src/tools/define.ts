/**
 * A tool is declared once (DESIGN §3): name, description, zod input schema, read/write effect,
 * permission, cost, latency and failure profile, handler. Validation, TS types, the JSON Schema (one
 * schema, the same in `spec()`, `openai()` and `mcp()`: see schema.ts), the MCP annotations and the docs
 * all come from this one declaration.
 */
import { z } from "zod";
import { ValidationError } from "../core/errors.js";
import type { ToolSpec } from "../core/contract.js";
import type { JsonValue } from "../core/json.js";
import type { Rng } from "../core/rng.js";
import type { VirtualClock } from "../core/clock.js";
import { FailureProfileSchema, LatencyModelSchema, type FailureProfile, type LatencyModel } from "./profile.js";
import { toolJsonSchema } from "./schema.js";

/** What a handler may touch: the episode's world and task, its clock and RNG, and the episode end. */
export interface ToolContext<World = unknown, Task = unknown> {
  world: World;
  task: Task;
  /** The episode's world stream (for dynamics such as a simulated user's phrasing). */
  rng: Rng;
  clock: VirtualClock;
  /** The step this call belongs to (1-based). */
  step: number;
  /** Permissions granted in this episode. */
  grants: ReadonlySet<string>;
  /** End the episode (terminated) after this step, with a reason such as "conversation_ended". */
  end(reason: string): void;
  /** Add to a declared process reward component for this step (e.g. `policy_violation`, -1). */
  reward(component: string, value: number): void;
}

/** A permission decision for one call: allowed, or denied with a reason the agent will read. */
export type PermissionDecision = { allowed: true } | { allowed: false; reason: string };

/** The declaration of a tool. `S` is its zod input schema; handlers receive `z.output<S>`. */
export interface ToolDeclaration<S extends z.ZodObject, World = unknown, Task = unknown> {
  name: string;
  description: string;
  input: S;
  /** `read` tools get read-only sandbox access; `write` tools may change state. */
  effect: "read" | "write";
  /** A permission the episode must grant, e.g. "refunds:issue". */
  permission?: string;
  /** An argument-dependent check run after the grant (e.g. a refund above the agent's cap). */
  authorize?: (args: z.output<S>, ctx: ToolContext<World, Task>) => PermissionDecision;
  /** Cost of a call that ran, in the environment's cost unit. Default 0. */
  cost?: number | ((args: z.output<S>, output: JsonValue) => number);
  /** Virtual latency of a call. Default: fixed 0 ms. */
  latency?: LatencyModel;
  /** Injected failure probabilities. Default: none. */
  failures?: FailureProfile;
  /** Runs the call. Throw ToolError (or a SandboxError) for domain failures the agent should read. */
  handler: (args: z.output<S>, ctx: ToolContext<World, Task>) => JsonValue | Promise<JsonValue>;
  /**
   * The observation text of an `ok` result's output, for tools whose output reads better as text than as
   * JSON (a shell's stdout, a test report). It travels with the tool, so every environment using the
   * tool shows it the same way; without it the environment's `renderToolResult` decides.
   */
  render?: (output: JsonValue) => string;
  /** What a call does beyond its `effect`, for the MCP annotations (`toolAnnotations`). Default: nothing more. */
  hints?: ToolHints;
}

/**
 * What a call does beyond its read/write `effect`. `effect` is what the sandboxes allow during the call;
 * these say what the call means to a client deciding whether to confirm it (MCP annotations).
 */
export interface ToolHints {
  /** A call can end the episode (end_conversation, file a final report): the tool is never read-only. */
  endsEpisode?: boolean;
  /** Every change a call makes only adds (a row, a note): nothing already there is changed or removed. */
  additive?: boolean;
  /** Repeating a call with the same arguments changes nothing more than the first call did. */
  idempotent?: boolean;
}

/** MCP tool annotations (the spec's behaviour hints). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** The MCP form of a tool: what tools/list carries. */
export interface McpToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: ToolAnnotations;
  _meta?: Record<string, unknown>;
}

/**
 * The annotations of a tool: read-only only when it changes nothing (a read tool that cannot end the
 * episode); destructive unless its changes are only additions; idempotent when read-only or declared so.
 * Never open-world: no tool reaches outside its sandboxes (DESIGN §3).
 */
export function toolAnnotations(effect: "read" | "write", hints: ToolHints = {}): ToolAnnotations {
  const readOnly = effect === "read" && hints.endsEpisode !== true;
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly && hints.additive !== true,
    idempotentHint: readOnly || hints.idempotent === true,
    openWorldHint: false,
  };
}

/** A declared tool with everything derived from its declaration. */
export interface Tool<S extends z.ZodObject = z.ZodObject, World = unknown, Task = unknown>
  extends ToolDeclaration<S, World, Task> {
  latency: LatencyModel;
  failures: FailureProfile;
  /** OpenAI strict function-calling definition. */
  spec(): ToolSpec;
  /** OpenAI `tools[]` entry: `{type: "function", function: {name, description, parameters, strict}}`. */
  openai(): { type: "function"; function: { name: string; description: string; parameters: Record<string, unknown>; strict: true } };
  /** MCP tool definition: the same schema as `spec().parameters`, with annotations from `effect` and `hints`. */
  mcp(): McpToolDefinition;
}

/** Any tool, whatever its schema: what environments hand to the runner. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool<World = any, Task = any> = Tool<any, World, Task>;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Declare a tool; checks the declaration eagerly so a broken tool fails at import, not mid-episode. */
export function defineTool<S extends z.ZodObject, World = unknown, Task = unknown>(
  declaration: ToolDeclaration<S, World, Task>,
): Tool<S, World, Task> {
  if (!TOOL_NAME.test(declaration.name)) {
    throw new ValidationError("invalid_config", `tool name "${declaration.name}" must match ${TOOL_NAME}`);
  }
  if (!declaration.description.trim()) {
    throw new ValidationError("invalid_config", `tool "${declaration.name}" needs a description`);
  }
  const latency = LatencyModelSchema.safeParse(declaration.latency ?? { kind: "fixed", ms: 0 });
  if (!latency.success) throw new ValidationError("invalid_config", `tool "${declaration.name}": bad latency model: ${z.prettifyError(latency.error)}`);
  const failures = FailureProfileSchema.safeParse(declaration.failures ?? {});
  if (!failures.success) throw new ValidationError("invalid_config", `tool "${declaration.name}": bad failure profile: ${z.prettifyError(failures.error)}`);
  if (typeof declaration.cost === "number" && !(Number.isFinite(declaration.cost) && declaration.cost >= 0)) {
    throw new ValidationError("invalid_config", `tool "${declaration.name}": cost must be a finite number >= 0`);
  }
  const hints = declaration.hints ?? {};
  if (declaration.effect === "read" && hints.endsEpisode !== true && (hints.additive !== undefined || hints.idempotent !== undefined)) {
    throw new ValidationError("invalid_config", `tool "${declaration.name}": additive and idempotent describe changes; a read tool that cannot end the episode changes nothing`);
  }
  // The one schema of the tool: every surface hands out this object (see schema.ts).
  const parameters = toolJsonSchema(declaration.input);
  const annotations = toolAnnotations(declaration.effect, hints);
  return {
    ...declaration,
    latency: latency.data,
    failures: declaration.failures ?? {},
    spec: () => ({ name: declaration.name, description: declaration.description, parameters, effect: declaration.effect }),
    openai: () => ({
      type: "function",
      function: { name: declaration.name, description: declaration.description, parameters, strict: true },
    }),
    mcp: () => ({ name: declaration.name, description: declaration.description, inputSchema: parameters, annotations: { ...annotations } }),
  };
}

/** `defineTool` bound to an environment's World and Task types, so handlers are fully typed. */
export function toolsFor<World, Task>() {
  return <S extends z.ZodObject>(declaration: ToolDeclaration<S, World, Task>): Tool<S, World, Task> => defineTool(declaration);
}
