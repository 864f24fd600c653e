import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { currentOwner, startHeartbeat } from "./liveness.js";
import { MIGRATIONS, migrate } from "./migrations.js";
import { openStore, type SqliteTrajectoryStore } from "./sqlite-store.js";
import type { RunRecord } from "./types.js";

/** A pid no process has: above Linux's largest pid_max (2^22). */
const DEAD_PID = 2 ** 30;

function run(runId: string, extra: Partial<RunRecord> = {}): RunRecord {
  return {
    run_id: runId, env: "tiny", env_version: "1.0.0", policy: "oracle", policy_checkpoint: null, config: { n: 1 }, tools: [],
    status: "running", planned_episodes: 1, created_at: "2025-01-01T00:00:00.000Z", finished_at: null, ...extra,
  };
}

async function rejection(promise: Promise<unknown>): Promise<LlmixError> {
  const error = await promise.then(
    () => new Error("expected the call to fail"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LlmixError);
  return error as LlmixError;
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
  it("a running run reads interrupted once its owner's pid is gone from this host or its heartbeat is stale", async () => {
    let now = Date.parse("2026-01-01T00:00:00.000Z");
    const store = storeAt(":memory:", { now: () => now, staleRunAfterMs: 30_000 });
    await store.createRun(run("mine"));
    await store.createRun(run("dead", { owner: { host: currentOwner().host, pid: DEAD_PID } }));
    // A pid on another host says nothing here: only its heartbeat does.
    await store.createRun(run("remote", { owner: { host: "another-host", pid: DEAD_PID } }));
    const statuses = async () => Object.fromEntries((await store.listRuns()).map((r) => [r.run_id, r.status]));
    expect(await statuses()).toEqual({ mine: "running", dead: "interrupted", remote: "running" });
    expect((await store.getRun("mine"))?.owner).toEqual(currentOwner());

    now += 30_000;
    expect(await statuses()).toEqual({ mine: "running", dead: "interrupted", remote: "running" });
    now += 1;
    expect(await statuses()).toEqual({ mine: "interrupted", dead: "interrupted", remote: "interrupted" });

    // Only this owner's running runs take the heartbeat; unknown ids are skipped.
    expect(await store.heartbeatRuns(["mine", "remote", "dead", "ghost"])).toBe(1);
    expect(await statuses()).toEqual({ mine: "running", dead: "interrupted", remote: "interrupted" });
    expect((await store.getRun("mine"))?.heartbeat_at).toBe(new Date(now).toISOString());

    await store.finishRun("mine", "finished");
    now += 3_600_000;
    expect((await store.getRun("mine"))?.status).toBe("finished");
    expect(await store.heartbeatRuns(["mine"])).toBe(0);
    expect(await store.heartbeatRuns([])).toBe(0);
    expect((await rejection(store.heartbeatRuns([""]))).code).toBe("invalid_argument");
    expect((await rejection(store.createRun(run("bad-owner", { owner: { host: "", pid: 1 } })))).code).toBe("invalid_argument");
  });

  it("an owner that stops on an error leaves its run interrupted (no finished_at); a new owner claims it, a live one is refused", async () => {
    const path = join(dir, "shared.db");
    const other = storeAt(path, { owner: { host: "another-host", pid: 7 } });
    const mine = storeAt(path);
    await other.createRun(run("r"));
    const refused = await rejection(mine.claimRun("r"));
    expect(refused.code).toBe("invalid_argument");
    expect(refused.message).toMatch(/run r is running \(owner another-host pid 7/);

    await other.finishRun("r", "interrupted");
    const left = await mine.getRun("r");
    expect([left?.status, left?.finished_at]).toEqual(["interrupted", null]);
    expect(await mine.claimRun("r")).toMatchObject({ run_id: "r", status: "running", finished_at: null, owner: currentOwner() });
    // The old owner has lost the run: its heartbeats no longer stamp it.
    expect(await other.heartbeatRuns(["r"])).toBe(0);
    expect(await mine.heartbeatRuns(["r"])).toBe(1);
    // Claiming a run one already owns is a no-op take-over.
    expect((await mine.claimRun("r")).owner).toEqual(currentOwner());

    await mine.finishRun("r", "finished");
    expect(await other.claimRun("r")).toMatchObject({ status: "running", owner: { host: "another-host", pid: 7 } });
    expect((await rejection(mine.claimRun("ghost"))).code).toBe("unknown_run");
  });

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
