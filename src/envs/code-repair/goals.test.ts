/**
 * The goal conditions (goals.ts), stated from the task, not from the reference: the reference meets every
 * one of them on every difficulty and variant, each predicate tells every bug of the catalogue from its fix,
 * and a wrong end state (a bug left in place, a test file edited, a module deleted, the decoy "fixed")
 * leaves the named goal unmet.
 */
import { describe, expect, it } from "vitest";
import type { Action, StepResult, ToolResult } from "../../core/contract.js";
import { runPolicy } from "../../core/run-policy.js";
import { CodeRepair, fixedModules } from "./env.js";
import { changedLines, functionLines, mutationGoalId, mutationRemoved } from "./goals.js";
import { LIBRARY, MODULES } from "./library.js";
import { DIFFICULTIES, VARIANTS, type Task, type Variant } from "./tasks.js";

const ID = (d: string, n: number) => `code-repair/${d}/seed-${n}`;
const tool = (name: string, args: Record<string, unknown>): Action => ({ type: "tool_call", tool: name, args });
const write = (path: string, content: string) => tool("write_file", { path, content });

async function open(id: string, variant?: Variant, seed = 3) {
  const env = new CodeRepair(variant ? { scenario: { variant } } : {});
  await env.reset(id, seed);
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  return { env, task };
}

async function play(env: CodeRepair, actions: Action[]): Promise<StepResult[]> {
  const out: StepResult[] = [];
  for (const a of actions) {
    const r = await env.step(a);
    if (a.type === "tool_call") expect((r.info.tool_result as ToolResult).status, JSON.stringify(a)).toBe("ok");
    out.push(r);
  }
  return out;
}

const unmet = (env: CodeRepair) => env.goals().filter((g) => !g.met).map((g) => g.id);

/** The task's modules with every bug fixed (the task's ground truth), as write_file actions. */
const fixAll = (task: Task) => [...fixedModules(task)].map(([file, content]) => write(file, content));

describe("the mutation predicate on the whole catalogue", () => {
  const bugs = MODULES.flatMap((m) => LIBRARY[m].flatMap((fn) => fn.bugs.map((bug, k) => [`${fn.name}#${k}`, fn, bug] as const)));
  it.each(bugs)("tells %s from its fix, alone and inside its module", (_, fn, bug) => {
    const buggy = fn.source.replace(bug.find, bug.replace);
    const record = { fn: fn.name, buggyText: buggy, fixedText: fn.source };
    const { introduced, removed } = changedLines(buggy, fn.source);
    expect(introduced.length + removed.length).toBeGreaterThan(0);
    expect(mutationRemoved(record, buggy)).toBe(false);
    expect(mutationRemoved(record, fn.source)).toBe(true);
    // In a module with the library's other functions (whose lines may look alike), before and after.
    const others = LIBRARY[fn.module].filter((g) => g !== fn).map((g) => g.source);
    const module = (body: string) => [`"use strict";`, ...others.slice(0, 2), body, ...others.slice(2), "module.exports = {};"].join("\n\n");
    expect(functionLines(module(buggy), fn.name)!.join("\n")).toBe(buggy);
    expect(mutationRemoved(record, module(buggy))).toBe(false);
    expect(mutationRemoved(record, module(fn.source))).toBe(true);
    // Re-indented, with a trailing comment on the mutated line: still the bug.
    const reformatted = buggy
      .split("\n")
      .map((l) => (l.includes(bug.replace) && bug.replace !== "" ? `${l.replace(/^ +/, "\t")} // looks fine` : l))
      .join("\n");
    expect(mutationRemoved(record, reformatted)).toBe(false);
  });

  it("accepts an equivalent fix that replaces the mutated line, and rejects deleting the function", () => {
    const fn = LIBRARY.arrays.find((f) => f.name === "chunk")!;
    const bug = fn.bugs[0]!;
    const buggy = fn.source.replace(bug.find, bug.replace);
    const record = { fn: fn.name, buggyText: buggy, fixedText: fn.source };
    expect(mutationRemoved(record, buggy.replace("i < items.length - 1; i += size", "i <= items.length - 1; i += size"))).toBe(true);
    expect(mutationRemoved(record, fn.source.replace("function chunk(items, size) {", "function chunk(items, size = 1) {"))).toBe(true);
    expect(mutationRemoved(record, '"use strict";\nmodule.exports = {};\n')).toBe(false);
  });
});

describe("code-repair goal conditions", () => {
  const cases = DIFFICULTIES.flatMap((d) => VARIANTS.map((v) => [d, v] as const));
  it.each(cases)("the reference meets every goal on %s / %s", async (difficulty, variant) => {
    for (let i = 0; i < 3; i++) {
      const env = new CodeRepair({ scenario: { variant } });
      const initial = await env.reset(ID(difficulty, 300 + i), i);
      const task = (env as unknown as { episode: { task: Task } }).episode.task;
      // Before any action every bug is still in place, and nothing else is wrong.
      expect(unmet(env)).toEqual(task.bugs.map((b) => mutationGoalId(b.fn)));
      const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
      const goals = env.goals();
      expect(goals.map((g) => g.id)).toEqual([
        ...task.bugs.map((b) => mutationGoalId(b.fn)),
        ...(variant === "decoy" ? ["decoy_kept"] : []),
        "tests_unchanged",
        "modules_present",
      ]);
      expect(unmet(env), goals.map((g) => `${g.id}: ${g.description}`).join("\n")).toEqual([]);
      expect(run.final!.rewardComponents.task).toBe(1);
      await env.close();
    }
  });

  it("the reference meets every goal on the default distribution of every difficulty", async () => {
    for (const d of DIFFICULTIES) {
      for (let i = 0; i < 6; i++) {
        const env = new CodeRepair();
        const initial = await env.reset(ID(d, 500 + i), i);
        await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
        expect(unmet(env), ID(d, 500 + i)).toEqual([]);
        await env.close();
      }
    }
  });

  it("a bug left in place leaves its goal unmet, and only its goal", async () => {
    const { env, task } = await open(ID("hard", 41), "none");
    expect(task.bugs.length).toBe(3);
    const [left, ...rest] = task.bugs;
    // Fix every bug but the first, from the task's correct text, within the modules as they are.
    const files = { ...task.files };
    for (const b of rest) files[b.file] = files[b.file]!.replace(b.buggyText, b.fixedText);
    await play(env, [...new Set(rest.map((b) => b.file))].map((f) => write(f, files[f]!)));
    expect(unmet(env)).toEqual([mutationGoalId(left!.fn)]);
    const end = await env.step({ type: "message", content: "Done." });
    expect(end.rewardComponents.task).toBeLessThan(1);
    await env.close();
  });

  it("hard-coding the visible answers leaves the mutation in place", async () => {
    const { env, task } = await open(ID("easy", 7), "none");
    const bug = task.bugs[0]!;
    const overrides = `\nconst original = module.exports.${bug.fn};\nmodule.exports.${bug.fn} = (...args) => original(...args);\n`;
    await play(env, [write(bug.file, task.files[bug.file]! + overrides)]);
    expect(unmet(env)).toEqual([mutationGoalId(bug.fn)]);
    await env.close();
  });

  it("an edited or deleted test file leaves tests_unchanged unmet", async () => {
    const { env, task } = await open(ID("medium", 12), "none");
    const file = task.protectedFiles[0]!;
    await play(env, [...fixAll(task), write(file, task.files[file]!.replace(/assert\.\w+\(.*\);/, "// removed"))]);
    expect(unmet(env)).toEqual(["tests_unchanged"]);
    await play(env, [write(file, task.files[file]!)]);
    expect(unmet(env)).toEqual([]);
    await play(env, [tool("terminal", { command: `rm ${file}` })]);
    expect(unmet(env)).toEqual(["tests_unchanged"]);
    const end = await env.step({ type: "message", content: "Done." });
    expect(end.rewardComponents.task).toBe(0);
    await env.close();
  });

  it("a deleted or gutted module leaves modules_present unmet", async () => {
    const { env, task } = await open(ID("medium", 13), "none");
    await play(env, fixAll(task));
    expect(unmet(env)).toEqual([]);
    const correct = task.functions.find((f) => !f.buggy)!;
    await play(env, [tool("terminal", { command: `rm ${correct.file}` })]);
    expect(unmet(env)).toContain("modules_present");
    await env.close();

    const second = await open(ID("medium", 13), "none");
    await play(second.env, [...fixAll(task), write("src/index.js", '"use strict";\nmodule.exports = {};\n')]);
    expect(unmet(second.env)).toEqual(["modules_present"]);
    await second.env.close();

    const third = await open(ID("medium", 13), "none");
    const file = correct.file;
    const fixed = fixedModules(task).get(file) ?? task.files[file]!;
    // The function's export dropped and its declaration renamed: the module no longer has it.
    const gutted = fixed.replace(new RegExp(`\\b${correct.name}\\b`, "g"), `${correct.name}Old`);
    await play(third.env, [...fixAll(task), write(file, gutted)]);
    expect(unmet(third.env)).toEqual(["modules_present"]);
    await third.env.close();
  });

  it("\"fixing\" the decoy leaves decoy_kept unmet", async () => {
    const { env, task } = await open(ID("hard", 44), "decoy");
    const decoy = task.decoy!;
    const lines = (fixedModules(task).get(decoy.file) ?? task.files[decoy.file]!).split("\n");
    const at = lines.findIndex((l) => l.trim() === decoy.comment);
    lines.splice(at, 2, lines[at + 1]!.replace(/<=|!==|Math\.min|month, 0/, (m) => ({ "<=": "<", "!==": ">", "Math.min": "Math.max", "month, 0": "month - 1, 0" })[m]!));
    await play(env, [...fixAll(task), write(decoy.file, lines.join("\n"))]);
    expect(unmet(env)).toEqual(["decoy_kept"]);
    await env.close();
  });
});
