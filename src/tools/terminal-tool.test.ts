import { describe, expect, it } from "vitest";
import { VirtualClock } from "../core/clock.js";
import { Rng } from "../core/rng.js";
import { MemoryFileSystem } from "../sandboxes/filesystem.js";
import { Terminal } from "../sandboxes/terminal.js";
import type { ToolContext } from "./define.js";
import { runToolCall } from "./runner.js";
import { isTerminalOutput, renderTerminalOutput, terminalTool, truncateOutput, type TerminalOutput } from "./terminal-tool.js";

interface World {
  fs: MemoryFileSystem;
  terminal: Terminal;
  ran: string[];
}

function setup(options: Partial<Parameters<typeof terminalTool<World, null>>[0]> = {}) {
  const fs = new MemoryFileSystem();
  const owner = fs.asOwner();
  owner.mkdir("/logs", { parents: true });
  owner.mkdir("/tmp");
  owner.writeFile("/logs/app.log", "ok 1\nfail 2\nok 3\n");
  owner.writeFile("/logs/big.log", "line of text\n".repeat(5000));
  fs.protect("/logs", "read-only");
  const world: World = { fs, terminal: new Terminal(fs, { cwd: "/tmp" }), ran: [] };
  const tool = terminalTool<World, null>({ terminal: (w) => w.terminal, onRun: (command, _r, ctx) => ctx.world.ran.push(command), ...options });
  const ctx: ToolContext<World, null> = {
    world,
    task: null,
    rng: Rng.fromSeed(1),
    clock: new VirtualClock(),
    step: 1,
    grants: new Set(),
    end: () => undefined,
    reward: () => undefined,
  };
  const call = (args: unknown) =>
    runToolCall(tool.name, args, {
      tools: new Map([[tool.name, tool]]),
      ctx: ctx as ToolContext<unknown, unknown>,
      rng: Rng.fromSeed(2),
      clock: ctx.clock,
      sandboxes: [fs],
    });
  return { world, tool, call };
}

describe("terminalTool", () => {
  it("runs a command line and returns exit code, stdout and stderr", async () => {
    const { call, world } = setup();
    const r = await call({ command: "grep -c fail /logs/app.log && echo done" });
    expect(r.status).toBe("ok");
    expect(r.output).toEqual({ exit_code: 0, stdout: "1\ndone\n", stderr: "" });
    expect(world.ran).toEqual(["grep -c fail /logs/app.log && echo done"]);
    const missing = (await call({ command: "cat /nope" })).output as unknown as TerminalOutput;
    expect(missing.exit_code).toBe(1);
    expect(missing.stderr).toContain("No such file or directory");
  });

  it("declares a strict-mode schema with one required string argument", () => {
    const { tool } = setup();
    const spec = tool.openai().function;
    expect(spec.name).toBe("terminal");
    expect(spec.parameters).toMatchObject({ type: "object", required: ["command"], additionalProperties: false });
    expect(tool.effect).toBe("write");
  });

  it("refuses empty, over-long, mistyped and unknown arguments as invalid", async () => {
    const { call, world } = setup({ maxCommandLength: 50 });
    for (const args of [{ command: "" }, { command: "x".repeat(51) }, { command: 42 }, { cmd: "ls" }, { command: "ls", extra: 1 }, null]) {
      const r = await call(args);
      expect(r.status, JSON.stringify(args)).toBe("invalid");
    }
    expect(world.ran).toEqual([]);
  });

  it("cuts each stream at the character budget and says so", async () => {
    const { call } = setup({ maxOutputChars: 1000 });
    const out = (await call({ command: "cat /logs/big.log" })).output as unknown as TerminalOutput;
    expect(out.truncated).toBe(true);
    expect(out.stdout.length).toBeLessThan(1200);
    expect(out.stdout).toMatch(/\[output truncated: \d+ more characters/);
    // Cut at a line end: every kept line is whole.
    expect(out.stdout.split("\n").slice(0, -3).every((l) => l === "line of text")).toBe(true);
  });

  it("reports writes to a read-only tree and read-only access as errors on stderr", async () => {
    const { call, world } = setup();
    const rm = (await call({ command: "rm /logs/app.log" })).output as unknown as TerminalOutput;
    expect(rm.exit_code).not.toBe(0);
    expect(rm.stderr).toContain("Permission denied");
    expect(world.fs.readFile("/logs/app.log")).toBe("ok 1\nfail 2\nok 3\n");
    const ro = setup({ effect: "read" });
    const w = (await ro.call({ command: "echo hi > /tmp/x" })).output as unknown as TerminalOutput;
    expect(w.exit_code).toBe(1);
    expect(w.stderr).toContain("Read-only file system");
    expect(ro.world.fs.exists("/tmp/x")).toBe(false);
  });

  it("turns an authorize refusal into a denied call that never runs", async () => {
    const { call, world } = setup({ authorize: (command) => (command.includes("rm") ? { allowed: false, reason: "no deleting" } : { allowed: true }) });
    const r = await call({ command: "rm /tmp/x" });
    expect(r.status).toBe("denied");
    expect(r.error?.message).toContain("no deleting");
    expect(world.ran).toEqual([]);
  });

  it("ends a command line stopped by a sandbox limit in a failed call that names the limit", async () => {
    const { call, world } = setup();
    const longLine = `x=ab; ${"x=$x$x; ".repeat(15)}echo $x`;
    const budget = await call({ command: `${longLine} | grep -cE '.{0,250}.{0,250}.{0,250}.{0,250}[~]'; echo after` });
    expect(budget.status).toBe("error");
    expect(budget.error?.code).toBe("budget_exceeded");
    expect(budget.output).toBe("bash: grep: work budget exceeded (10000000 units per command line; simplify the pattern or narrow the input)");
    expect(budget.error?.message).toBe(budget.output);
    const size = await call({ command: "printf '%400000000s' x" });
    expect(size.status).toBe("error");
    expect(size.error?.code).toBe("size_limit");
    expect(size.output).toMatch(/^bash: printf: %400000000s: field width too large/);
    // The call ran (onRun saw it), and the terminal goes on.
    expect(world.ran).toHaveLength(2);
    expect((await call({ command: "grep -c fail /logs/app.log" })).output).toEqual({ exit_code: 0, stdout: "1\n", stderr: "" });
  });

  it("renders results as shell text", () => {
    expect(renderTerminalOutput({ exit_code: 0, stdout: "a\nb\n", stderr: "" })).toBe("a\nb");
    expect(renderTerminalOutput({ exit_code: 2, stdout: "", stderr: "bash: x: command not found\n" })).toBe("bash: x: command not found\n[exit 2]");
    expect(renderTerminalOutput({ exit_code: 0, stdout: "", stderr: "" })).toBe("(no output)");
    expect(isTerminalOutput({ exit_code: 0, stdout: "", stderr: "" })).toBe(true);
    expect(isTerminalOutput("text")).toBe(false);
    expect(truncateOutput("short", 10)).toEqual({ text: "short", truncated: false });
  });
});
