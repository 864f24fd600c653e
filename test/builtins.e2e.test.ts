/**
 * Every built-in environment the way users reach it: `llmix rollout` (the built CLI, two worker threads,
 * a file store), the HTTP service (a session played with the reference solver's choices) and MCP (the
 * session's tools called through the SDK client). A new vertical is covered by registering it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Action } from "../src/core/contract.js";
import { runPolicy } from "../src/core/run-policy.js";
import { BUILTIN_ENVIRONMENTS } from "../src/envs/index.js";
import { mountMcp } from "../src/server/mcp.js";
import type { CreatedSession, StepResponse } from "../src/server/sessions.js";
import { sampleTaskIds } from "../src/tasks/splits.js";
import { api, playReference, startTestServer, type TestServer } from "./server/service-helpers.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = `${root}dist/cli/bin.js`;
const dir = mkdtempSync(join(tmpdir(), "llmix-builtins-"));
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ withStore: false, extraRoutes: (app, { manager }) => mountMcp(app, manager) });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One easy task id of an environment. */
function easyTask(entry: (typeof BUILTIN_ENVIRONMENTS)[number]): string {
  const env = entry.create();
  const family = env.tasks.families[0] as string;
  void env.close();
  return sampleTaskIds({ family, difficulties: ["easy"], n: 1, seed: 5 })[0] as string;
}

describe.each(BUILTIN_ENVIRONMENTS.map((entry) => [entry.id, entry] as const))("%s", (id, entry) => {
  it("llmix rollout with the oracle on 2 workers: every episode succeeds and is stored", () => {
    const run = spawnSync(
      process.execPath,
      [bin, "rollout", "--env", id, "--policy", "oracle", "-n", "6", "--group", "2", "--workers", "2", "--store", join(dir, `${id}.db`), "--json"],
      { cwd: root, encoding: "utf8", timeout: 240_000 },
    );
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.episodes).toBe(6);
    expect(out.errors).toBe(0);
    const all = out.metrics.find((m: { difficulty: string }) => m.difficulty === "all");
    expect(all).toMatchObject({ episodes: 6, mean_outcome: 1, success_rate: 1 });
  });

  it("the HTTP service plays the reference solver's episode to outcome 1", async () => {
    const created = await api<CreatedSession>(server.base, "POST", "/v1/sessions", { env: id, task_id: easyTask(entry), seed: 3 });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const responses = await playReference(created.body, async (action) => {
      const res = await api<StepResponse>(server.base, "POST", `/v1/sessions/${created.body.session_id}/step`, { action });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    }, 200);
    const last = responses.at(-1) as StepResponse;
    expect(last.terminated || last.truncated).toBe(true);
    expect(last.reward_components.task).toBe(1);
    const closed = await api(server.base, "DELETE", `/v1/sessions/${created.body.session_id}`);
    expect(closed.status).toBe(200);
  });

  it("MCP lists the session's tools and plays the reference episode (tool calls through MCP)", async () => {
    const taskId = easyTask(entry);
    const local = entry.create();
    const initial = await local.reset(taskId, 4);
    const actions: Action[] = (await runPolicy(local, local.referenceSolver(), { maxSteps: local.maxSteps, initial })).transitions.map((t) => t.action);
    const talks = Boolean(local.info.messages);
    await local.close();

    const created = await api<CreatedSession>(server.base, "POST", "/v1/sessions", { env: id, task_id: taskId, seed: 4 });
    expect(created.status).toBe(201);
    const sessionId = created.body.session_id;
    const client = new Client({ name: "llmix-test", version: "0.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.base}/v1/sessions/${sessionId}/mcp`)));
    try {
      const { tools } = await client.listTools();
      // The environment's tools, plus send_message where a message is an action (a reply to the user).
      expect(tools.map((t) => t.name)).toEqual([...created.body.tools.map((t) => t.name), ...(talks ? ["send_message"] : [])]);
      let components: Record<string, number> = {};
      for (const action of actions) {
        if (action.type === "tool_call" || talks) {
          const call = action.type === "tool_call" ? { name: action.tool, arguments: action.args as Record<string, unknown> } : { name: "send_message", arguments: { content: action.content } };
          const result = (await client.callTool(call)) as CallToolResult;
          components = (result.structuredContent as { reward_components: Record<string, number> }).reward_components;
        } else {
          const res = await api<StepResponse>(server.base, "POST", `/v1/sessions/${sessionId}/step`, { action });
          components = res.body.reward_components;
        }
      }
      expect(components.task).toBe(1);
    } finally {
      await client.close();
    }
  });
});
