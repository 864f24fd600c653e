import { describe, expect, it } from "vitest";
import type { Action, StepResult, ToolResult } from "../../core/contract.js";
import { fingerprint } from "../../core/json.js";
import { runPolicy } from "../../core/run-policy.js";
import type { VerifierResult } from "../../rewards/verifier.js";
import { BUILTIN_ENVIRONMENTS } from "../index.js";
import { CodeRepair, fixedModules } from "./env.js";
import { unifiedDiff } from "./patch.js";
import { DIFFICULTIES, VARIANTS, type Task, type Variant } from "./tasks.js";
import type { TestRunOutput } from "./tools.js";

const ID = (d: string, n: number) => `code-repair/${d}/seed-${n}`;
const tool = (name: string, args: Record<string, unknown>): Action => ({ type: "tool_call", tool: name, args });
const say = (content: string): Action => ({ type: "message", content });
const resultOf = (r: StepResult) => r.info.tool_result as ToolResult;
const verdictOf = (r: StepResult) => r.info.verdict as VerifierResult;

async function open(id = ID("medium", 11), variant?: Variant, seed = 3) {
  const env = new CodeRepair(variant ? { scenario: { variant } } : {});
  await env.reset(id, seed);
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  return { env, task };
}

async function steps(env: CodeRepair, actions: Action[]): Promise<StepResult[]> {
  const out: StepResult[] = [];
  for (const a of actions) out.push(await env.step(a));
  return out;
}

describe("the environment", () => {
  it("is registered", () => {
    expect(BUILTIN_ENVIRONMENTS.map((e) => e.id)).toContain("code-repair");
  });

  it("describes the project and the rules in its first observation", async () => {
    const env = new CodeRepair();
    const obs = await env.reset(ID("easy", 1), 1);
    expect(obs.rendered).toMatch(/The project is at \/project/);
    expect(obs.rendered).toMatch(/do not change or delete them/);
    expect(obs.rendered).toMatch(/test\/\w+\.test\.js/);
    expect(env.tools().map((t) => t.name)).toEqual(["list_files", "read_file", "write_file", "apply_patch", "run_tests", "terminal"]);
  });
});

describe("the rules the verifier applies", () => {
  // Every part of the verdict that can zero the outcome is a rule the agent was told (issue 13).
  const STATED: Record<string, RegExp> = {
    protected_files: /the tests in test\/ are the specification: do not change or delete them/,
    visible_tests: /fix them so that every test passes/,
    hidden_tests: /hidden tests with other inputs check every function/,
    bugs_fixed: /Find the bug\(s\) in src\/ and fix them/,
    no_regressions: /Do not change functions that are correct/,
    api_intact: /do not break other modules: every module in src\/ \(src\/index\.js\s+included\) must still load and export the same functions/,
  };

  it("states each of them in the first observation", async () => {
    const env = new CodeRepair();
    const initial = await env.reset(ID("medium", 3), 1);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    const names: string[] = [];
    const walk = (v: VerifierResult) => {
      for (const [name, part] of Object.entries(v.parts ?? {})) {
        if (name !== "unit_tests") names.push(name);
        walk(part);
      }
    };
    walk(run.final!.info.verdict as VerifierResult);
    expect(names.sort()).toEqual(Object.keys(STATED).sort());
    for (const [name, text] of Object.entries(STATED)) expect(initial.rendered, name).toMatch(text);
    await env.close();
  });
});

describe("the reference solver", () => {
  const cases = DIFFICULTIES.flatMap((d) => VARIANTS.map((v) => [d, v] as const));
  it.each(cases)("solves %s / %s with outcome 1", async (difficulty, variant) => {
    for (let i = 0; i < 3; i++) {
      const env = new CodeRepair({ scenario: { variant } });
      const initial = await env.reset(ID(difficulty, 20 + i), i);
      const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
      expect(run.final!.terminated).toBe(true);
      expect(run.final!.rewardComponents.task, `${difficulty}/${variant}/${i}`).toBe(1);
      const tools = run.transitions.filter((t) => t.action.type === "tool_call").map((t) => resultOf(t.result).status);
      expect(tools.every((s) => s === "ok")).toBe(true);
      await env.close();
    }
  });
});

describe("probes score 0 on every difficulty and variant", () => {
  const names = ["does-nothing", "deletes-tests", "edits-tests", "hardcodes-visible", "infinite-loop"];
  it.each(names)("%s", async (name) => {
    for (const d of DIFFICULTIES) {
      for (const variant of VARIANTS) {
        const env = new CodeRepair({ scenario: { variant } });
        const initial = await env.reset(ID(d, 9), 2);
        const run = await runPolicy(env, env.probes()[name]!, { maxSteps: env.maxSteps, initial });
        expect(run.final!.terminated || run.final!.truncated).toBe(true);
        expect(run.final!.rewardComponents.task, `${name} on ${d}/${variant}`).toBe(0);
        await env.close();
      }
    }
  });

  it("each fails for the reason it should", async () => {
    const reasons: Record<string, (v: VerifierResult) => void> = {
      "deletes-tests": (v) => expect(v.parts!.protected_files!.details.differences).toMatchObject({ "test/arrays.test.js": "deleted" }),
      "edits-tests": (v) => expect(Object.values(v.parts!.protected_files!.details.differences as object)).toContain("modified"),
      // The visible tests pass, the hidden ones do not: the bug is not fixed.
      "hardcodes-visible": (v) => {
        const unit = v.parts!.unit_tests!;
        expect(unit.parts!.visible_tests!.score).toBe(1);
        expect(unit.parts!.hidden_tests!.score).toBeLessThan(1);
        expect(unit.parts!.bugs_fixed!.score).toBe(0);
      },
      "infinite-loop": (v) => expect(v.parts!.unit_tests!.details.run_status).toBe("timeout"),
    };
    for (const [name, check] of Object.entries(reasons)) {
      const env = new CodeRepair();
      const initial = await env.reset("code-repair/hard/seed-771", 7);
      const run = await runPolicy(env, env.probes()[name]!, { maxSteps: env.maxSteps, initial });
      check(verdictOf(run.final!));
    }
  });
});

describe("a bug shown only by a report", () => {
  /** The first medium task (from seed 0) whose statement carries a bug report. */
  async function openReported() {
    for (let n = 0; ; n++) {
      const env = new CodeRepair({ scenario: { variant: "none" } });
      const initial = await env.reset(ID("medium", n), 3);
      const task = (env as unknown as { episode: { task: Task } }).episode.task;
      if (task.report) return { env, task, initial };
      await env.close();
    }
  }

  it("is stated in the first observation, and fixing only what the visible tests show leaves it unfixed", async () => {
    const { env, task, initial } = await openReported();
    const report = task.report!;
    expect(task.bugs.map((b) => b.fn)).toContain(report.fn);
    expect(initial.rendered).toContain(report.text);
    // Every visible test of the reported function passes with the bug in place.
    expect(task.tests.filter((t) => t.fn === report.fn && !t.hidden).every((t) => !t.trigger)).toBe(true);
    const others = task.bugs.filter((b) => b.fn !== report.fn);
    const files = new Map<string, string>();
    for (const b of others) files.set(b.file, (files.get(b.file) ?? task.files[b.file]!).replace(b.buggyText, b.fixedText));
    const r = await steps(env, [...[...files].map(([path, content]) => tool("write_file", { path, content })), tool("run_tests", { file: null }), say("fixed")]);
    expect((resultOf(r.at(-2)!).output as unknown as TestRunOutput).failed).toBe(0);
    expect(r.at(-1)!.rewardComponents.task).toBeCloseTo(others.length / task.bugs.length, 10);
    await env.close();
  });
});

describe("the verifier", () => {
  it("gives partial credit per bug fixed, and 0 on a regression", async () => {
    const { env, task } = await open(ID("hard", 4), "none");
    expect(task.bugs.length).toBe(3);
    const first = task.bugs[0]!;
    const fixedFirst = task.files[first.file]!.replace(first.buggyText, first.fixedText);
    const r = await steps(env, [tool("write_file", { path: first.file, content: fixedFirst }), say("fixed one")]);
    const v = verdictOf(r.at(-1)!);
    expect(r.at(-1)!.rewardComponents.task).toBeCloseTo(1 / 3, 10);
    expect(v.parts!.unit_tests!.parts!.bugs_fixed!.details.bugs).toEqual(task.bugs.map((b) => ({ fn: b.fn, file: b.file, fixed: b === first })));

    // Fix everything but break a correct function: outcome 0.
    const other = await open(ID("hard", 4), "none");
    const fixes = [...fixedModules(other.task)].map(([path, content]) => tool("write_file", { path, content }));
    const correct = other.task.functions.find((f) => !f.buggy)!;
    await steps(other.env, fixes);
    const source = fixedModules(other.task).get(correct.file) ?? other.task.files[correct.file]!;
    const sabotaged = source.replace(`function ${correct.name}(`, `function ${correct.name}() { return "broken"; }\nfunction ${correct.name}_old(`);
    const end = await steps(other.env, [tool("write_file", { path: correct.file, content: sabotaged }), say("done")]);
    const verdict = verdictOf(end.at(-1)!);
    expect(verdict.parts!.unit_tests!.parts!.no_regressions!.details.regressions).toContain(correct.name);
    expect(end.at(-1)!.rewardComponents.task).toBe(0);
  });

  // The sensitivity mutant of `llmix check` (1.1.0 kept outcome 1): the reference's episode with an extra
  // write_file that puts another module's content in src/index.js, a file no unit test imports.
  it("gives 0 when another module is broken: src/index.js overwritten with another file's content", async () => {
    const { env, task } = await open(ID("medium", 764217683), undefined, 1301);
    const actions: Action[] = [];
    const policy = env.referenceSolver();
    for (let i = 0; i < 40; i++) {
      // The reference returns plain actions (never a PolicyDecision with policy data).
      const a = (await policy.act({ step: i + 1 } as never)) as Action;
      actions.push(a);
      if (a.type === "message") break;
    }
    const write = actions.findIndex((a) => a.type === "tool_call" && a.tool === "write_file");
    expect(write).toBeGreaterThan(0);
    const content = (actions[write] as unknown as { args: { content: string } }).args.content;
    actions.splice(write, 0, tool("write_file", { path: "src/index.js", content }));
    const r = await steps(env, actions);
    const v = verdictOf(r.at(-1)!);
    const unit = v.parts!.unit_tests!;
    expect(unit.parts!.bugs_fixed!.score).toBe(1);
    expect(unit.parts!.api_intact!.score).toBe(0);
    expect((unit.parts!.api_intact!.details.broken as Array<{ module: string }>).map((b) => b.module)).toEqual(["src/index.js"]);
    expect(r.at(-1)!.rewardComponents.task).toBe(0);
    expect(task.apiTests.map((a) => a.module)).toContain("src/index.js");
  });

  it("gives 0 when a module stops exporting one of its functions or src/index.js re-exports a changed one", async () => {
    const { task } = await open(ID("medium", 11));
    const fixes = [...fixedModules(task)].map(([path, content]) => tool("write_file", { path, content }));
    const correct = task.functions.find((f) => !f.buggy)!;
    const source = fixedModules(task).get(correct.file) ?? task.files[correct.file]!;
    const dropped = source.replace(new RegExp(`(module\\.exports = \\{[^}]*)\\b${correct.name}, |, ${correct.name}\\b`), "$1");
    expect(dropped).not.toBe(source);
    const wrapped = `${task.files["src/index.js"]}module.exports.${correct.name} = () => "changed";\n`;
    for (const [path, content, module] of [[correct.file, dropped, correct.file], ["src/index.js", wrapped, "src/index.js"]] as const) {
      const { env } = await open(ID("medium", 11));
      const r = await steps(env, [...fixes, tool("write_file", { path, content }), say("done")]);
      const api = verdictOf(r.at(-1)!).parts!.unit_tests!.parts!.api_intact!;
      expect((api.details.broken as Array<{ module: string }>).map((b) => b.module)).toContain(module);
      expect(r.at(-1)!.rewardComponents.task).toBe(0);
    }
  });

  it("gives 0 when the tests were changed, even with every bug fixed", async () => {
    const { env, task } = await open(ID("easy", 6));
    const fixes = [...fixedModules(task)].map(([path, content]) => tool("write_file", { path, content }));
    const file = task.protectedFiles[0]!;
    const r = await steps(env, [...fixes, tool("write_file", { path: file, content: `${task.files[file]}\n// reviewed\n` }), say("done")]);
    const v = verdictOf(r.at(-1)!);
    expect(v.parts!.protected_files!.passed).toBe(false);
    expect(v.parts!.unit_tests!.score).toBe(1);
    expect(r.at(-1)!.rewardComponents.task).toBe(0);
  });

  it("accepts another correct fix (a new helper file, different code) and extra test files", async () => {
    const { env, task } = await open(ID("easy", 8));
    const actions: Action[] = [tool("write_file", { path: "test/extra.test.js", content: 'test("mine", () => {});\n' })];
    for (const [path, content] of fixedModules(task)) {
      actions.push(tool("write_file", { path: "src/helpers/keep.js", content: "module.exports = {};\n" }));
      actions.push(tool("write_file", { path, content: `${content}\n// Fixed: see the test suite.\nrequire("./helpers/keep");\n` }));
    }
    const r = await steps(env, [...actions, say("done")]);
    expect(r.at(-1)!.rewardComponents.task).toBe(1);
  });
});

describe("tools", () => {
  it("run_tests reports failures, then passes after the fix; one file can be run alone", async () => {
    const { env, task } = await open(ID("easy", 3));
    const bug = task.bugs[0]!;
    const [before] = await steps(env, [tool("run_tests", { file: null })]);
    const out = resultOf(before!).output as unknown as TestRunOutput;
    expect(out.failed).toBeGreaterThan(0);
    expect(out.failures.every((f) => f.name.startsWith(bug.fn))).toBe(true);
    expect(before!.observation.rendered).toMatch(/^\d+ tests: \d+ passed, \d+ failed\nFAIL test\//);
    const patch = unifiedDiff(bug.file, task.files[bug.file]!, task.files[bug.file]!.replace(bug.buggyText, bug.fixedText));
    const [patched, after, one] = await steps(env, [
      tool("apply_patch", { patch }),
      tool("run_tests", { file: null }),
      tool("run_tests", { file: bug.file.replace("src/", "test/").replace(".js", ".test.js") }),
    ]);
    expect(patched!.observation.rendered).toBe(`Patched ${bug.file} (1 hunk).`);
    expect((resultOf(after!).output as unknown as TestRunOutput).failed).toBe(0);
    expect((resultOf(one!).output as unknown as TestRunOutput).total).toBeLessThan((resultOf(after!).output as unknown as TestRunOutput).total);
  });

  it("answers bad inputs with clear errors and changes nothing", async () => {
    const { env, task } = await open(ID("easy", 2));
    const before = fingerprint((await env.snapshot()).world);
    const file = Object.keys(task.files).find((f) => f.startsWith("src/") && f !== "src/index.js")!;
    const cases: Array<[Action, ToolResult["status"], RegExp]> = [
      [tool("read_file", {}), "invalid", /args\.path/],
      [tool("read_file", { path: "" }), "invalid", /args\.path/],
      [tool("read_file", { path: "src/nope.js" }), "error", /No such file/],
      [tool("read_file", { path: "src" }), "error", /Is a directory/],
      [tool("read_file", { path: "../etc/passwd" }), "error", /outside the sandbox|leaves the sandbox/],
      [tool("read_file", { path: "/etc/passwd" }), "error", /outside the sandbox/],
      [tool("read_file", { path: "../../../../../x" }), "error", /leaves the sandbox root/],
      [tool("list_files", { path: "README.md" }), "error", /Not a directory/],
      [tool("list_files", { path: "/" }), "error", /outside the sandbox/],
      [tool("write_file", { path: "../escape.js", content: "x" }), "error", /outside the sandbox/],
      [tool("write_file", { path: "src", content: "x" }), "error", /Is a directory/],
      [tool("write_file", { path: "a.js", content: "x".repeat(200_001) }), "invalid", /args\.content/],
      [tool("write_file", { path: "a.js", content: 7 }), "invalid", /args\.content/],
      [tool("apply_patch", { patch: "not a diff" }), "error", /no file changes found/],
      [tool("apply_patch", { patch: `--- a/${file}\n+++ b/${file}\n@@ -1,1 +1,1 @@\n-nothing like this\n+x\n` }), "error", new RegExp(`hunk 1 of 1 \\(@@ -1,1 \\+1,1 @@\\) for ${file} does not apply: line 1 should be \`nothing like this\``)],
      [tool("apply_patch", { patch: "--- a/../x.js\n+++ b/../x.js\n@@ -1 +1 @@\n-a\n+b\n" }), "error", /outside the sandbox/],
      [tool("apply_patch", { patch: `--- a/src/missing.js\n+++ b/src/missing.js\n@@ -1 +1 @@\n-a\n+b\n` }), "error", /No such file/],
      [tool("run_tests", { file: "src/index.js" }), "error", /not a test file/],
      [tool("run_tests", { file: "test/none.test.js" }), "error", /not a test file/],
      [tool("run_tests", { file: 3 }), "invalid", /args\.file/],
      [tool("nope", {}), "invalid", /unknown tool "nope"/],
    ];
    for (const [action, status, message] of cases) {
      const r = await env.step(action);
      expect(resultOf(r).status, JSON.stringify(action).slice(0, 120)).toBe(status);
      expect(r.observation.rendered, JSON.stringify(action).slice(0, 120)).toMatch(message);
      if (status === "invalid") expect(r.rewardComponents.invalid_call).toBeLessThan(0);
    }
    // A patch with one good and one bad file changes neither.
    const good = unifiedDiff(file, task.files[file]!, `${task.files[file]!}// note\n`);
    const r = await env.step(tool("apply_patch", { patch: `${good}--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-not the title\n+x\n` }));
    expect(resultOf(r).status).toBe("error");
    expect(fingerprint((await env.snapshot()).world)).toBe(before);
    // So does one whose second file applies but is then too large to write (the first is put back).
    await env.step(tool("write_file", { path: "big.txt", content: "a\n".repeat(70_000) }));
    const withBig = fingerprint((await env.snapshot()).world);
    const grow = `--- a/big.txt\n+++ b/big.txt\n@@ -70000,1 +70000,2 @@\n a\n+${"y".repeat(130_000)}\n`;
    const r2 = await env.step(tool("apply_patch", { patch: `${good}${grow}` }));
    expect(resultOf(r2).status).toBe("error");
    expect(r2.observation.rendered).toMatch(/too large|limit/i);
    expect(fingerprint((await env.snapshot()).world)).toBe(withBig);
  });

  it("the terminal changes files; list_files sees the change", async () => {
    const { env } = await open(ID("easy", 2));
    const [a, b] = await steps(env, [tool("terminal", { command: "echo hi > note.txt && cat note.txt && ls" }), tool("list_files", { path: null })]);
    expect(a!.observation.rendered).toMatch(/^hi\nREADME\.md/);
    expect(b!.observation.rendered).toMatch(/note\.txt \(3 bytes\)/);
  });

  it("snapshots and restores mid-episode, continuing identically", async () => {
    const { env, task } = await open(ID("medium", 5));
    const [path, content] = [...fixedModules(task)][0]!;
    await steps(env, [tool("write_file", { path, content }), tool("terminal", { command: "cd src && pwd" })]);
    const snap = JSON.parse(JSON.stringify(await env.snapshot()));
    const rest = [tool("run_tests", { file: null }), tool("terminal", { command: "pwd" })];
    const a = await steps(env, rest);
    const other = new CodeRepair();
    await other.reset(ID("hard", 1), 1);
    await other.restore(snap);
    const b = await steps(other, rest);
    expect(b.map((r) => r.observation.rendered)).toEqual(a.map((r) => r.observation.rendered));
    expect(b[1]!.observation.rendered).toBe("/project/src");
  });
});
