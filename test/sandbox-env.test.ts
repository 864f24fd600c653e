/**
 * Integration: an environment over the SQLite, file-system and terminal sandboxes passes the whole QA
 * checklist, and the middleware's read-only access holds for read tools.
 */
import { describe, expect, it } from "vitest";
import { runChecks, type ToolResult } from "../src/index.js";
import entry from "./fixtures/log-triage-env.js";

const TASK = "log-triage/hard/seed-3";

async function fresh() {
  const env = entry.create();
  await env.reset(TASK, 1);
  return env;
}

const call = async (env: Awaited<ReturnType<typeof fresh>>, tool: string, args: Record<string, unknown>) => {
  const result = await env.step({ type: "tool_call", tool, args });
  return { result, tool: result.info.tool_result as ToolResult };
};

describe("log-triage (all sandboxes behind BaseEnvironment)", () => {
  it("passes every check of the QA checklist", async () => {
    const report = await runChecks(entry, { samples: 4 });
    const failed = report.checks.filter((c) => !c.passed).map((c) => `${c.name}: ${c.summary}`);
    expect(failed).toEqual([]);
    expect(report.checks.map((c) => c.name)).toContain("probe:write-through-read-tool");
  });

  it("a write through the read-only SQL tool fails with read_only and changes nothing", async () => {
    const env = await fresh();
    const before = await env.snapshot();
    const { tool } = await call(env, "sql_query", { sql: "UPDATE users SET flagged = 1" });
    expect(tool.status).toBe("error");
    expect(tool.error?.code).toBe("read_only");
    expect(tool.error?.message).toMatch(/write refused: this tool has read-only access/);
    const after = await env.snapshot();
    expect((after.world as { db: unknown }).db).toEqual((before.world as { db: unknown }).db);
    const { tool: select } = await call(env, "sql_query", { sql: "SELECT count(*) AS n FROM users WHERE flagged = 1" });
    expect(select.status).toBe("ok");
    expect(select.output).toMatchObject({ kind: "rows", rows: [[0]] });
  });

  it("agent SQL that reaches outside the sandbox is refused", async () => {
    const env = await fresh();
    const { tool } = await call(env, "sql_query", { sql: "ATTACH '/etc/passwd' AS host" });
    expect(tool.error?.code).toBe("forbidden_statement");
  });

  it("the read-only shell cannot write, and cannot leave its jail", async () => {
    const env = await fresh();
    const touch = await call(env, "shell", { command: "touch /tmp/x && echo made" });
    expect(String(touch.tool.output)).not.toContain("made");
    const ls = await call(env, "shell", { command: "ls /tmp" });
    expect(String(ls.tool.output)).toBe("");
    const escape = await call(env, "shell", { command: "cat ../../../etc/passwd" });
    expect(String(escape.tool.output)).toMatch(/outside the sandbox/);
    expect(String(escape.tool.output)).not.toContain("root:");
    const grep = await call(env, "shell", { command: "grep -c status=500 app.log" });
    expect(Number(String(grep.tool.output).trim())).toBeGreaterThanOrEqual(3);
  });

  it("snapshot mid-episode restores database, files and terminal into a new instance", async () => {
    const env = await fresh();
    await call(env, "shell", { command: "cd /tmp" });
    const flagged = await call(env, "flag_user", { user_id: 0 });
    expect(flagged.tool.error?.message).toBe("no user 0");
    const snap = JSON.parse(JSON.stringify(await env.snapshot()));
    const other = entry.create();
    await other.reset("log-triage/easy/seed-9", 2);
    await other.restore(snap);
    const [a, b] = [await call(env, "shell", { command: "pwd" }), await call(other, "shell", { command: "pwd" })];
    expect(a.tool.output).toBe("/tmp\n");
    expect(b.tool.output).toBe(a.tool.output);
    expect(await other.snapshot()).toEqual(await env.snapshot());
  });
});
