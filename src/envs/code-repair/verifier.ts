/**
 * The outcome verifier: gate(protected_files, unit_tests).
 *
 * - protected_files (state difference): the visible test files are exactly as in the reference solver's
 *   final world (which never touches them). Deleting, emptying or editing one zeroes the outcome.
 * - unit_tests: the ORIGINAL visible tests and the hidden tests run in the code sandbox against the
 *   project's current source files. A bug counts as fixed when every test of its function passes, visible
 *   and hidden (hard-coding the visible answers does not fix it); the score is the fraction of bugs fixed,
 *   or 0 when a test of a function that had no bug fails (a regression, e.g. "fixing" the decoy), or when
 *   the project was damaged elsewhere: the hidden API checks (Task.apiTests) require every original module,
 *   src/index.js included, to still load and export its functions, and src/index.js's to behave as the
 *   modules' own (overwriting a file no test imports is collateral damage too).
 *   Its parts keep the raw fractions: visible_tests, hidden_tests (tests passed), bugs_fixed, no_regressions,
 *   api_intact.
 *   Every final state is scored, never an exception: files the sandbox cannot load (odd names, over its
 *   limits) are left out of the run and listed in details.skipped_files, as run_tests leaves them out.
 */
import type { JsonValue } from "../../core/json.js";
import { gate } from "../../rewards/compose.js";
import { stateDiff, type StateDiffOutcome } from "../../rewards/state-diff.js";
import { defineVerifier, type Verifier, type VerifierResult } from "../../rewards/verifier.js";
import { isRunnablePath, MAX_FILES, MAX_SOURCE_CHARS, runCode, type CodeRunResult } from "../../sandboxes/code-runner.js";
import { ValidationError } from "../../core/errors.js";
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

/** A file of the project the verifier does not run, and why. */
export interface SkippedFile {
  path: string;
  reason: "unloadable_name" | "over_limit";
}

/**
 * The files the verifier runs: the project's current source files, with the original visible tests and the
 * hidden tests. Any final state the agent can leave must give a request the code runner accepts (a refused
 * request would make the verifier throw and turn a failed episode into an infrastructure error), so files
 * the runner cannot take are left out and reported, exactly as run_tests leaves them out: names the sandbox
 * cannot load (spaces, non-ASCII, parentheses, quotes, over-long), and whatever would push the request over
 * the runner's file count or size limits. A module that needs a left-out file fails to load, so its tests
 * fail: the outcome is a score, never an exception.
 */
export function verificationFiles(task: Task, current: Readonly<Record<string, string>>): { files: Record<string, string>; entries: string[]; skipped: SkippedFile[] } {
  const files: Record<string, string> = {};
  const skipped: SkippedFile[] = [];
  // The task's own test files always go in, so room is reserved for them first.
  const fixed: Record<string, string> = {};
  for (const path of task.protectedFiles) fixed[path] = task.files[path]!;
  Object.assign(fixed, task.hiddenFiles);
  let count = Object.keys(fixed).length;
  let chars = Object.values(fixed).reduce((n, c) => n + c.length, 0);
  // The project's own files first, so that stray files cannot crowd out a module the tests need.
  const own = (path: string) => (Object.prototype.hasOwnProperty.call(task.files, path) ? 0 : 1);
  for (const path of Object.keys(current).sort((a, b) => own(a) - own(b) || (a < b ? -1 : a > b ? 1 : 0))) {
    if (!/\.(js|json)$/.test(path) || path.startsWith("test/") || path.startsWith(".hidden/")) continue;
    const content = current[path]!;
    if (!isRunnablePath(path)) skipped.push({ path, reason: "unloadable_name" });
    else if (count + 1 > MAX_FILES || chars + content.length > MAX_SOURCE_CHARS) skipped.push({ path, reason: "over_limit" });
    else {
      files[path] = content;
      count++;
      chars += content.length;
    }
  }
  Object.assign(files, fixed);
  return { files, entries: [...task.protectedFiles, ...Object.keys(task.hiddenFiles).sort()], skipped };
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

/** Whether each API check (Task.apiTests: a module still loads and exports its functions) passed in a run. */
export function apiVerdicts(task: Task, run: CodeRunResult): Array<{ module: string; passed: boolean; status: string; message: string | null }> {
  return task.apiTests.map((a) => {
    const got = run.tests.filter((t) => t.file === a.file && t.name === a.name);
    const bad = got.find((g) => g.status !== "passed");
    const loadError = run.loadErrors.find((e) => e.file === a.file);
    return {
      module: a.module,
      passed: got.length > 0 && !bad,
      status: got.length === 0 ? "not run" : (bad?.status ?? "passed"),
      message: bad?.message ?? (got.length === 0 ? (loadError?.message ?? "the check did not run") : null),
    };
  });
}

const fraction = (n: number, d: number) => (d === 0 ? 1 : n / d);

const unitTests = defineVerifier<VerifyInput>("unit_tests", async (input): Promise<VerifierResult> => {
  const { task } = input;
  const { files, entries, skipped } = verificationFiles(task, projectFiles(input.world.fs));
  let run: CodeRunResult;
  try {
    run = await runCode({ files, entries, nowMs: input.nowMs, seed: task.seed });
  } catch (error) {
    // verificationFiles builds only requests the runner accepts; should the runner still refuse one, that
    // is about the agent's files, so the episode is scored (no test ran: 0) with the reason, not dropped.
    // Anything else (the sandbox itself failing) stays an infrastructure error.
    if (!(error instanceof ValidationError)) throw error;
    run = { status: "error", tests: [], loadErrors: [], output: "", outputTruncated: false, message: `the project's files could not be run: ${error.message}`, ticks: 0 };
  }
  const verdicts = testVerdicts(task, run);
  const visible = verdicts.filter((v) => !v.test.hidden);
  const hidden = verdicts.filter((v) => v.test.hidden);
  const fnPasses = (fn: string) => verdicts.filter((v) => v.test.fn === fn).every((v) => v.passed);
  const bugs = task.bugs.map((b) => ({ fn: b.fn, file: b.file, fixed: fnPasses(b.fn) }));
  const regressions = task.functions.filter((f) => !f.buggy && !fnPasses(f.name)).map((f) => f.name);
  const api = apiVerdicts(task, run);
  const broken = api.filter((a) => !a.passed);
  const fixed = bugs.filter((b) => b.fixed).length;
  const part = (score: number, details: Record<string, JsonValue>): VerifierResult => ({ score, passed: score === 1, details });
  const score = regressions.length === 0 && broken.length === 0 ? fixed / bugs.length : 0;
  const failing = verdicts
    .filter((v) => !v.passed)
    .slice(0, 20)
    .map((v) => ({ file: v.test.file, name: v.test.name, fn: v.test.fn, hidden: v.test.hidden, status: v.status, message: v.message }));
  return {
    score,
    passed: score === 1,
    details: {
      rule: "bugs_fixed if no_regressions and api_intact else 0",
      run_status: run.status,
      run_message: run.message,
      // Files left out of the run (see verificationFiles); a module that requires one fails to load.
      skipped_files: skipped.slice(0, 20) as unknown as JsonValue,
      skipped_count: skipped.length,
      failing: failing as unknown as JsonValue,
    },
    parts: {
      visible_tests: part(fraction(visible.filter((v) => v.passed).length, visible.length), { passed: visible.filter((v) => v.passed).length, total: visible.length }),
      hidden_tests: part(fraction(hidden.filter((v) => v.passed).length, hidden.length), { passed: hidden.filter((v) => v.passed).length, total: hidden.length }),
      bugs_fixed: part(fraction(fixed, bugs.length), { bugs: bugs as unknown as JsonValue }),
      no_regressions: part(regressions.length === 0 ? 1 : 0, { regressions }),
      api_intact: part(broken.length === 0 ? 1 : 0, { broken: broken.map((a) => ({ module: a.module, status: a.status, message: a.message })) as unknown as JsonValue }),
    },
  };
});

/** The outcome verifier of the environment. */
export const outcomeVerifier: Verifier<VerifyInput> = gate("outcome", protectedFiles, unitTests);
