/**
 * The PostgreSQL trajectory store: the whole TrajectoryStore contract (test-support.ts), then what only a
 * server store has: connection failures, schemas, migrations under an advisory lock, a server lost
 * mid-session, a writer killed mid-batch. Needs PostgreSQL at LLMIX_TEST_POSTGRES_URL (default
 * postgres://postgres@127.0.0.1:5432/test; .ci/run starts it): without it these tests fail, they never skip.
 * Every store lives in a fresh schema named after this process, all dropped at the end.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, Socket, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { displayStore, openStoreAt } from "./open.js";
import { parsePostgresUrl, redactUrl } from "./postgres-location.js";
import { migratePostgres, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION, postgresSchemaVersion, quoteIdent } from "./postgres-migrations.js";
import { openPostgresStore, PostgresTrajectoryStore } from "./postgres-store.js";
import { SqliteTrajectoryStore } from "./sqlite-store.js";
import { describeTrajectoryStore, episode, exact, rejection, run } from "./test-support.js";
import type { StoredEpisode } from "./types.js";

const URL_ = process.env.LLMIX_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const PREFIX = `llmix_test_${process.pid}_${randomBytes(3).toString("hex")}`;
const root = fileURLToPath(new URL("../../", import.meta.url));
const storeModule = pathToFileURL(fileURLToPath(new URL("./postgres-store.ts", import.meta.url))).href;
let schemas = 0;
/** A schema name no other test (or test process) uses. */
const freshSchema = () => `${PREFIX}_${++schemas}`;

let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: URL_, connectionTimeoutMillis: 10_000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable at ${redactUrl(URL_)} (${error instanceof Error ? error.message : String(error)}): start it (.ci/run does) or set LLMIX_TEST_POSTGRES_URL`);
  }
});

afterAll(async () => {
  if (!admin) return;
  const found = await admin.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [PREFIX]);
  for (const { nspname } of found.rows) await admin.query(`DROP SCHEMA ${quoteIdent(nspname)} CASCADE`);
  await admin.end();
});

describeTrajectoryStore("PostgreSQL", {
  open: (options) => openPostgresStore(URL_, { ...options, schema: freshSchema() }),
  reopen: (store, options) => openPostgresStore(URL_, { ...options, schema: (store as PostgresTrajectoryStore).schema }),
});

/** The error a promise rejects with, and how long it took to. */
async function timedRejection(promise: Promise<unknown>): Promise<{ error: LlmixError; ms: number }> {
  const started = Date.now();
  const error = await rejection(promise);
  return { error, ms: Date.now() - started };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** `url` with its host and port replaced. */
function via(url: string, port: number, extra = ""): string {
  const u = new URL(url);
  u.hostname = "127.0.0.1";
  u.port = String(port);
  return `${u.toString()}${extra}`;
}

describe("PostgreSQL connections", () => {
  it("a server that is down, a missing database or role, or a malformed URL fails fast with store_error naming the URL without its password", async () => {
    const port = await closedPort();
    const down = await timedRejection(openPostgresStore(`postgres://llmix:s3cret-pw@127.0.0.1:${port}/test`, { connectTimeoutMs: 3_000 }));
    expect(down.error.code).toBe("store_error");
    expect(down.error.message).toContain(`postgres://llmix@127.0.0.1:${port}/test`);
    expect(down.error.message).toMatch(/ECONNREFUSED/);
    expect(JSON.stringify(down.error)).not.toContain("s3cret");
    expect(down.error.message).not.toContain("s3cret");
    expect(down.error.details.url).toBe(`postgres://llmix@127.0.0.1:${port}/test`);
    expect(down.ms).toBeLessThan(3_000);

    const wrongDatabase = new URL(URL_);
    wrongDatabase.pathname = "/llmix_no_such_database";
    const wrongRole = new URL(URL_);
    wrongRole.username = "llmix_no_such_role";
    wrongRole.password = "pw-of-nobody";
    const missing: Array<[URL, RegExp]> = [
      [wrongDatabase, /database "llmix_no_such_database" does not exist/],
      [wrongRole, /llmix_no_such_role|authentication/],
    ];
    for (const [url, reason] of missing) {
      const { error } = await timedRejection(openPostgresStore(url.toString()));
      expect(error.code, url.toString()).toBe("store_error");
      expect(error.message).toMatch(reason);
      expect(error.message).not.toContain("pw-of-nobody");
      if (url.password) expect(error.message).not.toContain(url.password);
    }

    const malformed = await rejection(openPostgresStore("postgres://user:pw@[::1/test"));
    expect(malformed.code).toBe("store_error");
    expect(malformed.message).not.toContain("pw");
    expect((await rejection(openPostgresStore("mysql://localhost/test"))).code).toBe("invalid_argument");
    expect((await rejection(openPostgresStore(URL_, { connectTimeoutMs: 0 }))).code).toBe("invalid_argument");
    expect((await rejection(openPostgresStore(URL_, { schema: "x".repeat(64) }))).code).toBe("invalid_argument");
  });

  it("a server that accepts connections but never answers fails with store_error after the connect timeout, not a hang", async () => {
    const held: Socket[] = [];
    const silent = createServer((socket) => {
      held.push(socket);
      socket.on("error", () => undefined);
    });
    await new Promise<void>((done) => silent.listen(0, "127.0.0.1", done));
    try {
      const port = (silent.address() as AddressInfo).port;
      const { error, ms } = await timedRejection(openPostgresStore(`postgres://postgres@127.0.0.1:${port}/test`, { connectTimeoutMs: 400 }));
      expect(error.code).toBe("store_error");
      expect(error.message).toMatch(/timeout/i);
      expect(ms).toBeLessThan(5_000);
    } finally {
      for (const s of held) s.destroy();
      await new Promise<void>((done) => silent.close(() => done()));
    }
  });

  it("losing the server mid-session fails calls with store_error (no crash), and the store works again once it is back", async () => {
    const target = new URL(URL_);
    const sockets = new Set<Socket>();
    const listen = (port: number) => {
      const proxy = createServer((client) => {
        const upstream = new Socket();
        upstream.connect(Number(target.port || 5432), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("error", () => undefined);
          s.on("close", () => sockets.delete(s));
        }
        client.pipe(upstream).pipe(client);
      });
      return new Promise<Server>((done) => proxy.listen(port, "127.0.0.1", () => done(proxy)));
    };
    const cut = async (proxy: Server) => {
      const closed = new Promise<void>((done) => proxy.close(() => done()));
      for (const s of sockets) s.destroy();
      await closed;
    };
    let proxy = await listen(0);
    const port = (proxy.address() as AddressInfo).port;
    const schema = freshSchema();
    const store = await openPostgresStore(via(URL_, port), { schema, connectTimeoutMs: 2_000, poolSize: 2 });
    try {
      await store.createRun(run("r1"));
      await store.writeEpisodes([episode("r1", "t/easy/seed-1", 0)]);
      await cut(proxy);
      // Idle pooled connections break with the server gone: the pool drops them without an unhandled 'error'.
      await new Promise((done) => setTimeout(done, 50));
      for (const call of [() => store.countEpisodes(), () => store.writeEpisodes([episode("r1", "t/easy/seed-1", 1)]), () => store.getRun("r1")]) {
        const error = await rejection(call());
        expect(error.code).toBe("store_error");
        expect(error.message).toContain(`127.0.0.1:${port}`);
      }
      // a batch cut off mid-transaction, at several points of it, is stored whole or not at all
      for (const [i, delay] of [0, 5, 15, 30, 60].entries()) {
        proxy = await listen(port);
        const task = `t/hard/seed-${i}`;
        const writing = store.writeEpisodes(Array.from({ length: 300 }, (_, g) => episode("r1", task, g, { steps: 20 }))).then(
          () => "stored",
          (e: unknown) => (e as LlmixError).code,
        );
        await new Promise((done) => setTimeout(done, delay));
        await cut(proxy);
        const outcome = await writing;
        expect(["stored", "store_error"]).toContain(outcome);
        proxy = await listen(port);
        expect([outcome, await store.countEpisodes({ task_id: task })]).toEqual(outcome === "stored" ? ["stored", 300] : [outcome, expect.toBeOneOf([0, 300])]);
        for await (const e of store.streamEpisodes({ task_id: task })) expect(e.steps).toHaveLength(20);
        await cut(proxy);
      }

      proxy = await listen(port);
      expect(await store.countEpisodes({ run_id: "r1", task_id: "t/easy/seed-1" })).toBe(1);
      await store.writeEpisodes([episode("r1", "t/easy/seed-1", 1)]);
      expect(await store.countEpisodes({ task_id: "t/easy/seed-1" })).toBe(2);
    } finally {
      await store.close();
      await cut(proxy);
    }
  });
});

describe("PostgreSQL schemas", () => {
  it("parses the schema from the option, ?schema=, or options=-c search_path=, and redacts passwords", () => {
    expect(parsePostgresUrl("postgres://u:pw@h:5/db")).toEqual({ connectionString: "postgres://u:pw@h:5/db", schema: "public", display: "postgres://u@h:5/db" });
    expect(parsePostgresUrl("postgresql://u@h/db?schema=runs_a&sslmode=disable")).toMatchObject({ schema: "runs_a", connectionString: "postgresql://u@h/db?sslmode=disable" });
    expect(parsePostgresUrl("postgres://h/db?options=-c%20search_path%3DMixed").schema).toBe("mixed");
    expect(parsePostgresUrl('postgres://h/db?options=-c%20search_path%3D%22Mixed%22%2Cpublic').schema).toBe("Mixed");
    expect(parsePostgresUrl("postgres://h/db?options=--search_path%3Dsp").schema).toBe("sp");
    expect(parsePostgresUrl("postgres://h/db?schema=a&options=-c%20search_path%3Db", "c").schema).toBe("c");
    expect(parsePostgresUrl("postgres://h/db?options=-c%20search_path%3D%22%24user%22").schema).toBe("public");
    expect(redactUrl("postgres://u:secret@h/db?password=other")).toBe("postgres://u@h/db?password=***");
    expect(redactUrl("postgres://u:se@cret@h/db")).not.toContain("cret@h");
    expect(displayStore("postgresql://u:pw@h/db?schema=s")).toBe("postgresql://u@h/db?schema=s");
    expect(displayStore("./llmix-data/pw@x//y.db")).toBe("./llmix-data/pw@x//y.db");
  });

  it("a store in a URL-named schema is found again through the same URL or a search_path; readers never create one", async () => {
    const schema = freshSchema();
    const bySchema = `${URL_}${URL_.includes("?") ? "&" : "?"}schema=${schema}`;
    const bySearchPath = `${URL_}${URL_.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;

    const missing = await rejection(openStoreAt(bySchema, { create: false }));
    expect(missing.code).toBe("unknown_store");
    expect(missing.message).toContain(schema);
    const exists = await admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    expect(exists.rows).toHaveLength(0);

    const writer = await openStoreAt(bySchema);
    expect(writer).toBeInstanceOf(PostgresTrajectoryStore);
    await writer.createRun(run("r1"));
    await writer.close();
    for (const url of [bySchema, bySearchPath]) {
      const reader = await openStoreAt(url, { create: false });
      expect((await reader.listRuns()).map((r) => r.run_id)).toEqual(["r1"]);
      await reader.close();
    }
    const tables = await admin.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", [schema]);
    expect(tables.rows.map((r) => r.tablename)).toEqual(["audit", "episodes", "runs", "schema_version", "steps"]);
    // a SQLite path still opens SQLite
    const dir = mkdtempSync(join(tmpdir(), "llmix-open-"));
    try {
      const sqlite = await openStoreAt(join(dir, "x.db"));
      expect(sqlite).toBeInstanceOf(SqliteTrajectoryStore);
      await sqlite.close();
      expect((await rejection(openStoreAt(join(dir, "missing.db"), { create: false }))).code).toBe("unknown_store");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("key columns use the C collation whatever the database's locale", async () => {
    const store = await openPostgresStore(URL_, { schema: freshSchema() });
    try {
      const columns = await admin.query<{ table_name: string; column_name: string; collation_name: string | null }>(
        `SELECT table_name, column_name, collation_name FROM information_schema.columns
         WHERE table_schema = $1 AND column_name IN ('run_id', 'episode_id', 'task_id', 'env', 'difficulty', 'created_at') ORDER BY table_name, column_name`,
        [store.schema],
      );
      expect(columns.rows.length).toBe(9);
      for (const c of columns.rows) expect(c.collation_name, `${c.table_name}.${c.column_name}`).toBe("C");
    } finally {
      await store.close();
    }
  });
});

describe("PostgreSQL migrations", () => {
  it("a new schema is created at the current version, once, by many processes opening it at the same time", async () => {
    const schema = freshSchema();
    const stores = await Promise.all(Array.from({ length: 6 }, () => openPostgresStore(URL_, { schema, poolSize: 1 })));
    try {
      await Promise.all(stores.map((s, i) => s.createRun(run(`r${i}`))));
      const versions = await admin.query<{ version: number }>(`SELECT version FROM ${quoteIdent(schema)}.schema_version ORDER BY version`);
      expect(versions.rows.map((r) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
      expect(await postgresSchemaVersion(admin, schema)).toBe(POSTGRES_SCHEMA_VERSION);
      expect(await migratePostgres(admin, schema)).toEqual([]);
      expect((await stores[0]?.listRuns())?.length).toBe(6);
    } finally {
      for (const s of stores) await s.close();
    }
  });

  it("a store from a newer llmix is refused with store_error and left untouched", async () => {
    const schema = freshSchema();
    const first = await openPostgresStore(URL_, { schema });
    await first.createRun(run("r1"));
    await first.close();
    await admin.query(`INSERT INTO ${quoteIdent(schema)}.schema_version (version, description) VALUES ($1, 'from the future')`, [POSTGRES_SCHEMA_VERSION + 1]);
    const before = await admin.query(`SELECT run_id, record FROM ${quoteIdent(schema)}.runs`);
    for (const create of [true, false]) {
      const error = await rejection(openPostgresStore(URL_, { schema, create }));
      expect(error.code).toBe("store_error");
      expect(error.message).toMatch(/newer/);
      expect(error.details).toMatchObject({ schema_version: POSTGRES_SCHEMA_VERSION + 1, supported_version: POSTGRES_SCHEMA_VERSION });
    }
    expect(await postgresSchemaVersion(admin, schema)).toBe(POSTGRES_SCHEMA_VERSION + 1);
    expect((await admin.query(`SELECT run_id, record FROM ${quoteIdent(schema)}.runs`)).rows).toEqual(before.rows);
  });

  it("a failing migration rolls back every pending step and keeps the old version", async () => {
    const schema = freshSchema();
    const broken = [...POSTGRES_MIGRATIONS, { version: POSTGRES_MIGRATIONS.length + 1, description: "broken", up: "CREATE TABLE extra (x int); SELECT * FROM no_such_table;" }];
    const error = await rejection(migratePostgres(admin, schema, { migrations: broken }));
    expect(error.code).toBe("store_error");
    expect(error.message).toContain("broken");
    // nothing of it stayed: not even the schema, which the same transaction created
    expect(await postgresSchemaVersion(admin, schema)).toBe(0);
    expect((await admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rows).toHaveLength(0);
    expect(await migratePostgres(admin, schema)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
    expect((await rejection(migratePostgres(admin, schema, { migrations: broken }))).code).toBe("store_error");
    expect(await postgresSchemaVersion(admin, schema)).toBe(POSTGRES_SCHEMA_VERSION);
    expect((await admin.query("SELECT to_regclass($1) AS t", [`${quoteIdent(schema)}.extra`])).rows[0]?.t).toBeNull();
    expect((await rejection(migratePostgres(admin, schema, { migrations: [POSTGRES_MIGRATIONS[0] as (typeof POSTGRES_MIGRATIONS)[number], { ...broken[1], version: 3 } as (typeof POSTGRES_MIGRATIONS)[number]] }))).message).toMatch(/versions must be 1, 2, 3/);
  });
});

describe("PostgreSQL bulk writes", () => {
  /** A batch of `n` episodes of 20 steps of ~1 KB each: past the first pieces of its steps' COPY. */
  const big = (task: string, n: number) =>
    Array.from({ length: n }, (_, g) => {
      const e = episode("bulk", task, g, { steps: 20 });
      for (const s of e.steps) s.observation.rendered = `${g}\t${s.step}\\n\n${"x".repeat(1000)}`;
      return e;
    });

  it("a batch that fails after its steps' COPY has started is rolled back whole, and the connection goes on", async () => {
    const schema = freshSchema();
    // One connection: every call after a failure runs on the connection that failed.
    const store = await openPostgresStore(URL_, { schema, poolSize: 1 });
    try {
      // a malformed step near the end of the batch, long after the first rows were sent
      const malformed = big("t/easy/seed-1", 150);
      const last = malformed[149]?.steps[19] as (typeof malformed)[number]["steps"][number];
      last.info = { score: Number.NaN };
      const invalid = await rejection(store.writeEpisodes(malformed));
      expect(invalid.code).toBe("invalid_argument");
      expect(invalid.message).toContain("episodes[149].steps[19].info.score");
      expect(await store.countEpisodes()).toBe(0);

      // a server error mid-COPY: a step row that should not exist (an orphan, as a crashed manual edit
      // could leave) collides with one of the batch's last steps
      const batch = big("t/easy/seed-2", 150);
      const lastId = batch[149]?.episode.episode_id as string;
      await admin.query(`INSERT INTO ${quoteIdent(schema)}.steps (episode_id, step, record) VALUES ($1, 19, '{}')`, [lastId]);
      const failed = await rejection(store.writeEpisodes(batch));
      expect(failed.code).toBe("store_error");
      expect(failed.details.pg_code).toBe("23505");
      expect(await store.countEpisodes()).toBe(0);
      expect((await admin.query(`SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.steps`)).rows[0]?.n).toBe(1);

      // the same connection writes the batch once the orphan is gone, every step exactly
      await admin.query(`DELETE FROM ${quoteIdent(schema)}.steps`);
      await store.writeEpisodes(batch);
      expect(await store.countEpisodes()).toBe(150);
      for (const e of [batch[0], batch[77], batch[149]] as StoredEpisode[]) expect(exact(await store.getSteps(e.episode.episode_id))).toBe(exact(e.steps));
      expect((await admin.query(`SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.steps`)).rows[0]?.n).toBe(3000);
    } finally {
      await store.close();
    }
  });

  it("a writer waiting on another's uncommitted episode holds its steps, then stores them or fails whole as the other ends", async () => {
    const schema = freshSchema();
    const store = await openPostgresStore(URL_, { schema });
    const q = quoteIdent(schema);
    const blocker = new pg.Client({ connectionString: URL_ });
    await blocker.connect();
    try {
      for (const outcome of ["ROLLBACK", "COMMIT"] as const) {
        const task = `t/easy/seed-${outcome}`;
        const batch = big(task, 300);
        const taken = batch[299] as StoredEpisode;
        // another transaction holds the batch's last id, uncommitted
        await blocker.query("BEGIN");
        await blocker.query(
          `INSERT INTO ${q}.episodes (episode_id, run_id, env, task_id, difficulty, group_index, status, total_reward, passed, advantages, record) VALUES ($1, 'bulk', 'tiny', $2, 'easy', 299, 'ok', 0, false, NULL, '{}')`,
          [taken.episode.episode_id, task],
        );
        const writing = store.writeEpisodes(batch).then(
          () => "stored",
          (e: unknown) => e as LlmixError,
        );
        await new Promise((done) => setTimeout(done, 300));
        await blocker.query(outcome);
        const result = await writing;
        if (outcome === "ROLLBACK") {
          expect(result).toBe("stored");
          expect(await store.countEpisodes({ task_id: task })).toBe(300);
          expect(exact(await store.getSteps(taken.episode.episode_id))).toBe(exact(taken.steps));
        } else {
          expect((result as LlmixError).code).toBe("invalid_argument");
          expect((result as LlmixError).details.episode_id).toBe(taken.episode.episode_id);
          // only the other writer's row: none of this batch, none of its steps
          expect(await store.countEpisodes({ task_id: task })).toBe(1);
          expect(await store.getSteps(taken.episode.episode_id)).toEqual([]);
          expect(await store.getSteps((batch[0] as StoredEpisode).episode.episode_id)).toEqual([]);
        }
      }
    } finally {
      await blocker.end();
      await store.close();
    }
  });
});

describe("PostgreSQL crash safety", () => {
  it("a writer killed with SIGKILL mid-batch leaves only whole batches, every episode with all its steps", async () => {
    const schema = freshSchema();
    const dir = mkdtempSync(join(tmpdir(), "llmix-pg-crash-"));
    const child = join(dir, "writer.mjs");
    writeFileSync(
      child,
      `import { openPostgresStore } from ${JSON.stringify(storeModule)};
const store = await openPostgresStore(${JSON.stringify(URL_)}, { schema: ${JSON.stringify(schema)} });
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
    try {
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
          for (const c of d.toString().match(/committed (\d+)/g) ?? []) committed = Math.max(committed, Number(c.slice("committed ".length)));
          if (committed >= 100) {
            clearTimeout(timer);
            // a small random delay so the kill lands at an arbitrary point in the next batch
            setTimeout(() => {
              proc.kill("SIGKILL");
              done();
            }, Math.random() * 20);
          }
        });
        proc.on("exit", (code) => {
          if (committed < 100) fail(new Error(`writer exited early (${code}): ${stderr}`));
        });
      });
      expect(await exited).toBe("SIGKILL");

      const q = quoteIdent(schema);
      // The killed writer's open transaction is invisible to these reads (and rolled back once the server
      // notices the dropped connection): only committed batches are seen.
      const broken = await admin.query(
        `SELECT e.episode_id FROM ${q}.episodes e LEFT JOIN ${q}.steps s ON s.episode_id = e.episode_id
         GROUP BY e.episode_id, e.record
         HAVING count(s.step) != (e.record::json ->> 'steps')::int OR coalesce(max(s.step), -1) != count(s.step) - 1`,
      );
      expect(broken.rows).toEqual([]);
      const orphans = await admin.query(`SELECT count(*)::int AS n FROM ${q}.steps s WHERE NOT EXISTS (SELECT 1 FROM ${q}.episodes e WHERE e.episode_id = s.episode_id)`);
      expect(orphans.rows[0]?.n).toBe(0);
      const count = (await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${q}.episodes`)).rows[0]?.n ?? -1;
      expect(count % 25).toBe(0);
      expect(count).toBeGreaterThanOrEqual(committed);

      const store = await openPostgresStore(URL_, { schema });
      try {
        expect(await store.countEpisodes({ run_id: "crash" })).toBe(count);
        let streamed = 0;
        for await (const e of store.streamEpisodes({ run_id: "crash" })) {
          expect(e.steps.map((x) => x.step)).toEqual(Array.from({ length: e.episode.steps }, (_, i) => i));
          streamed++;
        }
        expect(streamed).toBe(count);
        // Its owner, the killed writer, is gone from this host.
        expect((await store.getRun("crash"))?.status).toBe("interrupted");
        await store.writeEpisodes([episode("crash", "after/easy/seed-1", 0)]);
        expect(await store.countEpisodes({ run_id: "crash" })).toBe(count + 1);
        expect(exact((await store.getEpisode("crash/after/easy/seed-1/g0"))?.task_id)).toBe(exact("after/easy/seed-1"));
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});


describe("PostgreSQL data boundaries", () => {
  it("the audit log refuses UPDATE, DELETE and TRUNCATE, even from another connection", async () => {
    const schema = freshSchema();
    const store = await openPostgresStore(URL_, { schema });
    try {
      await store.appendAudit([{ at: new Date(0).toISOString(), token: "t", token_id: null, tenant: null, action: "read", target_kind: "run", target_id: "r1", via: "cli", detail: null }]);
      const table = `${quoteIdent(schema)}.audit`;
      for (const sql of [`DELETE FROM ${table}`, `UPDATE ${table} SET token = 'x'`, `TRUNCATE ${table}`]) {
        await expect(admin.query(sql), sql).rejects.toThrow(/append-only/);
      }
      expect((await store.auditLog()).map((e) => e.target_id)).toEqual(["r1"]);
    } finally {
      await store.close();
    }
  });
});
