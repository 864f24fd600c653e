/**
 * The goal conditions of a code-repair task: what the final project must look like, stated from the task
 * alone (its ground truth: which functions carry an injected bug, each bug's buggy and correct source in
 * `task.bugs`, the decoy, the visible test files and the modules it generated), never from a run of the
 * reference solver. `llmix check` (goal-conditions) plays the reference against these predicates, so a
 * reference that leaves a bug, edits a test or drops a module fails the checklist instead of defining
 * "correct".
 *
 * The predicates run synchronously on the world, so they are structural (over the files), not behavioural:
 * the verifier's hidden tests judge behaviour in the code sandbox. They are necessary conditions of a repair:
 *
 * - `mutation_removed:<fn>` (one per bug): in its module, the function no longer carries the injected
 *   mutation: either the correct line(s) the bug replaced are back, or the line(s) the bug introduced are
 *   gone (replaced by something else). Lines are compared without whitespace and comments, inside the
 *   function's declaration (the whole module when the declaration cannot be found); a module that no longer
 *   names the function does not meet it. A fix that keeps the mutated line and compensates elsewhere (a guard
 *   added before it) passes the tests but not this goal: it states the mutation removed, not behaviour.
 * - `decoy_kept` (decoy variant): the correct line the suspicious comment casts doubt on is still in its function.
 * - `tests_unchanged`: every visible test file is present, byte for byte as the task has it.
 * - `modules_present`: every original module is there: each src/<module>.js still names each of its
 *   functions, and src/index.js still requires each module (or names each of its functions).
 */
import type { GoalCondition } from "../../core/environment.js";
import type { BugRecord, Task } from "./tasks.js";
import { projectFiles, type World } from "./world.js";

/** A line of code without whitespace; null for a blank or comment-only line. */
function normalize(line: string): string | null {
  const t = line.replace(/\s+/g, "");
  if (t === "" || t.startsWith("//") || t.startsWith("/*") || t.startsWith("*")) return null;
  return t;
}

/** The forms a line may take: itself, and itself without each possible trailing `//` comment. */
function forms(line: string): Set<string> {
  const out = new Set<string>();
  const whole = normalize(line);
  if (whole !== null) out.add(whole);
  for (let at = line.indexOf("//"); at > 0; at = line.indexOf("//", at + 1)) {
    const head = normalize(line.slice(0, at));
    if (head !== null) out.add(head);
  }
  return out;
}

/** How many lines of `lines` take the (normalized) form `wanted`. */
function count(lines: readonly string[], wanted: string): number {
  return lines.filter((l) => forms(l).has(wanted)).length;
}

/** The code lines (normalized) that differ between two versions of a function: common prefix and suffix lines dropped. */
export function changedLines(buggyText: string, fixedText: string): { introduced: string[]; removed: string[] } {
  const code = (text: string) => text.split("\n").map(normalize).filter((l): l is string => l !== null);
  const a = code(buggyText);
  const b = code(fixedText);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  return { introduced: a.slice(head, a.length - tail), removed: b.slice(head, b.length - tail) };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const has = (files: Readonly<Record<string, string>>, path: string) => Object.prototype.hasOwnProperty.call(files, path);
/** Whether a text names an identifier (not as part of a longer one). */
const names = (text: string, name: string) => new RegExp(`(^|[^A-Za-z0-9_$])${escape(name)}([^A-Za-z0-9_$]|$)`).test(text);

/**
 * The lines of function `fn` in a module's text: from its declaration (`function fn(`, or `const|let|var fn =`)
 * to the first line that is a lone `}` at column 0; the whole module when no declaration is found but the
 * module still names the function; null when it does not name it at all (the function is gone).
 */
export function functionLines(moduleText: string, fn: string): string[] | null {
  if (!names(moduleText, fn)) return null;
  const lines = moduleText.split("\n");
  const decl = new RegExp(`^\\s*(?:export\\s+)?(?:async\\s+)?(?:function\\s*\\*?\\s*${escape(fn)}\\s*\\(|(?:const|let|var)\\s+${escape(fn)}\\s*=)`);
  const start = lines.findIndex((l) => decl.test(l));
  if (start < 0) return lines;
  const end = lines.findIndex((l, i) => i > start && /^\}\s*;?\s*$/.test(l));
  return lines.slice(start, end < 0 ? lines.length : end + 1);
}

/**
 * Whether a module's text no longer carries a bug's mutation in the bug's function: the correct lines the bug
 * replaced are all back (at least as often as in the correct function), or the bug introduced lines and none
 * of them is left beyond what the correct function has.
 */
export function mutationRemoved(bug: Pick<BugRecord, "fn" | "buggyText" | "fixedText">, moduleText: string): boolean {
  const { introduced, removed } = changedLines(bug.buggyText, bug.fixedText);
  const current = functionLines(moduleText, bug.fn);
  if (current === null) return false;
  const fixed = bug.fixedText.split("\n");
  const restored = removed.length > 0 && removed.every((l) => count(current, l) >= count(fixed, l));
  const gone = introduced.length > 0 && introduced.every((l) => count(current, l) <= count(fixed, l));
  return restored || gone;
}


/** Goal ids that every task declares, in the order `codeRepairGoals` lists them (after the per-bug ones). */
export const COMMON_GOAL_IDS = ["tests_unchanged", "modules_present"] as const;
/** The goal id of a bug's function. */
export const mutationGoalId = (fn: string) => `mutation_removed:${fn}`;

/** The goal conditions of one task. */
export function codeRepairGoals(task: Task): GoalCondition<World>[] {
  const goals: GoalCondition<World>[] = [];
  for (const bug of task.bugs) {
    const { introduced, removed } = changedLines(bug.buggyText, bug.fixedText);
    const show = (ls: string[]) => ls.map((l) => `\`${l}\``).join(", ");
    goals.push({
      id: mutationGoalId(bug.fn),
      description:
        `${bug.fn} in ${bug.file} no longer carries its injected ${bug.kind} bug (${bug.description}): ` +
        (introduced.length > 0 ? `${show(introduced)} is gone, or ` : "") +
        `${show(removed)} is back (whitespace ignored)`,
      holds: (world) => {
        const files = projectFiles(world.fs);
        return has(files, bug.file) && mutationRemoved(bug, files[bug.file]!);
      },
    });
  }
  const decoy = task.decoy;
  if (decoy) {
    // The flagged line is the one right after the decoy comment in the task's module.
    const lines = task.files[decoy.file]!.split("\n");
    const at = lines.findIndex((l) => l.trim() === decoy.comment);
    const line = at >= 0 ? normalize(lines[at + 1] ?? "") : null;
    if (line !== null) {
      goals.push({
        id: "decoy_kept",
        description: `${decoy.fn} in ${decoy.file} is correct despite its comment: its line \`${lines[at + 1]!.trim()}\` is still there (whitespace ignored)`,
        holds: (world) => {
          const files = projectFiles(world.fs);
          const current = has(files, decoy.file) ? functionLines(files[decoy.file]!, decoy.fn) : null;
          return current !== null && count(current, line) >= 1;
        },
      });
    }
  }
  goals.push({
    id: "tests_unchanged",
    description: `the visible test files are present and unchanged: ${task.protectedFiles.join(", ")}`,
    holds: (world) => {
      const files = projectFiles(world.fs);
      return task.protectedFiles.every((p) => has(files, p) && files[p] === task.files[p]);
    },
  });
  const modules = Object.keys(task.files)
    .filter((p) => /^src\/[^/]+\.js$/.test(p) && p !== "src/index.js")
    .sort();
  const fnsOf = (file: string) => task.functions.filter((f) => f.file === file).map((f) => f.name);
  goals.push({
    id: "modules_present",
    description: `every original module is still there: ${modules.map((m) => `${m} (${fnsOf(m).join(", ")})`).join(", ")}, and src/index.js re-exporting them`,
    holds: (world) => {
      const files = projectFiles(world.fs);
      const modulesOk = modules.every((m) => has(files, m) && fnsOf(m).every((fn) => names(files[m]!, fn)));
      const index = files["src/index.js"];
      const indexOk =
        index !== undefined &&
        modules.every((m) => {
          const base = m.slice("src/".length, -".js".length);
          return new RegExp(`["'\`]\\./${escape(base)}(\\.js)?["'\`]`).test(index) || fnsOf(m).every((fn) => names(index, fn));
        });
      return modulesOk && indexOk;
    },
  });
  return goals;
}
