/**
 * The tools of the code-repair environment: read and change the project's files (list_files, read_file,
 * write_file, apply_patch), run its visible tests in the code sandbox (run_tests), and a terminal.
 * Paths are relative to the project root (absolute paths inside /project work too); anything that
 * leaves the project is refused by the file system's jail.
 */
import { z } from "zod";
import { SandboxError, ToolError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { isRunnablePath, sharedCodeRunner, type CodeRunResult } from "../../sandboxes/code-runner.js";
import { toolsFor } from "../../tools/define.js";
import { terminalTool } from "../../tools/terminal-tool.js";
import { applyFilePatch, parsePatch } from "./patch.js";
import { PROJECT_ROOT, type Task } from "./tasks.js";
import { relativePath, type World } from "./world.js";

const defineTool = toolsFor<World, Task>();

/** Longest file content or patch an agent may send, in characters. */
export const MAX_CONTENT_CHARS = 200_000;
/** Failures listed in a run_tests result (the counts always cover all). */
export const MAX_LISTED_FAILURES = 25;
/** Console output characters shown by run_tests. */
export const MAX_SHOWN_OUTPUT = 4_000;

const pathArg = z.string().min(1).max(512).describe("Path relative to the project root, e.g. src/strings.js");

/** Resolve an agent's path inside the project (throws path_escape for anything outside it). */
function resolve(world: World, path: string): string {
  return world.fs.resolve(path, PROJECT_ROOT);
}

export const listFiles = defineTool({
  name: "list_files",
  description: "List the project's files (recursively) with their sizes. Give a directory to list only that part, or null for the whole project.",
  input: z.object({ path: pathArg.nullable().describe("A directory relative to the project root, or null for the whole project") }),
  effect: "read",
  latency: { kind: "fixed", ms: 10 },
  handler: ({ path }, { world }) => {
    const dir = resolve(world, path ?? ".");
    const stat = world.fs.stat(dir);
    if (stat.type !== "dir") throw new SandboxError("not_a_directory", `${path}: Not a directory (use read_file for a file)`);
    const lines: string[] = [];
    for (const abs of world.fs.walk(dir)) {
      const s = world.fs.stat(abs);
      if (s.type === "file") lines.push(`${relativePath(abs)} (${s.size} bytes)`);
    }
    return lines.length === 0 ? "(no files)" : lines.join("\n");
  },
});

export const readFile = defineTool({
  name: "read_file",
  description: "Read a file of the project. Returns its exact text.",
  input: z.object({ path: pathArg }),
  effect: "read",
  latency: { kind: "fixed", ms: 10 },
  handler: ({ path }, { world }) => world.fs.readFile(resolve(world, path)),
  render: (output) => (output === "" ? "(empty file)" : String(output)),
});

export const writeFile = defineTool({
  name: "write_file",
  description: `Create or overwrite a file of the project with the given content (missing directories are created). At most ${MAX_CONTENT_CHARS} characters.`,
  input: z.object({ path: pathArg, content: z.string().max(MAX_CONTENT_CHARS).describe("The complete new content of the file") }),
  effect: "write",
  // Writing the same content again leaves the same file.
  hints: { idempotent: true },
  latency: { kind: "fixed", ms: 15 },
  handler: ({ path, content }, { world }) => {
    const abs = resolve(world, path);
    world.fs.writeFile(abs, content, { parents: true });
    return `Wrote ${relativePath(abs)} (${Buffer.byteLength(content, "utf8")} bytes).`;
  },
});

export const applyPatch = defineTool({
  name: "apply_patch",
  description:
    'Apply a unified diff (as written by `diff -u` or `git diff`: "--- a/path", "+++ b/path", "@@ -start,count +start,count @@" and lines starting with " ", "-" or "+") to one or more project files. All or nothing: if any hunk does not apply, nothing changes and the error names the hunk.',
  input: z.object({ patch: z.string().min(1).max(MAX_CONTENT_CHARS).describe("The unified diff") }),
  effect: "write",
  latency: { kind: "fixed", ms: 15 },
  handler: ({ patch }, { world }) => {
    const patches = parsePatch(patch);
    // Compute every file's new content first: a refused hunk must leave every file unchanged.
    const results: Array<{ abs: string; content: string | null; hunks: number }> = [];
    const seen = new Set<string>();
    for (const p of patches) {
      const display = (p.newPath ?? p.oldPath)!;
      const abs = resolve(world, display);
      if (seen.has(abs)) throw new ToolError(`the patch changes ${display} twice; put all of its hunks under one "---"/"+++" header`);
      seen.add(abs);
      if (p.oldPath !== null && p.newPath !== null && resolve(world, p.oldPath) !== abs) {
        throw new ToolError(`the patch renames ${p.oldPath} to ${p.newPath}; renames are not supported (write the new file and delete the old one)`);
      }
      const exists = world.fs.exists(abs);
      if (exists && world.fs.stat(abs).type === "dir") throw new SandboxError("is_a_directory", `${display}: Is a directory`);
      const before = exists ? world.fs.readFile(abs) : null;
      results.push({ abs, content: applyFilePatch(before, p, display), hunks: p.hunks.length });
    }
    const lines: string[] = [];
    // A later file can still fail to write (a size limit): then the earlier ones are put back.
    const before = results.length > 1 ? world.fs.asOwner().snapshot() : null;
    try {
      for (const r of results) {
        if (r.content === null) {
          world.fs.remove(r.abs);
          lines.push(`Deleted ${relativePath(r.abs)}.`);
        } else {
          world.fs.writeFile(r.abs, r.content, { parents: true });
          lines.push(`Patched ${relativePath(r.abs)} (${r.hunks} hunk${r.hunks === 1 ? "" : "s"}).`);
        }
      }
    } catch (error) {
      if (before !== null) world.fs.asOwner().restore(before);
      throw error;
    }
    return lines.join("\n");
  },
});

/** The structured result of run_tests. */
export interface TestRunOutput {
  status: CodeRunResult["status"];
  total: number;
  passed: number;
  failed: number;
  failures: Array<{ file: string; name: string; status: string; message: string | null }>;
  load_errors: Array<{ file: string; status: string; message: string }>;
  output: string;
  output_truncated: boolean;
  message: string | null;
  skipped_files: string[];
}

/** Run the project's visible tests (every test/**\/*.test.js, or one file) against its current files. */
export async function runVisibleTests(world: World, task: Task, nowMs: number, only: string | null): Promise<TestRunOutput> {
  const files: Record<string, string> = {};
  const skipped: string[] = [];
  for (const abs of world.fs.walk(PROJECT_ROOT)) {
    const rel = relativePath(abs);
    if (!/\.(js|json)$/.test(rel) || world.fs.stat(abs).type !== "file") continue;
    if (isRunnablePath(rel)) files[rel] = world.fs.readFile(abs);
    else skipped.push(rel);
  }
  let entries = Object.keys(files).filter((p) => p.startsWith("test/") && p.endsWith(".test.js")).sort();
  if (only !== null) {
    const rel = relativePath(resolve(world, only));
    if (!(rel in files) || !rel.endsWith(".test.js")) throw new ToolError(`${only}: not a test file of the project (test files are test/*.test.js)`);
    entries = [rel];
  }
  const run = await sharedCodeRunner().run({ files, entries, nowMs, seed: task.seed });
  const failures = run.tests.filter((t) => t.status !== "passed");
  return {
    status: run.status,
    total: run.tests.length,
    passed: run.tests.length - failures.length,
    failed: failures.length,
    failures: failures.slice(0, MAX_LISTED_FAILURES).map((t) => ({ file: t.file, name: t.name, status: t.status, message: t.message })),
    load_errors: run.loadErrors.map((e) => ({ ...e })),
    output: run.output.length > MAX_SHOWN_OUTPUT ? `${run.output.slice(0, MAX_SHOWN_OUTPUT)}\n[console output cut at ${MAX_SHOWN_OUTPUT} characters]` : run.output,
    output_truncated: run.outputTruncated || run.output.length > MAX_SHOWN_OUTPUT,
    message: run.message,
    skipped_files: skipped,
  };
}

export const runTests = defineTool({
  name: "run_tests",
  description:
    "Run the project's tests (test/*.test.js, or one test file) in the JavaScript sandbox and report each failure. The sandbox is CommonJS without Node APIs (no process, fs, timers or network); an infinite loop ends as timeout, runaway allocation as memory.",
  input: z.object({ file: pathArg.nullable().describe("One test file, e.g. test/strings.test.js, or null for all") }),
  effect: "read",
  latency: { kind: "fixed", ms: 250 },
  cost: 0.001,
  handler: async ({ file }, { world, task, clock }) => (await runVisibleTests(world, task, clock.now(), file)) as unknown as JsonValue,
  render: (output) => renderTestRun(output as unknown as TestRunOutput),
});

/** The run_tests result as text, as a test runner would print it. */
export function renderTestRun(out: TestRunOutput): string {
  const lines: string[] = [];
  const head = `${out.total} test${out.total === 1 ? "" : "s"}: ${out.passed} passed, ${out.failed} failed`;
  lines.push(out.status === "ok" ? head : `${head} (run status: ${out.status})`);
  if (out.message && out.status !== "ok") lines.push(out.message);
  for (const e of out.load_errors) lines.push(`ERROR ${e.file} could not be loaded: ${e.message}`);
  for (const f of out.failures) lines.push(`${f.status === "failed" ? "FAIL" : f.status.toUpperCase()} ${f.file} > ${f.name}\n    ${f.message ?? ""}`);
  if (out.failed > out.failures.length) lines.push(`... and ${out.failed - out.failures.length} more failing tests`);
  if (out.skipped_files.length > 0) lines.push(`(skipped files with names the sandbox cannot load: ${out.skipped_files.join(", ")})`);
  if (out.output) lines.push(`console output:\n${out.output.replace(/\n$/, "")}`);
  return lines.join("\n");
}

export const terminal = terminalTool<World, Task>({
  terminal: (world) => world.terminal,
  description:
    "Run a bash command line in the project's sandbox shell (cwd /project; pipes, redirections, globs; ls, cat, head, tail, grep, awk, find, wc, sort, uniq, cut, echo, rm, mv, cp, mkdir). It cannot run JavaScript: use run_tests. No network.",
});

export const TOOLS = [listFiles, readFile, writeFile, applyPatch, runTests, terminal];
