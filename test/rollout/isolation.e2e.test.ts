/**
 * End-to-end: `llmix rollout` (the built dist/cli/bin.js) with environments whose steps never return or
 * exhaust the heap: the run ends, the guilty episode is recorded with its error code, the others are ok.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const bin = `${root}dist/cli/bin.js`;
const dir = mkdtempSync(join(tmpdir(), "llmix-isolation-"));
const store = join(dir, "llmix.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function llmix(args: string[]) {
  const run = spawnSync(process.execPath, [bin, ...args, "--store", store], { cwd: root, encoding: "utf8", timeout: 240_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Task id -> "ok <outcome>" or the error code, of a run's stored episodes. */
function outcomesOf(runId: string): Record<string, string> {
  const episodes = JSON.parse(llmix(["episodes", "--run", runId, "--json"]).stdout) as Array<{ task_id: string; status: string; outcome: number | null; error: { code: string } | null }>;
  return Object.fromEntries(episodes.map((e) => [e.task_id, e.status === "ok" ? `ok ${e.outcome}` : (e.error?.code ?? "?")]));
}

const tasks = (...ids: string[]) => ids.flatMap((id) => ["--task", id]);

describe("llmix rollout with hostile environments", () => {
  it("--timeout 2 with a step that never returns: the run ends, that episode is episode_timeout, the easy ones are ok", () => {
    const { code, stdout, stderr } = llmix([
      "rollout", "--env", "hostile", "--module", "test/fixtures/hostile-env.ts", "--policy", "oracle", "-n", "4", "--concurrency", "2",
      ...tasks("hostile/easy/seed-1", "hostile/hard/seed-2", "hostile/easy/seed-3", "hostile/easy/seed-4"), "--timeout", "2", "--run-id", "run-hang", "--json",
    ]);
    expect(code).toBe(0);
    expect(stderr).toContain("1 of 4 episode(s) ended with an error (not scored)");
    expect(stderr).toMatch(/\n  1 × episode_timeout: episode run-hang\/hostile\/hard\/seed-2\/g0 exceeded its time limit of 2000 ms/);
    expect(JSON.parse(stdout)).toMatchObject({ episodes: 4, ran: 4, errors: 1, run: { status: "finished" } });
    expect(outcomesOf("run-hang")).toEqual({
      "hostile/easy/seed-1": "ok 1", "hostile/hard/seed-2": "episode_timeout", "hostile/easy/seed-3": "ok 1", "hostile/easy/seed-4": "ok 1",
    });
    // A resume loads the run's --module files again by itself; nothing is left to run.
    const resumed = llmix(["rollout", "--resume", "run-hang", "--json"]);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ episodes: 4, ran: 0, run: { status: "finished" } });
  }, 240_000);

  it("--worker-memory: an episode that exhausts the heap cap is resource_exhausted, the run goes on", () => {
    // 128 MiB: a thread that loads this TypeScript fixture holds two copies of llmix (dist and, through
    // the fixture's imports, src), about 80 MB; 64 MiB would stop every thread before its first episode.
    const { code, stdout } = llmix([
      "rollout", "--env", "hostile-oom", "--module", "test/fixtures/hostile-variants-env.ts", "--policy", "oracle", "-n", "3", "--concurrency", "2",
      ...tasks("hostile/easy/seed-1", "hostile/hard/seed-2", "hostile/easy/seed-3"), "--worker-memory", "128", "--run-id", "run-oom", "--json",
    ]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ episodes: 3, errors: 1, run: { status: "finished" } });
    expect(outcomesOf("run-oom")).toEqual({ "hostile/easy/seed-1": "ok 1", "hostile/hard/seed-2": "resource_exhausted", "hostile/easy/seed-3": "ok 1" });
    const bad = llmix(["rollout", "--env", "billing-dispute", "--policy", "oracle", "-n", "1", "--worker-memory", "8"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--worker-memory must be an integer in \[16, 1048576\]/);
  }, 240_000);
});
