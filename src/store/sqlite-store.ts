/**
 * The embedded trajectory store (DESIGN §6): one SQLite file per machine, written through
 * better-sqlite3. Every row keeps its full record as JSON text, so what a runner wrote is what an
 * export reads back, field for field; the columns next to it exist only to filter, order and join.
 *
 * File databases run in WAL mode with `synchronous=NORMAL`: a committed batch survives a killed
 * process (it is in the WAL, which SQLite replays on the next open), and readers never block the
 * writer. Each `writeEpisodes` call is one transaction, so a crash loses at most the batch in flight
 * and never leaves an episode without its steps.
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import type { TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError, NotFoundError, ValidationError } from "../core/errors.js";
import { currentOwner, effectiveStatus, STALE_RUN_AFTER_MS, type RunLivenessRow } from "./liveness.js";
import { checkSupported, migrate } from "./migrations.js";
import type { Advantages, EpisodeQuery, EpisodeRecord, RunOwner, RunRecord, RunStatus, StoredEpisode, TrajectoryStore } from "./types.js";

/** Where `openStore()` puts the database when no path is given. */
export const DEFAULT_STORE_PATH = "./llmix-data/llmix.db";

/** Tuning knobs of a store; the defaults suit a rollout runner. */
export interface SqliteStoreOptions {
  /** Episodes per page of `streamEpisodes` (their steps are read with them): bounds its memory. */
  pageSize?: number;
  /** How long a call waits for another connection's write lock before failing with store_error. */
  busyTimeoutMs?: number;
  /** The process this store acts for in createRun, claimRun and heartbeatRuns (default: this process). */
  owner?: RunOwner;
  /** A `running` run whose heartbeat is older than this reads as interrupted (default STALE_RUN_AFTER_MS). */
  staleRunAfterMs?: number;
  /** The clock of heartbeats and staleness, in ms since the epoch (default Date.now). */
  now?: () => number;
  /**
   * Create the file (and its folder) when missing (default true). Readers pass false: a mistyped path
   * is then unknown_store, not a new empty store and a stray folder.
   */
  create?: boolean;
}

/** Open (creating it and its directory if needed, migrating it if old) the SQLite trajectory store at `path`. */
export function openStore(path: string = DEFAULT_STORE_PATH, options: SqliteStoreOptions = {}): SqliteTrajectoryStore {
  return new SqliteTrajectoryStore(path, options);
}

interface EpisodeRow {
  episode_id: string;
  run_id: string;
  task_id: string;
  group_index: number;
  advantages: string | null;
  record: string;
}

interface RunRow extends RunLivenessRow {
  finished_at: string | null;
  record: string;
}

/** An episode validated and serialised before its transaction opens, so the write lock is held briefly. */
interface PreparedEpisode {
  episode: EpisodeRecord;
  record: string;
  advantages: string | null;
  passed: 0 | 1;
  steps: Array<{ step: number; record: string }>;
}

/** A validated query: only the fields that were given, each of the right type. */
type CleanQuery = EpisodeQuery;

/** Ordering of every episode query; episode_id makes it total so keyset paging never skips or repeats. */
const ORDER = "ORDER BY run_id, task_id, group_index, episode_id";
const EPISODE_COLUMNS = "episode_id, run_id, task_id, group_index, advantages, record";
const RUN_COLUMNS = "status, created_at, finished_at, owner_host, owner_pid, heartbeat_at, record";

/** The SQLite trajectory store. Calls are synchronous underneath; the Promise API is the TrajectoryStore contract. */
export class SqliteTrajectoryStore implements TrajectoryStore {
  /** The path the store was opened at (":memory:" for an in-memory store). */
  readonly path: string;
  /** The process this store acts for as a run owner. */
  readonly owner: RunOwner;
  private readonly pageSize: number;
  private readonly staleRunAfterMs: number;
  private readonly now: () => number;
  private db: Database.Database | undefined;
  // Statements are compiled once per connection: preparing costs more than running an insert.
  private readonly insertRun: Database.Statement;
  private readonly updateRun: Database.Statement;
  private readonly stampHeartbeats: Database.Statement;
  private readonly claim: (runId: string) => RunRow;
  private readonly selectRun: Database.Statement<[string], RunRow>;
  private readonly selectRuns: Database.Statement<[number], RunRow>;
  private readonly insertEpisode: Database.Statement;
  private readonly insertStep: Database.Statement;
  private readonly updateAdvantages: Database.Statement;
  private readonly selectEpisode: Database.Statement<[string], EpisodeRow>;
  private readonly selectSteps: Database.Statement<[string], string>;
  private readonly selectPageSteps: Database.Statement<[string], { episode_id: string; record: string }>;
  private readonly queryStatements = new Map<string, Database.Statement>();
  private readonly writeBatch: (episodes: PreparedEpisode[]) => void;
  private readonly writeAdvantages: (values: Array<{ episode_id: string; advantages: string }>) => void;

  /** Open the store at `path`; prefer `openStore`. Fails with store_error if the file cannot be used. */
  constructor(path: string, options: SqliteStoreOptions = {}) {
    if (typeof path !== "string") throw new ValidationError("invalid_argument", "the store path must be a string", { path: String(path) });
    this.pageSize = positiveInteger(options.pageSize ?? 200, "pageSize");
    const busyTimeoutMs = nonNegativeInteger(options.busyTimeoutMs ?? 5000, "busyTimeoutMs");
    this.staleRunAfterMs = nonNegativeInteger(options.staleRunAfterMs ?? STALE_RUN_AFTER_MS, "staleRunAfterMs");
    this.owner = options.owner ?? currentOwner();
    checkOwner(this.owner, "options.owner");
    this.now = options.now ?? Date.now;
    this.path = path;
    const inMemory = path === ":memory:" || path === "";
    let db: Database.Database | undefined;
    try {
      if (!inMemory && options.create === false && !existsSync(path)) {
        throw new NotFoundError("unknown_store", `no trajectory store at ${path}; llmix rollout (or serve) --store ${path} creates one`, { path });
      }
      if (!inMemory) mkdirSync(dirname(resolve(path)), { recursive: true });
      db = new Database(path, { timeout: busyTimeoutMs });
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      checkSupported(db);
      // Step rows are 1-2 KB of JSON: 16 KiB pages hold ~10 of them where 4 KiB pages hold 2, which
      // measured ~1.7x faster for batched inserts into a WAL file. page_size only takes effect on a file with no tables
      // yet and before WAL is on, so it is set first; on an existing file it is a no-op.
      db.pragma("page_size = 16384");
      if (!inMemory) {
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = NORMAL");
      }
      db.pragma("foreign_keys = ON");
      migrate(db);
    } catch (error) {
      db?.close();
      throw storeError(error, `cannot open the trajectory store at ${path}`);
    }
    this.db = db;

    this.insertRun = db.prepare(
      "INSERT INTO runs (run_id, env, status, created_at, finished_at, owner_host, owner_pid, heartbeat_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.updateRun = db.prepare("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?");
    this.selectRun = db.prepare(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`);
    // rowid breaks ties between runs created in the same millisecond: the later insert is newer.
    this.selectRuns = db.prepare(`SELECT ${RUN_COLUMNS} FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?`);
    this.stampHeartbeats = db.prepare(
      "UPDATE runs SET heartbeat_at = ? WHERE run_id IN (SELECT value FROM json_each(?)) AND status = 'running' AND owner_host = ? AND owner_pid = ?",
    );
    const takeOver = db.prepare("UPDATE runs SET status = 'running', finished_at = NULL, owner_host = ?, owner_pid = ?, heartbeat_at = ? WHERE run_id = ?");
    // One write transaction from the check to the update: two processes resuming a run cannot both take it.
    this.claim = db.transaction((runId: string): RunRow => {
      const row = this.selectRun.get(runId);
      if (!row) throw new NotFoundError("unknown_run", `run ${runId} is not in the trajectory store`, { run_id: runId });
      if (this.statusOf(row) === "running" && !(row.owner_host === this.owner.host && row.owner_pid === this.owner.pid)) {
        throw new ValidationError("invalid_argument", `run ${runId} is running (owner ${row.owner_host ?? "unknown"} pid ${row.owner_pid ?? "?"}, heartbeat ${row.heartbeat_at ?? "never"}); it can be resumed once it is interrupted`, {
          run_id: runId,
        });
      }
      takeOver.run(this.owner.host, this.owner.pid, this.isoNow(), runId);
      return this.selectRun.get(runId) as RunRow;
    }).immediate;
    this.insertEpisode = db.prepare(
      `INSERT INTO episodes (episode_id, run_id, env, task_id, difficulty, group_index, status, total_reward, passed, advantages, record)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.insertStep = db.prepare("INSERT INTO steps (episode_id, step, record) VALUES (?, ?, ?)");
    this.updateAdvantages = db.prepare("UPDATE episodes SET advantages = ? WHERE episode_id = ?");
    this.selectEpisode = db.prepare(`SELECT ${EPISODE_COLUMNS} FROM episodes WHERE episode_id = ?`);
    this.selectSteps = db.prepare<[string], string>("SELECT record FROM steps WHERE episode_id = ? ORDER BY step").pluck();
    // One statement for a whole page: the ids travel as one JSON array, so the SQL never changes.
    this.selectPageSteps = db.prepare(
      "SELECT episode_id, record FROM steps WHERE episode_id IN (SELECT value FROM json_each(?)) ORDER BY episode_id, step",
    );

    this.writeBatch = db
      .transaction((episodes: PreparedEpisode[]) => {
        for (const e of episodes) {
          const ep = e.episode;
          try {
            this.insertEpisode.run(ep.episode_id, ep.run_id, ep.env, ep.task_id, ep.difficulty, ep.group_index, ep.status, ep.total_reward, e.passed, e.advantages, e.record);
          } catch (error) {
            if (isSqliteCode(error, "SQLITE_CONSTRAINT_PRIMARYKEY")) {
              throw new ValidationError("invalid_argument", `episode ${ep.episode_id} is already stored`, { episode_id: ep.episode_id });
            }
            throw error;
          }
          for (const s of e.steps) this.insertStep.run(ep.episode_id, s.step, s.record);
        }
      })
      .immediate;
    this.writeAdvantages = db
      .transaction((values: Array<{ episode_id: string; advantages: string }>) => {
        for (const v of values) {
          if (this.updateAdvantages.run(v.advantages, v.episode_id).changes === 0) {
            throw new NotFoundError("unknown_episode", `episode ${v.episode_id} is not in the trajectory store`, { episode_id: v.episode_id });
          }
        }
      })
      .immediate;
  }

  /** Create a run owned by `run.owner` (default: this store's owner), its heartbeat now (fails with invalid_argument if the id exists). */
  async createRun(run: RunRecord): Promise<void> {
    this.handle();
    checkRun(run);
    const owner = run.owner ?? this.owner;
    const { owner: _owner, heartbeat_at: _heartbeat, ...rest } = run;
    // The owner and heartbeat live in their columns only: they change without rewriting the record.
    const record = serialise(rest, "run");
    this.guard(`cannot create run ${run.run_id}`, () => {
      try {
        this.insertRun.run(run.run_id, run.env, run.status, run.created_at, run.finished_at, owner.host, owner.pid, this.isoNow(), record);
      } catch (error) {
        if (isSqliteCode(error, "SQLITE_CONSTRAINT_PRIMARYKEY")) {
          throw new ValidationError("invalid_argument", `run ${run.run_id} already exists`, { run_id: run.run_id });
        }
        throw error;
      }
    });
  }

  /**
   * Take a run over to resume it: this store's owner becomes its owner, its heartbeat now, its status
   * `running` (finished_at cleared). Refused with invalid_argument while the run reads `running` under
   * another owner; unknown run: NotFoundError unknown_run.
   */
  async claimRun(runId: string): Promise<RunRecord> {
    this.handle();
    checkId(runId, "runId");
    const row = this.guard(`cannot claim run ${runId}`, () => this.claim(runId));
    return this.guard("corrupt run record", () => this.toRun(row));
  }

  /** Stamp the heartbeat of those of these runs that are `running` under this store's owner; returns how many were stamped. */
  async heartbeatRuns(runIds: readonly string[]): Promise<number> {
    this.handle();
    if (!Array.isArray(runIds)) throw new ValidationError("invalid_argument", "heartbeatRuns takes an array of run ids");
    runIds.forEach((id, i) => checkId(id, `runIds[${i}]`));
    if (runIds.length === 0) return 0;
    return this.guard("cannot stamp run heartbeats", () => this.stampHeartbeats.run(this.isoNow(), JSON.stringify(runIds), this.owner.host, this.owner.pid).changes);
  }

  /** Set a run's status as its owner leaves it; finished_at is stamped now unless it is `interrupted` (unknown run: NotFoundError unknown_run). */
  async finishRun(runId: string, status: Exclude<RunStatus, "running">): Promise<void> {
    this.handle();
    checkId(runId, "runId");
    if (status !== "finished" && status !== "failed" && status !== "interrupted") {
      throw new ValidationError("invalid_argument", `a run can only be left "finished", "failed" or "interrupted", not ${JSON.stringify(status)}`, { status: String(status) });
    }
    const finishedAt = status === "interrupted" ? null : this.isoNow();
    const changes = this.guard(`cannot finish run ${runId}`, () => this.updateRun.run(status, finishedAt, runId).changes);
    if (changes === 0) throw new NotFoundError("unknown_run", `run ${runId} is not in the trajectory store`, { run_id: runId });
  }

  /** A run, or undefined; a `running` run whose owner is gone reads as `interrupted` (see liveness.ts). */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.handle();
    checkId(runId, "runId");
    const row = this.guard(`cannot read run ${runId}`, () => this.selectRun.get(runId));
    return row && this.guard("corrupt run record", () => this.toRun(row));
  }

  /** Runs, newest (by created_at) first, each with its status read as getRun reads it. */
  async listRuns(options: { limit?: number } = {}): Promise<RunRecord[]> {
    this.handle();
    if (!isPlainObject(options)) throw new ValidationError("invalid_argument", "listRuns options must be an object");
    for (const key of Object.keys(options)) {
      if (key !== "limit") throw new ValidationError("invalid_argument", `unknown listRuns option ${JSON.stringify(key)}`, { option: key });
    }
    const limit = options.limit === undefined ? -1 : nonNegativeInteger(options.limit, "limit");
    return this.guard("cannot list runs", () => this.selectRuns.all(limit).map((row) => this.toRun(row)));
  }

  /**
   * Store episodes with their steps in one transaction. The whole batch is checked first: a duplicate
   * or already-stored episode id, steps of another episode, a non-finite number or a malformed field
   * fails the call with invalid_argument and nothing of the batch is written.
   */
  async writeEpisodes(episodes: StoredEpisode[]): Promise<void> {
    this.handle();
    const prepared = prepareBatch(episodes);
    if (prepared.length === 0) return;
    this.guard("cannot write episodes", () => this.writeBatch(prepared));
  }

  /** Set the advantages of stored episodes in one transaction; an unknown episode fails the whole call. */
  async setAdvantages(values: ReadonlyArray<{ episode_id: string; advantages: Advantages }>): Promise<void> {
    this.handle();
    if (!Array.isArray(values)) throw new ValidationError("invalid_argument", "setAdvantages takes an array of { episode_id, advantages }");
    const rows = values.map((v, i) => {
      const where = `values[${i}]`;
      if (!isPlainObject(v)) throw new ValidationError("invalid_argument", `${where} must be an object`);
      checkId(v.episode_id, `${where}.episode_id`);
      checkAdvantages(v.advantages, `${where}.advantages`, false);
      return { episode_id: v.episode_id, advantages: JSON.stringify(v.advantages) };
    });
    if (rows.length === 0) return;
    this.guard("cannot set advantages", () => this.writeAdvantages(rows));
  }

  /**
   * Episodes matching a query, ordered by (run_id, task_id, group_index). `passed: false` matches every
   * episode whose verdict did not pass, those without a verdict included, so true and false partition
   * the store.
   */
  async episodes(query: EpisodeQuery = {}): Promise<EpisodeRecord[]> {
    this.handle();
    const q = checkQuery(query);
    const { where, params } = whereOf(q);
    const sql = `SELECT ${EPISODE_COLUMNS} FROM episodes ${where} ${ORDER} LIMIT ? OFFSET ?`;
    return this.guard("cannot query episodes", () =>
      (this.statement(sql).all(...params, q.limit ?? -1, q.offset ?? 0) as EpisodeRow[]).map(toEpisode),
    );
  }

  /**
   * Episodes matching a query with their steps, one page (`pageSize` episodes) read at a time, each
   * page in one read transaction. Pages continue after the last key seen rather than by OFFSET, so a
   * long stream costs the same per page, and rows written meanwhile never make it repeat or skip a row that was already there.
   */
  async *streamEpisodes(query: EpisodeQuery = {}): AsyncGenerator<StoredEpisode> {
    this.handle();
    const q = checkQuery(query);
    const { where, params } = whereOf(q);
    const first = `SELECT ${EPISODE_COLUMNS} FROM episodes ${where} ${ORDER} LIMIT ? OFFSET ?`;
    // Columns fixed by an equality filter are left out of the key: the rest then matches the suffix
    // of an index, so the next page is one range seek.
    const keys = (["run_id", "task_id", "group_index", "episode_id"] as const).filter((k) => !((k === "run_id" || k === "task_id") && q[k] !== undefined));
    const after = `(${keys.join(", ")}) > (${keys.map(() => "?").join(", ")})`;
    const next = `SELECT ${EPISODE_COLUMNS} FROM episodes ${where ? `${where} AND ${after}` : `WHERE ${after}`} ${ORDER} LIMIT ?`;
    let remaining = q.limit ?? Number.POSITIVE_INFINITY;
    let last: EpisodeRow | undefined;
    while (remaining > 0) {
      const size = Math.min(this.pageSize, remaining);
      const page = this.guard("cannot stream episodes", () =>
        this.handle()
          .transaction(() => {
            const rows = (
              last === undefined
                ? this.statement(first).all(...params, size, q.offset ?? 0)
                : this.statement(next).all(...params, ...keys.map((k) => (last as EpisodeRow)[k]), size)
            ) as EpisodeRow[];
            const steps = new Map<string, TrajectoryStepRecord[]>();
            if (rows.length > 0) {
              for (const s of this.selectPageSteps.all(JSON.stringify(rows.map((r) => r.episode_id)))) {
                let list = steps.get(s.episode_id);
                if (!list) steps.set(s.episode_id, (list = []));
                list.push(JSON.parse(s.record) as TrajectoryStepRecord);
              }
            }
            return rows.map((row) => ({ row, episode: { episode: toEpisode(row), steps: steps.get(row.episode_id) ?? [] } }));
          })
          .deferred(),
      );
      for (const p of page) yield p.episode;
      if (page.length < size) return;
      remaining -= page.length;
      last = page[page.length - 1]?.row;
    }
  }

  /** Count of episodes matching a query's filters (limit and offset are checked but do not apply: this is the total to page through). */
  async countEpisodes(query: EpisodeQuery = {}): Promise<number> {
    this.handle();
    const q = checkQuery(query);
    const { where, params } = whereOf(q);
    return this.guard("cannot count episodes", () => this.statement(`SELECT count(*) FROM episodes ${where}`).pluck().get(...params) as number);
  }

  /** One episode, or undefined. */
  async getEpisode(episodeId: string): Promise<EpisodeRecord | undefined> {
    this.handle();
    checkId(episodeId, "episodeId");
    const row = this.guard(`cannot read episode ${episodeId}`, () => this.selectEpisode.get(episodeId));
    return row && this.guard("corrupt episode record", () => toEpisode(row));
  }

  /** The steps of one episode ordered by step (empty if the episode is unknown). */
  async getSteps(episodeId: string): Promise<TrajectoryStepRecord[]> {
    this.handle();
    checkId(episodeId, "episodeId");
    return this.guard(`cannot read the steps of episode ${episodeId}`, () =>
      this.selectSteps.all(episodeId).map((text) => JSON.parse(text) as TrajectoryStepRecord),
    );
  }

  /** Close the connection (WAL is checkpointed by SQLite on the last close). Idempotent. */
  async close(): Promise<void> {
    const db = this.db;
    if (!db) return;
    this.db = undefined;
    this.queryStatements.clear();
    try {
      // Keeps the planner's statistics fresh for the next open; cheap when nothing changed.
      db.pragma("optimize");
    } catch {
      // Statistics are an optimisation; closing must not fail on them.
    }
    try {
      db.close();
    } catch (error) {
      throw storeError(error, "cannot close the trajectory store");
    }
  }

  private statusOf(row: RunLivenessRow): RunStatus {
    return effectiveStatus(row, this.now(), this.staleRunAfterMs);
  }

  private isoNow(): string {
    return new Date(this.now()).toISOString();
  }

  private toRun(row: RunRow): RunRecord {
    const run = JSON.parse(row.record) as RunRecord;
    run.status = this.statusOf(row);
    run.finished_at = row.finished_at;
    run.owner = row.owner_host === null || row.owner_pid === null ? null : { host: row.owner_host, pid: row.owner_pid };
    run.heartbeat_at = row.heartbeat_at;
    return run;
  }

  private handle(): Database.Database {
    if (!this.db) throw new LlmixError("store_error", `the trajectory store at ${this.path} is closed`, { path: this.path });
    return this.db;
  }

  private statement(sql: string): Database.Statement {
    let stmt = this.queryStatements.get(sql);
    if (!stmt) {
      stmt = this.handle().prepare(sql);
      this.queryStatements.set(sql, stmt);
    }
    return stmt;
  }

  /** Run `fn`, turning SQLite and JSON failures into store_error (typed LLMix errors pass through). */
  private guard<T>(what: string, fn: () => T): T {
    this.handle();
    try {
      return fn();
    } catch (error) {
      throw storeError(error, what);
    }
  }
}

// ---- rows -> records --------------------------------------------------------------------------------

function toEpisode(row: EpisodeRow): EpisodeRecord {
  const episode = JSON.parse(row.record) as EpisodeRecord;
  // The column is the truth: setAdvantages updates it without rewriting the record.
  episode.advantages = row.advantages === null ? null : (JSON.parse(row.advantages) as Advantages);
  return episode;
}

function whereOf(q: CleanQuery): { where: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  const eq = (column: string, value: unknown) => {
    if (value === undefined) return;
    clauses.push(`${column} = ?`);
    params.push(value);
  };
  eq("run_id", q.run_id);
  eq("env", q.env);
  eq("task_id", q.task_id);
  eq("difficulty", q.difficulty);
  eq("status", q.status);
  eq("passed", q.passed === undefined ? undefined : q.passed ? 1 : 0);
  if (q.min_reward !== undefined) {
    clauses.push("total_reward >= ?");
    params.push(q.min_reward);
  }
  if (q.max_reward !== undefined) {
    clauses.push("total_reward <= ?");
    params.push(q.max_reward);
  }
  return { where: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

// ---- validation -------------------------------------------------------------------------------------

const QUERY_KEYS = new Set(["run_id", "env", "task_id", "difficulty", "status", "min_reward", "max_reward", "passed", "limit", "offset"]);

function checkQuery(query: unknown): CleanQuery {
  if (query === undefined || query === null) return {};
  if (!isPlainObject(query)) throw new ValidationError("invalid_argument", "an episode query must be an object");
  const q: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    if (!QUERY_KEYS.has(key)) {
      // A misspelt filter would otherwise silently match every episode.
      throw new ValidationError("invalid_argument", `unknown episode query field ${JSON.stringify(key)} (known: ${[...QUERY_KEYS].join(", ")})`, { field: key });
    }
    if (value === undefined) continue;
    switch (key) {
      case "status":
        if (value !== "ok" && value !== "error") throw badField(`query.status must be "ok" or "error", not ${show(value)}`, key);
        break;
      case "min_reward":
      case "max_reward":
        if (typeof value !== "number" || !Number.isFinite(value)) throw badField(`query.${key} must be a finite number, not ${show(value)}`, key);
        break;
      case "passed":
        if (typeof value !== "boolean") throw badField(`query.passed must be a boolean, not ${show(value)}`, key);
        break;
      case "limit":
      case "offset":
        nonNegativeInteger(value, `query.${key}`);
        break;
      default:
        if (typeof value !== "string") throw badField(`query.${key} must be a string, not ${show(value)}`, key);
    }
    q[key] = value;
  }
  return q as CleanQuery;
}

const RUN_STATUSES: readonly RunStatus[] = ["running", "interrupted", "finished", "failed"];

function checkOwner(owner: unknown, where: string): void {
  if (!isPlainObject(owner) || typeof owner.host !== "string" || owner.host === "" || typeof owner.pid !== "number" || !Number.isSafeInteger(owner.pid) || owner.pid < 1) {
    throw new ValidationError("invalid_argument", `${where} must be { host: a non-empty string, pid: a positive integer }`);
  }
}

function checkRun(run: unknown): asserts run is RunRecord {
  if (!isPlainObject(run)) throw new ValidationError("invalid_argument", "a run must be an object");
  checkId(run.run_id, "run.run_id");
  for (const key of ["env", "env_version", "policy", "created_at"] as const) checkString(run[key], `run.${key}`);
  checkNullableString(run.policy_checkpoint, "run.policy_checkpoint");
  checkNullableString(run.finished_at, "run.finished_at");
  if (!RUN_STATUSES.includes(run.status as RunStatus)) {
    throw new ValidationError("invalid_argument", `run.status must be one of ${RUN_STATUSES.map((s) => `"${s}"`).join(", ")}, not ${show(run.status)}`);
  }
  if (run.owner !== undefined && run.owner !== null) checkOwner(run.owner, "run.owner");
  nonNegativeInteger(run.planned_episodes, "run.planned_episodes");
  if (!Array.isArray(run.tools)) throw new ValidationError("invalid_argument", "run.tools must be an array of tool specs");
  if (run.config === undefined) throw new ValidationError("invalid_argument", "run.config is missing (use null for none)");
  checkJson(run, "run");
}

/** Validate and serialise a batch; throws invalid_argument naming the first problem. */
function prepareBatch(batch: unknown): PreparedEpisode[] {
  if (!Array.isArray(batch)) throw new ValidationError("invalid_argument", "writeEpisodes takes an array of { episode, steps }");
  const seen = new Set<string>();
  return batch.map((item: unknown, i) => {
    const where = `episodes[${i}]`;
    if (!isPlainObject(item)) throw new ValidationError("invalid_argument", `${where} must be an object { episode, steps }`);
    const episode = item.episode;
    checkEpisode(episode, `${where}.episode`);
    const id = episode.episode_id;
    if (seen.has(id)) throw new ValidationError("invalid_argument", `episode ${id} appears twice in the batch`, { episode_id: id });
    seen.add(id);
    if (!Array.isArray(item.steps)) throw new ValidationError("invalid_argument", `${where}.steps (episode ${id}) must be an array`, { episode_id: id });
    const stepNumbers = new Set<number>();
    const steps = item.steps.map((step: unknown, j) => {
      const at = `${where}.steps[${j}]`;
      if (!isPlainObject(step)) throw new ValidationError("invalid_argument", `${at} (episode ${id}) must be an object`, { episode_id: id });
      if (step.episode_id !== id) {
        throw new ValidationError("invalid_argument", `${at} belongs to episode ${show(step.episode_id)}, not ${id}`, { episode_id: id });
      }
      const n = step.step;
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
        throw new ValidationError("invalid_argument", `${at}.step (episode ${id}) must be a non-negative integer, not ${show(n)}`, { episode_id: id });
      }
      if (stepNumbers.has(n)) throw new ValidationError("invalid_argument", `episode ${id} has step ${n} twice`, { episode_id: id, step: n });
      stepNumbers.add(n);
      return { step: n, record: serialise(step, at, id) };
    });
    const verdict = episode.verdict as { passed?: unknown } | null;
    return {
      episode,
      record: serialise(episode, `${where}.episode`, id),
      advantages: episode.advantages === null ? null : JSON.stringify(episode.advantages),
      passed: isPlainObject(verdict) && verdict.passed === true ? 1 : 0,
      steps,
    };
  });
}

type Kind = "string" | "string?" | "integer" | "count" | "number" | "number?" | "boolean" | "object" | "object?" | "json";

const EPISODE_FIELDS: ReadonlyArray<readonly [keyof EpisodeRecord, Kind]> = [
  ["run_id", "string"],
  ["env", "string"],
  ["env_version", "string"],
  ["task_id", "string"],
  ["difficulty", "string"],
  ["seed", "integer"],
  ["group_id", "string"],
  ["group_index", "count"],
  ["policy", "string"],
  ["policy_checkpoint", "string?"],
  ["error", "object?"],
  ["steps", "count"],
  ["tokens", "count"],
  ["total_reward", "number"],
  ["outcome", "number?"],
  ["reward_components", "object"],
  ["verdict", "json"],
  ["end_reason", "string?"],
  ["terminated", "boolean"],
  ["truncated", "boolean"],
  ["cost", "number"],
  ["tool_calls", "object"],
  ["started_at", "string"],
  ["finished_at", "string"],
  ["duration_ms", "number"],
];

function checkEpisode(episode: unknown, where: string): asserts episode is EpisodeRecord {
  if (!isPlainObject(episode)) throw new ValidationError("invalid_argument", `${where} must be an episode record object`);
  checkId(episode.episode_id, `${where}.episode_id`);
  const id = episode.episode_id as string;
  const fail = (message: string) => new ValidationError("invalid_argument", `${where}.${message} (episode ${id})`, { episode_id: id });
  for (const [key, kind] of EPISODE_FIELDS) {
    const v = episode[key];
    const ok =
      kind === "string" ? typeof v === "string"
      : kind === "string?" ? v === null || typeof v === "string"
      : kind === "integer" ? typeof v === "number" && Number.isSafeInteger(v)
      : kind === "count" ? typeof v === "number" && Number.isSafeInteger(v) && v >= 0
      : kind === "number" ? typeof v === "number" && Number.isFinite(v)
      : kind === "number?" ? v === null || (typeof v === "number" && Number.isFinite(v))
      : kind === "boolean" ? typeof v === "boolean"
      : kind === "object" ? isPlainObject(v)
      : kind === "object?" ? v === null || isPlainObject(v)
      : v !== undefined;
    if (!ok) throw fail(`${key} must be ${KIND_TEXT[kind]}, not ${show(v)}`);
  }
  if (episode.status !== "ok" && episode.status !== "error") throw fail(`status must be "ok" or "error", not ${show(episode.status)}`);
  checkAdvantages(episode.advantages, `${where}.advantages`, true, id);
}

const KIND_TEXT: Record<Kind, string> = {
  string: "a string",
  "string?": "a string or null",
  integer: "an integer",
  count: "a non-negative integer",
  number: "a finite number",
  "number?": "a finite number or null",
  boolean: "a boolean",
  object: "an object",
  "object?": "an object or null",
  json: "a JSON value or null",
};

function checkAdvantages(value: unknown, where: string, nullable: boolean, episodeId?: string): void {
  const details = episodeId === undefined ? {} : { episode_id: episodeId };
  const suffix = episodeId === undefined ? "" : ` (episode ${episodeId})`;
  if (value === null && nullable) return;
  if (!isPlainObject(value)) {
    throw new ValidationError("invalid_argument", `${where} must be { grpo, dr_grpo, rloo }${nullable ? " or null" : ""}, not ${show(value)}${suffix}`, details);
  }
  for (const key of ["grpo", "dr_grpo", "rloo"] as const) {
    const v = value[key];
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new ValidationError("invalid_argument", `${where}.${key} must be a finite number, not ${show(v)}${suffix}`, details);
    }
  }
}

/** JSON text of a record, refusing what JSON would silently change (NaN becomes null, functions vanish). */
function serialise(value: unknown, where: string, episodeId?: string): string {
  checkJson(value, where, episodeId);
  try {
    return JSON.stringify(value);
  } catch (error) {
    throw new ValidationError("invalid_argument", `${where} cannot be stored as JSON: ${error instanceof Error ? error.message : String(error)}`, episodeId ? { episode_id: episodeId } : {});
  }
}

const MAX_DEPTH = 64;

function checkJson(value: unknown, where: string, episodeId?: string): void {
  const problem = findNonJson(value, 0);
  if (!problem) return;
  const [reason, ...path] = problem;
  const at = where + path.reverse().join("");
  throw new ValidationError("invalid_argument", `${at} ${reason}${episodeId ? ` (episode ${episodeId})` : ""}`, {
    path: at,
    ...(episodeId ? { episode_id: episodeId } : {}),
  });
}

/** The first value JSON cannot carry faithfully: [reason, ...path segments innermost first], or undefined. */
function findNonJson(value: unknown, depth: number): string[] | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "undefined":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : [`is ${value}: JSON has no non-finite numbers`];
    case "bigint":
      return ["is a bigint: JSON has no bigints"];
    case "function":
    case "symbol":
      return [`is a ${typeof value}: not JSON`];
  }
  if (value === null) return undefined;
  // Past this depth the value is almost surely circular; JSON.stringify would throw anyway.
  if (depth > MAX_DEPTH) return [`is nested more than ${MAX_DEPTH} levels deep (circular?)`];
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = findNonJson(value[i], depth + 1);
      if (p) return (p.push(`[${i}]`), p);
    }
    return undefined;
  }
  const obj = value as Record<string, unknown>;
  for (const key in obj) {
    if (!Object.prototype.hasOwnProperty.call(obj, key)) continue;
    const p = findNonJson(obj[key], depth + 1);
    if (p) return (p.push(/^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`), p);
  }
  return undefined;
}

function checkId(value: unknown, name: string): asserts value is string {
  if (typeof value !== "string" || value.length === 0) throw new ValidationError("invalid_argument", `${name} must be a non-empty string, not ${show(value)}`);
}

function checkString(value: unknown, name: string): void {
  if (typeof value !== "string") throw new ValidationError("invalid_argument", `${name} must be a string, not ${show(value)}`);
}

function checkNullableString(value: unknown, name: string): void {
  if (value !== null && typeof value !== "string") throw new ValidationError("invalid_argument", `${name} must be a string or null, not ${show(value)}`);
}

function nonNegativeInteger(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError("invalid_argument", `${name} must be a non-negative integer, not ${show(value)}`, { [name]: show(value) });
  }
  return value;
}

function positiveInteger(value: unknown, name: string): number {
  if (nonNegativeInteger(value, name) === 0) throw new ValidationError("invalid_argument", `${name} must be at least 1`);
  return value as number;
}

function badField(message: string, field: string): ValidationError {
  return new ValidationError("invalid_argument", message, { field });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A short, safe rendering of a bad value for an error message. */
function show(value: unknown): string {
  if (value === undefined) return "undefined (missing)";
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

function isSqliteCode(error: unknown, code: string): boolean {
  return error instanceof Database.SqliteError && error.code === code;
}

function storeError(error: unknown, what: string): LlmixError {
  if (error instanceof LlmixError) return error;
  if (error instanceof Database.SqliteError) return new LlmixError("store_error", `${what}: ${error.message}`, { sqlite_code: error.code });
  return new LlmixError("store_error", `${what}: ${error instanceof Error ? error.message : String(error)}`);
}
