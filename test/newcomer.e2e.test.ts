/**
 * The newcomer's path (issue 15), end to end in a fresh clone: README's two commands, then the guide's
 * path — `llmix new`, an edit, `check`, the scaffold's own test, `rollout`, `runs`, `show`, `export`.
 * Every command must exit 0 and print no stack trace.
 *
 * Two departures from a newcomer's machine, both for time: the clone gets a copy of this checkout's
 * node_modules before README's `npm install` runs (which then only verifies and builds; from nothing,
 * better-sqlite3 compiles from source for ~5 minutes here — CI's `npm ci` does that on a clean clone),
 * and README's second command, `npm test`, runs with one test file, since the whole suite inside the
 * suite would run this test again. The clone is of HEAD: uncommitted changes are not in it.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const STACK_TRACE = /\n\s+at .+[(/].+:\d+:\d+\)?/;

/** The commands of README's first ```sh block, without their trailing comments. */
function readmeCommands(readme: string): string[] {
  const block = /```sh\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error("README.md has no ```sh block");
  return (block[1] as string).split("\n").map((line) => line.replace(/\s+#.*$/, "").trim()).filter((line) => line !== "");
}

describe("a newcomer's path, in a fresh clone", () => {
  let home: string;
  let clone: string;

  /** Run a shell command in the clone as a user would; it must exit 0 without a stack trace. */
  function sh(command: string, timeoutMs = 240_000): string {
    const run = spawnSync("sh", ["-c", command], { cwd: clone, encoding: "utf8", timeout: timeoutMs, env: { ...process.env, CI: "true", NO_COLOR: "1" } });
    if (run.error) throw run.error;
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, `${command}\n${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`).toBe(0);
    expect(output, `${command} printed a stack trace`).not.toMatch(STACK_TRACE);
    return run.stdout;
  }

  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), "llmix-newcomer-"));
    clone = join(home, "llmix");
    const cloned = spawnSync("git", ["clone", "--quiet", root, clone], { encoding: "utf8" });
    expect(cloned.status, cloned.stderr).toBe(0);
    cpSync(join(root, "node_modules"), join(clone, "node_modules"), { recursive: true, verbatimSymlinks: true });
  }, 120_000);

  afterAll(() => {
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it("README's first command installs, builds and passes the QA checklist of every environment, verbatim", () => {
    const [install] = readmeCommands(readFileSync(join(clone, "README.md"), "utf8"));
    expect(install).toMatch(/^npm install && /);
    const out = sh(install as string, 420_000);
    expect(existsSync(join(clone, "dist/cli/bin.js"))).toBe(true);
    expect((out.match(/all \d+ checks passed/g) ?? []).length).toBeGreaterThanOrEqual(4);
  }, 450_000);

  it("README's second command runs the tests (one file of them: the whole suite would run this test again)", () => {
    const [, test] = readmeCommands(readFileSync(join(clone, "README.md"), "utf8"));
    expect(test).toBe("npm test");
    const out = sh(`${test} -- test/examples/inventory-restock.test.ts`, 300_000);
    expect(out.replace(/\x1b\[[0-9;]*m/g, "")).toMatch(/Test Files\s+1 passed/);
  }, 320_000);

  it("the guide's path: new, edit, check, its own test, rollout, runs, show, export", () => {
    const llmix = "node dist/cli/bin.js";
    sh(`${llmix} new ticket-triage`);
    for (const file of ["env.ts", "env.test.ts", "README.md"]) expect(existsSync(join(clone, "ticket-triage", file)), file).toBe(true);

    // The scaffold README's step 6 (what the agent is told) and a larger step budget.
    const envFile = join(clone, "ticket-triage/env.ts");
    const source = readFileSync(envFile, "utf8");
    const edited = source
      .replace('description: "Restock every item below its reorder point up to its target level."', 'description: "Bring every low item back to its target level, and nothing else."')
      .replace("maxSteps: 12,", "maxSteps: 16,");
    expect(edited, "the scaffold no longer has the lines the edit changes").not.toBe(source);
    expect(edited.match(/maxSteps: 16,/g)).toHaveLength(1);
    writeFileSync(envFile, edited);

    const check = sh(`${llmix} check --module ticket-triage/env.ts --samples 3`);
    expect(check).toMatch(/ticket-triage@1\.0\.0: all \d+ checks passed/);
    sh("node --import tsx --test ticket-triage/env.test.ts");
    expect(sh(`${llmix} envs --module ticket-triage/env.ts`)).toContain("Bring every low item back");

    const store = "data/llmix.db";
    const rollout = sh(`${llmix} rollout --module ticket-triage/env.ts --env ticket-triage --policy noisy-oracle:0.3 -n 8 --group 2 --run-id first-run --store ${store}`);
    expect(rollout).toContain("first-run");
    expect(sh(`${llmix} runs --store ${store}`)).toMatch(/first-run\s.*finished/);
    const episodes = JSON.parse(sh(`${llmix} episodes --run first-run --store ${store} --json`)) as Array<{ episode_id: string; steps: number }>;
    expect(episodes).toHaveLength(8);
    const shown = sh(`${llmix} show --episode ${episodes[0]?.episode_id} --store ${store}`);
    expect(shown).toContain("ticket-triage");
    sh(`${llmix} export --run first-run --format trl-grpo --out data/grpo.jsonl --store ${store}`);
    const rows = readFileSync(join(clone, "data/grpo.jsonl"), "utf8").trim().split("\n");
    expect(rows.length).toBeGreaterThan(0);
    expect(statSync(join(clone, "data/grpo.jsonl")).size).toBeGreaterThan(100);
  }, 400_000);
});
