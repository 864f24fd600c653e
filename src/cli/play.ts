/**
 * `llmix play`: a person drives an episode by hand. Each input line is one action:
 *   <tool> {json args}      a tool call, e.g.  order_stock {"sku": "SKU-1", "quantity": 3}
 *   <tool>                  a tool call with no arguments
 *   say <text>              a message (to the simulated user, or a final answer)
 *   {"type": ...}           a raw JSON action
 *   :tools  :snapshot  :help  :quit
 */
import { createInterface } from "node:readline";
import type { Action, StepResult } from "../core/contract.js";
import { fingerprint } from "../core/json.js";
import type { AnyEnvironment } from "../core/registry.js";

const HELP = `Type one action per line:
  <tool> {json args}   call a tool, e.g. list_stock {}
  say <text>           send a message
  {"type": ...}        a raw JSON action
  :tools  :snapshot  :help  :quit`;

/** Parse one input line into an action, or a command, or an error text. */
export function parsePlayLine(line: string): { action: unknown } | { command: string } | { error: string } {
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
  if (!rest) return { action: { type: "tool_call", tool: head, args: {} } };
  try {
    return { action: { type: "tool_call", tool: head, args: JSON.parse(rest) } };
  } catch (error) {
    return { error: `arguments of ${head} are not valid JSON: ${(error as Error).message}` };
  }
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
    const verdict = result.info.verdict as { score: number; passed: boolean } | undefined;
    lines.push(
      `episode ${result.terminated ? "terminated" : "truncated"} (${String(result.info.end_reason)})` +
        (verdict ? ` · outcome ${round(verdict.score)} ${verdict.passed ? "PASSED" : "not passed"}` : ""),
    );
  }
  return lines.join("\n");
}

/** Run the interactive loop on an environment that was just reset. Resolves when the episode ends or input closes. */
export async function play(env: AnyEnvironment, initial: string, io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream }): Promise<void> {
  const write = (text: string) => io.output.write(`${text}\n`);
  write(initial);
  write(`\nTools: ${env.tools().map((t) => t.name).join(", ")}   (:help for help)`);
  const rl = createInterface({ input: io.input, terminal: false });
  const prompt = () => io.output.write("> ");
  prompt();
  for await (const line of rl) {
    if (!line.trim()) {
      prompt();
      continue;
    }
    const parsed = parsePlayLine(line);
    if ("error" in parsed) {
      write(`! ${parsed.error}`);
    } else if ("command" in parsed) {
      if (parsed.command === "quit" || parsed.command === "q") break;
      if (parsed.command === "tools") for (const t of env.tools()) write(`${t.name} (${t.effect}): ${t.description}\n  ${JSON.stringify(t.parameters)}`);
      else if (parsed.command === "snapshot") write(`snapshot sha256 ${fingerprint(await env.snapshot())}`);
      else write(HELP);
    } else {
      const result = await env.step(parsed.action as Action);
      write(describeStep(result));
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
