/**
 * End-to-end: `llmix rollout`, `runs`, `episodes`, `show`, `export`, `replay` and `reverify` run the way
 * a user runs them (the built dist/cli/bin.js), against a file trajectory store in a temp directory.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { parquetReadObjects } from "hyparquet";
import { afterAll, describe, expect, it } from "vitest";
import { say, startOpenAIServer, toolCall } from "../fixtures/openai-server.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const bin = `${root}dist/cli/bin.js`;
const dir = mkdtempSync(join(tmpdir(), "llmix-rollout-"));
const store = join(dir, "llmix.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function llmix(args: string[]) {
  const run = spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: "utf8", timeout: 240_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Like llmix(), but asynchronous: the test process keeps serving HTTP (the model server) meanwhile. */
function llmixAsync(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: root });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d));
    child.stderr.on("data", (d: Buffer) => (stderr += d));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

function countEpisodes(path: string, runId: string): number {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare("SELECT count(*) AS n FROM episodes WHERE run_id = ?").get(runId) as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

describe("llmix rollout", () => {
  it("runs 64 noisy-oracle episodes in groups of 8 on 2 workers and prints pass@k, pass^k and advantages", () => {
    const { code, stdout, stderr } = llmix(["rollout", "--env", "billing-dispute", "--policy", "noisy-oracle:0.3", "-n", "64", "--group", "8", "--workers", "2", "--store", store, "--run-id", "run-main", "--json"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const out = JSON.parse(stdout);
    expect(out.episodes).toBe(64);
    expect(out.errors).toBe(0);
    const all = out.metrics.find((m: { difficulty: string }) => m.difficulty === "all");
    expect(all).toMatchObject({ env: "billing-dispute", episodes: 64, k: 8, tasks_with_k: 8 });
    expect(all.pass_at_k).toBeGreaterThan(0);
    expect(all.pass_hat_k).toBeLessThanOrEqual(all.pass_at_k);
    expect(out.groups).toHaveLength(8);
    for (const group of out.groups) {
      expect(group.episodes).toHaveLength(8);
      for (const e of group.episodes) expect(Object.keys(e.advantages ?? {}).sort()).toEqual(["dr_grpo", "grpo", "rloo"]);
    }
    expect(countEpisodes(store, "run-main")).toBe(64);
  }, 240_000);

  it("lists runs and episodes, and shows an episode step by step", () => {
    const runs = llmix(["runs", "--store", store]);
    expect(runs.code).toBe(0);
    expect(runs.stdout).toMatch(/run-main\s+billing-dispute@1\.3\.0\s+noisy-oracle:0\.3\s+finished\s+64\/64/);
    const episodes = JSON.parse(llmix(["episodes", "--run", "run-main", "--store", store, "--json", "--passed"]).stdout);
    expect(episodes.length).toBeGreaterThan(0);
    expect(episodes.every((e: { verdict: { passed: boolean } }) => e.verdict.passed)).toBe(true);
    const show = llmix(["show", "--episode", episodes[0].episode_id, "--store", store]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("── step 1 ──");
    expect(show.stdout).toMatch(/reward -?\d\.\d{3} \(.*step_cost/);
    // The verdict is a tree, one fact per line, never one long line of JSON.
    expect(show.stdout).toMatch(/\nverdict:\n  score: 1\n  passed: true\n/);
    for (const line of show.stdout.split("\n")) expect(line.length).toBeLessThan(400);
  });

  it("replays a stored episode exactly", () => {
    const [first] = JSON.parse(llmix(["episodes", "--run", "run-main", "--store", store, "--json", "--limit", "1"]).stdout);
    const replay = llmix(["replay", "--episode", first.episode_id, "--store", store, "--json"]);
    expect(replay.code).toBe(0);
    const report = JSON.parse(replay.stdout);
    expect(report).toMatchObject({ matched: true, diffs: [], steps: first.steps });
    expect(report.replayed.total_reward).toBeCloseTo(first.total_reward, 12);
    const reverify = JSON.parse(llmix(["reverify", "--run", "run-main", "--store", store, "--json"]).stdout);
    expect(reverify).toMatchObject({ checked: 64, changed: 0 });
  }, 120_000);

  it("writes every export format, and each reads back", async () => {
    const rows: Record<string, number> = {};
    for (const format of ["jsonl", "trl-sft", "trl-grpo", "verl"]) {
      const out = join(dir, `export.${format}`);
      const { code, stdout } = llmix(["export", "--run", "run-main", "--format", format, "--out", out, "--store", store, "--json"]);
      expect(code).toBe(0);
      const result = JSON.parse(stdout);
      expect(result.bytes).toBe(statSync(out).size);
      rows[format] = result.rows;
    }
    const steps = readFileSync(join(dir, "export.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(steps.length).toBe(rows.jsonl);
    expect(steps[0]).toHaveProperty("reward_components");
    const sft = readFileSync(join(dir, "export.trl-sft"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(sft).toHaveLength(64);
    expect(sft[0].messages[0].role).toMatch(/system|user/);
    expect(sft[0].tools.length).toBeGreaterThan(5);
    const grpo = readFileSync(join(dir, "export.trl-grpo"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(grpo).toHaveLength(8);
    const file = readFileSync(join(dir, "export.verl"));
    const parquet = await parquetReadObjects({ file: file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer });
    expect(parquet).toHaveLength(rows.verl as number);
    expect(parquet[0]).toHaveProperty("data_source", "billing-dispute");
    const filtered = JSON.parse(llmix(["export", "--run", "run-main", "--format", "jsonl", "--out", join(dir, "ok.jsonl"), "--successes-only", "--store", store, "--json"]).stdout);
    expect(filtered.rows).toBeLessThan(rows.jsonl as number);
  });

  it("shows a killed run as interrupted and finishes it with --resume: exactly the planned episodes, none twice", async () => {
    const path = join(dir, "killed.db");
    const child = spawn(process.execPath, [bin, "rollout", "--env", "billing-dispute", "--policy", "noisy-oracle:0.3", "-n", "64", "--group", "8", "--concurrency", "1", "--store", path, "--run-id", "run-k"], { cwd: root, stdio: "ignore" });
    const deadline = Date.now() + 120_000;
    while (countEpisodes(path, "run-k") < 8 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const before = countEpisodes(path, "run-k");
    expect(before).toBeGreaterThanOrEqual(8);
    expect(before).toBeLessThan(64);
    const runs = llmix(["runs", "--store", path]);
    expect(runs.stdout).toMatch(/run-k\s+billing-dispute@1\.3\.0\s+noisy-oracle:0\.3\s+interrupted\s/);
    const { code, stdout } = llmix(["rollout", "--resume", "run-k", "--store", path, "--json"]);
    expect(code).toBe(0);
    const out = JSON.parse(stdout);
    expect(out.ran).toBe(64 - before);
    expect(out.episodes).toBe(64);
    expect(out.run.status).toBe("finished");
    expect(JSON.parse(llmix(["runs", "--store", path, "--json"]).stdout)).toMatchObject([{ run_id: "run-k", status: "finished", stored_episodes: 64 }]);
    const db = new Database(path, { readonly: true });
    const counts = db.prepare("SELECT count(*) AS n, count(DISTINCT episode_id) AS d FROM episodes WHERE run_id = 'run-k'").get();
    expect(db.prepare("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    db.close();
    expect(counts).toEqual({ n: 64, d: 64 });
  }, 240_000);

  it("drives an OpenAI-compatible server with --policy openai and stores its token ids and logprobs", async () => {
    // The model looks the customer up, then says something, forever; the episodes end by the step budget.
    const server = await startOpenAIServer((request) => {
      const turns = (request.body.messages ?? []).filter((m) => m.role === "assistant").length;
      return turns === 0 ? toolCall("lookup_customer", { query: "Jonas" }) : turns === 1 ? toolCall("lookup_customer", "{not json") : say("Let me check that for you.");
    });
    try {
      const { code, stdout, stderr } = await llmixAsync([
        "rollout", "--env", "billing-dispute", "--policy", "openai", "--base-url", server.url, "--model", "test-model",
        "-n", "2", "--group", "2", "--max-steps", "5", "--store", store, "--run-id", "run-openai", "--json",
      ]);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toMatchObject({ episodes: 2, errors: 0 });
      const [first] = JSON.parse(llmix(["episodes", "--run", "run-openai", "--store", store, "--json"]).stdout);
      expect(first.reward_components.invalid_call).toBeLessThan(0); // the malformed arguments
      const shown = JSON.parse(llmix(["show", "--episode", first.episode_id, "--store", store, "--json"]).stdout);
      expect(shown.steps).toHaveLength(5);
      expect(shown.steps[0].action).toMatchObject({ type: "tool_call", tool: "lookup_customer", args: { query: "Jonas" } });
      expect(shown.steps[0].policy.model).toBe("test-model");
      expect(shown.steps[0].policy.completion_token_ids.length).toBeGreaterThan(0);
      expect(shown.steps[0].policy.logprobs.length).toBe(shown.steps[0].policy.completion_token_ids.length);
      expect(server.requests).toHaveLength(10);
    } finally {
      await server.close();
    }
  }, 120_000);

  it("answers unknown env, policy, format, run and episode with one line naming the choices and exit code 2", () => {
    const cases: Array<[string[], RegExp]> = [
      [["rollout", "--env", "nope", "--policy", "oracle", "-n", "1"], /unknown_env: .*valid: billing-dispute/],
      [["rollout", "--env", "billing-dispute", "--policy", "genius", "-n", "1"], /unknown_policy: .*valid: oracle, noisy-oracle:P\[,FEATURE=VALUE@Q...\], random, replay:RUN, openai/],
      [["rollout", "--env", "billing-dispute", "--policy", "noisy-oracle:2", "-n", "1"], /invalid_argument: .*probability/],
      [["export", "--run", "run-main", "--format", "csv", "--out", join(dir, "x")], /unknown_format: .*valid: jsonl, trl-sft, trl-grpo, verl/],
      [["episodes", "--run", "run-nope"], /unknown_run/],
      [["show", "--episode", "nope"], /unknown_episode/],
      [["rollout", "--env", "billing-dispute", "--policy", "openai", "-n", "1"], /invalid_config: .*--base-url/],
    ];
    for (const [args, pattern] of cases) {
      const { code, stderr } = llmix([...args, "--store", store]);
      expect(code, args.join(" ")).toBe(2);
      expect(stderr.trim().split("\n")).toHaveLength(1);
      expect(stderr).toMatch(pattern);
    }
  });

  it("a run whose every episode errored exits 1 and names the cause on stderr", () => {
    const { code, stdout, stderr } = llmix(["rollout", "--env", "billing-dispute", "--policy", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "-n", "2", "--store", join(dir, "errors.db"), "--run-id", "run-errors"]);
    expect(code).toBe(1);
    expect(stdout).toContain("billing-dispute@1.");
    expect(stderr).toMatch(/^llmix: 2 of 2 episode\(s\) ended with an error \(not scored\); see llmix episodes --run run-errors --status error\n  2 × policy_failed: openai policy: POST http:\/\/127\.0\.0\.1:9\/v1\/chat\/completions .*connection failed/);
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  it("a reader given a store path that does not exist says so, and creates neither the file nor its folder", () => {
    const missing = join(dir, "no", "such", "dir", "x.db");
    for (const args of [["runs"], ["episodes", "--run", "r"], ["show", "--episode", "e"], ["export", "--run", "r", "--format", "jsonl", "--out", join(dir, "x.jsonl")]]) {
      const { code, stderr } = llmix([...args, "--store", missing]);
      expect(code, args.join(" ")).toBe(2);
      expect(stderr.trim()).toBe(`llmix: unknown_store: no trajectory store at ${missing}; llmix rollout (or serve) --store ${missing} creates one`);
    }
    expect(existsSync(join(dir, "no"))).toBe(false);
  });
});
