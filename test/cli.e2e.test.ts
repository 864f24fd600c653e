/**
 * End-to-end: the `llmix` command run the way a user runs it (the built dist/cli/bin.js, as `npm test`
 * builds it first), on the docs example and on deliberately broken environments.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = `${root}dist/cli/bin.js`;
const EXAMPLE = "examples/inventory-restock.ts";

function llmix(args: string[], input?: string) {
  const run = spawnSync(process.execPath, [bin, ...args], { cwd: root, input, encoding: "utf8", timeout: 120_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("llmix CLI", () => {
  it("is built", () => {
    expect(existsSync(bin), "run `npm run build` first (npm test does)").toBe(true);
  });

  it("is executable: the file runs itself through its shebang (never `npx llmix`, which can resolve the registry's unrelated package)", () => {
    expect(statSync(bin).mode & 0o111).toBe(0o111);
    const run = spawnSync(bin, ["envs", "--json"], { cwd: root, encoding: "utf8", timeout: 60_000 });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout).map((e: { id: string }) => e.id)).toContain("billing-dispute");
  });

  it("check --module passes on the correct example and prints every check", () => {
    const { code, stdout } = llmix(["check", "--module", EXAMPLE, "--samples", "4"]);
    expect(code).toBe(0);
    for (const name of ["reset-determinism", "step-determinism", "snapshot-restore", "replay", "reset-isolation", "reference-solver",
      "random-policy", "probe:claims-done", "probe:order-everything", "reward-bounds", "truncation", "tool-schemas", "task-diversity", "train-eval-disjoint"]) {
      expect(stdout).toMatch(new RegExp(`PASS\\s+${name.replace(":", "\\:")}\\s`));
    }
    expect(stdout).toContain("all 26 checks passed");
    // The environment is named above its table as well as in the verdict under it.
    expect(stdout.split("\n")[0]).toBe("inventory-restock@1.0.0: 26 checks");
  });

  it("check --module type-checks TypeScript first: a type error is reported as such, before anything runs", () => {
    // Inside the repository, so "llmix-rl" resolves (package self-reference) as in a user's project.
    const dir = join(root, "scratch", `typecheck-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      const bad = join(dir, "bad.ts");
      writeFileSync(bad, `${readFileSync(join(root, EXAMPLE), "utf8")}\nexport const wrong: number = "not a number";\n`);
      const failed = llmix(["check", "--module", bad, "--samples", "2", "--no-hacking"]);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/module_type_errors: --module: 1 type error\(s\) \(TypeScript 5\.\d+\.\d+\)/);
      expect(failed.stderr).toMatch(/bad\.ts\(\d+,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/);
      expect(failed.stdout).not.toContain("PASS");
      expect(failed.stderr).not.toMatch(/\n\s+at /); // no stack trace
      const skipped = llmix(["check", "--module", bad, "--samples", "2", "--no-hacking", "--no-typecheck"]);
      expect(skipped.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("check --no-hacking skips the hacking analysis but keeps the audits", () => {
    const { code, stdout } = llmix(["check", "--module", EXAMPLE, "--samples", "2", "--no-hacking", "--no-typecheck"]);
    expect(code).toBe(0);
    expect(stdout).not.toMatch(/\bsensitivity\b/);
    expect(stdout).toMatch(/PASS\s+tool-crash\s/);
    expect(stdout).toContain("all 20 checks passed");
  });

  it("check --json reports figures", () => {
    const { code, stdout } = llmix(["check", "--module", EXAMPLE, "--samples", "3", "--json", "--no-typecheck"]);
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({ env: "inventory-restock", version: "1.0.0", passed: true });
    const reference = report.checks.find((c: { name: string }) => c.name === "reference-solver");
    expect(reference.figures.easy).toEqual({ solved: 3, total: 3, mean_outcome: 1 });
  });

  it.each([
    ["broken-math-random", "reset-determinism"],
    ["broken-leaky", "reset-isolation"],
    ["broken-snapshot", "snapshot-restore"],
  ])("check fails on %s, naming %s", (fixture, check) => {
    const { code, stdout } = llmix(["check", "--module", `test/fixtures/${fixture}.ts`, "--samples", "3", "--json", "--no-typecheck"]);
    expect(code).toBe(1);
    const report = JSON.parse(stdout);
    expect(report.passed).toBe(false);
    const failed = report.checks.filter((c: { passed: boolean }) => !c.passed).map((c: { name: string }) => c.name);
    expect(failed).toContain(check);
  });

  it("reset --json is identical across processes and names the tools", () => {
    const args = ["reset", "inventory-restock", "--module", EXAMPLE, "--task", "inventory-restock/hard/seed-12", "--seed", "5", "--json"];
    const [a, b] = [llmix(args), llmix(args)];
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
    const out = JSON.parse(a.stdout);
    expect(out.snapshot_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(out.tools.map((t: { name: string }) => t.name)).toEqual(["list_stock", "order_stock"]);
    expect(out.observation.tokens).toBeGreaterThan(10);
    const other = JSON.parse(llmix([...args.slice(0, -2), "6", "--json"]).stdout);
    expect(other.snapshot_sha256).not.toBe(out.snapshot_sha256);
  });

  it("envs and tasks list what the module holds", () => {
    const envs = JSON.parse(llmix(["envs", "--module", EXAMPLE, "--json"]).stdout) as Array<{ id: string }>;
    expect(envs.find((e) => e.id === "inventory-restock")).toEqual(
      expect.objectContaining({ id: "inventory-restock", version: "1.0.0", difficulties: ["easy", "medium", "hard"], max_steps: 12 }),
    );
    expect(envs.map((e) => e.id)).toContain("billing-dispute");
    const tasks = llmix(["tasks", "inventory-restock", "--module", EXAMPLE, "--difficulty", "medium", "-n", "4", "--split", "eval"]);
    const ids = tasks.stdout.trim().split("\n");
    expect(ids).toHaveLength(4);
    for (const id of ids) expect(id).toMatch(/^inventory-restock\/medium\/seed-\d+$/);
  });

  it("play takes typed tool calls and messages and shows reward components", () => {
    const input = ':help\n:tools\nlist_stock\norder_stock {"sku": "nope", "quantity": 2}\norder_stock {oops\nbogus_tool {}\nhello, checking stock now\nsay DONE\n';
    const { code, stdout } = llmix(["play", "inventory-restock", "--module", EXAMPLE, "--task", "inventory-restock/easy/seed-1", "--seed", "4"], input);
    expect(code).toBe(0);
    expect(stdout).toContain('"sku": "SKU-');
    expect(stdout).toContain("[order_stock error] unknown SKU nope");
    expect(stdout).toContain("tool_cost=-0.001");
    expect(stdout).toContain("! arguments of order_stock are not valid JSON");
    expect(stdout).toMatch(/unknown tool "bogus_tool"; valid tools: list_stock, order_stock/);
    expect(stdout).toContain("invalid_call=-0.1");
    expect(stdout).toContain("episode terminated (final_answer) · outcome 0 not passed");
    // The help's example is a tool of this environment; :tools prints signatures with described arguments.
    expect(stdout).toMatch(/call a tool, e\.g\. (list_stock|order_stock) \{/);
    expect(stdout).toMatch(/^order_stock\(sku: string, quantity: integer\)  \[write\]$/m);
    // Plain text is a message, never "arguments of hello are not valid JSON".
    expect(stdout).not.toContain("arguments of hello");
    // The end prints the verdict as a tree.
    expect(stdout).toMatch(/outcome 0 not passed\nverdict:\n  \S/);
  });

  it("new scaffolds an environment that passes check and its own test as generated; bad names and existing folders are refused", () => {
    // Inside the checkout, so the generated module's `import ... from "llmix-rl"` resolves to this package.
    mkdirSync(join(root, "scratch"), { recursive: true });
    const dir = mkdtempSync(join(root, "scratch", "new-"));
    try {
      const made = spawnSync(process.execPath, [bin, "new", "ticket-triage"], { cwd: dir, encoding: "utf8", timeout: 60_000 });
      expect(made.status, made.stderr).toBe(0);
      expect(made.stdout).toContain("wrote ticket-triage/env.ts, ticket-triage/env.test.ts, ticket-triage/README.md");
      // Written aside and renamed into place: no staging folder is left behind.
      expect(readdirSync(dir)).toEqual(["ticket-triage"]);
      const check = spawnSync(process.execPath, [bin, "check", "--module", "ticket-triage/env.ts", "--samples", "2", "--no-hacking"], { cwd: dir, encoding: "utf8", timeout: 120_000 });
      expect(check.status, check.stdout + check.stderr).toBe(0);
      expect(check.stdout).toMatch(/ticket-triage@1\.0\.0: all \d+ checks passed/);
      const own = spawnSync(process.execPath, ["--import", "tsx", "--test", "ticket-triage/env.test.ts"], { cwd: dir, encoding: "utf8", timeout: 120_000 });
      expect(own.status, own.stdout + own.stderr).toBe(0);
      expect(own.stdout).toMatch(/# pass 2\n# fail 0/);
      for (const [args, pattern] of [[["new", "Bad_Name"], /invalid_argument: environment name "Bad_Name" must be lowercase words/], [["new", "ticket-triage"], /invalid_argument: .*ticket-triage exists already/]] as const) {
        const r = spawnSync(process.execPath, [bin, ...args], { cwd: dir, encoding: "utf8", timeout: 60_000 });
        expect(r.status).toBe(2);
        expect(r.stderr).toMatch(pattern);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);

  it.each([
    ["tasks", ["tasks", "billing-dispute", "-n", "5000"]],
    ["reset", ["reset", "billing-dispute", "--task", "billing-dispute/medium/seed-1", "--seed", "1"]],
  ])("a reader that stops early (%s | head -1) ends it quietly: exit 0, no stack trace", async (_name, args) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d));
    // Like `head -c 0`: the reader is gone before the command writes (after the first line, the same
    // happens to `head -1` whenever the command writes more than one chunk).
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });

  it.each([
    [["reset", "nope", "--task", "a/b/seed-1", "--seed", "1"], /unknown_env: unknown environment "nope"; valid:/],
    [["reset", "inventory-restock", "--module", EXAMPLE, "--task", "inventory-restock/extreme/seed-1", "--seed", "1"], /invalid_task_id: .*valid: easy, medium, hard/],
    [["reset", "inventory-restock", "--module", EXAMPLE, "--task", "garbage", "--seed", "1"], /invalid_task_id: task id "garbage" must have three parts/],
    [["reset", "inventory-restock", "--module", EXAMPLE, "--task", "inventory-restock/easy/seed-1", "--seed", "-3"], /--seed must be an integer/],
    [["check", "--module", EXAMPLE, "--bogus"], /unknown option '--bogus'; valid options of check: --all, --json, --samples, --no-hacking, --no-typecheck, --module/],
    [["frobnicate"], /unknown command 'frobnicate'; valid commands: envs, tasks, reset, play, check/],
    [["tasks", "inventory-restock", "--module", EXAMPLE, "--split", "validation"], /unknown split "validation"; valid: train, eval/],
    [["check", "--module", "does/not/exist.ts"], /module_load_failed: --module does\/not\/exist.ts: no such file/],
    [["check", "--module", "package.json"], /module_load_failed/],
  ])("usage error %j exits 2 with one clear line", (args, pattern) => {
    const { code, stderr, stdout } = llmix(args as string[]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(pattern);
  });
});
