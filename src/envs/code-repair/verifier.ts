/**
 * The outcome verifier: gate(protected_files, unit_tests).
 *
 * - protected_files (state difference): the visible test files are exactly as in the reference solver's
 *   final world (which never touches them). Deleting, emptying or editing one zeroes the outcome.
 * - unit_tests: the ORIGINAL visible tests and the hidden tests run in the code sandbox against the
 *   project's current source files. A bug counts as fixed when every test of its function passes, visible
 *   and hidden (hard-coding the visible answers does not fix it); the score is the fraction of bugs fixed,
 *   or 0 when a test of a function that had no bug fails (a regression, e.g. "fixing" the decoy).
 *   Its parts keep the raw fractions: visible_tests, hidden_tests (tests passed), bugs_fixed, no_regressions.
 */
import type { JsonValue } from "../../core/json.js";
import { gate } from "../../rewards/compose.js";
import { stateDiff, type StateDiffOutcome } from "../../rewards/state-diff.js";
import { defineVerifier, type Verifier, type VerifierResult } from "../../rewards/verifier.js";
import { runCode, type CodeRunResult } from "../../sandboxes/code-runner.js";
import type { Task, TestCase } from "./tasks.js";
import { projectFiles, snapshotFiles, type World } from "./world.js";

export interface VerifyInput {
  task: Task;
  world: World;
  /** Virtual time the tests see. */
  nowMs: number;
  /** The reference solver's final world (snapshotWorld JSON). */
  reference: () => Promise<JsonValue>;
}

/** The protected files' contents (null: missing) in a set of project files. */
export function protectedContents(task: Task, files: Readonly<Record<string, string>>): Record<string, string | null> {
  return Object.fromEntries(task.protectedFiles.map((p) => [p, Object.prototype.hasOwnProperty.call(files, p) ? files[p]! : null]));
}

/** Compare protected files: every one must be present and unchanged. */
export function diffProtected(expected: Record<string, string | null>, actual: Record<string, string | null>): StateDiffOutcome {
  const differences: Record<string, JsonValue> = {};
  let matched = 0;
  for (const path of Object.keys(expected).sort()) {
    if (expected[path] === actual[path]) matched++;
    else differences[path] = actual[path] === null || actual[path] === undefined ? "deleted" : "modified";
  }
  const total = Object.keys(expected).length;
  return { equal: matched === total, matched, total, differences };
}

const protectedFiles = stateDiff<VerifyInput, Record<string, string | null>>({
  name: "protected_files",
  expected: async (input) => protectedContents(input.task, snapshotFiles(await input.reference())),
  actual: (input) => protectedContents(input.task, projectFiles(input.world.fs)),
  diff: diffProtected,
  allOrNothing: true,
});

/** The files the verifier runs: the project's current files, with the original visible tests and the hidden tests. */
export function verificationFiles(task: Task, current: Readonly<Record<string, string>>): { files: Record<string, string>; entries: string[] } {
  const files: Record<string, string> = {};
  for (const [path, content] of Object.entries(current)) {
    if (/\.(js|json)$/.test(path) && !path.startsWith("test/") && !path.startsWith(".hidden/")) files[path] = content;
  }
  for (const path of task.protectedFiles) files[path] = task.files[path]!;
  Object.assign(files, task.hiddenFiles);
  return { files, entries: [...task.protectedFiles, ...Object.keys(task.hiddenFiles).sort()] };
}

/** Whether each test case passed in a run (a name reported twice must pass every time). */
export function testVerdicts(task: Task, run: CodeRunResult): Array<{ test: TestCase; passed: boolean; status: string; message: string | null }> {
  const byKey = new Map<string, Array<CodeRunResult["tests"][number]>>();
  for (const t of run.tests) {
    const key = `${t.file}\u0000${t.name}`;
    byKey.set(key, [...(byKey.get(key) ?? []), t]);
  }
  return task.tests.map((test) => {
    const got = byKey.get(`${test.file}\u0000${test.name}`) ?? [];
    const bad = got.find((g) => g.status !== "passed");
    const loadError = run.loadErrors.find((e) => e.file === test.file);
    return {
      test,
      passed: got.length > 0 && !bad,
      status: got.length === 0 ? "not run" : (bad?.status ?? "passed"),
      message: bad?.message ?? (got.length === 0 ? (loadError ? `its file could not be loaded: ${loadError.message}` : "the test did not run") : null),
    };
  });
}

const fraction = (n: number, d: number) => (d === 0 ? 1 : n / d);

const unitTests = defineVerifier<VerifyInput>("unit_tests", async (input): Promise<VerifierResult> => {
  const { task } = input;
  const { files, entries } = verificationFiles(task, projectFiles(input.world.fs));
  const run = await runCode({ files, entries, nowMs: input.nowMs, seed: task.seed });
  const verdicts = testVerdicts(task, run);
  const visible = verdicts.filter((v) => !v.test.hidden);
  const hidden = verdicts.filter((v) => v.test.hidden);
  const fnPasses = (fn: string) => verdicts.filter((v) => v.test.fn === fn).every((v) => v.passed);
  const bugs = task.bugs.map((b) => ({ fn: b.fn, file: b.file, fixed: fnPasses(b.fn) }));
  const regressions = task.functions.filter((f) => !f.buggy && !fnPasses(f.name)).map((f) => f.name);
  const fixed = bugs.filter((b) => b.fixed).length;
  const part = (score: number, details: Record<string, JsonValue>): VerifierResult => ({ score, passed: score === 1, details });
  const score = regressions.length === 0 ? fixed / bugs.length : 0;
  const failing = verdicts
    .filter((v) => !v.passed)
    .slice(0, 20)
    .map((v) => ({ file: v.test.file, name: v.test.name, fn: v.test.fn, hidden: v.test.hidden, status: v.status, message: v.message }));
  return {
    score,
    passed: score === 1,
    details: {
      rule: "bugs_fixed if no_regressions else 0",
      run_status: run.status,
      run_message: run.message,
      failing: failing as unknown as JsonValue,
    },
    parts: {
      visible_tests: part(fraction(visible.filter((v) => v.passed).length, visible.length), { passed: visible.filter((v) => v.passed).length, total: visible.length }),
      hidden_tests: part(fraction(hidden.filter((v) => v.passed).length, hidden.length), { passed: hidden.filter((v) => v.passed).length, total: hidden.length }),
      bugs_fixed: part(fraction(fixed, bugs.length), { bugs: bugs as unknown as JsonValue }),
      no_regressions: part(regressions.length === 0 ? 1 : 0, { regressions }),
    },
  };
});

/** The outcome verifier of the environment. */
export const outcomeVerifier: Verifier<VerifyInput> = gate("outcome", protectedFiles, unitTests);
