/**
 * What `step` accepts as an action (DESIGN §1): `ActionSchema` defines it and writes the error messages;
 * the well-formed actions of nearly every step are recognised by hand first, because zod costs ~10 µs
 * a step. Anything that is not plain JSON (NaN, functions, cycles) is refused too.
 */
import { z } from "zod";
import type { Action } from "./contract.js";
import { formatIssues } from "./validation.js";

export const ActionSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("tool_call"),
    tool: z.string().min(1).max(128),
    args: z.record(z.string(), z.unknown()),
    call_id: z.string().max(256).optional(),
  }),
  z.object({ type: z.literal("message"), content: z.string().max(200_000) }),
]);

/** An action, or the problem with it (`action: ...` paths, as the invalid-action observation shows them). */
export type ParsedAction = { success: true; data: Action; problem: null } | { success: false; data: null; problem: string };

/** Parse what a policy sent as an action. */
export function parseAction(value: unknown): ParsedAction {
  const quick = wellFormedAction(value);
  const data = quick ?? parseWithSchema(value);
  if (typeof data === "string") return { success: false, data: null, problem: data };
  const problem = jsonProblem(value, "action");
  return problem ? { success: false, data: null, problem } : { success: true, data, problem: null };
}

function parseWithSchema(value: unknown): Action | string {
  const parsed = ActionSchema.safeParse(value);
  return parsed.success ? (parsed.data as Action) : formatIssues(parsed.error, "action");
}

/**
 * The well-formed actions of every step, recognised without zod (it costs ~10 µs a step); anything else
 * goes through `ActionSchema`, which stays the definition and writes the error messages. Accepts only
 * what `ActionSchema` accepts.
 */
export function wellFormedAction(value: unknown): Action | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const v = value as Record<string, unknown>;
  if (v.type === "tool_call") {
    const { tool, args, call_id: callId } = v;
    if (typeof tool !== "string" || tool.length < 1 || tool.length > 128) return null;
    if (typeof args !== "object" || args === null || Array.isArray(args) || Object.getPrototypeOf(args) !== Object.prototype) return null;
    if (callId !== undefined && (typeof callId !== "string" || callId.length > 256)) return null;
    const data: Action = callId === undefined ? { type: "tool_call", tool, args: args as Record<string, unknown> } : { type: "tool_call", tool, args: args as Record<string, unknown>, call_id: callId };
    return data;
  }
  if (v.type === "message" && typeof v.content === "string" && v.content.length <= 200_000) return { type: "message", content: v.content };
  return null;
}

/**
 * Deepest nesting of objects and arrays an action may have (the action itself is level 1). Code after
 * the step (validation, the step record, the store, which refuses records nested more than 64 levels)
 * recurses, so a policy's endlessly nested arguments are an invalid call here, not a stack overflow there.
 */
export const MAX_ACTION_DEPTH = 60;

function jsonProblem(value: unknown, path: string, seen = new Set<object>(), depth = 1): string | null {
  switch (typeof value) {
    case "string":
    case "boolean":
      return null;
    case "number":
      return Number.isFinite(value) ? null : `${path}: ${value} is not a JSON number`;
    case "object": {
      if (value === null) return null;
      if (seen.has(value)) return `${path}: circular reference`;
      if (depth > MAX_ACTION_DEPTH) return `${path}: nested deeper than ${MAX_ACTION_DEPTH} levels`;
      seen.add(value);
      const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v] as const) : Object.entries(value).map(([k, v]) => [`.${k}`, v] as const);
      for (const [key, child] of entries) {
        const problem = jsonProblem(child, `${path}${key}`, seen, depth + 1);
        if (problem) return problem;
      }
      seen.delete(value);
      return null;
    }
    case "undefined":
      return null; // dropped by JSON, as a missing key
    default:
      return `${path}: a ${typeof value} is not JSON`;
  }
}
