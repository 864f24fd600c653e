/**
 * Hostile agents: code that probes for the host, never stops (in bytecode or inside a built-in), allocates
 * without bound or recurses forever; paths that leave the project; huge files and output. Each gets a clear
 * error, `timeout` or `memory` result, and the environment (and the process) keeps working: the next
 * run_tests is normal.
 */
import { describe, expect, it, vi } from "vitest";
import type { Action, StepResult, ToolResult } from "../../core/contract.js";
import { DEFAULT_CODE_RUN_LIMITS, sharedCodeRunner, type CodeRunResult } from "../../sandboxes/code-runner.js";
import { CodeRepair } from "./env.js";
import type { Task } from "./tasks.js";
import type { TestRunOutput } from "./tools.js";

const tool = (name: string, args: Record<string, unknown>): Action => ({ type: "tool_call", tool: name, args });
const resultOf = (r: StepResult) => r.info.tool_result as ToolResult;
const runOf = (r: StepResult) => resultOf(r).output as unknown as TestRunOutput;

async function open() {
  const env = new CodeRepair();
  await env.reset("code-repair/easy/seed-12", 1);
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  return { env, task };
}

/** Write a test file, run it, and check a normal run still works afterwards. */
async function runHostile(env: CodeRepair, source: string, extra: Record<string, string> = {}): Promise<TestRunOutput> {
  for (const [path, content] of Object.entries(extra)) expect(resultOf(await env.step(tool("write_file", { path, content }))).status).toBe("ok");
  await env.step(tool("write_file", { path: "test/zz_hostile.test.js", content: source }));
  const r = await env.step(tool("run_tests", { file: "test/zz_hostile.test.js" }));
  expect(resultOf(r).status).toBe("ok");
  await env.step(tool("terminal", { command: "rm test/zz_hostile.test.js" }));
  for (const path of Object.keys(extra)) await env.step(tool("terminal", { command: `rm ${path}` }));
  const normal = runOf(await env.step(tool("run_tests", { file: null })));
  expect(normal.status).toBe("ok");
  expect(normal.total).toBeGreaterThan(0);
  return runOf(r);
}

describe("hostile code in run_tests", () => {
  it("finds no host objects and cannot escape through Function or import()", async () => {
    const { env } = await open();
    const out = await runHostile(
      env,
      [
        `test("process", () => { assert.equal(typeof process, "undefined"); });`,
        `test("global require", () => { assert.equal(typeof globalThis.require, "undefined"); });`,
        `test("Function escape", () => { assert.equal(typeof Function("return this")().process, "undefined"); });`,
        `test("constructor escape", () => { assert.equal(typeof (() => {}).constructor("return typeof process")(), "string"); assert.equal((() => {}).constructor("return typeof process")(), "undefined"); });`,
        `test("fs", () => { require("fs"); });`,
        `test("child_process", () => { require("child_process"); });`,
        `test("import", async () => { await import("node:child_process"); });`,
        `test("escape the project", () => { require("../../../etc/passwd"); });`,
      ].join("\n"),
    );
    const byName = Object.fromEntries(out.failures.map((f) => [f.name, f.message]));
    expect(out.passed).toBe(4);
    expect(byName.fs).toMatch(/Cannot find module 'fs'/);
    expect(byName.child_process).toMatch(/no node_modules and no built-in modules/);
    expect(byName.import).toMatch(/import\(\) is not available/);
    expect(byName["escape the project"]).toMatch(/Cannot find module/);
  });

  it("ends an infinite loop (in a test or at module load) with timeout", async () => {
    const { env } = await open();
    const out = await runHostile(env, `test("spin", () => { for (;;) {} });\ntest("fine", () => {});`);
    expect(out.status).toBe("timeout");
    expect(out.failures).toEqual([{ file: "test/zz_hostile.test.js", name: "spin", status: "timeout", message: expect.stringMatching(/instruction budget/) }]);
    const load = await runHostile(env, `require("../src/spin");`, { "src/spin.js": "while (true) {}" });
    expect(load.status).toBe("timeout");
    expect(load.load_errors[0]).toMatchObject({ file: "test/zz_hostile.test.js", status: "timeout" });
  });

  it("answers within the instruction budget when the code loops inside a built-in", async () => {
    const { env } = await open();
    const run = vi.spyOn(sharedCodeRunner(), "run");
    try {
      const out = await runHostile(
        env,
        [
          `test("huge sparse array", () => { const a = []; a[4e9] = 1; a.indexOf(2); });`,
          `test("built-in in a loop", () => { const a = []; a.length = 2 ** 24 - 1; for (;;) a.indexOf(2); });`,
          `test("fine", () => {});`,
        ].join("\n"),
      );
      expect(out.status).toBe("timeout");
      expect(out.failures).toEqual([
        { file: "test/zz_hostile.test.js", name: "huge sparse array", status: "failed", message: expect.stringMatching(/^RangeError: Array\.prototype\.indexOf: 4000000001 steps/) },
        { file: "test/zz_hostile.test.js", name: "built-in in a loop", status: "timeout", message: expect.stringMatching(/instruction budget/) },
      ]);
      expect(out.passed).toBe(1);
      const hostile = (await run.mock.results[0]!.value) as CodeRunResult;
      expect(hostile.ticks).toBeLessThanOrEqual(DEFAULT_CODE_RUN_LIMITS.phaseTicks + 10);
    } finally {
      run.mockRestore();
    }
  });

  it("ends unbounded allocation with memory and infinite recursion with a stack overflow", async () => {
    const { env } = await open();
    const mem = await runHostile(env, `test("grow", () => { const a = []; for (;;) a.push({ x: [a.length] }); });`);
    expect(mem.status).toBe("memory");
    expect(mem.failures[0]).toMatchObject({ status: "memory" });
    const rec = await runHostile(env, `test("recurse", () => { const f = (n) => f(n + 1) + 1; f(0); });`);
    expect(rec.failures[0]!.message).toMatch(/stack overflow/);
  });

  it("caps very long output", async () => {
    const { env } = await open();
    const out = await runHostile(env, `test("spam", () => { for (let i = 0; i < 200000; i++) console.log("x".repeat(50)); });`);
    expect(out.output.length).toBeLessThan(5_000);
    expect(out.output_truncated).toBe(true);
  });
});

describe("hostile file operations", () => {
  it("cannot reach outside the project", async () => {
    const { env } = await open();
    for (const action of [
      tool("read_file", { path: "../../etc/passwd" }),
      tool("read_file", { path: "/etc/passwd" }),
      tool("write_file", { path: "/tmp/x.js", content: "x" }),
      tool("write_file", { path: "src/../../x.js", content: "x" }),
      tool("list_files", { path: ".." }),
      tool("apply_patch", { patch: "--- /dev/null\n+++ b//etc/cron.d/x\n@@ -0,0 +1 @@\n+x\n" }),
    ]) {
      const r = await env.step(action);
      expect(resultOf(r).status, JSON.stringify(action)).toBe("error");
      expect(resultOf(r).error!.code).toBe("path_escape");
    }
    const t = await env.step(tool("terminal", { command: "cat /etc/passwd; ls /; cd /" }));
    expect(t.observation.rendered).toMatch(/outside the sandbox/);
  });

  it("refuses huge files and too many files, and keeps working", async () => {
    const { env } = await open();
    const big = await env.step(tool("write_file", { path: "src/big.js", content: "é".repeat(150_000) }));
    expect(resultOf(big).error!.code).toBe("size_limit");
    expect(resultOf(await env.step(tool("write_file", { path: "src/big.js", content: "x".repeat(300_000) }))).status).toBe("invalid");
    let refused: ToolResult | null = null;
    for (let i = 0; i < 15 && !refused; i++) {
      const r = resultOf(await env.step(tool("write_file", { path: `data/blob${i}.js`, content: "x".repeat(199_000) })));
      if (r.status !== "ok") refused = r;
    }
    expect(refused?.error?.code).toBe("size_limit");
    const t = await env.step(tool("terminal", { command: "cat data/blob0.js data/blob0.js data/blob0.js" }));
    expect(t.observation.rendered.length).toBeLessThan(20_000);
    expect(t.observation.rendered).toMatch(/output truncated/);
    expect(runOf(await env.step(tool("run_tests", { file: null }))).total).toBeGreaterThan(0);
  });
});
