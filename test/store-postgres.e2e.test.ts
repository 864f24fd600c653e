/**
 * End-to-end: `--store postgres://...` on the built CLI (dist/cli/bin.js, as `npm test` builds it first):
 * a rollout into a fresh PostgreSQL schema, then `runs`, `episodes`, `show`, `export`, `replay` and
 * `reverify` reading it, and `serve` recording a session into it. The same rollout into a SQLite file
 * exports byte-identical files: the two stores answer field for field. Needs PostgreSQL at
 * LLMIX_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test; .ci/run starts it).
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = `${root}dist/cli/bin.js`;
const BASE = process.env.LLMIX_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const SCHEMA = `llmix_e2e_${process.pid}_${randomBytes(3).toString("hex")}`;
const STORE = `${BASE}${BASE.includes("?") ? "&" : "?"}schema=${SCHEMA}`;
const RUN = "pg-e2e";

function llmix(args: string[]) {
  const run = spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: "utf8", timeout: 120_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** `llmix ARGS --json`, parsed; fails the test with stderr when the command fails. (Each command is a new process: the tests take their time.) */
function json<T>(args: string[]): T {
  const { code, stdout, stderr } = llmix([...args, "--json"]);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as T;
}

let dir: string;
let admin: pg.Client;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "llmix-pg-e2e-"));
  admin = new pg.Client({ connectionString: BASE, connectionTimeoutMillis: 10_000 });
  await admin.connect();
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await admin?.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`);
  await admin?.end();
});

describe("llmix --store postgres://", () => {
  it("rollout writes a run that runs, episodes, show, export, replay and reverify read, as the SQLite store does", () => {
    const rolloutArgs = ["rollout", "--env", "billing-dispute", "--policy", "oracle", "-n", "4", "--group", "2", "--run-id", RUN];
    const rolled = json<{ run: { run_id: string; status: string }; episodes: number }>([...rolloutArgs, "--store", STORE]);
    expect(rolled.run).toMatchObject({ run_id: RUN, status: "finished" });

    const runs = json<Array<{ run_id: string; status: string; stored_episodes?: number }>>(["runs", "--store", STORE]);
    expect(runs.map((r) => [r.run_id, r.status])).toEqual([[RUN, "finished"]]);
    const episodes = json<Array<{ episode_id: string; status: string; steps: number }>>(["episodes", "--run", RUN, "--store", STORE]);
    expect(episodes).toHaveLength(4);
    expect(episodes.every((e) => e.status === "ok" && e.steps > 0)).toBe(true);

    const first = episodes[0]?.episode_id as string;
    const shown = llmix(["show", "--episode", first, "--store", STORE]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(first);
    expect(shown.stdout).toMatch(/total reward/);
    const replayed = llmix(["replay", "--episode", first, "--store", STORE]);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toMatch(/reproduced exactly/);
    const reverified = llmix(["reverify", "--run", RUN, "--store", STORE]);
    expect(reverified.code, reverified.stderr).toBe(0);
    expect(reverified.stdout).toMatch(/reverified 4 episodes .* 0 changed/);

    // The same deterministic rollout into SQLite: every export is byte for byte the same file.
    const sqlite = join(dir, "same.db");
    expect(json<{ run: { status: string } }>([...rolloutArgs, "--store", sqlite]).run.status).toBe("finished");
    for (const format of ["jsonl", "trl-sft", "verl"]) {
      const fromPg = join(dir, `pg.${format}`);
      const fromSqlite = join(dir, `sqlite.${format}`);
      for (const [store, out] of [[STORE, fromPg], [sqlite, fromSqlite]] as const) {
        const exported = llmix(["export", "--run", RUN, "--format", format, "--out", out, "--store", store]);
        expect(exported.code, exported.stderr).toBe(0);
      }
      expect(readFileSync(fromPg).equals(readFileSync(fromSqlite)), format).toBe(true);
    }
    const lines = readFileSync(join(dir, "pg.jsonl"), "utf8").trim().split("\n");
    expect(lines.length).toBe(episodes.reduce((a, e) => a + e.steps, 0));

    // Readers never create a store; a server that is down is a typed error without the password.
    const missing = llmix(["runs", "--store", `${BASE}${BASE.includes("?") ? "&" : "?"}schema=${SCHEMA}_none`]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/unknown_store/);
    const down = llmix(["runs", "--store", "postgres://llmix:hunter2@127.0.0.1:1/test"]);
    expect(down.code).not.toBe(0);
    expect(down.stderr).toMatch(/store_error: cannot connect to the trajectory store \(postgres:\/\/llmix@127\.0\.0\.1:1\/test/);
    expect(down.stderr + down.stdout).not.toContain("hunter2");
  }, 300_000);

  it("serve records a session into the PostgreSQL store and reads stored episodes from it", async () => {
    const server = spawn(process.execPath, [bin, "serve", "--port", "0", "--store", STORE], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    server.stdout.on("data", (d: Buffer) => (out += d.toString()));
    server.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((done) => server.on("exit", (code) => done(code)));
    try {
      const api = await new Promise<string>((done, fail) => {
        const timer = setTimeout(() => fail(new Error(`serve did not start: ${out}`)), 60_000);
        server.stdout.on("data", () => {
          const match = /API (http:\/\/\S+\/v1)/.exec(out);
          if (match?.[1]) {
            clearTimeout(timer);
            done(match[1]);
          }
        });
      });
      const episodes = json<Array<{ episode_id: string }>>(["episodes", "--run", RUN, "--store", STORE]);
      const id = episodes[0]?.episode_id as string;
      const stored = (await (await fetch(`${api}/episodes/${encodeURIComponent(id)}`)).json()) as { episode: { episode_id: string }; steps: unknown[] };
      expect(stored.episode.episode_id).toBe(id);
      expect(stored.steps.length).toBeGreaterThan(0);

      const task = json<Array<{ episode_id: string; task_id: string }>>(["episodes", "--run", RUN, "--store", STORE])[0]?.task_id ?? "";
      const created = (await (await fetch(`${api}/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ env: "billing-dispute", task_id: task, seed: 7, record: true }),
      })).json()) as { session_id: string };
      expect(created.session_id).toBeTruthy();
      const step = await fetch(`${api}/sessions/${created.session_id}/step`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ action: { type: "message", content: "Hello, I am looking into it." } }),
      });
      expect(step.status).toBe(200);
      expect((await fetch(`${api}/sessions/${created.session_id}`, { method: "DELETE" })).status).toBe(200);
    } finally {
      server.kill("SIGTERM");
    }
    expect(await exited, out).toBe(0);
    const runs = json<Array<{ run_id: string; env: string }>>(["runs", "--store", STORE]);
    const served = runs.find((r) => r.run_id.startsWith("serve-"));
    expect(served?.env).toBe("billing-dispute");
    const recorded = json<Array<{ episode_id: string; steps: number }>>(["episodes", "--run", served?.run_id ?? "", "--store", STORE]);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]?.steps).toBe(1);
  }, 180_000);
});
