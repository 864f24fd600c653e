/**
 * The shared trajectory store (DESIGN §6, §8): PostgreSQL through pg, for rollouts and services on several
 * machines writing one store. It answers exactly as the SQLite store does, field for field: every row
 * keeps its full record as JSON text (records.ts validates and serialises for both), the columns beside it
 * only filter, order and join, and key columns use the "C" collation so orders are byte orders as in SQLite.
 *
 * Each `writeEpisodes` call is one transaction of a few round trips, whatever its size: BEGIN; its episode
 * rows as one INSERT ... SELECT FROM unnest() of one array parameter per column (one per 16 MB of records;
 * ON CONFLICT DO NOTHING: episode ids are the idempotency key, see writeEpisodes), a named statement every
 * connection plans once; its step rows, most of the bytes, as one COPY FROM STDIN in text format, streamed
 * as they are serialised, so the server parses and inserts one piece while this process serialises the
 * next, with no round trip per piece; COMMIT. (Steps used to go in as prepared multi-row INSERTs of up to
 * 512 rows, a round trip each, and episodes as INSERTs of a power of two rows each: on a quiet machine the
 * batches of bench/store.ts took 1.2 to 1.5 times as long.) An id already stored, by this process or any
 * other, fails the whole call with invalid_argument and nothing of it is written.
 */
import { once } from "node:events";
import { finished } from "node:stream/promises";
import { setImmediate as nextTurn } from "node:timers/promises";
import pg from "pg";
import { from as copyFrom, type CopyStreamQuery } from "pg-copy-streams";
import type { TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError, NotFoundError, ValidationError } from "../core/errors.js";
import { currentOwner, effectiveStatus, STALE_RUN_AFTER_MS } from "./liveness.js";
import { parsePostgresUrl, type PostgresLocation } from "./postgres-location.js";
import { migratePostgres, quoteIdent } from "./postgres-migrations.js";
import {
  batchError, checkAuditQuery, checkFinishStatus, checkId, checkListRunsOptions, checkPurgeCriteria, checkQuery, checkRun, checkRunIds, messageOf, nonNegativeInteger, ownerOption,
  positiveInteger, prepareAdvantages, prepareAuditEvents, prepareHeads, runRecordText, stepRecord, toEpisode, toRun, type CleanQuery, type EpisodeRow,
  type PreparedHead, type RunRow,
} from "./records.js";
import type {
  Advantages, AuditEvent, AuditQuery, EpisodeQuery, EpisodeRecord, PurgeCriteria, PurgeResult, RunOwner, RunRecord, RunStatus, StoredEpisode, TrajectoryStore,
} from "./types.js";

/** Tuning knobs of a PostgreSQL store; the defaults suit a rollout runner. */
export interface PostgresStoreOptions {
  /** The schema of the store's tables (default: the URL's `?schema=` or `search_path`, else `public`). Created if missing. */
  schema?: string;
  /** Episodes per page of `streamEpisodes` (their steps are read with them): bounds its memory. */
  pageSize?: number;
  /** How long to wait for a connection before failing with store_error (default 10 s): a dead or silent server never hangs a call. */
  connectTimeoutMs?: number;
  /** Connections kept open at most (default 8). */
  poolSize?: number;
  /** The process this store acts for in createRun, claimRun and heartbeatRuns (default: this process). */
  owner?: RunOwner;
  /** A `running` run whose heartbeat is older than this reads as interrupted (default STALE_RUN_AFTER_MS). */
  staleRunAfterMs?: number;
  /** The clock of heartbeats and staleness, in ms since the epoch (default Date.now). */
  now?: () => number;
  /** Create the schema and tables when missing (default true). Readers pass false: a schema without a store is then unknown_store. */
  create?: boolean;
}

/** Connect to (creating the schema and tables if needed, migrating them if old) the PostgreSQL trajectory store at `url`. */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<PostgresTrajectoryStore> {
  const store = new PostgresTrajectoryStore(url, options);
  try {
    await store.ready();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}

/** Episode rows go in one INSERT per this many characters of their records (at least one row each), so one message stays small however big the batch. */
const CHUNK_CHARS = 16 * 1024 * 1024;
/**
 * Step rows are handed to the COPY stream in pieces of about this many characters of COPY text: small
 * enough that the server starts on a batch's first rows while later ones are still being serialised,
 * big enough that the per-message cost vanishes.
 */
const COPY_PIECE_CHARS = 64 * 1024;
/** Bytes of COPY text buffered ahead of the server before serialising waits for it: bounds a huge batch's memory. */
const COPY_BUFFER_BYTES = 4 * 1024 * 1024;

const EPISODE_COLUMNS = "episode_id, run_id, task_id, group_index, advantages, record";
const RUN_COLUMNS = "status, created_at, finished_at, owner_host, owner_pid, heartbeat_at, record";
/** Ordering of every episode query; episode_id makes it total so keyset paging never skips or repeats. */
const ORDER = "ORDER BY run_id, task_id, group_index, episode_id";
const INT8_OID = 20;

/** The PostgreSQL trajectory store. Open it with `openPostgresStore` (the constructor does not connect). */
export class PostgresTrajectoryStore implements TrajectoryStore {
  /** The URL the store was opened at, without its password. */
  readonly url: string;
  /** The schema its tables live in. */
  readonly schema: string;
  /** The process this store acts for as a run owner. */
  readonly owner: RunOwner;
  private readonly pageSize: number;
  private readonly staleRunAfterMs: number;
  private readonly now: () => number;
  private readonly create: boolean;
  private pool: pg.Pool | undefined;
  private closing: Promise<void> | undefined;
  private opened: Promise<void> | undefined;
  /** Table names qualified by the schema: nothing depends on the connection's search_path. */
  private readonly t: { runs: string; episodes: string; steps: string; audit: string };

  /** Validate the options and make the (lazy) connection pool; `openPostgresStore` also connects and migrates. */
  constructor(url: string, options: PostgresStoreOptions = {}) {
    const location: PostgresLocation = parsePostgresUrl(url, options.schema);
    this.url = location.display;
    this.schema = location.schema;
    this.pageSize = positiveInteger(options.pageSize ?? 200, "pageSize");
    const connectTimeoutMs = positiveInteger(options.connectTimeoutMs ?? 10_000, "connectTimeoutMs");
    const poolSize = positiveInteger(options.poolSize ?? 8, "poolSize");
    this.staleRunAfterMs = nonNegativeInteger(options.staleRunAfterMs ?? STALE_RUN_AFTER_MS, "staleRunAfterMs");
    this.owner = ownerOption(options.owner, currentOwner);
    this.now = options.now ?? Date.now;
    this.create = options.create ?? true;
    const q = quoteIdent(this.schema);
    this.t = { runs: `${q}.runs`, episodes: `${q}.episodes`, steps: `${q}.steps`, audit: `${q}.audit` };
    this.pool = new pg.Pool({
      connectionString: location.connectionString,
      max: poolSize,
      connectionTimeoutMillis: connectTimeoutMs,
      idleTimeoutMillis: 10_000,
      // Idle connections never keep a CLI process alive after its work is done.
      allowExitOnIdle: true,
      keepAlive: true,
      application_name: "llmix",
      // Every bigint this store reads is a safe integer (counts, pids, group indexes, steps): read them as numbers.
      types: { getTypeParser: ((oid: number, format?: "text" | "binary") => (oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format))) as typeof pg.types.getTypeParser },
    });
    // A connection that breaks (server restart, network) emits 'error' besides failing its query, and an
    // 'error' event nobody listens to crashes the process. The pool listens only while a connection is
    // idle (then drops it; the next call opens a new one), so each connection gets a listener of its own
    // for the time it is checked out: its caller already gets the failure as a rejected query.
    this.pool.on("error", () => undefined);
    this.pool.on("connect", (client) => client.on("error", () => undefined));
  }

  /** Connect and bring the schema to this code's version (once; later calls share the first). */
  ready(): Promise<void> {
    // A failed open is not remembered: the next call tries again (the server may be back).
    this.opened ??= this.open().catch((error: unknown) => {
      this.opened = undefined;
      throw error;
    });
    return this.opened;
  }

  private async open(): Promise<void> {
    const client = await this.connect("cannot connect to the trajectory store");
    let broken: Error | undefined;
    try {
      await migratePostgres(client, this.schema, { create: this.create, display: this.url });
    } catch (error) {
      broken = error instanceof Error ? error : new Error(String(error));
      throw this.fail(error, "cannot open the trajectory store");
    } finally {
      client.release(broken);
    }
  }

  /** Create a run owned by `run.owner` (default: this store's owner), its heartbeat now (fails with invalid_argument if the id exists). */
  async createRun(run: RunRecord): Promise<void> {
    this.handle();
    checkRun(run);
    const owner = run.owner ?? this.owner;
    const record = runRecordText(run);
    // A transaction, not a lone statement: only then is it safe to run again after a lost connection
    // (an insert that may have committed would otherwise come back as "already exists").
    await this.transaction(`cannot create run ${run.run_id}`, async (client) => {
      const result = await client.query(
        `INSERT INTO ${this.t.runs} (run_id, env, status, created_at, finished_at, owner_host, owner_pid, heartbeat_at, tenant, record)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (run_id) DO NOTHING`,
        [run.run_id, run.env, run.status, run.created_at, run.finished_at, owner.host, owner.pid, this.isoNow(), run.tenant ?? null, record],
      );
      if (result.rowCount === 0) throw new ValidationError("invalid_argument", `run ${run.run_id} already exists`, { run_id: run.run_id });
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
    // One transaction with the row locked from the check to the update: two processes resuming a run cannot both take it.
    const row = await this.transaction(`cannot claim run ${runId}`, async (client) => {
      const found = (await client.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM ${this.t.runs} WHERE run_id = $1 FOR UPDATE`, [runId])).rows[0];
      if (!found) throw new NotFoundError("unknown_run", `run ${runId} is not in the trajectory store`, { run_id: runId });
      if (this.statusOf(found) === "running" && !(found.owner_host === this.owner.host && found.owner_pid === this.owner.pid)) {
        throw new ValidationError("invalid_argument", `run ${runId} is running (owner ${found.owner_host ?? "unknown"} pid ${found.owner_pid ?? "?"}, heartbeat ${found.heartbeat_at ?? "never"}); it can be resumed once it is interrupted`, {
          run_id: runId,
        });
      }
      const updated = await client.query<RunRow>(
        `UPDATE ${this.t.runs} SET status = 'running', finished_at = NULL, owner_host = $1, owner_pid = $2, heartbeat_at = $3 WHERE run_id = $4 RETURNING ${RUN_COLUMNS}`,
        [this.owner.host, this.owner.pid, this.isoNow(), runId],
      );
      return updated.rows[0] as RunRow;
    });
    return this.decode("corrupt run record", () => toRun(row, this.statusOf(row)));
  }

  /** Stamp the heartbeat of those of these runs that are `running` under this store's owner; returns how many were stamped. */
  async heartbeatRuns(runIds: readonly string[]): Promise<number> {
    this.handle();
    checkRunIds(runIds);
    if (runIds.length === 0) return 0;
    const result = await this.query(
      "cannot stamp run heartbeats",
      `UPDATE ${this.t.runs} SET heartbeat_at = $1 WHERE run_id = ANY($2::text[]) AND status = 'running' AND owner_host = $3 AND owner_pid = $4`,
      [this.isoNow(), runIds, this.owner.host, this.owner.pid],
    );
    return result.rowCount ?? 0;
  }

  /** Set a run's status as its owner leaves it; finished_at is stamped now unless it is `interrupted` (unknown run: NotFoundError unknown_run). */
  async finishRun(runId: string, status: Exclude<RunStatus, "running">): Promise<void> {
    this.handle();
    checkId(runId, "runId");
    checkFinishStatus(status);
    const finishedAt = status === "interrupted" ? null : this.isoNow();
    const result = await this.query(`cannot finish run ${runId}`, `UPDATE ${this.t.runs} SET status = $1, finished_at = $2 WHERE run_id = $3`, [status, finishedAt, runId]);
    if (result.rowCount === 0) throw new NotFoundError("unknown_run", `run ${runId} is not in the trajectory store`, { run_id: runId });
  }

  /** A run, or undefined; a `running` run whose owner is gone reads as `interrupted` (see liveness.ts). */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.handle();
    checkId(runId, "runId");
    const row = (await this.query<RunRow>(`cannot read run ${runId}`, `SELECT ${RUN_COLUMNS} FROM ${this.t.runs} WHERE run_id = $1`, [runId])).rows[0];
    return row && this.decode("corrupt run record", () => toRun(row, this.statusOf(row)));
  }

  /** Runs, newest (by created_at) first, each with its status read as getRun reads it. */
  async listRuns(options: { limit?: number; tenant?: string | null } = {}): Promise<RunRecord[]> {
    this.handle();
    const { limit, tenant } = checkListRunsOptions(options);
    // seq breaks ties between runs created in the same millisecond: the later insert is newer.
    const rows = (
      tenant === undefined
        ? await this.query<RunRow>("cannot list runs", `SELECT ${RUN_COLUMNS} FROM ${this.t.runs} ORDER BY created_at DESC, seq DESC LIMIT $1`, [limit])
        : await this.query<RunRow>("cannot list runs", `SELECT ${RUN_COLUMNS} FROM ${this.t.runs} WHERE tenant IS NOT DISTINCT FROM $2 ORDER BY created_at DESC, seq DESC LIMIT $1`, [limit, tenant])
    ).rows;
    return this.decode("corrupt run record", () => rows.map((row) => toRun(row, this.statusOf(row))));
  }

  /**
   * Store episodes with their steps in one transaction. The whole batch is checked first: a duplicate
   * or already-stored episode id, steps of another episode, a non-finite number or a malformed field
   * fails the call with invalid_argument and nothing of the batch is written. A malformed batch is
   * reported as such even when it also holds a stored id, and names the same first problem as SQLite.
   *
   * Concurrency: the episode row is the claim on its id. Its INSERT ... ON CONFLICT DO NOTHING either
   * inserts it (and from then on any other writer of that id waits on this transaction's index entry,
   * then finds it taken) or, the id being stored or claimed by a transaction that then commits, inserts
   * nothing, and the call fails naming it. Steps are only ever written by the transaction that inserted
   * their episode, so once the episodes are in, the COPY of their steps cannot meet another writer's rows:
   * it goes straight into the steps table, with no staging table and no ON CONFLICT (which COPY lacks).
   * Delete-then-copy would not do: two writers of one id would both "succeed", the later silently
   * replacing the earlier. A COPY that fails anyway (a server error, a lost connection) aborts the
   * transaction, so a batch is all or nothing.
   */
  async writeEpisodes(episodes: StoredEpisode[]): Promise<void> {
    this.handle();
    const heads = validated(episodes, () => prepareHeads(episodes));
    if (heads.length === 0) return;
    // Every writer inserts its episodes in id order, so two writers with overlapping batches wait on each
    // other instead of deadlocking; the error still names the first stored id in the caller's order.
    const sorted = [...heads].sort((a, b) => (a.episode.episode_id < b.episode.episode_id ? -1 : 1));
    await this.transaction("cannot write episodes", async (client) => {
      // One statement at a time on the connection (pg 9 drops queued queries): the episode rows first,
      // then the steps' COPY. The step records are serialised meanwhile, held until the COPY can start.
      const claim: Claim = { settled: false, ok: false };
      const firstStored = (inserted: Set<string>) => heads.find((h) => !inserted.has(h.episode.episode_id));
      const inserting = this.insertEpisodes(client, sorted);
      const claimed = inserting
        .then(
          (inserted) => void (claim.ok = firstStored(inserted) === undefined),
          () => undefined,
        )
        .finally(() => (claim.settled = true));
      const copy = new StepCopy(client, `COPY ${this.t.steps} (episode_id, step, record) FROM STDIN`);
      try {
        const rows = await copySteps(sorted, episodes, claim, claimed, copy);
        const stored = firstStored(await inserting);
        if (stored) {
          const id = stored.episode.episode_id;
          throw new ValidationError("invalid_argument", `episode ${id} is already stored`, { episode_id: id });
        }
        const copied = await copy.finish();
        if (copied !== rows) throw new LlmixError("store_error", `the COPY of ${rows} steps stored ${copied}`, { steps: rows, copied });
      } catch (error) {
        // The connection takes the ROLLBACK only once its statement in flight is over: the episode
        // INSERTs, or the COPY (failed with CopyFail if it was still open).
        await claimed;
        await copy.abort();
        throw error;
      }
    });
  }

  /** Insert the episode rows; returns the ids inserted (a conflicting id, already stored or being stored by another writer, is not). */
  private async insertEpisodes(client: pg.PoolClient, sorted: readonly PreparedHead[]): Promise<Set<string>> {
    const inserted = new Set<string>();
    for (const chunk of chunks(sorted, (e) => e.record.length)) {
      // DO NOTHING rather than an error: a conflicting row (stored, or being stored by another writer,
      // whose commit this waits for) is simply not returned, and the call then fails naming it. unnest()
      // yields the rows in array order, so they go in in id order.
      const columns: unknown[][] = Array.from({ length: 12 }, () => []);
      for (const e of chunk) episodeValues(e).forEach((value, i) => (columns[i] as unknown[]).push(value));
      const result = await client.query<{ episode_id: string }>({
        name: "llmix_insert_episodes",
        text: `INSERT INTO ${this.t.episodes} (episode_id, run_id, env, task_id, difficulty, group_index, status, total_reward, passed, advantages, record, finished_at)
               SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::float8[], $9::boolean[], $10::text[], $11::text[], $12::text[])
               ON CONFLICT (episode_id) DO NOTHING RETURNING episode_id`,
        values: columns,
      });
      for (const row of result.rows) inserted.add(row.episode_id);
    }
    return inserted;
  }

  /** Set the advantages of stored episodes in one transaction; an unknown episode fails the whole call. */
  async setAdvantages(values: ReadonlyArray<{ episode_id: string; advantages: Advantages }>): Promise<void> {
    this.handle();
    const rows = prepareAdvantages(values);
    if (rows.length === 0) return;
    // The last value given for an id wins, as when the values are applied one by one.
    const byId = new Map(rows.map((r) => [r.episode_id, r.advantages]));
    await this.transaction("cannot set advantages", async (client) => {
      // Rows are locked in id order before the update, so two calls over the same episodes in different
      // orders wait for each other instead of deadlocking.
      const locked = await client.query<{ episode_id: string }>(
        `SELECT episode_id FROM ${this.t.episodes} WHERE episode_id = ANY($1::text[]) ORDER BY episode_id FOR UPDATE`,
        [[...byId.keys()]],
      );
      const found = new Set(locked.rows.map((r) => r.episode_id));
      const unknown = rows.find((r) => !found.has(r.episode_id));
      if (unknown) {
        throw new NotFoundError("unknown_episode", `episode ${unknown.episode_id} is not in the trajectory store`, { episode_id: unknown.episode_id });
      }
      await client.query(
        `UPDATE ${this.t.episodes} AS e SET advantages = v.advantages FROM unnest($1::text[], $2::text[]) AS v (episode_id, advantages)
         WHERE e.episode_id = v.episode_id`,
        [[...byId.keys()], [...byId.values()]],
      );
    });
  }

  /**
   * Episodes matching a query, ordered by (run_id, task_id, group_index). `passed: false` matches every
   * episode whose verdict did not pass, those without a verdict included, so true and false partition
   * the store.
   */
  async episodes(query: EpisodeQuery = {}): Promise<EpisodeRecord[]> {
    this.handle();
    const q = checkQuery(query);
    const { where, params } = whereOf(q, this.t.runs);
    const n = params.length;
    const rows = (
      await this.query<EpisodeRow>(
        "cannot query episodes",
        `SELECT ${EPISODE_COLUMNS} FROM ${this.t.episodes} ${where} ${ORDER} LIMIT $${n + 1} OFFSET $${n + 2}`,
        [...params, q.limit ?? null, q.offset ?? 0],
      )
    ).rows;
    return this.decode("corrupt episode record", () => rows.map(toEpisode));
  }

  /**
   * Episodes matching a query with their steps, one page (`pageSize` episodes) per statement, each page
   * one consistent snapshot. Pages continue after the last key seen rather than by OFFSET, so a long
   * stream costs the same per page, and rows written meanwhile never make it repeat or skip a row.
   */
  async *streamEpisodes(query: EpisodeQuery = {}): AsyncGenerator<StoredEpisode> {
    this.handle();
    const q = checkQuery(query);
    const { where, params } = whereOf(q, this.t.runs);
    const n = params.length;
    // Columns fixed by an equality filter are left out of the key: the rest then matches the suffix
    // of an index, so the next page is one range seek.
    const keys = (["run_id", "task_id", "group_index", "episode_id"] as const).filter((k) => !((k === "run_id" || k === "task_id") && q[k] !== undefined));
    const after = `(${keys.join(", ")}) > (${keys.map((_, i) => `$${n + 1 + i}`).join(", ")})`;
    // Each episode's steps come back as one JSON array text (its step records joined in step order), so a
    // page is one statement and one row per episode, however many steps.
    const page = (filter: string, tail: string) =>
      `SELECT ${EPISODE_COLUMNS},
         (SELECT '[' || coalesce(string_agg(s.record, ',' ORDER BY s.step), '') || ']' FROM ${this.t.steps} s WHERE s.episode_id = p.episode_id) AS steps
       FROM (SELECT ${EPISODE_COLUMNS} FROM ${this.t.episodes} ${filter} ${ORDER} ${tail}) AS p ${ORDER}`;
    const first = page(where, `LIMIT $${n + 1} OFFSET $${n + 2}`);
    const next = page(where ? `${where} AND ${after}` : `WHERE ${after}`, `LIMIT $${n + 1 + keys.length}`);
    let remaining = q.limit ?? Number.POSITIVE_INFINITY;
    let last: EpisodeRow | undefined;
    while (remaining > 0) {
      const size = Math.min(this.pageSize, remaining);
      this.handle();
      const rows = (
        await this.query<EpisodeRow & { steps: string }>(
          "cannot stream episodes",
          last === undefined ? first : next,
          last === undefined ? [...params, size, q.offset ?? 0] : [...params, ...keys.map((k) => (last as EpisodeRow)[k]), size],
        )
      ).rows;
      const episodes = this.decode("corrupt episode record", () =>
        rows.map((row) => ({ episode: toEpisode(row), steps: JSON.parse(row.steps) as TrajectoryStepRecord[] })),
      );
      for (const e of episodes) yield e;
      if (rows.length < size) return;
      remaining -= rows.length;
      last = rows[rows.length - 1];
    }
  }

  /** Count of episodes matching a query's filters (limit and offset are checked but do not apply: this is the total to page through). */
  async countEpisodes(query: EpisodeQuery = {}): Promise<number> {
    this.handle();
    const q = checkQuery(query);
    const { where, params } = whereOf(q, this.t.runs);
    const rows = (await this.query<{ n: number }>("cannot count episodes", `SELECT count(*) AS n FROM ${this.t.episodes} ${where}`, params)).rows;
    return rows[0]?.n ?? 0;
  }

  /** One episode, or undefined. */
  async getEpisode(episodeId: string): Promise<EpisodeRecord | undefined> {
    this.handle();
    checkId(episodeId, "episodeId");
    const row = (await this.query<EpisodeRow>(`cannot read episode ${episodeId}`, `SELECT ${EPISODE_COLUMNS} FROM ${this.t.episodes} WHERE episode_id = $1`, [episodeId])).rows[0];
    return row && this.decode("corrupt episode record", () => toEpisode(row));
  }

  /** The steps of one episode ordered by step (empty if the episode is unknown). */
  async getSteps(episodeId: string): Promise<TrajectoryStepRecord[]> {
    this.handle();
    checkId(episodeId, "episodeId");
    const rows = (
      await this.query<{ record: string }>(`cannot read the steps of episode ${episodeId}`, `SELECT record FROM ${this.t.steps} WHERE episode_id = $1 ORDER BY step`, [episodeId])
    ).rows;
    return this.decode("corrupt step record", () => rows.map((r) => JSON.parse(r.record) as TrajectoryStepRecord));
  }

  /**
   * Remove the episodes matching `criteria`, their steps, and the runs they leave empty (unless running),
   * in one transaction. PostgreSQL keeps dead row versions until VACUUM reclaims them: the tables are
   * vacuumed afterwards so the purged records leave the data files too.
   */
  async purge(criteria: PurgeCriteria, audit?: (result: PurgeResult) => AuditEvent): Promise<PurgeResult> {
    this.handle();
    const c = checkPurgeCriteria(criteria);
    const clauses: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown) => (params.push(value), clauses.push(clause.replace("?", `$${params.length}`)));
    if (c.finished_before !== undefined) add("finished_at < ?", new Date(c.finished_before).toISOString());
    if (c.env !== undefined) add("env = ?", c.env);
    if (c.run_id !== undefined) add("run_id = ?", c.run_id);
    if (c.tenant !== undefined) add(`run_id IN (SELECT run_id FROM ${this.t.runs} WHERE tenant IS NOT DISTINCT FROM ?)`, c.tenant);
    if (c.episode_ids !== undefined) add("episode_id = ANY(?::text[])", [...c.episode_ids]);
    const result = await this.transaction("cannot purge", async (client) => {
      const victims = (
        await client.query<{ episode_id: string; run_id: string }>(
          `SELECT episode_id, run_id FROM ${this.t.episodes} WHERE ${clauses.join(" AND ")} ORDER BY episode_id LIMIT $${params.length + 1} FOR UPDATE`,
          [...params, c.limit ?? null],
        )
      ).rows;
      const ids = victims.map((v) => v.episode_id);
      const steps = Number((await client.query<{ n: number }>(`SELECT count(*) AS n FROM ${this.t.steps} WHERE episode_id = ANY($1::text[])`, [ids])).rows[0]?.n ?? 0);
      // Per run, how many of its episodes go: the run goes too when that is all of them.
      const going = new Map<string, number>();
      for (const v of victims) going.set(v.run_id, (going.get(v.run_id) ?? 0) + 1);
      if (c.run_id !== undefined && !going.has(c.run_id)) going.set(c.run_id, 0);
      const runs: string[] = [];
      for (const [runId, n] of [...going].sort(([a], [b]) => (a < b ? -1 : 1))) {
        const row = (await client.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM ${this.t.runs} WHERE run_id = $1 FOR UPDATE`, [runId])).rows[0];
        if (!row || this.statusOf(row) === "running") continue;
        const total = Number((await client.query<{ n: number }>(`SELECT count(*) AS n FROM ${this.t.episodes} WHERE run_id = $1`, [runId])).rows[0]?.n ?? 0);
        if (total === n) runs.push(runId);
      }
      const result = { episodes: ids, steps, runs };
      if (c.dry_run) return result;
      await client.query(`DELETE FROM ${this.t.steps} WHERE episode_id = ANY($1::text[])`, [ids]);
      await client.query(`DELETE FROM ${this.t.episodes} WHERE episode_id = ANY($1::text[])`, [ids]);
      if (runs.length > 0) await client.query(`DELETE FROM ${this.t.runs} WHERE run_id = ANY($1::text[])`, [runs]);
      if (audit && ids.length + runs.length > 0) await this.insertAudit(client, [audit(result)]);
      return result;
    });
    if (!c.dry_run && result.episodes.length + result.runs.length > 0) {
      // VACUUM cannot run inside a transaction; a failure here leaves the rows deleted, only not yet reclaimed.
      await this.query("cannot vacuum after a purge", `VACUUM ${this.t.steps}, ${this.t.episodes}, ${this.t.runs}`).catch(() => undefined);
    }
    return result;
  }

  /** Append events to the audit log in one statement (the table's triggers refuse any change or removal). */
  async appendAudit(events: readonly AuditEvent[]): Promise<void> {
    this.handle();
    if (events.length === 0) return;
    prepareAuditEvents(events);
    await this.transaction("cannot append to the audit log", (client) => this.insertAudit(client, events));
  }

  /** Insert audit events with the caller's client (inside its transaction). */
  private async insertAudit(client: pg.PoolClient, events: readonly AuditEvent[]): Promise<void> {
    const columns: unknown[][] = Array.from({ length: 9 }, () => []);
    for (const { event: e, detail } of prepareAuditEvents(events)) {
      [e.at, e.token, e.token_id, e.tenant, e.action, e.target_kind, e.target_id, e.via, detail].forEach((v, i) => (columns[i] as unknown[]).push(v));
    }
    await client.query(
      `INSERT INTO ${this.t.audit} (at, token, token_id, tenant, action, target_kind, target_id, via, detail)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])`,
      columns,
    );
  }

  /** Audit events matching a query, newest first. */
  async auditLog(query?: AuditQuery): Promise<AuditEvent[]> {
    this.handle();
    const q = checkAuditQuery(query);
    const clauses: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown) => (params.push(value), clauses.push(`${clause} $${params.length}`));
    for (const key of ["token", "tenant", "action", "target_id"] as const) if (q[key] !== undefined) add(`${key} =`, q[key]);
    if (q.since !== undefined) add("at >=", new Date(q.since).toISOString());
    if (q.until !== undefined) add("at <", new Date(q.until).toISOString());
    params.push(q.limit);
    const rows = (
      await this.query<AuditEvent & { detail: string }>(
        "cannot read the audit log",
        `SELECT seq, at, token, token_id, tenant, action, target_kind, target_id, via, detail FROM ${this.t.audit} ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT $${params.length}`,
        params,
      )
    ).rows;
    return this.decode("corrupt audit event", () => rows.map((row) => ({ ...row, seq: Number(row.seq), detail: JSON.parse(row.detail) as AuditEvent["detail"] })));
  }

  /** Close the connections (waiting for calls in flight to release theirs). Idempotent. */
  async close(): Promise<void> {
    const pool = this.pool;
    if (!pool) return this.closing;
    this.pool = undefined;
    this.closing = pool.end().catch((error: unknown) => {
      throw this.fail(error, "cannot close the trajectory store");
    });
    return this.closing;
  }

  private statusOf(row: RunRow): RunStatus {
    return effectiveStatus(row, this.now(), this.staleRunAfterMs);
  }

  private isoNow(): string {
    return new Date(this.now()).toISOString();
  }

  private handle(): pg.Pool {
    if (!this.pool) throw new LlmixError("store_error", `the trajectory store at ${this.url} is closed`, { url: this.url });
    return this.pool;
  }

  /** A pooled connection, or store_error naming the URL (no password) when the server cannot be reached. */
  private async connect(what: string): Promise<pg.PoolClient> {
    try {
      return await this.handle().connect();
    } catch (error) {
      throw this.fail(error, what);
    }
  }

  /** One statement on any pooled connection; failures become store_error (typed LLMix errors pass through). */
  /**
   * One statement on any pooled connection; failures become store_error (typed LLMix errors pass
   * through). Only for statements that may run twice (reads, idempotent updates): one that finds its
   * connection lost (a pooled connection the server closed, say on a restart) runs once more on a new one.
   */
  private async query<R extends object = Record<string, unknown>>(what: string, text: string, values: unknown[] = []): Promise<pg.QueryResult<R & pg.QueryResultRow>> {
    await this.ready();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.handle().query<R & pg.QueryResultRow>(text, values);
      } catch (error) {
        if (attempt === 0 && isConnectionLoss(error)) continue;
        throw this.fail(error, what);
      }
    }
  }

  /**
   * Run `fn` in a transaction on one connection: committed if it returns, rolled back if it throws. A
   * connection lost before COMMIT was sent leaves nothing behind (the server rolls back), and so does a
   * transaction the server chose as a deadlock victim: either runs once more, on a new connection. A loss
   * at COMMIT, whose outcome is unknown, fails.
   */
  private async transaction<T>(what: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    await this.ready();
    for (let attempt = 0; ; attempt++) {
      const client = await this.connect(what);
      let broken: Error | undefined;
      let committing = false;
      try {
        await client.query("BEGIN");
        const result = await fn(client);
        committing = true;
        await client.query("COMMIT");
        return result;
      } catch (error) {
        // A connection that cannot even roll back is broken: release it destroyed, not back to the pool.
        await client.query("ROLLBACK").catch((e: unknown) => (broken = e instanceof Error ? e : new Error(String(e))));
        if (attempt === 0 && !committing && (isConnectionLoss(error) || isDeadlock(error))) continue;
        throw this.fail(error, what);
      } finally {
        client.release(broken);
      }
    }
  }

  /** Parse stored JSON; a row that does not parse is a corrupt store (store_error), not a caller's mistake. */
  private decode<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      throw this.fail(error, what);
    }
  }

  private fail(error: unknown, what: string): LlmixError {
    if (error instanceof LlmixError) return error;
    const code = (error as { code?: unknown }).code;
    return new LlmixError("store_error", `${what} (${this.url}, schema ${this.schema}): ${describe(error)}`, {
      url: this.url,
      schema: this.schema,
      ...(typeof code === "string" ? { pg_code: code } : {}),
    });
  }
}

// ---- statements ---------------------------------------------------------------------------------------

function episodeValues(e: PreparedHead): unknown[] {
  const ep = e.episode;
  return [ep.episode_id, ep.run_id, ep.env, ep.task_id, ep.difficulty, ep.group_index, ep.status, ep.total_reward, e.passed, e.advantages, e.record, ep.finished_at];
}

/** `fn()`, with a validation error replaced by the one prepareBatch reports for the batch (the first in item order). */
function validated<T>(batch: unknown, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw batchError(batch, error);
  }
}

/** Where a batch's episode INSERTs stand: `settled` once they are over, `ok` if every episode went in (none was taken, nothing failed). */
interface Claim {
  settled: boolean;
  ok: boolean;
}

/** A COPY FROM STDIN on one connection: started when its first rows can go, failed once the server or the connection says so. */
class StepCopy {
  private stream: CopyStreamQuery | undefined;
  private done: Promise<void> | undefined;
  private failed = false;
  private ended = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly text: string,
  ) {}

  get started(): boolean {
    return this.stream !== undefined;
  }

  /** False once the COPY failed (rows written after that would go nowhere: pg-copy-streams drops its connection). */
  get writable(): boolean {
    return !this.failed && !(this.stream?.destroyed ?? false);
  }

  /** Send the COPY statement (its rows are buffered until the server takes them). */
  start(): void {
    const stream = this.client.query(copyFrom(this.text, { highWaterMark: COPY_BUFFER_BYTES }));
    this.stream = stream;
    // 'error' comes as an event (the server's error, or a lost connection): listened for from the start, so
    // none goes unhandled, and `done` rejects with it.
    stream.on("error", () => (this.failed = true));
    this.done = finished(stream);
    this.done.catch(() => undefined);
  }

  /** Write COPY text; resolves when more may be written: at once (after a turn of the event loop, so the socket sends it) or once the buffer drains. */
  async write(text: string): Promise<void> {
    const stream = this.stream;
    if (!stream || !this.writable) return;
    if (stream.write(text)) {
      // Back to the event loop after every piece, not only when the buffer is full: the socket takes
      // what was written, and the server parses it while the next piece is serialised.
      await nextTurn();
      return;
    }
    const ac = new AbortController();
    try {
      await Promise.race([once(stream, "drain", { signal: ac.signal }), once(stream, "close", { signal: ac.signal })]);
    } catch {
      // 'error' (the COPY failed: `finish` reports it) or the abort below.
    } finally {
      ac.abort();
    }
  }

  /** End the COPY; resolves to the rows the server stored (0 if it never started), rejects with its failure. */
  async finish(): Promise<number> {
    if (!this.stream || !this.done) return 0;
    if (this.writable) {
      this.ended = true;
      this.stream.end();
    }
    await this.done;
    return this.stream.rowCount;
  }

  /** Make sure the COPY is over: a COPY still taking rows is failed (CopyFail), so the server discards them. */
  async abort(): Promise<void> {
    if (!this.stream || !this.done) return;
    if (this.writable && !this.ended) this.stream.destroy();
    await this.done.catch(() => undefined);
  }
}

/**
 * Serialise (and so check) every step record of `heads` as rows of COPY text, in pieces of about
 * COPY_PIECE_CHARS characters, and stream them to `copy`, started once the episode rows are in (`claimed`
 * resolves when their INSERTs are over). Pieces made before then are held, up to COPY_BUFFER_BYTES, after
 * which serialising waits; so it does whenever that much is buffered ahead of the server. Once the batch
 * is known to fail (an id is taken, the INSERTs or the COPY failed), rows are still serialised, so a
 * malformed step is reported before a stored id as SQLite reports it, but no longer sent. A step that is
 * not JSON throws the batch's first problem (see `validated`). Returns the number of rows sent (every
 * step, unless the batch fails).
 */
async function copySteps(heads: readonly PreparedHead[], batch: unknown, claim: Claim, claimed: Promise<void>, copy: StepCopy): Promise<number> {
  const failing = () => (claim.settled && !claim.ok) || !copy.writable;
  let held: string[] = [];
  let heldChars = 0;
  let rows = 0;
  let text = "";
  let textRows = 0;
  /** Hand `text` on: to the COPY if it runs, else held for it (the COPY starts with them once the episodes are in). */
  const send = async (last: boolean) => {
    const piece = text;
    rows += textRows;
    text = "";
    textRows = 0;
    if (copy.started) {
      if (piece && !failing()) await copy.write(piece);
      return;
    }
    if (piece) held.push(piece);
    heldChars += piece.length;
    if (!claim.settled) {
      if (!last && heldChars < COPY_BUFFER_BYTES) return nextTurn();
      await claimed;
    }
    if (failing()) return;
    copy.start();
    const pieces = held;
    held = [];
    for (const p of pieces) await copy.write(p);
  };
  for (const head of heads) {
    const id = `${copyText(head.episode.episode_id)}\t`;
    for (const step of head.steps) {
      const record = validated(batch, () => stepRecord(head, step));
      if (failing()) continue;
      text += `${id}${step.step}\t${copyText(record)}\n`;
      textRows++;
      if (text.length >= COPY_PIECE_CHARS) await send(false);
    }
  }
  if (textRows > 0 || rows > 0) await send(true);
  return rows;
}

const COPY_ESCAPES: Record<string, string> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * `value` as one column of COPY's text format: backslash, newline, carriage return and tab (the
 * delimiter) escaped with a backslash; every other character, unicode included, stands for itself. So a
 * value never reads as NULL (\N) or as the end-of-data marker (\.), whose backslash is doubled. NUL
 * cannot occur: ids refuse it (checkId), and JSON.stringify writes it as the six characters \u0000, as
 * it writes a lone surrogate as an escape. (Four includes() scans cost a fifth of one regex test on a
 * step record, which rarely needs escaping: JSON text holds backslashes only in escapes, and no raw
 * control characters at all.)
 */
export function copyText(value: string): string {
  if (!value.includes("\\") && !value.includes("\n") && !value.includes("\r") && !value.includes("\t")) return value;
  return value.replace(/[\\\n\r\t]/g, (c) => COPY_ESCAPES[c] as string);
}

/** `items` in runs whose `size` sum reaches CHUNK_CHARS at most once, at the run's last item (so each run has at least one). */
function* chunks<T>(items: readonly T[], size: (item: T) => number): Generator<T[]> {
  let start = 0;
  while (start < items.length) {
    let end = start;
    let chars = 0;
    while (end < items.length && (end === start || chars < CHUNK_CHARS)) chars += size(items[end++] as T);
    yield items.slice(start, end);
    start = end;
  }
}

function whereOf(q: CleanQuery, runs: string): { where: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  const add = (clause: string, value: unknown) => {
    if (value === undefined) return;
    params.push(value);
    clauses.push(`${clause} $${params.length}`);
  };
  add("run_id =", q.run_id);
  add("env =", q.env);
  add("task_id =", q.task_id);
  add("difficulty =", q.difficulty);
  add("status =", q.status);
  add("passed =", q.passed);
  add("total_reward >=", q.min_reward);
  add("total_reward <=", q.max_reward);
  if (q.tenant !== undefined) {
    params.push(q.tenant);
    clauses.push(`run_id IN (SELECT run_id FROM ${runs} WHERE tenant IS NOT DISTINCT FROM $${params.length})`);
  }
  return { where: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

/**
 * True for a lost connection rather than a failed statement: the server went away (admin or crash
 * shutdown, SQLSTATE class 08) or the socket broke under the driver.
 */
function isConnectionLoss(error: unknown): boolean {
  if (error instanceof LlmixError) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (/^08/.test(code) || code === "57P01" || code === "57P02" || code === "57P03" || code === "ECONNRESET" || code === "EPIPE")) return true;
  return /Connection terminated|not queryable|Client was closed/i.test(messageOf(error));
}

/** True for a transaction the server aborted to break a deadlock (or a serialisation failure): rolled back whole, safe to run again. */
function isDeadlock(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === "40P01" || code === "40001";
}

/** A driver error as one line: Node's connect errors to a name with several addresses are an AggregateError with an empty message. */
function describe(error: unknown): string {
  if (error instanceof AggregateError && !error.message) return error.errors.map(messageOf).join("; ") || "connection failed";
  const message = messageOf(error);
  const code = (error as { code?: unknown }).code;
  return message || (typeof code === "string" ? code : "unknown error");
}
