/**
 * The tool-call middleware (DESIGN §3). Every call passes the same stages, in this order:
 *   validate -> permission -> injected failure -> latency -> run -> cost
 * and always ends in the envelope `{status, latency_ms, cost, output}`; nothing a policy sends can make
 * it throw. A write call that fails (its handler throws, or its cost model is broken) leaves the
 * sandboxes as they were: they are marked before the handler runs and rolled back unless the call ends
 * ok, so a policy cannot keep half of a refused change. (World state outside the sandboxes is the
 * environment's to keep consistent; `llmix check` verifies that failed calls leave the world unchanged.)
 */
import { z } from "zod";
import { LlmixError } from "../core/errors.js";
import type { ToolResult } from "../core/contract.js";
import type { JsonValue } from "../core/json.js";
import type { Rng } from "../core/rng.js";
import type { VirtualClock } from "../core/clock.js";
import { formatIssues, withNullsAt, withoutNullsAt } from "../core/validation.js";
import { checkpointOf, type Sandbox, type SandboxCheckpoint } from "../sandboxes/sandbox.js";
import type { AnyTool, ToolContext } from "./define.js";
import {
  drawFailure,
  drawLatency,
  FailureProfileSchema,
  type FailureProfile,
  type ResolvedFailureProfile,
  type ToolOverrides,
} from "./profile.js";

/** Everything the middleware needs besides the call itself. */
export interface ToolRunOptions {
  tools: ReadonlyMap<string, AnyTool>;
  ctx: ToolContext<unknown, unknown>;
  /** The episode's tool stream: failures and latencies are drawn from it. */
  rng: Rng;
  clock: VirtualClock;
  /** Per-task overrides of failure, latency and cost profiles. */
  overrides?: ToolOverrides;
  /** Sandboxes whose access follows the tool's effect during the call. */
  sandboxes?: readonly Sandbox[];
  /** Real sleep per virtual millisecond (0 = never sleep; 1 = real time, for load tests). */
  realLatencyScale?: number;
  /** Told of a handler's unexpected exception (tool_crashed), with its stack, for diagnosis. */
  onCrash?: (crash: { stack: string }) => void;
}

/** Keep the changes of a call that ended ok; undo those of one that failed (latest mark first). */
function settle(marks: readonly SandboxCheckpoint[], keep: boolean): void {
  for (let i = marks.length - 1; i >= 0; i--) {
    if (keep) marks[i]!.release();
    else marks[i]!.rollback();
  }
}

/** Run one tool call through the middleware. */
export async function runToolCall(name: string, rawArgs: unknown, options: ToolRunOptions): Promise<ToolResult> {
  const tool = options.tools.get(name);
  if (!tool) {
    const valid = [...options.tools.keys()].sort().join(", ");
    return fail("invalid", "unknown_tool", `unknown tool "${name}"; valid tools: ${valid}`);
  }

  // 1. validate
  const args = parseArgs(tool.input, rawArgs);
  if (!args.ok) return fail("invalid", "invalid_argument", `invalid arguments for ${name}: ${args.message}`);

  // 2. permission
  if (tool.permission && !options.ctx.grants.has(tool.permission)) {
    return fail("denied", "permission_denied", `permission denied: ${name} needs "${tool.permission}", which this agent does not have`);
  }
  if (tool.authorize) {
    let decision;
    try {
      decision = tool.authorize(args.value, options.ctx);
    } catch (thrown) {
      return fail("error", "tool_crashed", `internal error in ${name} authorization: ${thrown instanceof Error ? thrown.message : String(thrown)}`);
    }
    if (!decision.allowed) return fail("denied", "permission_denied", `permission denied: ${decision.reason}`);
  }

  // 3. injected failure, 4. latency
  const override = options.overrides?.[name] ?? {};
  const failures = resolveFailures(override.failures ?? tool.failures);
  const failure = drawFailure(failures, options.rng);
  const drawn = drawLatency(override.latency ?? tool.latency, options.rng);
  const latency = failure === "timeout" ? failures.timeoutMs : drawn;
  options.clock.advance(latency);
  if (options.realLatencyScale && latency > 0) {
    await new Promise((resolve) => setTimeout(resolve, latency * options.realLatencyScale!));
  }
  if (failure === "timeout") {
    return { ...fail("timeout", "timeout", `${name} timed out after ${latency} ms`), latency_ms: latency };
  }
  if (failure === "error") {
    return { ...fail("error", "upstream_error", `${name} failed: 503 Service Unavailable (try again)`), latency_ms: latency };
  }
  if (failure === "rate_limit") {
    return { ...fail("error", "rate_limited", `${name} failed: 429 Too Many Requests (retry after 1s)`), latency_ms: latency };
  }

  // 5. run
  let output: JsonValue;
  let status: ToolResult["status"] = "ok";
  let error: ToolResult["error"];
  // Read calls cannot change a sandbox (their access is read-only), so only write calls are marked.
  const marks = tool.effect === "write" ? (options.sandboxes ?? []).map(checkpointOf) : [];
  for (const sandbox of options.sandboxes ?? []) sandbox.setAccess(tool.effect);
  try {
    output = await tool.handler(args.value, options.ctx);
    if (output === undefined) output = null;
  } catch (thrown) {
    status = "error";
    error =
      thrown instanceof LlmixError
        ? { code: thrown.code, message: thrown.message }
        : { code: "tool_crashed", message: `internal error in ${name}: ${thrown instanceof Error ? thrown.message : String(thrown)}` };
    if (error.code === "tool_crashed") options.onCrash?.({ stack: thrown instanceof Error ? (thrown.stack ?? thrown.message) : String(thrown) });
    output = error.message;
  } finally {
    for (const sandbox of options.sandboxes ?? []) sandbox.setAccess("write");
  }
  const partial = failure === "partial" && status === "ok";
  if (partial) output = truncate(output);

  // 6. cost
  const costModel = override.cost ?? tool.cost ?? 0;
  let cost: number;
  try {
    cost = typeof costModel === "number" ? costModel : costModel(args.value, output);
  } catch {
    cost = Number.NaN;
  }
  if (!Number.isFinite(cost) || cost < 0) {
    settle(marks, false);
    options.onCrash?.({ stack: `cost model of ${name} returned ${cost}` });
    return { ...fail("error", "tool_crashed", `internal error in ${name}: cost model returned ${cost}`), latency_ms: latency };
  }
  settle(marks, status === "ok");
  const result: ToolResult = { status, latency_ms: latency, cost, output };
  if (error) result.error = error;
  if (partial) result.partial = true;
  return result;
}

// Profiles are declared once and used on every call: resolve each (defaults filled in) only once.
const resolvedProfiles = new WeakMap<FailureProfile, ResolvedFailureProfile>();
function resolveFailures(profile: FailureProfile): ResolvedFailureProfile {
  let resolved = resolvedProfiles.get(profile);
  if (!resolved) resolvedProfiles.set(profile, (resolved = FailureProfileSchema.parse(profile)));
  return resolved;
}

function fail(status: ToolResult["status"], code: string, message: string): ToolResult {
  return { status, latency_ms: 0, cost: 0, output: message, error: { code, message } };
}

type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

function parseArgs(schema: z.ZodType, raw: unknown): Parsed {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return { ok: false, message: `args must be a JSON object, got ${raw === null ? "null" : Array.isArray(raw) ? "an array" : typeof raw}` };
  }
  const first = schema.safeParse(raw);
  if (first.success) return { ok: true, value: first.data };
  // Optional fields come two ways. OpenAI strict mode sends null for those it leaves out: drop exactly the
  // nulls the schema refused. A model decoding without strict mode leaves them out where the published
  // schema (strict mode's form: required but nullable) says null: fill null where an entry is missing.
  // A path is filled once, so a required non-null field ends the retries instead of flipping.
  let candidate: unknown = raw;
  let error = first.error;
  const filled = new Set<string>();
  for (let round = 0; round < 8; round++) {
    const paths = error.issues.map((i) => i.path);
    const fresh = paths.filter((p) => !filled.has(JSON.stringify(p)));
    for (const p of fresh) filled.add(JSON.stringify(p));
    const missing = fresh.filter((p) => withNullsAt(candidate, [p]) !== candidate);
    const next = withNullsAt(withoutNullsAt(candidate, fresh), missing);
    if (next === candidate) break;
    const retry = schema.safeParse(next);
    if (retry.success) return { ok: true, value: retry.data };
    candidate = next;
    error = retry.error;
  }
  // Report what the caller sent, but only the problems no fill or drop resolved (a nullable field left
  // out is not one); "received undefined" means the field is missing, so say that.
  const unresolved = new Set(error.issues.map((i) => JSON.stringify(i.path)));
  const issues = first.error.issues.filter((i) => unresolved.has(JSON.stringify(i.path)));
  const report = issues.length > 0 ? new z.ZodError(issues) : first.error;
  return { ok: false, message: formatIssues(report, "args").replace(/Invalid input: expected (\w+), received undefined/g, "missing (expected $1)") };
}

const PARTIAL_NOTE = "[partial result: the upstream response was cut short]";

/** Keep the first half of an output, as a flaky upstream would. */
function truncate(output: JsonValue): JsonValue {
  if (typeof output === "string") return `${output.slice(0, Math.floor(output.length / 2))}\n${PARTIAL_NOTE}`;
  if (Array.isArray(output)) return output.slice(0, Math.floor(output.length / 2));
  if (output && typeof output === "object") {
    const entries = Object.entries(output);
    return { ...Object.fromEntries(entries.slice(0, Math.ceil(entries.length / 2))), _partial: PARTIAL_NOTE };
  }
  return output;
}
