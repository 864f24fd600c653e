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
import {
  checkAuditQuery, checkFinishStatus, checkId, checkListRunsOptions, checkPurgeCriteria, checkQuery, checkRun, checkRunIds, nonNegativeInteger, ownerOption, positiveInteger,
  prepareAdvantages, prepareAuditEvents, prepareBatch, runRecordText, toEpisode, toRun, type CleanQuery, type EpisodeRow, type PreparedEpisode, type RunRow,
} from "./records.js";
import type {
  Advantages, AuditEvent, AuditQuery, EpisodeQuery, EpisodeRecord, PurgeCriteria, PurgeResult, RunOwner, RunRecord, RunStatus, StoredEpisode, TrajectoryStore,
} from "./types.js";

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
  private readonly selectTenantRuns: Database.Statement<[string | null, number], RunRow>;
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
    this.owner = ownerOption(options.owner, currentOwner);
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
      // A purge must not leave the purged bytes in free pages of the file (DESIGN §9).
      db.pragma("secure_delete = ON");
      migrate(db);
    } catch (error) {
      db?.close();
      throw storeError(error, `cannot open the trajectory store at ${path}`);
    }
    this.db = db;

    this.insertRun = db.prepare(
      "INSERT INTO runs (run_id, env, status, created_at, finished_at, owner_host, owner_pid, heartbeat_at, tenant, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.updateRun = db.prepare("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?");
    this.selectRun = db.prepare(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`);
    // rowid breaks ties between runs created in the same millisecond: the later insert is newer.
    this.selectRuns = db.prepare(`SELECT ${RUN_COLUMNS} FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?`);
    this.selectTenantRuns = db.prepare(`SELECT ${RUN_COLUMNS} FROM runs WHERE tenant IS ? ORDER BY created_at DESC, rowid DESC LIMIT ?`);
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
      `INSERT INTO episodes (episode_id, run_id, env, task_id, difficulty, group_index, status, total_reward, passed, finished_at, advantages, record)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
            this.insertEpisode.run(ep.episode_id, ep.run_id, ep.env, ep.task_id, ep.difficulty, ep.group_index, ep.status, ep.total_reward, e.passed ? 1 : 0, ep.finished_at, e.advantages, e.record);
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
    const record = runRecordText(run);
    this.guard(`cannot create run ${run.run_id}`, () => {
      try {
        this.insertRun.run(run.run_id, run.env, run.status, run.created_at, run.finished_at, owner.host, owner.pid, this.isoNow(), run.tenant ?? null, record);
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
    return this.guard("corrupt run record", () => toRun(row, this.statusOf(row)));
  }

  /** Stamp the heartbeat of those of these runs that are `running` under this store's owner; returns how many were stamped. */
  async heartbeatRuns(runIds: readonly string[]): Promise<number> {
    this.handle();
    checkRunIds(runIds);
    if (runIds.length === 0) return 0;
    return this.guard("cannot stamp run heartbeats", () => this.stampHeartbeats.run(this.isoNow(), JSON.stringify(runIds), this.owner.host, this.owner.pid).changes);
  }

  /** Set a run's status as its owner leaves it; finished_at is stamped now unless it is `interrupted` (unknown run: NotFoundError unknown_run). */
  async finishRun(runId: string, status: Exclude<RunStatus, "running">): Promise<void> {
    this.handle();
    checkId(runId, "runId");
    checkFinishStatus(status);
    const finishedAt = status === "interrupted" ? null : this.isoNow();
    const changes = this.guard(`cannot finish run ${runId}`, () => this.updateRun.run(status, finishedAt, runId).changes);
    if (changes === 0) throw new NotFoundError("unknown_run", `run ${runId} is not in the trajectory store`, { run_id: runId });
  }

  /** A run, or undefined; a `running` run whose owner is gone reads as `interrupted` (see liveness.ts). */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.handle();
    checkId(runId, "runId");
    const row = this.guard(`cannot read run ${runId}`, () => this.selectRun.get(runId));
    return row && this.guard("corrupt run record", () => toRun(row, this.statusOf(row)));
  }

  /** Runs, newest (by created_at) first, each with its status read as getRun reads it. */
  async listRuns(options: { limit?: number; tenant?: string | null } = {}): Promise<RunRecord[]> {
    this.handle();
    const { limit, tenant } = checkListRunsOptions(options);
    const rows = () => (tenant === undefined ? this.selectRuns.all(limit ?? -1) : this.selectTenantRuns.all(tenant, limit ?? -1));
    return this.guard("cannot list runs", () => rows().map((row) => toRun(row, this.statusOf(row))));
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
    const rows = prepareAdvantages(values);
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

  /**
   * Remove the episodes matching `criteria`, their steps, and the runs they leave empty (unless running),
   * in one write transaction. secure_delete zeroes the freed pages, and the WAL is checkpointed and
   * truncated afterwards, so the purged bytes leave the files (another open reader can delay that).
   */
  async purge(criteria: PurgeCriteria, audit?: (result: PurgeResult) => AuditEvent): Promise<PurgeResult> {
    const db = this.handle();
    const c = checkPurgeCriteria(criteria);
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (c.finished_before !== undefined) (clauses.push("finished_at < ?"), params.push(new Date(c.finished_before).toISOString()));
    if (c.env !== undefined) (clauses.push("env = ?"), params.push(c.env));
    if (c.run_id !== undefined) (clauses.push("run_id = ?"), params.push(c.run_id));
    if (c.tenant !== undefined) (clauses.push("run_id IN (SELECT run_id FROM runs WHERE tenant IS ?)"), params.push(c.tenant));
    if (c.episode_ids !== undefined) (clauses.push("episode_id IN (SELECT value FROM json_each(?))"), params.push(JSON.stringify(c.episode_ids)));
    const result = this.guard("cannot purge", () =>
      db
        .transaction((): PurgeResult => {
          const victims = this.statement(`SELECT episode_id, run_id FROM episodes WHERE ${clauses.join(" AND ")} ORDER BY episode_id LIMIT ?`).all(...params, c.limit ?? -1) as Array<{ episode_id: string; run_id: string }>;
          const ids = JSON.stringify(victims.map((v) => v.episode_id));
          const steps = this.statement("SELECT count(*) FROM steps WHERE episode_id IN (SELECT value FROM json_each(?))").pluck().get(ids) as number;
          // Per run, how many of its episodes go: the run goes too when that is all of them.
          const going = new Map<string, number>();
          for (const v of victims) going.set(v.run_id, (going.get(v.run_id) ?? 0) + 1);
          if (c.run_id !== undefined && !going.has(c.run_id)) going.set(c.run_id, 0);
          const countOf = this.statement("SELECT count(*) FROM episodes WHERE run_id = ?").pluck();
          const emptied = [...going].filter(([runId, n]) => (countOf.get(runId) as number) === n).map(([runId]) => runId);
          const runs = emptied.sort().filter((runId) => {
            const row = this.selectRun.get(runId);
            return row !== undefined && this.statusOf(row) !== "running";
          });
          const result = { episodes: victims.map((v) => v.episode_id), steps, runs };
          if (c.dry_run) return result;
          this.statement("DELETE FROM steps WHERE episode_id IN (SELECT value FROM json_each(?))").run(ids);
          this.statement("DELETE FROM episodes WHERE episode_id IN (SELECT value FROM json_each(?))").run(ids);
          for (const runId of runs) this.statement("DELETE FROM runs WHERE run_id = ?").run(runId);
          if (audit && result.episodes.length + result.runs.length > 0) this.insertAudit(prepareAuditEvents([audit(result)]));
          return result;
        })
        .immediate(),
    );
    if (!c.dry_run && result.episodes.length + result.runs.length > 0 && this.path !== ":memory:" && this.path !== "") {
      this.guard("cannot checkpoint after a purge", () => db.pragma("wal_checkpoint(TRUNCATE)"));
    }
    return result;
  }

  /** Append events to the audit log in one transaction (the table's triggers refuse any change or removal). */
  async appendAudit(events: readonly AuditEvent[]): Promise<void> {
    const db = this.handle();
    const rows = prepareAuditEvents(events);
    if (rows.length === 0) return;
    this.guard("cannot append to the audit log", () => db.transaction(() => this.insertAudit(rows))());
  }

  /** Insert prepared audit events (inside the caller's transaction). */
  private insertAudit(rows: ReturnType<typeof prepareAuditEvents>): void {
    const insert = this.statement("INSERT INTO audit (at, token, token_id, tenant, action, target_kind, target_id, via, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (const { event: e, detail } of rows) insert.run(e.at, e.token, e.token_id, e.tenant, e.action, e.target_kind, e.target_id, e.via, detail);
  }

  /** Audit events matching a query, newest first. */
  async auditLog(query?: AuditQuery): Promise<AuditEvent[]> {
    this.handle();
    const q = checkAuditQuery(query);
    const clauses: string[] = [];
    const params: unknown[] = [];
    for (const key of ["token", "tenant", "action", "target_id"] as const) if (q[key] !== undefined) (clauses.push(`${key} = ?`), params.push(q[key]));
    if (q.since !== undefined) (clauses.push("at >= ?"), params.push(new Date(q.since).toISOString()));
    if (q.until !== undefined) (clauses.push("at < ?"), params.push(new Date(q.until).toISOString()));
    const sql = `SELECT seq, at, token, token_id, tenant, action, target_kind, target_id, via, detail FROM audit ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT ?`;
    return this.guard("cannot read the audit log", () =>
      (this.statement(sql).all(...params, q.limit) as Array<AuditEvent & { detail: string }>).map((row) => ({ ...row, detail: JSON.parse(row.detail) as AuditEvent["detail"] })),
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


// ---- queries ---------------------------------------------------------------------------------------

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
  if (q.tenant !== undefined) {
    clauses.push("run_id IN (SELECT run_id FROM runs WHERE tenant IS ?)");
    params.push(q.tenant);
  }
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

function isSqliteCode(error: unknown, code: string): boolean {
  return error instanceof Database.SqliteError && error.code === code;
}

function storeError(error: unknown, what: string): LlmixError {
  if (error instanceof LlmixError) return error;
  if (error instanceof Database.SqliteError) return new LlmixError("store_error", `${what}: ${error.message}`, { sqlite_code: error.code });
  return new LlmixError("store_error", `${what}: ${error instanceof Error ? error.message : String(error)}`);
}
