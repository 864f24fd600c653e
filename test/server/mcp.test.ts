import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Command } from "commander";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerMcpCommand } from "../../src/cli/mcp-command.js";
import type { Action } from "../../src/core/contract.js";
import { LlmixError } from "../../src/core/errors.js";
import { runPolicy } from "../../src/core/run-policy.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { createMcpServer, inTurn, MCP_QUEUE_LIMIT, mountMcp } from "../../src/server/mcp.js";
import { SessionManager } from "../../src/server/sessions.js";

const ENV = "billing-dispute";
const TASK = "billing-dispute/easy/seed-1";
const SEED = 1;
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The reference solver's actions for (TASK, SEED): episodes are deterministic, so a session replays them. */
async function referenceActions(): Promise<Action[]> {
  const env = builtinRegistry().get(ENV).create();
  const initial = await env.reset(TASK, SEED);
  const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
  await env.close();
  return run.transitions.map((t) => t.action);
}

interface StepMeta {
  reward: number;
  reward_components: Record<string, number>;
  terminated: boolean;
  truncated: boolean;
  tool_result: { status: string } | null;
}

const meta = (result: unknown) => (result as CallToolResult).structuredContent as unknown as StepMeta;

describe("MCP over streamable HTTP", () => {
  let app: FastifyInstance;
  let manager: SessionManager;
  let base: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    manager = new SessionManager({ registry: builtinRegistry(), idleTtlMs: 0, hosts: 1 });
    app = Fastify();
    mountMcp(app, manager);
    base = await app.listen({ port: 0, host: "127.0.0.1" });
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await app.close();
    await manager.shutdown();
  });

  async function connect(sessionId: string): Promise<Client> {
    const client = new Client({ name: "llmix-test", version: "0.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/v1/sessions/${sessionId}/mcp`)));
    clients.push(client);
    return client;
  }

  it("lists the session's tools and a call advances the same session with its reward", async () => {
    const created = (await manager.create({ env: ENV, task_id: TASK, seed: SEED })).value;
    const client = await connect(created.session_id);
    const { tools } = await client.listTools();
    // The environment's tools, then the message tool (billing-dispute is a conversation).
    expect(tools.map((t) => t.name)).toEqual([...created.tools.map((t) => t.name), "send_message"]);
    const declared = (await manager.tools(created.session_id)).mcp as Array<{ description: string; inputSchema: unknown }>;
    expect(tools.map((t) => [t.description, t.inputSchema])).toEqual(declared.map((t) => [t.description, t.inputSchema]));
    expect(client.getInstructions()).toContain("send_message");
    expect(client.getInstructions()).toContain(`/v1/sessions/${created.session_id}/step`);

    const result = await client.callTool({ name: "get_agent_profile", arguments: {} });
    expect((await manager.info(created.session_id)).steps).toBe(1);
    expect(result.isError).toBe(false);
    const content = result.content as Array<{ type: string; text: string }>;
    expect(content[0]?.type).toBe("text");
    expect(content[0]?.text.length).toBeGreaterThan(0);
    const step = meta(result);
    expect(step.tool_result?.status).toBe("ok");
    expect(step.reward).toBeCloseTo(Object.values(step.reward_components).reduce((a, b) => a + b, 0), 10);
    expect(step.terminated).toBe(false);
    expect(step.truncated).toBe(false);
  });

  it("parallel tool calls of a session wait for their turn instead of failing with session_busy", async () => {
    const created = (await manager.create({ env: ENV, task_id: TASK, seed: SEED })).value;
    // Two clients, as an MCP host with parallel tool calls would use, firing at once.
    const [a, b] = [await connect(created.session_id), await connect(created.session_id)];
    const calls = Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).callTool({ name: "get_agent_profile", arguments: {} }));
    const results = await Promise.all(calls);
    for (const result of results) {
      expect(result.isError).toBe(false);
      expect(meta(result).tool_result?.status).toBe("ok");
    }
    expect((await manager.info(created.session_id)).steps).toBe(8);
  });

  it("a session's MCP queue holds MCP_QUEUE_LIMIT calls: the next is refused with session_busy, and the queue drains in order", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const order: number[] = [];
    const queued = Array.from({ length: MCP_QUEUE_LIMIT }, (_, i) =>
      inTurn(manager, "ses_queue", async () => {
        await gate;
        order.push(i);
        return i;
      }),
    );
    // The 65th call, while 64 wait: refused at once, naming how many wait.
    await expect(inTurn(manager, "ses_queue", async () => -1)).rejects.toMatchObject({ code: "session_busy", message: expect.stringContaining("64 MCP calls waiting") });
    // Another session's queue is its own.
    await expect(inTurn(manager, "ses_other", async () => "other")).resolves.toBe("other");
    release();
    expect(await Promise.all(queued)).toEqual(Array.from({ length: MCP_QUEUE_LIMIT }, (_, i) => i));
    expect(order).toEqual(Array.from({ length: MCP_QUEUE_LIMIT }, (_, i) => i));
    // Drained: calls are taken again, and a failing call does not block the ones after it.
    await expect(inTurn(manager, "ses_queue", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await expect(inTurn(manager, "ses_queue", async () => "after")).resolves.toBe("after");
  });

  it("plays a whole episode mixing transports: tool calls through MCP, messages through the step API, outcome 1", async () => {
    const actions = await referenceActions();
    expect(actions.some((a) => a.type === "tool_call")).toBe(true);
    const created = (await manager.create({ env: ENV, task_id: TASK, seed: SEED })).value;
    const client = await connect(created.session_id);
    let last: StepMeta | undefined;
    let viaMcp = 0;
    for (const action of actions) {
      if (action.type === "tool_call") {
        const result = await client.callTool({ name: action.tool, arguments: action.args as Record<string, unknown> });
        last = meta(result);
        viaMcp++;
      } else {
        last = (await manager.step(created.session_id, action)).value;
      }
    }
    expect(viaMcp).toBeGreaterThan(0);
    expect((await manager.info(created.session_id)).steps).toBe(actions.length);
    expect(last?.terminated).toBe(true);
    expect(last?.reward_components.task).toBe(1);
  });

  it("a bad tool argument is answered by the environment: isError and an invalid_call penalty", async () => {
    const created = (await manager.create({ env: ENV, task_id: TASK, seed: SEED })).value;
    const client = await connect(created.session_id);
    const result = await client.callTool({ name: "lookup_customer", arguments: { query: 42 } });
    expect(result.isError).toBe(true);
    expect(meta(result).tool_result?.status).toBe("invalid");
    expect(meta(result).reward_components.invalid_call).toBeLessThan(0);
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
    expect(unknown.isError).toBe(true);
    expect(meta(unknown).reward_components.invalid_call).toBeLessThan(0);
    expect((await manager.info(created.session_id)).steps).toBe(2);
  });

  it("malformed tools/call params are invalid params (-32602) in one line, and the session is untouched", async () => {
    const created = (await manager.create({ env: ENV, task_id: TASK, seed: SEED })).value;
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    for (const [params, says] of [
      [{ name: "lookup_customer", arguments: "ls" }, "params.arguments must be an object of the tool's arguments, got a string"],
      [{ name: "lookup_customer", arguments: [1] }, "got an array"],
      [{ arguments: {} }, "params.name must be the name"],
    ] as const) {
      const body = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params });
      const res = await fetch(`${base}/v1/sessions/${created.session_id}/mcp`, { method: "POST", headers, body });
      const answer = (await res.json()) as { error: { code: number; message: string } };
      expect(answer.error.code).toBe(-32602);
      expect(answer.error.message).toContain(says);
      expect(answer.error.message).not.toContain("\n");
    }
    expect((await manager.info(created.session_id)).steps).toBe(0);
  });

  it("an unknown session is a 404 with the service's JSON error; GET is 405 (stateless)", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    const missing = await fetch(`${base}/v1/sessions/ses_nope/mcp`, { method: "POST", headers, body });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("unknown_session");

    const created = (await manager.create({ env: ENV, task_id: TASK, seed: SEED })).value;
    const get = await fetch(`${base}/v1/sessions/${created.session_id}/mcp`, { headers: { accept: "text/event-stream" } });
    expect(get.status).toBe(405);
    await get.body?.cancel();

    // A client connected before the session closed gets the 404 on its next request.
    const client = await connect(created.session_id);
    await manager.close(created.session_id);
    const error = await client.callTool({ name: "get_agent_profile", arguments: {} }).catch((e: unknown) => e);
    expect((error as { code?: number }).code).toBe(404);
    expect((error as Error).message).toContain("unknown_session");
  });
});

describe("createMcpServer", () => {
  it("a closed session is an MCP error carrying the llmix code", async () => {
    const manager = new SessionManager({ registry: builtinRegistry(), idleTtlMs: 0, hosts: 1 });
    const created = (await manager.create({ env: ENV, task_id: TASK, seed: SEED })).value;
    const server = createMcpServer(manager, await manager.info(created.session_id), null);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: "llmix-test", version: "0.0.0" });
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    await manager.close(created.session_id);
    const error = await client.callTool({ name: "get_agent_profile", arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).message).toContain("unknown_session");
    expect(((error as McpError).data as { code: string }).code).toBe("unknown_session");
    await client.close();
    await manager.shutdown();
  });
});

describe("MCP over stdio", () => {
  it("serves one episode to a spawned client: lists and calls a tool", async () => {
    const script = [
      `import { serveMcpStdio } from ${JSON.stringify(new URL("../../src/server/mcp.ts", import.meta.url).href)};`,
      `import { builtinRegistry } from ${JSON.stringify(new URL("../../src/envs/index.ts", import.meta.url).href)};`,
      `await serveMcpStdio({ registry: builtinRegistry(), env: ${JSON.stringify(ENV)}, task_id: ${JSON.stringify(TASK)}, seed: ${SEED} });`,
    ].join("\n");
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", "--input-type=module", "-e", script],
      cwd: ROOT,
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: "llmix-test", version: "0.0.0" });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("get_agent_profile");
      expect(client.getInstructions()).toContain(TASK);
      const result = await client.callTool({ name: "get_agent_profile", arguments: {} });
      expect(result.isError).toBe(false);
      expect(meta(result).tool_result?.status).toBe("ok");
      expect(typeof meta(result).reward).toBe("number");
    } catch (error) {
      throw new Error(`${(error as Error).message}\nserver stderr:\n${stderr}`);
    } finally {
      await client.close();
    }
    expect(stderr).toContain("serving billing-dispute");
  });
});

describe("llmix mcp", () => {
  async function run(args: string[]): Promise<unknown> {
    const program = new Command("llmix").exitOverride();
    registerMcpCommand(program);
    for (const command of program.commands) command.exitOverride();
    return program.parseAsync(["mcp", ...args], { from: "user" }).then(
      () => null,
      (error: unknown) => error,
    );
  }

  it("an unknown env or a bad task id fails before serving, with the usage codes", async () => {
    const unknownEnv = await run(["--env", "nope", "--task", TASK, "--seed", "1"]);
    expect(unknownEnv).toBeInstanceOf(LlmixError);
    expect((unknownEnv as LlmixError).code).toBe("unknown_env");
    const badTask = await run(["--env", ENV, "--task", "billing-dispute/impossible/x", "--seed", "1"]);
    expect(badTask).toBeInstanceOf(LlmixError);
    expect((badTask as LlmixError).code).toBe("invalid_task_id");
  });
});
