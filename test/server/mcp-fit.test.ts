/**
 * MCP fits the rest of LLMix (issue 14, item 5):
 * - one schema per tool: the same bytes in-process (spec, openai, mcp), on GET /v1/envs/:env and
 *   POST /v1/sessions, in MCP tools/list (through the SDK's client), in the CLI (`reset --json`) and in
 *   an export (`trl-sft`), for every tool of every built-in environment;
 * - `send_message` on the environments that take messages, mapping to the message action; its bad
 *   arguments are invalid params (-32602) in one line;
 * - after the end, the answer names the outcome and what an MCP client can do, never "reset".
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolSpec } from "../../src/core/contract.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { mountMcp } from "../../src/server/mcp.js";
import { sampleTaskIds } from "../../src/tasks/splits.js";
import { MessageToolInput } from "../../src/tools/mcp-tools.js";
import { plainJsonSchema, strictModeProblems, toolJsonSchema } from "../../src/tools/schema.js";
import { api, startTestServer, type TestServer } from "./service-helpers.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = `${ROOT}dist/cli/bin.js`;
const ENVS = ["billing-dispute", "incident-response", "code-repair"] as const;
const registry = builtinRegistry();

/** Run the built CLI; its stdout (the test fails with its stderr on a non-zero exit). */
function cli(args: string[]): string {
  const run = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
  if (run.status !== 0) throw new Error(`llmix ${args.join(" ")} exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}

/** The task GET /v1/envs/:env describes (its first family and difficulty, sampling seed 0): every surface uses it. */
function describedTask(envId: string): string {
  const env = registry.get(envId).create();
  const [taskId] = sampleTaskIds({ family: env.tasks.families[0] as string, difficulties: [env.tasks.difficulties[0] as string], n: 1, seed: 0 });
  void env.close();
  return taskId as string;
}

/** name -> the schema's JSON text, in listing order. */
const texts = (entries: Array<[string, unknown]>) => entries.map(([name, schema]) => [name, JSON.stringify(schema)] as const);

/** How many times a keyword occurs in a schema (the length limits must survive into the tool schema). */
const count = (schema: unknown, keyword: string) => (JSON.stringify(schema).match(new RegExp(`"${keyword}":`, "g")) ?? []).length;

let server: TestServer;
const clients: Client[] = [];
const dir = mkdtempSync(join(tmpdir(), "llmix-mcp-fit-"));

beforeAll(async () => {
  server = await startTestServer({ withStore: false, extraRoutes: (app, { manager }) => mountMcp(app, manager) });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function connect(sessionId: string): Promise<Client> {
  const client = new Client({ name: "llmix-test", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.base}/v1/sessions/${sessionId}/mcp`)));
  clients.push(client);
  return client;
}

async function newSession(env: string, taskId: string, seed = 0): Promise<{ session_id: string; tools: ToolSpec[] }> {
  const created = await api(server.base, "POST", "/v1/sessions", { env, task_id: taskId, seed });
  expect(created.status).toBe(201);
  return created.body as { session_id: string; tools: ToolSpec[] };
}

describe("one schema per tool, byte-identical on every surface", () => {
  it.each(ENVS)("%s: in-process, /v1/envs, /v1/sessions, MCP tools/list, CLI reset --json and the trl-sft export agree", async (envId) => {
    const taskId = describedTask(envId);

    // In-process: the declared tools' three forms are one schema, strict and with the length limits.
    const env = registry.get(envId).create();
    await env.reset(taskId, 0);
    const definitions = env.toolDefinitions();
    await env.close();
    const reference = texts(definitions.map((t) => [t.name, t.spec().parameters]));
    expect(reference.length).toBeGreaterThan(0);
    for (const tool of definitions) {
      const schema = tool.spec().parameters;
      expect(JSON.stringify(tool.openai().function.parameters), tool.name).toBe(JSON.stringify(schema));
      expect(JSON.stringify(tool.mcp().inputSchema), tool.name).toBe(JSON.stringify(schema));
      expect(strictModeProblems(schema), tool.name).toEqual([]);
      for (const keyword of ["minLength", "maxLength"]) expect(count(schema, keyword), `${tool.name} ${keyword}`).toBe(count(plainJsonSchema(tool.input), keyword));
    }

    const detail = await api(server.base, "GET", `/v1/envs/${envId}`);
    expect(detail.status).toBe(200);
    expect(texts((detail.body.tools as ToolSpec[]).map((t) => [t.name, t.parameters]))).toEqual(reference);

    const created = await newSession(envId, taskId);
    expect(texts(created.tools.map((t) => [t.name, t.parameters]))).toEqual(reference);

    // MCP, as the SDK's client parses it; the message tool (if any) comes last, with its own schema.
    const { tools } = await (await connect(created.session_id)).listTools();
    const own = tools.filter((t) => t._meta === undefined);
    expect(texts(own.map((t) => [t.name, t.inputSchema]))).toEqual(reference);
    for (const extra of tools.filter((t) => t._meta !== undefined)) expect(JSON.stringify(extra.inputSchema)).toBe(JSON.stringify(toolJsonSchema(MessageToolInput)));

    const reset = JSON.parse(cli(["reset", envId, "--task", taskId, "--seed", "0", "--json"])) as { tools: ToolSpec[] };
    expect(texts(reset.tools.map((t) => [t.name, t.parameters]))).toEqual(reference);

    // The exports read the tools the run stored: the same schema reaches a training dataset.
    const store = join(dir, `${envId}.db`);
    const rolled = JSON.parse(cli(["rollout", "--env", envId, "--policy", "oracle", "--task", taskId, "-n", "1", "--store", store, "--json"])) as { run: { run_id: string } };
    const out = join(dir, `${envId}.trl.jsonl`);
    cli(["export", "--run", rolled.run.run_id, "--format", "trl-sft", "--out", out, "--store", store]);
    const row = JSON.parse(readFileSync(out, "utf8").split("\n")[0] as string) as { tools: Array<{ function: { name: string; parameters: unknown } }> };
    expect(texts(row.tools.map((t) => [t.function.name, t.function.parameters]))).toEqual(reference);
  }, 180_000);
});

describe("send_message", () => {
  const TASK = "billing-dispute/easy/seed-1";
  const text = (result: unknown) => ((result as CallToolResult).content as Array<{ text: string }>).map((c) => c.text);

  it("is listed where a message is an action someone reads, described as the message action and not a tool of the environment", async () => {
    const listed = async (envId: string): Promise<McpTool | undefined> => {
      const created = await newSession(envId, describedTask(envId));
      const { tools } = await (await connect(created.session_id)).listTools();
      expect(tools.slice(0, created.tools.length).map((t) => t.name)).toEqual(created.tools.map((t) => t.name));
      return tools.find((t) => t.name === "send_message");
    };
    const billing = await listed("billing-dispute");
    expect(billing?.description).toMatch(/^Sends a message to the customer: this is not a tool of the environment but the episode's message action/);
    expect(billing?.description).toContain("The customer reads it and replies");
    expect(billing?._meta).toEqual({ "llmix/action": "message" });
    expect(billing?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
    const code = await listed("code-repair");
    expect(code?.description).toMatch(/^Sends a message to the user: this is not a tool of the environment/);
    expect(code?.description).toContain("final answer: sending it ends the episode");
    // incident-response has nobody on the other end of the chat: no message tool.
    expect(await listed("incident-response")).toBeUndefined();
  });

  it("a call is the message action: the customer's reply is the result, one step of the session", async () => {
    const created = await newSession("billing-dispute", TASK, 1);
    const client = await connect(created.session_id);
    const result = (await client.callTool({ name: "send_message", arguments: { content: "Hello, how can I help you today?" } })) as CallToolResult;
    expect(result.isError).toBe(false);
    const step = result.structuredContent as { tool_result: unknown; terminated: boolean; reward_components: Record<string, number> };
    expect(step.tool_result).toBeNull();
    expect(step.terminated).toBe(false);
    expect(step.reward_components.invalid_call).toBe(0);
    // The same step through the step API on a twin session: the same reply.
    const twin = await newSession("billing-dispute", TASK, 1);
    const viaStep = await api(server.base, "POST", `/v1/sessions/${twin.session_id}/step`, { action: { type: "message", content: "Hello, how can I help you today?" } });
    expect(text(result)).toEqual([viaStep.body.observation.rendered]);
    expect((await api(server.base, "GET", `/v1/sessions/${created.session_id}`)).body.steps).toBe(1);
  });

  it("bad arguments are invalid params (-32602) in one line, and no step is taken", async () => {
    const created = await newSession("billing-dispute", TASK, 1);
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    for (const [args, says] of [
      [{}, "send_message: arguments.content: Invalid input: expected string, received undefined"],
      [{ content: 42 }, "send_message: arguments.content: Invalid input: expected string, received number"],
      [{ content: "hi", to: "boss" }, 'send_message: arguments: Unrecognized key: "to"'],
      [{ content: "x".repeat(200_001) }, "send_message: arguments.content: Too big"],
    ] as const) {
      const body = JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "send_message", arguments: args } });
      const res = await fetch(`${server.base}/v1/sessions/${created.session_id}/mcp`, { method: "POST", headers, body });
      const answer = (await res.json()) as { error: { code: number; message: string } };
      expect(answer.error.code).toBe(-32602);
      expect(answer.error.message).toContain(says);
      expect(answer.error.message).not.toContain("\n");
    }
    expect((await api(server.base, "GET", `/v1/sessions/${created.session_id}`)).body.steps).toBe(0);
  });

  it("on an environment without it, the name is an unknown tool the environment answers (invalid_call)", async () => {
    const created = await newSession("incident-response", describedTask("incident-response"));
    const result = (await (await connect(created.session_id)).callTool({ name: "send_message", arguments: { content: "hi" } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)[0]).toContain('unknown tool "send_message"');
  });
});

describe("after the end, over MCP", () => {
  it("the ending call says how it ended; a later call is refused with the outcome and how to get another episode, never reset", async () => {
    const created = await newSession("billing-dispute", "billing-dispute/easy/seed-1", 1);
    const client = await connect(created.session_id);
    const ending = (await client.callTool({ name: "end_conversation", arguments: {} })) as CallToolResult;
    expect(ending.isError).toBe(false);
    const next = `This MCP endpoint serves session ${created.session_id} only: to play another episode, create a new session (POST /v1/sessions) and connect to its /v1/sessions/{id}/mcp.`;
    expect((ending.content as Array<{ text: string }>).map((c) => c.text)).toEqual(["Conversation ended.", `The episode has ended (terminated: agent_ended_conversation; outcome 0). ${next}`]);
    expect(ending.structuredContent).toMatchObject({ terminated: true, end_reason: "agent_ended_conversation", outcome: 0 });

    for (const call of [{ name: "get_agent_profile", arguments: {} }, { name: "send_message", arguments: { content: "Hello?" } }]) {
      const after = (await client.callTool(call)) as CallToolResult;
      expect(after.isError, call.name).toBe(true);
      const [said] = (after.content as Array<{ text: string }>).map((c) => c.text);
      expect(said).toBe(`The episode has already ended (terminated: agent_ended_conversation; outcome 0); this call was not applied. ${next}`);
      expect(said).not.toMatch(/reset/i);
      expect(after.structuredContent).toMatchObject({ outcome: 0, end_reason: "agent_ended_conversation" });
    }
  });
});
