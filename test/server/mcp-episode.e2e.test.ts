/**
 * `llmix mcp` can finish an episode: the built CLI over stdio, driven by the MCP SDK's own client with the
 * oracle's actions (taken from the CLI as a user would: `rollout --policy oracle`, then `show --json`).
 * Tool calls go through the environment's tools; the messages to the customer, the final answer
 * included, go through `send_message`.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import type { Action } from "../../src/core/contract.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = `${ROOT}dist/cli/bin.js`;
const ENV = "billing-dispute";
/** The task clients/python/tests/test_support.py plays: verify, investigate, refund, note, tell. */
const TASK = "billing-dispute/medium/seed-1212698690";

const dir = mkdtempSync(join(tmpdir(), "llmix-mcp-episode-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Run the built CLI; its stdout (the test fails with its stderr on a non-zero exit). */
function cli(args: string[]): string {
  const run = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
  if (run.status !== 0) throw new Error(`llmix ${args.join(" ")} exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}

interface ShownEpisode {
  episode: { seed: number; outcome: number };
  steps: Array<{ action: Action; reward: number; terminated: boolean }>;
}

/** The oracle's episode of TASK, stored and shown by the CLI. */
function oracleEpisode(): ShownEpisode {
  const store = join(dir, "llmix.db");
  const rolled = JSON.parse(cli(["rollout", "--env", ENV, "--policy", "oracle", "--task", TASK, "-n", "1", "--store", store, "--json"])) as {
    groups: Array<{ episodes: Array<{ episode_id: string }> }>;
  };
  const episodeId = rolled.groups[0]!.episodes[0]!.episode_id;
  return JSON.parse(cli(["show", "--episode", episodeId, "--store", store, "--json"])) as ShownEpisode;
}

interface StepMeta {
  reward: number;
  reward_components: Record<string, number>;
  terminated: boolean;
  truncated: boolean;
  end_reason?: string;
  outcome?: number;
}

const texts = (result: CallToolResult) => (result.content as Array<{ type: string; text: string }>).map((c) => c.text);

describe("llmix mcp plays a whole episode", () => {
  it("finishes the oracle's billing-dispute episode with outcome 1; after the end a call is refused and says what to do", async () => {
    const shown = oracleEpisode();
    expect(shown.episode.outcome).toBe(1);
    const actions = shown.steps.map((s) => s.action);
    // The episode ends with a message: the final answer to the customer.
    expect(actions.at(-1)?.type).toBe("message");
    expect(actions.some((a) => a.type === "tool_call")).toBe(true);

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp", "--env", ENV, "--task", TASK, "--seed", String(shown.episode.seed)],
      cwd: ROOT,
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: "llmix-test", version: "1.0.0" });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      const send = tools.find((t) => t.name === "send_message");
      expect(send?.description).toMatch(/^Sends a message to the customer: this is not a tool of the environment/);
      expect(send?.annotations?.readOnlyHint).toBe(false);
      expect(client.getInstructions()).toContain("send_message");

      let last: CallToolResult | undefined;
      for (const [i, action] of actions.entries()) {
        const call = action.type === "tool_call" ? { name: action.tool, arguments: action.args as Record<string, unknown> } : { name: "send_message", arguments: { content: action.content } };
        last = (await client.callTool(call)) as CallToolResult;
        const step = last.structuredContent as unknown as StepMeta;
        // The same episode as the stored one, step by step.
        expect(step.reward, `step ${i + 1}: ${call.name}`).toBeCloseTo(shown.steps[i]!.reward, 10);
        expect(step.terminated, `step ${i + 1}: ${call.name}`).toBe(shown.steps[i]!.terminated);
        expect(last.isError, `step ${i + 1}: ${texts(last).join(" ")}`).toBe(false);
      }
      const end = last!.structuredContent as unknown as StepMeta;
      expect(end.terminated).toBe(true);
      expect(end.reward_components.task).toBe(1);
      expect(end.outcome).toBe(1);
      expect(end.end_reason).toBe("customer_satisfied");
      // The customer's last words, then the end in MCP's terms.
      const [reply, ended] = texts(last!);
      expect(reply?.length).toBeGreaterThan(0);
      expect(ended).toBe("The episode has ended (terminated: customer_satisfied; outcome 1). This MCP server serves one episode: to play another, restart `llmix mcp` (with another --task or --seed).");

      const after = (await client.callTool({ name: "get_agent_profile", arguments: {} })) as CallToolResult;
      expect(after.isError).toBe(true);
      const [refused] = texts(after);
      expect(refused).toContain("The episode has already ended (terminated: customer_satisfied; outcome 1); this call was not applied.");
      expect(refused).toContain("restart `llmix mcp`");
      expect(refused).not.toMatch(/reset/i);
      const message = (await client.callTool({ name: "send_message", arguments: { content: "Are you still there?" } })) as CallToolResult;
      expect(message.isError).toBe(true);
      expect(texts(message)[0]).toContain("already ended");
    } catch (error) {
      throw new Error(`${(error as Error).message}\nserver stderr:\n${stderr}`);
    } finally {
      await client.close();
    }
  }, 180_000);
});
