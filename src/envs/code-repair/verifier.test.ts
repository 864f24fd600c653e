/**
 * The outcome verifier scores every final state an agent can leave: odd file names (spaces, non-ASCII,
 * parentheses, quotes, very long), empty, huge and binary-ish files, deleted or emptied sources. It must
 * answer with a score in [0, 1] and the reason in its details, never throw: a throw turns the episode
 * into an infrastructure error (verifier_failed, HTTP 500), so a failing policy could trade its 0 for a
 * dropped episode.
 */
import { describe, expect, it } from "vitest";
import type { Action, StepResult, ToolResult } from "../../core/contract.js";
import { Rng } from "../../core/rng.js";
import { runCode, MAX_FILES } from "../../sandboxes/code-runner.js";
import type { VerifierResult } from "../../rewards/verifier.js";
import { CodeRepair, fixedModules } from "./env.js";
import type { Task } from "./tasks.js";
import { verificationFiles } from "./verifier.js";

const tool = (name: string, args: Record<string, unknown>): Action => ({ type: "tool_call", tool: name, args });
const say = (content: string): Action => ({ type: "message", content });
const verdictOf = (r: StepResult) => r.info.verdict as VerifierResult;
const statusOf = (r: StepResult) => (r.info.tool_result as ToolResult).status;

async function open(id: string, seed = 1) {
  const env = new CodeRepair();
  await env.reset(id, seed);
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  return { env, task };
}

/** Play the actions, then end the episode; returns the final step (it must not throw). */
async function finish(env: CodeRepair, actions: readonly Action[]): Promise<StepResult> {
  for (const a of actions) await env.step(a);
  return env.step(say("Done."));
}

const write = (path: string, content: string) => tool("write_file", { path, content });
const fixActions = (task: Task) => [...fixedModules(task)].map(([file, content]) => write(file, content));

describe("odd file names", () => {
  it.each(["src/utils copy.js", "src/naïve.js", "src/helpers (1).js", "src/it's.js", 'src/"q".js', "src/日本.js"])(
    "%s next to a correct fix still scores 1, and the file is reported as not run",
    async (name) => {
      const { env, task } = await open("code-repair/easy/seed-1");
      const final = await finish(env, [...fixActions(task), write(name, "module.exports = { extra: 1 };\n")]);
      const v = verdictOf(final);
      expect(v.score).toBe(1);
      expect(v.parts!.unit_tests!.details.skipped_files).toEqual([{ path: name, reason: "unloadable_name" }]);
      await env.close();
    },
  );

  it("a path longer than the sandbox takes (made with the terminal) is left out too", async () => {
    const { env, task } = await open("code-repair/easy/seed-1");
    const dir = ["a", "b", "c"].map((c) => c.repeat(200)).join("/");
    const final = await finish(env, [...fixActions(task), tool("terminal", { command: `mkdir -p src/${dir} && echo 'module.exports = 1;' > src/${dir}/long.js` })]);
    const v = verdictOf(final);
    expect(v.score).toBe(1);
    expect(v.parts!.unit_tests!.details.skipped_files).toEqual([{ path: `src/${dir}/long.js`, reason: "unloadable_name" }]);
    await env.close();
  });

  it("a module that requires a file the sandbox cannot load scores 0 with the reason, not an error", async () => {
    const { env, task } = await open("code-repair/easy/seed-1");
    const [file, fixed] = [...fixedModules(task)][0]!;
    const final = await finish(env, [write("src/utils copy.js", "module.exports = {};\n"), write(file, `require("./utils copy");\n${fixed}`)]);
    const v = verdictOf(final);
    expect(final.terminated).toBe(true);
    expect(v.score).toBe(0);
    expect(JSON.stringify(v.parts!.unit_tests!.details.failing)).toMatch(/could not be loaded: .*Cannot find module/);
    expect(v.parts!.unit_tests!.details.skipped_count).toBe(1);
    await env.close();
  });

  it("files beyond the runner's limits are left out and reported, and the request is accepted", async () => {
    const { task } = await open("code-repair/easy/seed-1");
    const current: Record<string, string> = { ...task.files };
    for (let i = 0; i < MAX_FILES + 50; i++) current[`src/gen/f${String(i).padStart(4, "0")}.js`] = "module.exports = 1;\n";
    const { files, entries, skipped } = verificationFiles(task, current);
    expect(Object.keys(files).length).toBeLessThanOrEqual(MAX_FILES);
    expect(skipped.filter((s) => s.reason === "over_limit").length).toBeGreaterThan(0);
    // Every test file of the task is still in, and the runner takes the request.
    for (const e of entries) expect(files[e]).toBeDefined();
    const run = await runCode({ files, entries, seed: task.seed });
    expect(run.tests.length).toBe(task.tests.length + task.apiTests.length);
  });
});

// ---- fuzz: many odd final states --------------------------------------------------------------------

const NAME_PARTS = ["utils copy", "naïve", "(1)", "it's", '"q"', "`t`", "日本語", "🙂", "a\\b", "-dash", " lead", "trail ", "..x", "x..", "#hash", "%20", "tab\there", "ünï", "$", "[x]", "{y}", "a;b", "a&b", "é́"];
const DIRS = ["src", "src/nested dir", "test", "lib", "", ".hidden", "src/ü", "src/(x)"];
const EXTS = [".js", ".json", ".test.js", "", ".txt", ".mjs", ".js "];

function oddName(rng: Rng): string {
  const kind = rng.int(0, 5);
  if (kind === 0) return `src/${"long".repeat(rng.int(20, 60))}.js`;
  if (kind === 1) return `${Array.from({ length: rng.int(2, 8) }, () => rng.pick(["d", "é", "x y", "(p)"])).join("/")}/${rng.pick(NAME_PARTS)}.js`;
  const dir = rng.pick(DIRS);
  const base = Array.from({ length: rng.int(1, 3) }, () => rng.pick(NAME_PARTS)).join(rng.pick(["", " ", "_"]));
  return `${dir ? `${dir}/` : ""}${base}${rng.pick(EXTS)}`;
}

function oddContent(rng: Rng, task: Task): string {
  switch (rng.int(0, 9)) {
    case 0:
      return "";
    case 1: // binary-ish: any UTF-16 code unit, lone surrogates and NUL included
      return String.fromCharCode(...Array.from({ length: rng.int(1, 2000) }, () => rng.int(0, 0xffff)));
    case 2: // huge
      return `// ${"z".repeat(rng.int(100_000, 190_000))}\nmodule.exports = {};\n`;
    case 3:
      return "module.exports = {;";
    case 4:
      return 'throw new Error("boom at load");';
    case 5:
      return "{ not json";
    case 6:
      return `module.exports = ${JSON.stringify(rng.pick(["\u0000", "\ud800", "\u202e", "🙂"]))};\n`;
    case 7: // a real module's source under another name
      return task.files[rng.pick(Object.keys(task.files).filter((f) => f.startsWith("src/")))]!;
    case 8:
      return "while (true) {}";
    default:
      return "\u0000\u0001\u0002\ufffe\uffff";
  }
}

/** A random final state: odd files written, sources deleted, emptied or replaced, sometimes the real fix. */
function oddEpisode(rng: Rng, task: Task): Action[] {
  const actions: Action[] = [];
  if (rng.bool(0.3)) actions.push(...fixActions(task));
  const sources = Object.keys(task.files).filter((f) => f.startsWith("src/") || f === "package.json");
  for (let k = rng.int(1, 6); k > 0; k--) {
    const op = rng.int(0, 9);
    if (op <= 4) actions.push(write(oddName(rng), oddContent(rng, task)));
    else if (op === 5) actions.push(tool("terminal", { command: `rm ${rng.pick(sources)}` }));
    else if (op === 6) actions.push(write(rng.pick(sources), rng.bool(0.5) ? "" : oddContent(rng, task)));
    else if (op === 7) actions.push(tool("terminal", { command: `mkdir -p '${rng.pick(sources)}.d/x y' && echo 1 > '${rng.pick(sources)}.d/x y/(z).js'` }));
    else if (op === 8) actions.push(tool("terminal", { command: `mv ${rng.pick(sources)} 'src/moved copy.js'` }));
    else actions.push(tool("terminal", { command: rng.pick(["rm -r src", "rm -r test", "rm package.json", "mkdir -p 'src/dir.js'"]) }));
  }
  return actions;
}

describe("fuzz: every odd final state gets a score in [0, 1], never an error", () => {
  const ids = ["code-repair/easy/seed-3", "code-repair/medium/seed-8", "code-repair/hard/seed-13"];
  it.each(ids)("%s", async (id) => {
    const rng = Rng.fromKey("verifier-fuzz", id);
    let written = 0;
    for (let episode = 0; episode < 14; episode++) {
      const { env, task } = await open(id, episode);
      const actions = oddEpisode(rng, task);
      for (const a of actions) {
        const r = await env.step(a);
        if (a.type === "tool_call" && a.tool === "write_file" && statusOf(r) === "ok") written++;
      }
      const final = await env.step(say("Done."));
      const v = verdictOf(final);
      const where = `${id} #${episode}: ${JSON.stringify(actions.map((a) => (a.type === "tool_call" ? [a.tool, (a.args.path ?? a.args.command) as string] : a.type)))}`;
      expect(final.terminated, where).toBe(true);
      expect(final.info.end_reason, where).toBe("final_answer");
      expect(typeof v.score, where).toBe("number");
      expect(v.score >= 0 && v.score <= 1, where).toBe(true);
      expect(final.rewardComponents.task, where).toBe(v.score);
      // A state without the fix never scores.
      const fixed = actions.some((a) => a.type === "tool_call" && a.tool === "write_file" && [...fixedModules(task).values()].includes(a.args.content as string));
      if (!fixed) expect(v.score, where).toBe(0);
      await env.close();
    }
    // The fuzz really wrote odd files (the file system took most of them).
    expect(written).toBeGreaterThan(20);
  }, 120_000);
});
