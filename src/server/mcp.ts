/**
 * MCP access to sessions (DESIGN §7): a session's episode tools served with @modelcontextprotocol/sdk,
 * over streamable HTTP at `/v1/sessions/:id/mcp` and, for one episode, over stdio (`llmix mcp`).
 *
 * A tools/call is one step of the session, run through the SessionManager like any other step, so the
 * session's step count, reward, recording and one-operation-at-a-time rule are the same whichever
 * transport sent it. MCP has tool calls only: messages to the simulated user (and final answers) stay on
 * the step API (`POST /v1/sessions/:id/step` with `{"action":{"type":"message","content":...}}`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { toLlmixError } from "../core/errors.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import type { TrajectoryStore } from "../store/types.js";
import { SessionManager, type Caller } from "./sessions.js";

/** Options of `createMcpServer`. */
export interface McpServerOptions {
  /** Replaces the default instructions sent to the client at initialization. */
  instructions?: string;
}

/** tools/call with its params unchecked: they are checked by `callParams`, which names what is wrong in one line. */
const LooseCallToolRequest = z.object({ method: z.literal("tools/call"), params: z.unknown() });

/** The tool name and arguments of a tools/call, or invalid params (-32602) saying which is wrong. */
function callParams(params: unknown): { name: string; args: Record<string, unknown> } {
  const p = (typeof params === "object" && params !== null ? params : {}) as Record<string, unknown>;
  if (typeof p.name !== "string" || p.name === "") throw new McpError(ErrorCode.InvalidParams, "tools/call: params.name must be the name of one of the session's tools");
  const args = p.arguments ?? {};
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    throw new McpError(ErrorCode.InvalidParams, `tools/call: params.arguments must be an object of the tool's arguments, got ${args === null ? "null" : Array.isArray(args) ? "an array" : `a ${typeof args}`}`);
  }
  return { name: p.name, args: args as Record<string, unknown> };
}

/** An MCP server whose tools are the session's episode tools; each tools/call is a step of that session. */
export function createMcpServer(manager: SessionManager, sessionId: string, caller: Caller, options: McpServerOptions = {}): Server {
  const info = manager.info(sessionId, caller);
  const server = new Server(
    { name: `llmix-${info.env}`, version: info.env_version },
    {
      capabilities: { tools: { listChanged: false } },
      instructions: options.instructions ?? defaultInstructions(sessionId, info.env, info.task_id, info.seed),
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    try {
      // The declared tools' own MCP form, made on the session's host: one derivation of the schema.
      return { tools: (await manager.tools(sessionId, caller)).mcp.map(mcpTool) };
    } catch (error) {
      throw toMcpError(error);
    }
  });
  // Server.setRequestHandler validates tools/call itself and reports a malformed one with a multi-line
  // schema dump; the protocol-level registration lets callParams answer -32602 with one line instead.
  Protocol.prototype.setRequestHandler.call(server, LooseCallToolRequest as never, (async (request: { params: unknown }): Promise<CallToolResult> => {
    const { name, args } = callParams(request.params);
    let step;
    try {
      // Unknown tools and bad arguments are not refused here: the environment answers them (invalid_call),
      // exactly as it would a step, so the reward an MCP caller sees is the one a trainer would see.
      step = (await manager.step(sessionId, { type: "tool_call", tool: name, args }, caller)).value;
    } catch (error) {
      throw toMcpError(error);
    }
    return {
      content: [{ type: "text", text: step.observation.rendered }],
      isError: step.tool_result?.status !== "ok",
      structuredContent: {
        reward: step.reward,
        reward_components: step.reward_components,
        terminated: step.terminated,
        truncated: step.truncated,
        tool_result: step.tool_result,
      },
    };
  }) as never);
  return server;
}

/** Serve `POST`/`GET`/`DELETE /v1/sessions/:id/mcp`: streamable HTTP, stateless, one MCP server per request. */
export function mountMcp(app: FastifyInstance, manager: SessionManager): void {
  app.route<{ Params: { id: string } }>({
    method: ["POST", "GET", "DELETE"],
    url: "/v1/sessions/:id/mcp",
    handler: async (request, reply) => handleMcp(manager, request, reply),
  });
}

async function handleMcp(manager: SessionManager, request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply): Promise<void> {
  const sessionId = request.params.id;
  try {
    manager.info(sessionId, request.caller ?? null);
  } catch (error) {
    const e = toLlmixError(error);
    return reply.code(e.code === "unknown_session" ? 404 : 500).send({ error: e.toJSON() });
  }
  if (request.method !== "POST") {
    // Stateless mode has no server-initiated stream to GET and no MCP session to DELETE (the llmix
    // session ends with DELETE /v1/sessions/:id); 405 is what the MCP client expects for both.
    return reply
      .code(405)
      .header("allow", "POST")
      .send({ jsonrpc: "2.0", error: { code: ErrorCode.ConnectionClosed, message: `${request.method} is not supported: this MCP endpoint is stateless; send JSON-RPC with POST` }, id: null });
  }
  // A server per request: the session's state lives in the manager, so nothing MCP-side needs to persist.
  const server = createMcpServer(manager, sessionId, request.caller ?? null);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  reply.hijack();
  reply.raw.on("close", () => {
    void transport.close().catch(() => undefined);
    void server.close().catch(() => undefined);
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  } catch (error) {
    request.log.error({ err: error }, "MCP request failed");
    if (!reply.raw.headersSent) {
      reply.raw.writeHead(500, { "content-type": "application/json" });
      reply.raw.end(JSON.stringify({ jsonrpc: "2.0", error: { code: ErrorCode.InternalError, message: "internal error" }, id: null }));
    }
  }
}

/** What `serveMcpStdio` serves: one new episode of a registered environment. */
export interface McpStdioOptions {
  registry: EnvironmentRegistry;
  env: string;
  task_id: string;
  seed: number;
  /** Write the episode to `store` when it ends or stdin closes. */
  record?: boolean;
  store?: TrajectoryStore;
}

/**
 * Serve one episode over MCP on stdin/stdout until stdin closes (or SIGINT/SIGTERM). The session is
 * created first, so an unknown env or bad task id throws before any MCP traffic. Logs go to stderr only.
 */
export async function serveMcpStdio(options: McpStdioOptions): Promise<void> {
  // One session for the life of the process: nothing to reap, however long the client idles.
  const manager = new SessionManager({ registry: options.registry, store: options.store, idleTtlMs: 0, hosts: 1 });
  try {
    await manager.ready();
  } catch (error) {
    await manager.shutdown();
    throw error;
  }
  let created;
  try {
    created = (await manager.create({ env: options.env, task_id: options.task_id, seed: options.seed, record: options.record === true })).value;
  } catch (error) {
    await manager.shutdown();
    throw error;
  }
  const id = created.session_id;
  const instructions = [
    `LLMix episode of ${created.env}@${created.env_version}, task ${created.task_id}, seed ${created.seed}.`,
    "Each tool call is one step of the episode; its structuredContent carries the step's reward, reward_components, terminated and truncated.",
    "Over stdio there is no way to send a message to the user: MCP carries tool calls only.",
    "",
    "The episode's first observation:",
    created.observation.rendered,
  ].join("\n");
  const server = createMcpServer(manager, id, null, { instructions });
  const transport = new StdioServerTransport();
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const signals = ["SIGINT", "SIGTERM"] as const;
  process.stdin.once("end", finish);
  process.stdin.once("close", finish);
  server.onclose = finish;
  for (const signal of signals) process.once(signal, finish);
  try {
    await server.connect(transport);
    process.stderr.write(`llmix mcp: serving ${created.env} ${created.task_id} seed ${created.seed} on stdio${options.record ? " (recording)" : ""}\n`);
    await done;
  } finally {
    process.stdin.off("end", finish);
    process.stdin.off("close", finish);
    for (const signal of signals) process.off(signal, finish);
    // Shutdown first: a step still running finishes and a recorded episode is stored; one more turn of
    // the event loop lets that step's answer reach stdout before the transport goes away.
    await manager.shutdown();
    await new Promise((resolve) => setImmediate(resolve));
    await server.close().catch(() => undefined);
  }
}

/** A declared tool's MCP form, its input schema typed as the object schema it always is (a zod object). */
function mcpTool(tool: Record<string, unknown>): McpTool {
  const { inputSchema, ...rest } = tool as unknown as McpTool;
  return { ...rest, inputSchema: { ...inputSchema, type: "object" } };
}

function defaultInstructions(sessionId: string, env: string, taskId: string, seed: number): string {
  return [
    `Tools of LLMix session ${sessionId} (${env}, task ${taskId}, seed ${seed}).`,
    "Each tool call is one step of the session; its structuredContent carries the step's reward, reward_components, terminated and truncated.",
    `Messages to the user and final answers are not tools: send them with POST /v1/sessions/${sessionId}/step {"action":{"type":"message","content":"..."}}.`,
  ].join("\n");
}

/** An llmix error as an MCP error: the stable llmix code leads the message and is the data's `code`. */
function toMcpError(error: unknown): McpError {
  const e = toLlmixError(error);
  const code = e.code === "internal" ? ErrorCode.InternalError : e.code === "invalid_argument" || e.code === "invalid_action" ? ErrorCode.InvalidParams : ErrorCode.InvalidRequest;
  return new McpError(code, `${e.code}: ${e.message}`, e.toJSON());
}
