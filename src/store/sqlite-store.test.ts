import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { MIGRATIONS, SCHEMA_VERSION, migrate, schemaVersion } from "./migrations.js";
import { openStore, SqliteTrajectoryStore } from "./sqlite-store.js";
import { describeTrajectoryStore, episode, exact, rejection, run } from "./test-support.js";
import type { EpisodeRecord } from "./types.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const storeModule = pathToFileURL(fileURLToPath(new URL("./sqlite-store.ts", import.meta.url))).href;

let dir: string;
let files = 0;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "llmix-store-"));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

// Every contract test runs on a WAL file of its own; `reopen` is a second connection to that file.
describeTrajectoryStore("SQLite", {
  open: async (options) => openStore(join(dir, `store-${++files}.db`), options),
  reopen: async (store, options) => openStore((store as SqliteTrajectoryStore).path, options),
});

describe("SQLite files", () => {
  it("file stores use WAL, foreign keys and a busy timeout, and are shared between connections", async () => {
    const path = join(dir, "nested", "deeper", "llmix.db");
    const a = openStore(path);
    const b = openStore(path);
    try {
      await a.createRun(run("r1"));
      await a.writeEpisodes([episode("r1", "tiny/easy/seed-1", 0)]);
      expect(await b.countEpisodes()).toBe(1);
      expect((await b.getRun("r1"))?.run_id).toBe("r1");
      await b.writeEpisodes([episode("r1", "tiny/easy/seed-1", 1)]);
      expect((await rejection(a.writeEpisodes([episode("r1", "tiny/easy/seed-1", 1)]))).code).toBe("invalid_argument");
    } finally {
      await a.close();
      await b.close();
    }
    const raw = new Database(path);
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(raw.pragma("page_size", { simple: true })).toBe(16384);
      expect(schemaVersion(raw)).toBe(SCHEMA_VERSION);
      // steps reference their episode: an orphan step is refused by SQLite itself
      raw.pragma("foreign_keys = ON");
      expect(() => raw.prepare("INSERT INTO steps (episode_id, step, record) VALUES ('ghost', 0, '{}')").run()).toThrow(/FOREIGN KEY/);
    } finally {
      raw.close();
    }
  });

  it("openStore() defaults to ./llmix-data/llmix.db, creating the directory", async () => {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const s = openStore();
      await s.createRun(run("r1"));
      await s.close();
      expect(existsSync(join(dir, "llmix-data", "llmix.db"))).toBe(true);
    } finally {
      process.chdir(cwd);
    }
  });

  it("a file that is not a database, or a directory, fails with store_error", () => {
    const junk = join(dir, "junk.db");
    writeFileSync(junk, "this is not a sqlite database, just some text that is long enough to have a header ".repeat(20));
    const error = (() => {
      try {
        openStore(junk);
      } catch (e) {
        return e as LlmixError;
      }
      throw new Error("expected failure");
    })();
    expect(error).toBeInstanceOf(LlmixError);
    expect(error.code).toBe("store_error");
    expect(() => openStore(dir)).toThrow(LlmixError);
  });
});

describe("migrations", () => {
  it("a new file is created at the current schema version", () => {
    const db = new Database(":memory:");
    expect(migrate(db)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(schemaVersion(db)).toBe(SCHEMA_VERSION);
    expect(migrate(db)).toEqual([]);
    db.close();
  });

  it("opening a version-1 file migrates it, backfilling the passed column from the stored verdicts", async () => {
    const path = join(dir, "old.db");
    const old = new Database(path);
    migrate(old, MIGRATIONS.slice(0, 1));
    expect(schemaVersion(old)).toBe(1);
    const win = episode("r1", "tiny/easy/seed-1", 0, { reward: 1 });
    const loss = episode("r1", "tiny/easy/seed-1", 1, { reward: 0 });
    for (const e of [win, loss]) {
      const ep = e.episode;
      old
        .prepare("INSERT INTO episodes (episode_id, run_id, env, task_id, difficulty, group_index, status, total_reward, advantages, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)")
        .run(ep.episode_id, ep.run_id, ep.env, ep.task_id, ep.difficulty, ep.group_index, ep.status, ep.total_reward, JSON.stringify(ep));
      for (const s of e.steps) old.prepare("INSERT INTO steps (episode_id, step, record) VALUES (?, ?, ?)").run(ep.episode_id, s.step, JSON.stringify(s));
    }
    old.prepare("INSERT INTO runs (run_id, env, status, created_at, finished_at, record) VALUES (?, ?, ?, ?, ?, ?)").run("r1", "tiny", "running", run("r1").created_at, null, JSON.stringify(run("r1")));
    old.close();

    const s = openStore(path);
    try {
      expect(ids(await s.episodes({ passed: true }))).toEqual([win.episode.episode_id]);
      expect(ids(await s.episodes({ passed: false }))).toEqual([loss.episode.episode_id]);
      expect(exact(await s.getSteps(win.episode.episode_id))).toBe(exact(win.steps));
      // From before owners and heartbeats: nothing says its process is alive, and it was created long ago.
      expect(exact(await s.getRun("r1"))).toBe(exact({ ...run("r1"), status: "interrupted", owner: null, heartbeat_at: null }));
      await s.writeEpisodes([episode("r1", "tiny/easy/seed-1", 2, { reward: 1 })]);
      expect(await s.countEpisodes({ passed: true })).toBe(2);
    } finally {
      await s.close();
    }
    const check = new Database(path, { readonly: true });
    expect(schemaVersion(check)).toBe(SCHEMA_VERSION);
    expect(check.prepare("SELECT name FROM sqlite_schema WHERE name = 'episodes_by_passed'").pluck().get()).toBe("episodes_by_passed");
    check.close();
  });

  it("a file from a newer llmix is refused with store_error and left untouched", async () => {
    const path = join(dir, "future.db");
    const future = new Database(path);
    migrate(future);
    future.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    future.close();
    const before = readFileSync(path);
    let error: unknown;
    try {
      openStore(path);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LlmixError);
    expect((error as LlmixError).code).toBe("store_error");
    expect((error as LlmixError).message).toMatch(/newer/);
    expect((error as LlmixError).details).toMatchObject({ schema_version: SCHEMA_VERSION + 1, supported_version: SCHEMA_VERSION });
    const raw = new Database(path, { readonly: true });
    expect(schemaVersion(raw)).toBe(SCHEMA_VERSION + 1);
    raw.close();
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it("a failing migration rolls back every pending step and keeps the old version", () => {
    const db = new Database(":memory:");
    migrate(db, MIGRATIONS.slice(0, 1));
    const broken = [...MIGRATIONS, { version: MIGRATIONS.length + 1, description: "broken", up: "CREATE TABLE extra (x); SELECT * FROM no_such_table;" }];
    let error: unknown;
    try {
      migrate(db, broken);
    } catch (e) {
      error = e;
    }
    expect((error as LlmixError).code).toBe("store_error");
    expect((error as LlmixError).message).toContain("broken");
    expect(schemaVersion(db)).toBe(1);
    expect(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name IN ('extra', 'episodes_by_passed')").pluck().get()).toBe(0);
    expect(() => migrate(db, [MIGRATIONS[1] as (typeof MIGRATIONS)[number]])).toThrow(/versions must be 1, 2, 3/);
    db.close();
  });

  const ids = (list: EpisodeRecord[]) => list.map((e) => e.episode_id);
});

describe("crash safety", () => {
  it("a writer killed with SIGKILL mid-batch leaves a consistent store with every committed episode whole", async () => {
    const path = join(dir, "crash.db");
    const child = join(dir, "writer.mjs");
    // Big batches of big steps keep the writer inside a transaction most of the time, so the kill lands mid-write.
    writeFileSync(
      child,
      `import { openStore } from ${JSON.stringify(storeModule)};
const store = openStore(${JSON.stringify(path)});
await store.createRun({ run_id: "crash", env: "tiny", env_version: "1", policy: "p", policy_checkpoint: null, config: null, tools: [], status: "running", planned_episodes: 1e6, created_at: new Date().toISOString(), finished_at: null });
const text = "observation ".repeat(400);
for (let batch = 0; ; batch++) {
  const episodes = [];
  for (let e = 0; e < 25; e++) {
    const id = "crash/t/seed-" + batch + "/g" + e;
    const n = 5 + ((batch + e) % 20);
    const steps = Array.from({ length: n }, (_, i) => ({ episode_id: id, task_id: "t", env_version: "1", policy_checkpoint: null, step: i, observation: { rendered: text + i, tokens: 400 }, action: { type: "message", content: "hi" }, tool_result: null, reward_components: { task: 0 }, terminated: i === n - 1, truncated: false }));
    episodes.push({ episode: { episode_id: id, run_id: "crash", env: "tiny", env_version: "1", task_id: "t/easy/seed-" + batch, difficulty: "easy", seed: 1, group_id: "g", group_index: e, policy: "p", policy_checkpoint: null, status: "ok", error: null, steps: n, tokens: 0, total_reward: 0, outcome: 0, reward_components: {}, verdict: null, end_reason: null, terminated: true, truncated: false, cost: 0, tool_calls: {}, advantages: null, started_at: "s", finished_at: "f", duration_ms: 1 }, steps });
  }
  await store.writeEpisodes(episodes);
  process.stdout.write("committed " + (batch + 1) * 25 + "\\n");
}
`,
    );
    const proc = spawn(process.execPath, ["--import", "tsx", child], {
      cwd: root,
      env: { ...process.env, TSX_TSCONFIG_PATH: "tsconfig.test.json" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let committed = 0;
    let stderr = "";
    proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((done) => proc.on("exit", (_code, signal) => done(signal)));
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`writer made no progress: ${stderr}`)), 50_000);
      proc.stdout.on("data", (d: Buffer) => {
        const counts = d.toString().match(/committed (\d+)/g) ?? [];
        for (const c of counts) committed = Math.max(committed, Number(c.slice("committed ".length)));
        if (committed >= 150) {
          clearTimeout(timer);
          // a small random delay so the kill lands at an arbitrary point in the next batch
          setTimeout(() => {
            proc.kill("SIGKILL");
            done();
          }, Math.random() * 20);
        }
      });
      proc.on("exit", (code) => {
        if (committed < 150) fail(new Error(`writer exited early (${code}): ${stderr}`));
      });
    });
    expect(await exited).toBe("SIGKILL");
    expect(existsSync(`${path}-wal`)).toBe(true);

    const raw = new Database(path);
    try {
      expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
      expect(raw.pragma("foreign_key_check")).toEqual([]);
      // every episode has exactly its steps 0..n-1: none half-written
      const broken = raw
        .prepare(
          `SELECT e.episode_id FROM episodes e LEFT JOIN steps s ON s.episode_id = e.episode_id
           GROUP BY e.episode_id
           HAVING count(s.step) != json_extract(e.record, '$.steps') OR coalesce(max(s.step), -1) != count(s.step) - 1`,
        )
        .all();
      expect(broken).toEqual([]);
      // whole batches only: a batch is stored with all 25 episodes or not at all
      const count = raw.prepare("SELECT count(*) FROM episodes").pluck().get() as number;
      expect(count % 25).toBe(0);
      expect(count).toBeGreaterThanOrEqual(committed);
    } finally {
      raw.close();
    }

    const s = openStore(path);
    try {
      const count = await s.countEpisodes({ run_id: "crash" });
      expect(count).toBeGreaterThanOrEqual(committed);
      let streamed = 0;
      for await (const e of s.streamEpisodes({ run_id: "crash" })) {
        expect(e.steps.map((x) => x.step)).toEqual(Array.from({ length: e.episode.steps }, (_, i) => i));
        streamed++;
      }
      expect(streamed).toBe(count);
      // Its owner, the killed writer, is gone from this host.
      expect((await s.getRun("crash"))?.status).toBe("interrupted");
      await s.writeEpisodes([episode("crash", "after/easy/seed-1", 0)]);
      expect(await s.countEpisodes({ run_id: "crash" })).toBe(count + 1);
    } finally {
      await s.close();
    }
  });
});

describe("SQLite data boundaries", () => {
  it("a purge leaves none of the purged records' bytes in the database or its WAL", async () => {
    const path = join(dir, "purge.db");
    const s = openStore(path);
    const marker = "PURGE-ME-7f3a9c";
    const victim = episode("r1", "tiny/easy/seed-1", 0);
    victim.episode.verdict = { passed: false, score: 0, parts: {}, details: `${marker} in the verdict` };
    for (const step of victim.steps) step.observation = { rendered: `${marker} ${"y".repeat(3000)}`, tokens: 1 };
    try {
      await s.createRun(run("r1", undefined, { status: "finished" }));
      await s.writeEpisodes([victim, episode("r1", "tiny/easy/seed-2", 0)]);
      const bytes = () => [path, `${path}-wal`].filter(existsSync).map((p) => readFileSync(p).includes(marker)).some(Boolean);
      expect(bytes()).toBe(true);
      const removed = await s.purge({ episode_ids: [victim.episode.episode_id] });
      expect(removed.episodes).toEqual([victim.episode.episode_id]);
      expect(bytes()).toBe(false);
      expect(await s.countEpisodes()).toBe(1);
    } finally {
      await s.close();
    }
  });

  it("the audit log refuses UPDATE and DELETE, even from another connection", async () => {
    const path = join(dir, "audit.db");
    const s = openStore(path);
    await s.appendAudit([{ at: new Date(0).toISOString(), token: "t", token_id: null, tenant: null, action: "read", target_kind: "run", target_id: "r1", via: "cli", detail: null }]);
    await s.close();
    const raw = new Database(path);
    try {
      expect(() => raw.prepare("DELETE FROM audit").run()).toThrow(/append-only/);
      expect(() => raw.prepare("UPDATE audit SET token = 'x'").run()).toThrow(/append-only/);
      expect(raw.prepare("SELECT count(*) FROM audit").pluck().get()).toBe(1);
    } finally {
      raw.close();
    }
  });

  it("migrating a version-3 file backfills run tenants and episode finish times", async () => {
    const path = join(dir, "v3.db");
    const raw = new Database(path);
    migrate(raw, MIGRATIONS.slice(0, 3));
    const r = { ...run("old", undefined, { tenant: "acme" }) };
    raw.prepare("INSERT INTO runs (run_id, env, status, created_at, record) VALUES (?, ?, ?, ?, ?)").run("old", "tiny", "finished", r.created_at, JSON.stringify(r));
    const e = episode("old", "tiny/easy/seed-1", 0, { finishedAt: "2020-01-01T00:00:00.000Z" }).episode;
    raw.prepare("INSERT INTO episodes (episode_id, run_id, env, task_id, difficulty, group_index, status, total_reward, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)").run(e.episode_id, "old", "tiny", e.task_id, e.difficulty, 0, "ok", 0, JSON.stringify(e));
    raw.close();
    const s = openStore(path);
    try {
      expect((await s.listRuns({ tenant: "acme" })).map((x) => x.run_id)).toEqual(["old"]);
      expect((await s.purge({ finished_before: "2021-01-01T00:00:00Z" })).episodes).toEqual([e.episode_id]);
    } finally {
      await s.close();
    }
  });
});
