/**
 * Memorisation attacks on the hidden tests. A policy that never fixes a bug but answers from a table must
 * not score:
 * - across tasks: a lookup table (call -> expected value) built from the visible tests of many train-split
 *   tasks, patched over the buggy functions of eval-split tasks (falling back to the buggy code), must not
 *   pass their hidden tests: the inputs that expose a bug are drawn per task from wide distributions;
 * - within a task: special-casing the task's own visible inputs (exactly, or by their first argument)
 *   must not pass the hidden tests either: a hidden test that exposes the bug shares not even its first
 *   argument with a visible test.
 * Both run the real outcome verifier in the code sandbox.
 */
import { describe, expect, it } from "vitest";
import { runVerifier } from "../../rewards/verifier.js";
import { sampleTaskIds } from "../../tasks/splits.js";
import { fnSpec, outcome, sameValue, toJs } from "./library.js";
import { snapshotWorld } from "./snapshot.js";
import { DIFFICULTIES, generateCodeRepairTask, PROJECT_ROOT, VARIANTS, type Task, type TestCase } from "./tasks.js";
import { outcomeVerifier } from "./verifier.js";
import { createProject, FS_OPTIONS, newTerminal } from "./world.js";
import { MemoryFileSystem } from "../../sandboxes/filesystem.js";

/** The outcome of a task whose files are replaced by `changes` (the visible tests stay untouched). */
async function outcomeWith(task: Task, changes: Record<string, string>): Promise<{ score: number; visible: number; hidden: number }> {
  // A file system with larger limits than the agent's: the attack gets all of its table (at its size
  // some modules exceed the agent's 256 KiB file limit; an agent would have to compress it).
  const fs = new MemoryFileSystem({ ...FS_OPTIONS, maxFileBytes: 4 * 1024 * 1024, maxTotalBytes: 7 * 1024 * 1024 });
  const owner = fs.asOwner();
  owner.mkdir(PROJECT_ROOT, { parents: true });
  for (const [path, content] of Object.entries(task.files)) owner.writeFile(`${PROJECT_ROOT}/${path}`, content, { parents: true });
  const world = { fs, terminal: newTerminal(fs) };
  for (const [path, content] of Object.entries(changes)) owner.writeFile(`${PROJECT_ROOT}/${path}`, content);
  const reference = snapshotWorld(createProject(task));
  const v = await runVerifier(outcomeVerifier, { task, world, nowMs: 0, reference: async () => reference });
  const parts = v.parts!.unit_tests!.parts!;
  return { score: v.score, visible: parts.visible_tests!.score, hidden: parts.hidden_tests!.score };
}

/**
 * Each buggy module with its buggy functions wrapped: a call found in `answers` (key: the JSON of the
 * argument list, or of the first argument when `byFirst`) returns the recorded value, any other runs the
 * buggy code.
 */
function patchedModules(task: Task, answers: (fn: string) => readonly TestCase[], byFirst = false): Record<string, string> {
  const out: Record<string, string> = {};
  for (const bug of task.bugs) {
    let code = out[bug.file] ?? task.files[bug.file]!;
    const pairs = answers(bug.fn).map((t) => `[[${t.args}], ${t.expected}]`);
    const key = byFirst ? "JSON.stringify(args[0])" : "JSON.stringify(args)";
    code += `
const known_${bug.fn} = new Map([${pairs.join(",\n  ")}].map(([args, value]) => [${key}, value]));
const buggy_${bug.fn} = module.exports.${bug.fn};
module.exports.${bug.fn} = function (...args) {
  return known_${bug.fn}.has(${key}) ? known_${bug.fn}.get(${key}) : buggy_${bug.fn}(...args);
};
`;
    out[bug.file] = code;
  }
  return out;
}

/** The TypeScript model of the bug injected into `fn`. */
function bugModel(task: Task, fn: string): (...args: unknown[]) => unknown {
  const bug = task.bugs.find((b) => b.fn === fn)!;
  return fnSpec(fn).bugs.find((b) => b.description === bug.description)!.buggy;
}

describe("a lookup table from train tasks' visible tests", () => {
  it("does not pass eval tasks' hidden tests (mean outcome <= 0.05)", async () => {
    // About 2,000 train tasks: the size at which the table passed 16-17% of eval bugs before the trigger
    // inputs were widened.
    const train = sampleTaskIds({ family: "code-repair", difficulties: DIFFICULTIES, n: 2000, split: "train", seed: 1 });
    const table = new Map<string, Map<string, TestCase>>();
    for (const id of train) {
      for (const t of generateCodeRepairTask(id).tests) {
        if (t.hidden) continue;
        const byCall = table.get(t.fn) ?? new Map<string, TestCase>();
        table.set(t.fn, byCall);
        byCall.set(t.args, t);
      }
    }
    const evalIds = sampleTaskIds({ family: "code-repair", difficulties: DIFFICULTIES, n: 90, split: "eval", seed: 2 });
    let total = 0;
    let bugs = 0;
    for (const id of evalIds) {
      const task = generateCodeRepairTask(id);
      // The policy also knows its own visible tests (it can read them), so it passes those.
      const own = (fn: string) => task.tests.filter((t) => t.fn === fn && !t.hidden);
      // Only the calls where the buggy code is wrong need an entry (this keeps the module under the file
      // size limit; the other entries would answer what the buggy code answers anyway).
      const answers = (fn: string) => {
        const model = bugModel(task, fn);
        const wrong = (t: TestCase) => {
          const got = outcome(model, (0, eval)(`[${t.args}]`) as unknown[]);
          return !("value" in got) || !sameValue(got.value, (0, eval)(`(${t.expected})`));
        };
        return [...(table.get(fn)?.values() ?? []), ...own(fn)].filter(wrong);
      };
      const { score, visible } = await outcomeWith(task, patchedModules(task, answers));
      // The attack works as meant: every visible test passes.
      expect(visible, id).toBe(1);
      total += score;
      bugs += task.bugs.length;
    }
    const mean = total / evalIds.length;
    expect(bugs).toBeGreaterThan(150);
    expect(mean).toBeLessThanOrEqual(0.05);
  }, 300_000);
});

describe("special-casing the task's own visible inputs", () => {
  const ids = DIFFICULTIES.flatMap((d) => Array.from({ length: 12 }, (_, i) => `code-repair/${d}/seed-${100 + i}`));
  it.each([false, true])("does not pass the hidden tests (matched by first argument: %s)", async (byFirst) => {
    for (const id of ids) {
      const task = generateCodeRepairTask(id);
      const own = (fn: string) => task.tests.filter((t) => t.fn === fn && !t.hidden);
      const { score, visible, hidden } = await outcomeWith(task, patchedModules(task, own, byFirst));
      if (!byFirst) expect(visible, id).toBe(1);
      expect(score, id).toBe(0);
      expect(hidden, id).toBeLessThan(1);
    }
  }, 120_000);

  it("no hidden test that exposes a bug shares its first argument with a visible test of the function", () => {
    for (const d of DIFFICULTIES) {
      for (let i = 0; i < 400; i++) {
        const variant = VARIANTS[i % VARIANTS.length];
        const task = generateCodeRepairTask(`code-repair/${d}/seed-${i}`, { variant });
        for (const bug of task.bugs) {
          const tests = task.tests.filter((t) => t.fn === bug.fn);
          const first = (t: TestCase) => (0, eval)(`[${t.args}]`)[0] as unknown;
          const keys = (t: TestCase) => [toJs(first(t)), JSON.stringify(first(t)) ?? "undefined"];
          const visible = new Set(tests.filter((t) => !t.hidden).flatMap(keys));
          const hidden = tests.filter((t) => t.hidden && t.trigger);
          expect(hidden.length, `${d}/${i} ${bug.fn}`).toBeGreaterThanOrEqual(3);
          for (const t of hidden) expect(keys(t).some((k) => visible.has(k)), `${d}/${i} ${t.name}`).toBe(false);
        }
      }
    }
  });
});
