/**
 * `llmix play`: a person drives an episode by hand. Each input line is one action:
 *   <tool> {json args}      a tool call, e.g.  order_stock {"sku": "SKU-1", "quantity": 3}
 *   <tool>                  a tool call with no arguments
 *   say <text>              a message (to the simulated user, or a final answer)
 *   any other text          a message too, unless it is `<word> {json}` (a call of an unknown tool)
 *   {"type": ...}           a raw JSON action
 *   :tools  :snapshot  :help  :quit
 */
import { createInterface } from "node:readline";
import type { Action, StepResult, ToolSpec } from "../core/contract.js";
import { fingerprint } from "../core/json.js";
import type { AnyEnvironment } from "../core/registry.js";
import { formatTree } from "./tree.js";

/** The help text, with an example call of the episode's own first tool. */
function helpText(tools: readonly ToolSpec[]): string {
  const example = tools[0] ? `${tools[0].name} ${exampleArgs(tools[0])}` : "some_tool {}";
  return `Type one action per line:
  <tool> {json args}   call a tool, e.g. ${example}
  say <text>           send a message (plain text that is not a tool call is sent as a message too)
  {"type": ...}        a raw JSON action
  :tools               the tools, with their arguments
  :snapshot  :help  :quit`;
}

/** Parse one input line into an action, or a command, or an error text. `tools`: the episode's tool names. */
export function parsePlayLine(line: string, tools: readonly string[] = []): { action: unknown } | { command: string } | { error: string } {
  const text = line.trim();
  if (text.startsWith(":")) return { command: text.slice(1) };
  if (text.startsWith("{")) {
    try {
      return { action: JSON.parse(text) };
    } catch (error) {
      return { error: `not valid JSON: ${(error as Error).message}` };
    }
  }
  const space = text.indexOf(" ");
  const head = space < 0 ? text : text.slice(0, space);
  const rest = space < 0 ? "" : text.slice(space + 1).trim();
  if (head === "say") return { action: { type: "message", content: rest } };
  if (tools.includes(head)) {
    if (!rest) return { action: { type: "tool_call", tool: head, args: {} } };
    try {
      return { action: { type: "tool_call", tool: head, args: JSON.parse(rest) } };
    } catch (error) {
      return { error: `arguments of ${head} are not valid JSON: ${(error as Error).message}` };
    }
  }
  // Not a tool of the episode: `<word> {json}` is still a tool call (the environment answers unknown_tool);
  // anything else is what a person types to the user.
  if (/^[A-Za-z_][\w.-]*$/.test(head) && rest.startsWith("{")) {
    try {
      return { action: { type: "tool_call", tool: head, args: JSON.parse(rest) } };
    } catch {
      // not JSON after all: a message
    }
  }
  return { action: { type: "message", content: text } };
}

/** A tool as a signature a person reads: name(arg: type, optional?: type), its effect, description and arguments. */
export function toolSignature(tool: ToolSpec): string {
  const { properties, required } = objectSchema(tool.parameters);
  const args = Object.entries(properties).map(([name, schema]) => `${name}${isOptional(name, schema, required) ? "?" : ""}: ${typeName(schema)}`);
  const lines = [`${tool.name}(${args.join(", ")})  [${tool.effect}]`, `  ${tool.description}`];
  for (const [name, schema] of Object.entries(properties)) {
    const description = typeof schema.description === "string" ? schema.description : "";
    const choices = Array.isArray(schema.enum) ? `one of ${schema.enum.filter((v) => v !== null).map((v) => JSON.stringify(v)).join(", ")}` : "";
    const text = [description, choices].filter(Boolean).join("; ");
    lines.push(`    ${name}${isOptional(name, schema, required) ? " (optional)" : ""}: ${text}`.trimEnd());
  }
  return lines.join("\n");
}

type Schema = Record<string, unknown> & { description?: unknown; enum?: unknown[]; type?: unknown };

function objectSchema(parameters: unknown): { properties: Record<string, Schema>; required: string[] } {
  const p = (parameters ?? {}) as { properties?: Record<string, Schema>; required?: string[] };
  return { properties: p.properties ?? {}, required: Array.isArray(p.required) ? p.required : [] };
}

/** Optional: not required, or required but nullable (OpenAI strict mode's way to say optional). */
function isOptional(name: string, schema: Schema, required: readonly string[]): boolean {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const anyOf = Array.isArray(schema.anyOf) ? (schema.anyOf as Schema[]) : [];
  return !required.includes(name) || types.includes("null") || anyOf.some((s) => s.type === "null");
}

function typeName(schema: Schema): string {
  const anyOf = Array.isArray(schema.anyOf) ? (schema.anyOf as Schema[]).filter((s) => s.type !== "null") : [];
  if (anyOf.length > 0) return anyOf.map(typeName).join(" | ");
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((t) => t !== "null" && t !== undefined) as string[];
  if (types.includes("array")) return `${typeName((schema.items ?? {}) as Schema)}[]`;
  return types.join(" | ") || "any";
}

/** Example arguments of a tool: its required, non-nullable arguments with placeholder values. */
function exampleArgs(tool: ToolSpec): string {
  const { properties, required } = objectSchema(tool.parameters);
  const example: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(properties)) {
    if (isOptional(name, schema, required)) continue;
    const type = typeName(schema);
    example[name] = Array.isArray(schema.enum) ? schema.enum[0] : type.startsWith("integer") || type.startsWith("number") ? 1 : type === "boolean" ? true : "…";
  }
  return JSON.stringify(example);
}

/** Describe a step result for a person. */
export function describeStep(result: StepResult): string {
  const lines: string[] = [];
  const tool = result.info.tool_result as { status: string; latency_ms: number; cost: number } | undefined;
  if (tool) lines.push(`[tool ${tool.status} · ${tool.latency_ms} ms · cost ${tool.cost}]`);
  lines.push(result.observation.rendered);
  const parts = Object.entries(result.rewardComponents)
    .filter(([, v]) => v !== 0)
    .map(([k, v]) => `${k}=${round(v)}`);
  lines.push(`reward ${round(result.reward)}${parts.length ? ` (${parts.join(", ")})` : ""} · ${result.observation.tokens} tokens`);
  if (result.terminated || result.truncated) {
    const verdict = result.info.verdict as { score: number; passed: boolean; details?: unknown } | undefined;
    lines.push(
      `episode ${result.terminated ? "terminated" : "truncated"} (${String(result.info.end_reason)})` +
        (verdict ? ` · outcome ${round(verdict.score)} ${verdict.passed ? "PASSED" : "not passed"}` : ""),
    );
    if (verdict?.details !== undefined) lines.push("verdict:", formatTree(verdict.details, 2));
  }
  return lines.join("\n");
}

/** Run the interactive loop on an environment that was just reset. Resolves when the episode ends or input closes. */
export async function play(
  env: AnyEnvironment,
  initial: string,
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream; afterStep?: (step: number) => Promise<string | null> },
): Promise<void> {
  const write = (text: string) => io.output.write(`${text}\n`);
  write(initial);
  const tools = env.tools();
  write(`\nTools: ${tools.map((t) => t.name).join(", ")}   (:tools to see their arguments, :help for help)`);
  const rl = createInterface({ input: io.input, terminal: false });
  const prompt = () => io.output.write("> ");
  let steps = 0;
  prompt();
  for await (const line of rl) {
    if (!line.trim()) {
      prompt();
      continue;
    }
    const parsed = parsePlayLine(line, tools.map((t) => t.name));
    if ("error" in parsed) {
      write(`! ${parsed.error}`);
    } else if ("command" in parsed) {
      if (parsed.command === "quit" || parsed.command === "q") break;
      if (parsed.command === "tools") for (const t of tools) write(toolSignature(t));
      else if (parsed.command === "snapshot") write(`snapshot sha256 ${fingerprint(await env.snapshot())}`);
      else write(helpText(tools));
    } else {
      const result = await env.step(parsed.action as Action);
      write(describeStep(result));
      const note = await io.afterStep?.(++steps);
      if (note) write(note);
      if (result.terminated || result.truncated) break;
    }
    prompt();
  }
  rl.close();
  write("");
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
