/**
 * Failures an agent can cause are scored, never dropped (issue 13): a verifier that throws on a state
 * the agent made scores 0 with the reason in info; a crashing tool reports its stack; a write call that
 * fails leaves every sandbox as it was (database and file system), whatever it changed before failing.
 */
import { z } from "zod";
import { describe, expect, it } from "vitest";
import {
  BaseEnvironment,
  LlmixError,
  ToolError,
  toolsFor,
  type AnyTool,
  type EnvironmentInfo,
  type Episode,
  type JsonValue,
  type MessageOutcome,
  type Sandbox,
  type TaskGenerator,
  type VerifierResult,
} from "../../src/index.js";
import { SqlDatabase } from "../../src/sandboxes/database.js";
import { MemoryFileSystem } from "../../src/sandboxes/filesystem.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { toStepRecord } from "../../src/core/trajectory.js";

interface World {
  db: SqlDatabase;
  fs: MemoryFileSystem;
}

const tasks: TaskGenerator<{ n: number }> = { families: ["fragile"], difficulties: ["easy"], generate: (_id, rng) => ({ n: rng.int(1, 9) }) };
const tool = toolsFor<World, { n: number }>();

/** Writes a row and a file, then fails the way `fail` says (or not at all). */
const writeTool = tool({
  name: "write",
  description: "Insert a row and write a file, then maybe fail.",
  input: z.object({ name: z.string(), fail: z.enum(["no", "domain", "crash", "cost"]) }),
  effect: "write",
  cost: (args) => (args.fail === "cost" ? Number.NaN : 0),
  handler: (args, { world }) => {
    world.db.run("INSERT INTO notes (body) VALUES (?)", [args.name]);
    world.fs.asOwner().writeFile(`/work/${args.name}`, "x");
    world.fs.asOwner().writeFile("/work/existing.txt", "changed");
    if (args.fail === "domain") throw new ToolError("refused after writing");
    if (args.fail === "crash") throw new TypeError("cannot read properties of undefined");
    return "written";
  },
});

class FragileEnv extends BaseEnvironment<{ n: number }, World> {
  readonly info: EnvironmentInfo = { id: "fragile", version: "1.0.0", description: "A verifier that chokes on odd file names.", maxSteps: 10 };
  readonly tasks = tasks;
  protected createWorld(): World {
    const db = new SqlDatabase();
    db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
    const fs = new MemoryFileSystem();
    fs.asOwner().writeFile("/work/existing.txt", "original", { parents: true });
    return { db, fs };
  }
  protected describeTask(): string {
    return "Write files; say DONE.";
  }
  protected toolset(): readonly AnyTool<World, { n: number }>[] {
    return [writeTool];
  }
  protected override sandboxes(world: World): readonly Sandbox[] {
    return [world.db, world.fs];
  }
  protected override disposeWorld(world: World): void {
    world.db.close();
  }
  protected override onMessage(content: string): MessageOutcome {
    return content === "DONE" ? { rendered: "ok", end: "final_answer" } : { rendered: "go on" };
  }
  protected evaluate(episode: Episode<{ n: number }, World>): VerifierResult {
    const names = episode.world.fs.asOwner().readdir("/work");
    if (names.includes("host-fault")) throw new LlmixError("step_timeout", "the host's deadline passed");
    // The bug planted here: a name with a space breaks this verifier's parsing.
    for (const name of names) if (name.includes(" ")) throw new TypeError(`cannot parse ${name}`);
    if (names.includes("out-of-range")) return { score: 1.5, passed: true, details: {} };
    return { score: names.includes("done.txt") ? 1 : 0, passed: names.includes("done.txt"), details: {} };
  }
  protected snapshotWorld(world: World): JsonValue {
    return { db: world.db.snapshot(), fs: world.fs.snapshot() };
  }
  protected restoreWorld(state: JsonValue): World {
    const s = state as { db: JsonValue; fs: JsonValue };
    const world = this.createWorld();
    world.db.restore(s.db);
    world.fs.restore(s.fs);
    return world;
  }
}

async function episodeEndingWith(file: string) {
  const env = new FragileEnv();
  await env.reset("fragile/easy/seed-1", 1);
  await env.step({ type: "tool_call", tool: "write", args: { name: file, fail: "no" } });
  return { env, end: env.step({ type: "message", content: "DONE" }) };
}

describe("agent-caused failures are scored", () => {
  it("a verifier that throws on a file the agent named scores 0 with verifier_error in info, not an exception", async () => {
    const { end } = await episodeEndingWith("utils copy.js");
    const result = await end;
    expect(result.terminated).toBe(true);
    expect(result.rewardComponents.task).toBe(0);
    const error = result.info.verifier_error as { code: string; message: string; stack: string };
    expect(error.code).toBe("verifier_failed");
    expect(error.message).toContain("cannot parse utils copy.js");
    expect(error.stack).toContain("evaluate");
    expect((result.info.verdict as VerifierResult).details.verifier_error).toEqual(error);
  });

  it("a score outside [0, 1] is recorded the same way", async () => {
    const result = await (await episodeEndingWith("out-of-range")).end;
    expect(result.rewardComponents.task).toBe(0);
    expect((result.info.verifier_error as { message: string }).message).toContain("returned score 1.5");
  });

  it("a fault of the host is not the agent's: it propagates", async () => {
    await expect((await episodeEndingWith("host-fault")).end).rejects.toMatchObject({ code: "step_timeout" });
  });

  it("a crashing tool says which call and where, in info (the agent sees only the message)", async () => {
    const env = new FragileEnv();
    await env.reset("fragile/easy/seed-1", 1);
    const result = await env.step({ type: "tool_call", tool: "write", args: { name: "a.txt", fail: "crash" } });
    expect(result.info.tool_result).toMatchObject({ status: "error", error: { code: "tool_crashed" } });
    expect(result.info.tool_crash).toMatchObject({ tool: "write", args: { name: "a.txt", fail: "crash" } });
    expect((result.info.tool_crash as { stack: string }).stack).toContain("TypeError: cannot read properties of undefined");
    expect(result.observation.rendered).not.toContain("agent-failures.test");
  });
});

describe("a failed write call is all-or-nothing", () => {
  it.each(["domain", "crash", "cost"] as const)("a call failing with %s leaves the database and the files as they were", async (fail) => {
    const env = new FragileEnv();
    await env.reset("fragile/easy/seed-1", 1);
    await env.step({ type: "tool_call", tool: "write", args: { name: "kept.txt", fail: "no" } });
    const before = await env.snapshot();
    const result = await env.step({ type: "tool_call", tool: "write", args: { name: "lost.txt", fail } });
    expect((result.info.tool_result as { status: string }).status).toBe("error");
    const after = await env.snapshot();
    const w = (x: unknown) => x as { db: unknown; fs: unknown };
    expect(w(after.world).fs).toEqual(w(before.world).fs);
    expect(w(after.world).db).toEqual(w(before.world).db);
    // And the sandboxes still work afterwards: a later call's changes are kept.
    await env.step({ type: "tool_call", tool: "write", args: { name: "later.txt", fail: "no" } });
    const world = (await env.snapshot()).world as { fs: { entries: Array<{ path: string; content?: string }> } };
    expect(world.fs.entries.map((e) => e.path)).toEqual(expect.arrayContaining(["/work/kept.txt", "/work/later.txt"]));
    expect(world.fs.entries.map((e) => e.path)).not.toContain("/work/lost.txt");
    expect(world.fs.entries.find((e) => e.path === "/work/existing.txt")?.content).toBe("changed");
  });

  it("a call that succeeds keeps its changes, and a restore continues identically", async () => {
    const env = new FragileEnv();
    await env.reset("fragile/easy/seed-1", 1);
    await env.step({ type: "tool_call", tool: "write", args: { name: "one.txt", fail: "no" } });
    const snapshot = await env.snapshot();
    const copy = new FragileEnv();
    await copy.restore(snapshot);
    const a = await env.step({ type: "tool_call", tool: "write", args: { name: "two.txt", fail: "domain" } });
    const b = await copy.step({ type: "tool_call", tool: "write", args: { name: "two.txt", fail: "domain" } });
    expect(b).toEqual(a);
    expect((await copy.snapshot()).world).toEqual((await env.snapshot()).world);
  });
});

describe("an action nested too deep for JSON", () => {
  const nested = (levels: number): unknown => {
    let value: unknown = "x";
    for (let i = 0; i < levels; i++) value = [value];
    return value;
  };

  it("a step with endlessly nested arguments is an invalid call whose record the store can keep", async () => {
    const env = builtinRegistry().get("billing-dispute").create();
    const observation = await env.reset("billing-dispute/easy/seed-1", 1);
    const action = { type: "tool_call", tool: "lookup_customer", args: { email: nested(200_000) } };
    const result = await env.step(action as never);
    expect(result.rewardComponents.invalid_call).toBeLessThan(0);
    expect(result.observation.rendered).toContain("nested deeper than 60 levels");
    const record = toStepRecord({ episodeId: "e", taskId: "billing-dispute/easy/seed-1", envVersion: "1", step: 1, observation, action, result });
    expect(record.action).toEqual({ type: "invalid", raw: "[not JSON: Maximum call stack size exceeded]" });
    expect(() => JSON.stringify(record)).not.toThrow();
  });
});
