/**
 * MCP access to sessions (DESIGN §7): a session's episode tools served with @modelcontextprotocol/sdk,
 * over streamable HTTP at `/v1/sessions/:id/mcp` and, for one episode, over stdio (`llmix mcp`).
 *
 * A tools/call is one step of the session, run through the SessionManager like any other step, so the
 * session's step count, reward, recording and one-operation-at-a-time rule are the same whichever
 * transport sent it. MCP has tool calls only: an environment that takes messages (to a simulated user,
 * or a final answer) lists a `send_message` tool too, whose call is the message action
 * (src/tools/mcp-tools.ts), so an MCP client can finish any episode. Tool schemas are the tools' own
 * (`tool.mcp()`), the same bytes as every other surface's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { ServiceError, toLlmixError } from "../core/errors.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import type { TrajectoryStore } from "../store/types.js";
import { callAction, callResult } from "./mcp-results.js";
import { SessionManager, type Caller, type SessionInfo } from "./sessions.js";

/** Options of `createMcpServer`. */
export interface McpServerOptions {
  /** Replaces the default instructions sent to the client at initialization. */
  instructions?: string;
  /** What a client does to play another episode, said once the episode has ended. Default: create a new session. */
  nextEpisode?: string;
}

/** What the MCP client of an HTTP session does once its episode has ended. */
const newSessionHint = (sessionId: string) =>
  `This MCP endpoint serves session ${sessionId} only: to play another episode, create a new session (POST /v1/sessions) and connect to its /v1/sessions/{id}/mcp.`;

/** What the client of `llmix mcp` does once its episode has ended. */
const STDIO_NEXT_EPISODE = "This MCP server serves one episode: to play another, restart `llmix mcp` (with another --task or --seed).";

/** How the instructions describe the message tool, whichever transport. */
const MESSAGE_TOOL_NOTE =
  "If the environment takes messages (to a simulated user, or a final answer), tools/list includes send_message: it sends the episode's message action, it is not a tool of the environment.";

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
export function createMcpServer(manager: SessionManager, info: SessionInfo, caller: Caller, options: McpServerOptions = {}): Server {
  const sessionId = info.session_id;
  const nextEpisode = options.nextEpisode ?? newSessionHint(sessionId);
  // The session's MCP tools, fetched once per server (tools are fixed for an episode): for tools/list,
  // and for tools/call of a name the message tool may have.
  let listed: Promise<McpTool[]> | undefined;
  const tools = () =>
    (listed ??= inTurn(manager, sessionId, () => manager.tools(sessionId, caller)).then(
      (t) => t.mcp as unknown as McpTool[],
      (error: unknown) => {
        listed = undefined; // a failure (a busy session) is not kept: the next request asks again
        throw error;
      },
    ));
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
      return { tools: await tools() };
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
      // exactly as it would a step, so the reward an MCP caller sees is the one a trainer would see. The
      // message tool is the exception: it is no tool of the environment, so its arguments are checked here.
      const action = await callAction(name, args, tools);
      step = (await inTurn(manager, sessionId, () => manager.step(sessionId, action, caller))).value;
    } catch (error) {
      if (error instanceof McpError) throw error;
      throw toMcpError(error);
    }
    return callResult(step, nextEpisode);
  }) as never);
  return server;
}

/** Calls of one session's MCP clients that may wait for their turn; more are refused with session_busy. */
export const MCP_QUEUE_LIMIT = 64;
/** The last queued call of each session, per manager (HTTP makes one MCP server per request). */
const turns = new WeakMap<SessionManager, Map<string, { tail: Promise<unknown>; waiting: number }>>();

/**
 * Run `fn` when the session's earlier MCP calls have finished. MCP clients call tools in parallel, and a
 * session runs one operation at a time (a step acts on the state the previous one left), so MCP calls
 * queue, in arrival order, where the HTTP API answers session_busy. The queue is bounded.
 */
export function inTurn<T>(manager: SessionManager, sessionId: string, fn: () => Promise<T>): Promise<T> {
  let queues = turns.get(manager);
  if (!queues) turns.set(manager, (queues = new Map()));
  const queue = queues.get(sessionId) ?? { tail: Promise.resolve(), waiting: 0 };
  if (queue.waiting >= MCP_QUEUE_LIMIT) {
    return Promise.reject(new ServiceError("session_busy", `session ${sessionId} has ${queue.waiting} MCP calls waiting already; wait for their results`));
  }
  queue.waiting++;
  const run = queue.tail.then(fn, fn);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queue.tail = settled;
  queues.set(sessionId, queue);
  void settled.then(() => {
    queue.waiting--;
    if (queue.waiting === 0 && queues?.get(sessionId) === queue) queues.delete(sessionId);
  });
  return run;
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
  let info: SessionInfo;
  try {
    info = await manager.info(sessionId, request.caller ?? null);
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
  const server = createMcpServer(manager, info, request.caller ?? null);
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
    "Each tool call is one step of the episode; its structuredContent carries the step's reward, reward_components, terminated and truncated (and, once it has ended, end_reason and outcome).",
    MESSAGE_TOOL_NOTE,
    STDIO_NEXT_EPISODE,
    "",
    "The episode's first observation:",
    created.observation.rendered,
  ].join("\n");
  const server = createMcpServer(manager, await manager.info(id), null, { instructions, nextEpisode: STDIO_NEXT_EPISODE });
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

function defaultInstructions(sessionId: string, env: string, taskId: string, seed: number): string {
  return [
    `Tools of LLMix session ${sessionId} (${env}, task ${taskId}, seed ${seed}).`,
    "Each tool call is one step of the session; its structuredContent carries the step's reward, reward_components, terminated and truncated (and, once it has ended, end_reason and outcome).",
    MESSAGE_TOOL_NOTE,
    `The step API takes the same actions: POST /v1/sessions/${sessionId}/step {"action":{"type":"message","content":"..."}}.`,
  ].join("\n");
}

/** An llmix error as an MCP error: the stable llmix code leads the message and is the data's `code`. */
function toMcpError(error: unknown): McpError {
  const e = toLlmixError(error);
  const code = e.code === "internal" ? ErrorCode.InternalError : e.code === "invalid_argument" || e.code === "invalid_action" ? ErrorCode.InvalidParams : ErrorCode.InvalidRequest;
  return new McpError(code, `${e.code}: ${e.message}`, e.toJSON());
}
