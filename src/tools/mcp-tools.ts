/**
 * The tools an MCP client sees for one episode: each declared tool's own MCP form (`tool.mcp()`, whose
 * schema is the one every surface shows), plus `send_message` when the environment declares what a
 * message is (`EnvironmentInfo.messages`). MCP has tool calls only, so `send_message` is how an MCP
 * client takes the episode's message action: a turn with the simulated user, or the final answer. It is
 * no tool of the environment; its `_meta` marks it, so the server maps a call of it to
 * `{type: "message", content}`.
 */
import { z } from "zod";
import type { MessageChannel } from "../core/environment.js";
import type { AnyTool, McpToolDefinition } from "./define.js";
import { toolAnnotations } from "./define.js";
import { toolJsonSchema } from "./schema.js";

/** The `_meta` key marking the tool that sends the message action, and its value. */
export const MESSAGE_ACTION_META = "llmix/action";

/** The message tool's name, and the one it takes when an environment has a tool of that name itself. */
export const MESSAGE_TOOL_NAMES = ["send_message", "send_message_to_user"] as const;

/** Longest message content, as the action schema allows it (src/core/action.ts). */
export const MAX_MESSAGE_CHARS = 200_000;

/** The arguments of `send_message`. */
export const MessageToolInput = z.strictObject({
  content: z.string().max(MAX_MESSAGE_CHARS).describe("The message text, exactly as the reader will see it"),
});

/** The MCP tools of an episode: its declared tools, then the message tool when `channel` is declared. */
export function mcpTools(tools: readonly AnyTool[], channel: MessageChannel | null | undefined): McpToolDefinition[] {
  const own = tools.map((t) => t.mcp());
  if (!channel) return own;
  const taken = new Set(own.map((t) => t.name));
  const name = MESSAGE_TOOL_NAMES.find((n) => !taken.has(n));
  // An environment with tools of both names keeps them; its MCP clients cannot send messages.
  return name === undefined ? own : [...own, messageTool(name, channel)];
}

/** The MCP form of the message tool for a channel. */
export function messageTool(name: string, channel: MessageChannel): McpToolDefinition {
  const reader = channel.recipient ?? "the user";
  const effect =
    channel.kind === "final_answer"
      ? `Here a message is the final answer: sending it ends the episode, and ${reader} reads nothing after it.`
      : `${capitalize(reader)} reads it and replies (the reply is this call's result); ${reader} may end the conversation, which ends the episode.`;
  return {
    name,
    description: `Sends a message to ${reader}: this is not a tool of the environment but the episode's message action ({"type":"message"}). ${capitalize(reader)} sees only your messages, never tool results. ${effect}`,
    inputSchema: toolJsonSchema(MessageToolInput),
    // Sending can end the episode; two sends are two turns.
    annotations: toolAnnotations("write", { endsEpisode: true }),
    _meta: { [MESSAGE_ACTION_META]: "message" },
  };
}

/** Whether an MCP tool (as listed) is the message tool. */
export function isMessageTool(tool: { _meta?: Record<string, unknown> | undefined }): boolean {
  return tool._meta?.[MESSAGE_ACTION_META] === "message";
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
