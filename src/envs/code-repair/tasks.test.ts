import { afterAll, describe, expect, it } from "vitest";
import { LlmixError } from "../../core/errors.js";
import { Rng } from "../../core/rng.js";
import { CodeRunner } from "../../sandboxes/code-runner.js";
import { BUG_KINDS, LIBRARY, MODULES, outcome, sameValue, toJs } from "./library.js";
import { sampleTaskIds, splitOf } from "../../tasks/splits.js";
import { featuresOf, scenarioKey } from "../../tasks/features.js";
import { bugSplit, codeRepairTasks, DIFFICULTIES, generateCodeRepairTask, HELD_OUT_DIFFICULTIES, REPAIR_FEATURES, scenarioSplit, SIZE, VARIANTS, type Scenario, type Task } from "./tasks.js";
import { fixedModules } from "./env.js";

const runner = new CodeRunner();
afterAll(() => runner.close());

/** The bug report as a test file: the reported call must return the value the report says it should. */
function reportTest(task: Task): Record<string, string> {
  const r = task.report;
  if (!r) return {};
  return { ".report/report.test.js": `const assert = require("assert");\nconst { ${r.fn} } = require("../${r.file}");\ntest("report", () => { assert.deepEqual(${r.fn}(${r.args}), ${r.expected}); });\n` };
}

/** Run the project's visible and hidden tests (and the bug report's call) on a set of files; returns name -> passed. */
async function results(task: Task, files: Record<string, string>): Promise<Map<string, boolean>> {
  const all = { ...files, ...task.hiddenFiles, ...reportTest(task) };
  const entries = Object.keys(all).filter((p) => p.endsWith(".test.js")).sort();
  const run = await runner.run({ files: all, entries, seed: task.seed });
  expect(run.loadErrors).toEqual([]);
  return new Map(run.tests.map((t) => [`${t.file}|${t.name}`, t.status === "passed"]));
}

describe("the function library", () => {
  it("runs in the sandbox exactly as its TypeScript reference and bug models say", async () => {
    const rng = Rng.fromSeed(11);
    for (const m of MODULES) {
      for (const fn of LIBRARY[m]) {
        const variants = [{ label: "correct", source: fn.source, model: fn.ref }, ...fn.bugs.map((b) => ({ label: b.find, source: fn.source.replace(b.find, b.replace), model: b.buggy }))];
        for (const v of variants) {
          // Half of the inputs from the generator, the other half from each bug's trigger in turn.
          const inputs = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 || fn.bugs.length === 0 ? fn.gen(rng) : (fn.bugs[(i >> 1) % fn.bugs.length]!.trigger ?? fn.gen)(rng)));
          const lines = inputs.map((args) => {
            const o = outcome(v.model, args);
            const call = `${fn.name}(${args.map(toJs).join(", ")})`;
            return "value" in o
              ? `test(${JSON.stringify(call)}, () => { assert.deepEqual(${call}, ${toJs(o.value)}); });`
              : `test(${JSON.stringify(call)}, () => { assert.throws(() => ${call}); });`;
          });
          const run = await runner.run({ files: { "t.test.js": `${v.source}\n${lines.join("\n")}` }, entries: ["t.test.js"] });
          expect(run.loadErrors, `${fn.name} / ${v.label}`).toEqual([]);
          const failed = run.tests.filter((t) => t.status !== "passed");
          expect(failed, `${fn.name} / ${v.label}`).toEqual([]);
        }
      }
    }
  });

  it("injects each bug with an edit that occurs exactly once and changes behaviour", () => {
    const rng = Rng.fromSeed(3);
    for (const m of MODULES) {
      for (const fn of LIBRARY[m]) {
        for (const bug of fn.bugs) {
          expect(fn.source.split(bug.find).length, `${fn.name}: ${bug.find}`).toBe(2);
          const exposed = Array.from({ length: 200 }, () => (bug.trigger ?? fn.gen)(rng)).filter((args) => {
            const ref = outcome(fn.ref, args);
            const bad = outcome(bug.buggy, args);
            return "value" in ref && (!("value" in bad) || !sameValue(ref.value, bad.value));
          });
          expect(new Set(exposed.map((a) => toJs(a))).size, `${fn.name}: ${bug.description}`).toBeGreaterThanOrEqual(5);
        }
        if (fn.decoy) expect(fn.source.includes(fn.decoy.line), fn.name).toBe(true);
      }
    }
  });
});

describe("generated tasks", () => {
  it("are pure functions of their id", () => {
    for (const d of DIFFICULTIES) {
      const id = `code-repair/${d}/seed-5`;
      expect(JSON.stringify(generateCodeRepairTask(id))).toBe(JSON.stringify(generateCodeRepairTask(id)));
    }
  });

  it("have the size and bugs of their difficulty, and every variant when forced", () => {
    for (const d of DIFFICULTIES) {
      for (let i = 0; i < 30; i++) {
        const task = generateCodeRepairTask(`code-repair/${d}/seed-${i}`);
        expect(task.bugs.length).toBeGreaterThanOrEqual(SIZE[d].bugs[0]);
        expect(task.bugs.length).toBeLessThanOrEqual(SIZE[d].bugs[1]);
        expect(new Set(task.bugs.map((b) => b.fn)).size).toBe(task.bugs.length);
        if (d === "easy") expect(task.variant).toBe("none");
        if (d === "easy") expect(task.report).toBe(null);
        if (d !== "easy") expect(new Set(task.bugs.map((b) => b.file)).size).toBeGreaterThanOrEqual(2);
        // A reported bug is never the only one, nor the one an injection names.
        if (task.report) expect(task.bugs.length).toBeGreaterThanOrEqual(2);
        if (task.report && task.injection) expect(task.injection.text).not.toMatch(new RegExp(`\\b${task.report.fn}\\b`));
      }
    }
    for (const variant of VARIANTS) {
      const task = generateCodeRepairTask("code-repair/medium/seed-3", { variant });
      expect(task.variant).toBe(variant);
      expect(task.decoy !== null).toBe(variant === "decoy");
      expect(task.injection !== null).toBe(variant === "injection");
      if (task.decoy) expect(task.files[task.decoy.file]).toContain(task.decoy.comment);
      if (task.injection) expect(task.files[task.injection.file]).toContain(task.injection.text);
    }
    expect(() => codeRepairTasks({ variant: "nope" as never })).toThrow(LlmixError);
    expect(() => generateCodeRepairTask("code-repair/extreme/seed-1")).toThrow(/unknown difficulty/);
  });

  it("fail exactly their triggering tests as generated, and pass every test once the bugs are fixed", async () => {
    for (const d of DIFFICULTIES) {
      for (let i = 0; i < 12; i++) {
        for (const variant of [undefined, "injection", "decoy"] as const) {
          if (variant && i % 4 !== 0) continue;
          const task = generateCodeRepairTask(`code-repair/${d}/seed-${i * 7}`, { variant });
          const before = await results(task, task.files);
          for (const t of task.tests) expect(before.get(`${t.file}|${t.name}`), `${d}/${i} ${t.name}`).toBe(!t.trigger);
          if (task.report) expect(before.get(".report/report.test.js|report"), `${d}/${i} report`).toBe(false);
          // The API checks pass on the project as generated (they compare src/index.js with the modules).
          for (const a of task.apiTests) expect(before.get(`${a.file}|${a.name}`), `${d}/${i} ${a.name}`).toBe(true);
          // Every bug is exposed by visible and by hidden tests, with different inputs.
          // Every bug is exposed by visible tests (or, for the reported one, only by the report) and by hidden
          // tests, with different inputs.
          for (const bug of task.bugs) {
            const trig = task.tests.filter((t) => t.fn === bug.fn && t.trigger);
            const isReported = task.report?.fn === bug.fn;
            expect(trig.some((t) => !t.hidden), `${d}/${i} ${bug.fn}`).toBe(!isReported);
            expect(trig.some((t) => t.hidden)).toBe(true);
            const visibleArgs = new Set([...trig.filter((t) => !t.hidden).map((t) => t.args), ...(isReported ? [task.report!.args] : [])]);
            expect(trig.filter((t) => t.hidden).every((t) => !visibleArgs.has(t.args))).toBe(true);
          }
          const fixed = { ...task.files, ...Object.fromEntries(fixedModules(task)) };
          const after = await results(task, fixed);
          expect([...after.values()].every(Boolean), `${d}/${i}`).toBe(true);
          expect(after.size).toBe(task.tests.length + task.apiTests.length + (task.report ? 1 : 0));
        }
      }
    }
  });
});

describe("the train/eval split of the bug catalogue", () => {
  it("deals every function's bugs to both splits and the one-bug functions alternately", () => {
    const count = { train: 0, eval: 0 };
    for (const m of MODULES) {
      for (const fn of LIBRARY[m]) {
        const splits = fn.bugs.map((b) => bugSplit(fn.name, b));
        for (const s of splits) count[s]++;
        if (fn.bugs.length >= 2) expect(new Set(splits).size, fn.name).toBe(2);
      }
    }
    expect(Math.abs(count.train - count.eval)).toBeLessThanOrEqual(1);
  });

  it("gives every bug kind bugs in both splits, so eval holds out bugs and combinations, not whole kinds", () => {
    for (const kind of BUG_KINDS) {
      const splits = new Set(MODULES.flatMap((m) => LIBRARY[m].flatMap((fn) => fn.bugs.filter((b) => b.kind === kind).map((b) => bugSplit(fn.name, b)))));
      expect([...splits].sort(), kind).toEqual(["eval", "train"]);
    }
  });

  it("injects only bugs of the task's split: no eval task has a (function, mutation) of a train task", () => {
    const combos = { train: new Set<string>(), eval: new Set<string>() };
    for (const split of ["train", "eval"] as const) {
      for (const id of sampleTaskIds({ family: "code-repair", difficulties: DIFFICULTIES, n: 600, split, seed: 4 })) {
        const task = generateCodeRepairTask(id);
        expect(task.bugs.length, id).toBeGreaterThanOrEqual(SIZE[task.difficulty].bugs[0]);
        for (const b of task.bugs) combos[split].add(`${b.fn}: ${b.description}`);
      }
    }
    expect([...combos.eval].filter((c) => combos.train.has(c))).toEqual([]);
    // Both splits use their whole half of the catalogue.
    expect(combos.train.size).toBeGreaterThanOrEqual(17);
    expect(combos.eval.size).toBeGreaterThanOrEqual(17);
    expect(splitOf("code-repair/easy/seed-1")).toMatch(/train|eval/);
  });
});

describe("the scenario space", () => {
  const generator = codeRepairTasks();

  it("computes every declared feature for every task, from what the agent must find and fix", () => {
    const declared = REPAIR_FEATURES.declared.map((f) => f.name);
    for (const d of DIFFICULTIES) {
      for (let i = 0; i < 40; i++) {
        const id = `code-repair/${d}/seed-${i}`;
        const features = featuresOf(generator, id);
        expect(Object.keys(features).sort()).toEqual([...declared].sort());
        const task = generateCodeRepairTask(id);
        expect(String(features.bugs).split("+")).toHaveLength(task.bugs.length);
        expect(features.reported === "none").toBe(task.report === null);
        expect(features.modules).toBe(new Set(task.bugs.map((b) => b.file)).size);
      }
    }
  });

  it("holds out whole scenario combinations on medium and hard: eval ids draw only eval combinations", () => {
    for (const d of HELD_OUT_DIFFICULTIES) {
      const keys = { train: new Set<string>(), eval: new Set<string>() };
      for (const split of ["train", "eval"] as const) {
        for (const id of sampleTaskIds({ family: "code-repair", difficulties: [d], n: 150, split, seed: 9 })) {
          const features = featuresOf(generator, id);
          expect(scenarioSplit(d, features as unknown as Scenario), id).toBe(split);
          keys[split].add(scenarioKey(features, REPAIR_FEATURES.declared));
        }
      }
      expect([...keys.eval].filter((k) => keys.train.has(k))).toEqual([]);
      // Wide: nearly every sampled task is a scenario of its own.
      expect(keys.train.size).toBeGreaterThanOrEqual(100);
    }
    expect(scenarioSplit("easy", featuresOf(generator, "code-repair/easy/seed-1") as unknown as Scenario)).toBe(null);
  });
});
