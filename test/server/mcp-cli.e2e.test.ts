/** `llmix mcp` run the way a user runs it: the built CLI over stdio, driven by the MCP SDK's own client. */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const bin = `${root}dist/cli/bin.js`;

describe("llmix mcp", () => {
  it("serves one episode's tools over stdio; a call advances the episode and returns its reward", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, "mcp", "--env", "billing-dispute", "--task", "billing-dispute/easy/seed-1", "--seed", "1"],
      cwd: root,
      stderr: "ignore",
    });
    const client = new Client({ name: "llmix-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("refund_lookup");
      const result = await client.callTool({ name: "get_agent_profile", arguments: {} });
      expect(result.isError).toBeFalsy();
      const text = (result.content as Array<{ type: string; text: string }>)[0]?.text ?? "";
      expect(JSON.parse(text)).toHaveProperty("cap");
      expect((result.structuredContent as { reward_components: Record<string, number> }).reward_components.step_cost).toBeLessThan(0);
    } finally {
      await client.close();
    }
  }, 60_000);

  it("refuses an unknown environment with one line and exit code 2, before any MCP traffic", () => {
    const run = spawnSync(process.execPath, [bin, "mcp", "--env", "nope", "--task", "nope/easy/seed-1", "--seed", "1"], { cwd: root, encoding: "utf8", timeout: 60_000 });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/unknown_env: .*valid: billing-dispute/);
  });
});
