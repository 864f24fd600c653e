/**
 * What a tools/call answers: a step of the session as an MCP tool result, and the action a call stands
 * for. The observation text is the content; the step's reward, components and end are in
 * `structuredContent`. Once the episode has ended the text says so in MCP's terms: the outcome, and how
 * an MCP client gets another episode (it has no reset).
 */
import { ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Action } from "../core/contract.js";
import { formatIssues } from "../core/validation.js";
import { isMessageTool, MESSAGE_TOOL_NAMES, MessageToolInput } from "../tools/mcp-tools.js";
import type { StepResponse } from "./sessions.js";

/** A listed MCP tool, as far as mapping a call needs it. */
export type ListedTool = { name?: unknown; _meta?: Record<string, unknown> };

/**
 * The action a tools/call stands for: the message action for the session's message tool (its arguments
 * checked here: invalid params, -32602, in one line), else a tool call the environment answers.
 * `listed` is asked only when `name` can be the message tool.
 */
export async function callAction(name: string, args: Record<string, unknown>, listed: () => Promise<readonly ListedTool[]>): Promise<Action> {
  if ((MESSAGE_TOOL_NAMES as readonly string[]).includes(name)) {
    const tool = (await listed()).find((t) => t.name === name);
    if (tool && isMessageTool(tool)) {
      const parsed = MessageToolInput.safeParse(args);
      if (!parsed.success) throw new McpError(ErrorCode.InvalidParams, `${name}: ${formatIssues(parsed.error, "arguments")}`);
      return { type: "message", content: parsed.data.content };
    }
  }
  return { type: "tool_call", tool: name, args };
}

/** The outcome a step reports: after the end (info.outcome), or on the step that ended it (its verdict); null when unscored. */
function outcomeOf(step: StepResponse): number | null {
  if (typeof step.info.outcome === "number") return step.info.outcome;
  const verdict = step.info.verdict as { score?: unknown } | undefined;
  return typeof verdict?.score === "number" ? verdict.score : null;
}

/** How the episode ended, in one clause: "terminated: customer_satisfied; outcome 1". */
function endClause(step: StepResponse): string {
  const status = step.terminated ? "terminated" : "truncated";
  const reason = typeof step.info.end_reason === "string" ? step.info.end_reason : "no reason";
  const outcome = outcomeOf(step);
  return `${status}: ${reason}${outcome === null ? "" : `; outcome ${outcome}`}`;
}

/**
 * A step as an MCP tool result. `nextEpisode` says what the client can do once the episode has ended
 * (restart the stdio server, create a new session); it replaces the environment's own words after the end.
 */
export function callResult(step: StepResponse, nextEpisode: string): CallToolResult {
  const error = step.info.error as { code?: unknown } | undefined;
  const afterEnd = error?.code === "episode_ended";
  const ended = step.terminated || step.truncated;
  const content: CallToolResult["content"] = [];
  if (afterEnd) {
    content.push({ type: "text", text: `The episode has already ended (${endClause(step)}); this call was not applied. ${nextEpisode}` });
  } else {
    content.push({ type: "text", text: step.observation.rendered });
    if (ended) content.push({ type: "text", text: `The episode has ended (${endClause(step)}). ${nextEpisode}` });
  }
  const structured: Record<string, unknown> = {
    reward: step.reward,
    reward_components: step.reward_components,
    terminated: step.terminated,
    truncated: step.truncated,
    tool_result: step.tool_result,
  };
  if (ended) Object.assign(structured, { end_reason: step.info.end_reason ?? null, outcome: outcomeOf(step) });
  return {
    content,
    // A tool call failed unless its result is ok; a message failed when the environment refused it.
    isError: step.tool_result ? step.tool_result.status !== "ok" : error !== undefined,
    structuredContent: structured,
  };
}
