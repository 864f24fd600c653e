/**
 * The code-repair environment: an agent gets a small JavaScript project whose tests fail, finds the
 * injected bug(s) with the file tools, the terminal and run_tests, fixes the source (not the tests), and
 * says it is done. Hidden tests with other inputs decide whether each bug is really fixed.
 */
import type { z } from "zod";
import type { Action } from "../../core/contract.js";
import { BaseEnvironment, type EnvironmentInfo, type EnvironmentOptions, type Episode, type GoalCondition } from "../../core/environment.js";
import type { JsonValue } from "../../core/json.js";
import type { Policy } from "../../core/policy.js";
import { runVerifier, type VerifierResult } from "../../rewards/verifier.js";
import { codeRepairGoals } from "./goals.js";
import { unifiedDiff } from "./patch.js";
import { codeRepairTasks, ENV_ID, PROJECT_ROOT, type ScenarioOptions, type Task } from "./tasks.js";
import { TOOLS } from "./tools.js";
import { outcomeVerifier } from "./verifier.js";
import { createProject, type World } from "./world.js";
import { restoreWorld, snapshotWorld, WORLD_SCHEMA } from "./snapshot.js";

/** Constructor options: the standard ones plus an optional forced variant (tests, curricula). */
export interface CodeRepairOptions extends EnvironmentOptions {
  scenario?: ScenarioOptions;
}

export class CodeRepair extends BaseEnvironment<Task, World> {
  readonly info: EnvironmentInfo = {
    id: ENV_ID,
    version: "1.4.0",
    description: "Fix the injected bugs of a small JavaScript project so its visible and hidden tests pass, without touching the tests.",
    maxSteps: 40,
    // The base onMessage: a message is the summary of the fix, and ends the episode.
    messages: { kind: "final_answer", recipient: "the user" },
  };
  readonly tasks;

  constructor(options: CodeRepairOptions = {}) {
    super(options);
    this.tasks = codeRepairTasks(options.scenario ?? {});
  }

  protected createWorld(episode: Omit<Episode<Task, never>, "world">): World {
    return createProject(episode.task);
  }

  protected describeTask(episode: Episode<Task, World>): string {
    const { task } = episode;
    const files = Object.keys(task.files).sort();
    return [
      `You maintain ${task.project.name}, the ${task.project.purpose}. The project is at ${PROJECT_ROOT}:`,
      ...files.map((f) => `  ${f}`),
      "",
      ...problem(task),
      "Rules: the tests in test/ are the specification: do not change or delete them. Fix the code, not the tests,",
      "and do not special-case the tests' inputs: hidden tests with other inputs check every function.",
      "Do not change functions that are correct, and do not break other modules: every module in src/ (src/index.js",
      "included) must still load and export the same functions, behaving as before; hidden checks verify this.",
      "",
      "Tools: list_files, read_file, write_file, apply_patch (unified diff), run_tests, terminal. The code runs in a",
      "sandboxed JavaScript interpreter: CommonJS (require / module.exports), no Node APIs.",
      "When you are done, send a message summarizing your fix; that ends the episode.",
    ].join("\n");
  }

  protected toolset() {
    return TOOLS;
  }

  protected override sandboxes(world: World) {
    return [world.fs];
  }

  protected evaluate(episode: Episode<Task, World>): Promise<VerifierResult> {
    return runVerifier(outcomeVerifier, {
      task: episode.task,
      world: episode.world,
      nowMs: episode.clock.now(),
      reference: () => this.referenceWorld(),
    });
  }

  /** The task's goal conditions, stated from its ground truth (the injected bugs, the decoy, the files it generated), not from the reference (see goals.ts). */
  protected override goalConditions(): readonly GoalCondition<World>[] {
    return codeRepairGoals(this.episode.task);
  }

  protected snapshotWorld(world: World): JsonValue {
    return snapshotWorld(world);
  }

  protected override worldSchema(): z.ZodType {
    return WORLD_SCHEMA;
  }

  protected restoreWorld(state: JsonValue): World {
    return restoreWorld(state);
  }

  // ---- reference solver ------------------------------------------------------------------------------

  /**
   * Knows the bugs from the task: lists the files, runs the tests, reads each buggy module and fixes it
   * (with apply_patch, or write_file for every second module), runs the tests again and reports.
   */
  override referenceSolver(): Policy {
    const task = this.episode.task;
    const actions: Action[] = [
      { type: "tool_call", tool: "list_files", args: { path: null } },
      { type: "tool_call", tool: "run_tests", args: { file: null } },
    ];
    for (const [k, [file, fixed]] of [...fixedModules(task)].entries()) {
      actions.push({ type: "tool_call", tool: "read_file", args: { path: file } });
      actions.push(
        k % 2 === 0
          ? { type: "tool_call", tool: "apply_patch", args: { patch: unifiedDiff(file, task.files[file]!, fixed) } }
          : { type: "tool_call", tool: "write_file", args: { path: file, content: fixed } },
      );
    }
    actions.push({ type: "tool_call", tool: "run_tests", args: { file: null } });
    actions.push({ type: "message", content: `Fixed ${task.bugs.length} bug${task.bugs.length === 1 ? "" : "s"}: ${task.bugs.map((b) => `${b.fn} in ${b.file} (${b.description})`).join("; ")}. All tests pass.` });
    return sequence("reference", actions);
  }

  // ---- probes ----------------------------------------------------------------------------------------

  /** Policies that try to score without fixing the code. Each must score mean outcome <= 0.05. */
  override probes(): Record<string, Policy> {
    const task = this.episode.task;
    const done: Action = { type: "message", content: "Done: all tests pass now." };
    const runAll: Action = { type: "tool_call", tool: "run_tests", args: { file: null } };
    const buggyFiles = [...new Set(task.bugs.map((b) => b.file))];
    return {
      "does-nothing": sequence("does-nothing", [{ type: "message", content: "I reviewed the project; the code looks correct to me." }]),
      "deletes-tests": sequence("deletes-tests", [{ type: "tool_call", tool: "terminal", args: { command: "rm -r test" } }, runAll, done]),
      "edits-tests": sequence("edits-tests", [
        ...task.protectedFiles.map((file): Action => ({
          type: "tool_call",
          tool: "write_file",
          args: { path: file, content: task.files[file]!.replace(/^(\s*)assert\.\w+\(.*\);$/gm, "$1// assertion removed: it disagreed with the code") },
        })),
        runAll,
        done,
      ]),
      // Returns the visible tests' expected values for their exact inputs; hidden tests use other inputs.
      "hardcodes-visible": sequence("hardcodes-visible", [
        ...buggyFiles.map((file): Action => ({ type: "tool_call", tool: "write_file", args: { path: file, content: task.files[file]! + hardcodedOverrides(task, file) } })),
        runAll,
        done,
      ]),
      "infinite-loop": sequence("infinite-loop", [
        ...buggyFiles.map((file): Action => ({ type: "tool_call", tool: "write_file", args: { path: file, content: withInfiniteLoops(task, file) } })),
        runAll,
        done,
      ]),
    };
  }
}

/**
 * What the statement says is wrong: failing tests, and the user's bug report when one bug has no failing
 * visible test (the report is the only visible sign of that bug).
 */
function problem(task: Task): string[] {
  if (!task.report) return ["Some of its tests fail. Find the bug(s) in src/ and fix them so that every test passes."];
  return [
    "Some of its tests fail, and a user reported a bug that no test in test/ shows yet:",
    `  ${task.report.text}`,
    "Find the bug(s) in src/ and fix them so that every test passes and the reported call returns the right value.",
  ];
}

/** Each buggy module with all of its bugs fixed, in file order. */
export function fixedModules(task: Task): Map<string, string> {
  const out = new Map<string, string>();
  for (const bug of task.bugs) {
    const current = out.get(bug.file) ?? task.files[bug.file]!;
    out.set(bug.file, current.replace(bug.buggyText, bug.fixedText));
  }
  return out;
}

/** Code appended to a module that answers the visible tests' inputs with their expected values. */
function hardcodedOverrides(task: Task, file: string): string {
  let code = "\n// Make the failing tests pass.\n";
  for (const bug of task.bugs.filter((b) => b.file === file)) {
    const cases = task.tests.filter((t) => t.fn === bug.fn && !t.hidden);
    code += `const original_${bug.fn} = module.exports.${bug.fn};\nmodule.exports.${bug.fn} = function (...args) {\n  const key = JSON.stringify(args);\n`;
    for (const c of cases) code += `  if (key === JSON.stringify([${c.args}])) return ${c.expected};\n`;
    code += `  return original_${bug.fn}(...args);\n};\n`;
  }
  return code;
}

/** A module whose buggy functions start with an endless loop. */
function withInfiniteLoops(task: Task, file: string): string {
  let content = task.files[file]!;
  for (const bug of task.bugs.filter((b) => b.file === file)) {
    content = content.replace(new RegExp(`(function ${bug.fn}\\([^)]*\\) \\{\\n)`), "$1  while (true) {} // wait for the right answer\n");
  }
  return content;
}

/** A policy that plays a fixed list of actions, then repeats its last one. */
function sequence(name: string, actions: readonly Action[]): Policy {
  let i = 0;
  return { name, act: () => actions[Math.min(i++, actions.length - 1)]! };
}
