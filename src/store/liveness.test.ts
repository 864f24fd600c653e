import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startHeartbeat } from "./liveness.js";
import { MIGRATIONS, migrate } from "./migrations.js";
import { openStore, type SqliteTrajectoryStore } from "./sqlite-store.js";
import type { RunRecord } from "./types.js";

function run(runId: string, extra: Partial<RunRecord> = {}): RunRecord {
  return {
    run_id: runId, env: "tiny", env_version: "1.0.0", policy: "oracle", policy_checkpoint: null, config: { n: 1 }, tools: [],
    status: "running", planned_episodes: 1, created_at: "2025-01-01T00:00:00.000Z", finished_at: null, ...extra,
  };
}

let dir: string;
const open: SqliteTrajectoryStore[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "llmix-liveness-"));
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

function storeAt(path: string, options: Parameters<typeof openStore>[1] = {}): SqliteTrajectoryStore {
  const s = openStore(path, options);
  open.push(s);
  return s;
}

describe("run liveness", () => {
  // The liveness rules themselves (pid on this host, stale heartbeat, claims) are part of the store
  // contract: see test-support.ts, run against every store. This file keeps the SQLite upgrade path.
  it("a version-2 file gains owners and heartbeats: its runs keep their rows and order, an old running run reads interrupted", async () => {
    const path = join(dir, "v2.db");
    const old = new Database(path);
    migrate(old, MIGRATIONS.slice(0, 2));
    const insert = old.prepare("INSERT INTO runs (run_id, env, status, created_at, finished_at, record) VALUES (?, ?, ?, ?, ?, ?)");
    // Same creation time: the later insert lists first.
    insert.run("r-done", "tiny", "finished", "2025-01-01T00:00:00.000Z", "2025-01-01T01:00:00.000Z", JSON.stringify(run("r-done")));
    insert.run("r-killed", "tiny", "running", "2025-01-01T00:00:00.000Z", null, JSON.stringify(run("r-killed")));
    old.close();

    const store = storeAt(path);
    const runs = await store.listRuns();
    expect(runs.map((r) => [r.run_id, r.status, r.finished_at, r.owner, r.heartbeat_at])).toEqual([
      ["r-killed", "interrupted", null, null, null],
      ["r-done", "finished", "2025-01-01T01:00:00.000Z", null, null],
    ]);
    await store.createRun(run("r-new", { status: "interrupted" }));
    expect((await store.claimRun("r-killed")).status).toBe("running");
    expect((await store.listRuns()).map((r) => r.run_id)).toEqual(["r-new", "r-killed", "r-done"]);
  });
});

describe("startHeartbeat", () => {
  it("stamps the runs it is given on a timer until stopped, and passes a failed stamp on without stopping", async () => {
    const seen: Array<readonly string[]> = [];
    const errors: string[] = [];
    let wake = () => undefined as void;
    const twoBeats = new Promise<void>((resolve) => {
      wake = () => {
        if (seen.length >= 2) resolve();
      };
    });
    const fake = {
      heartbeatRuns: async (ids: readonly string[]) => {
        seen.push(ids);
        wake();
        if (seen.length === 1) throw new Error("the store is busy");
        return ids.length;
      },
    };
    const heartbeat = startHeartbeat(fake, () => ["r1", "r2"], { intervalMs: 5, onError: (e) => errors.push((e as Error).message) });
    await twoBeats;
    heartbeat.stop();
    const beats = seen.length;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(seen.length).toBe(beats);
    expect(seen.slice(0, 2)).toEqual([["r1", "r2"], ["r1", "r2"]]);
    expect(errors).toEqual(["the store is busy"]);
  });
});
