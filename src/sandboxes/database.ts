/**
 * The database sandbox (DESIGN §3): a real SQLite database per episode, held in memory by better-sqlite3.
 *
 * - Owner methods (`exec`, `run`, `all`, `get`, `transaction`) are for environment code; `query` is the one
 *   entry point for agent-written SQL: one statement, nothing that can reach outside the sandbox.
 * - `setAccess("read")` makes every later statement read-only, except `exec`, which is the owner's setup
 *   path and always runs with write access. Every statement is checked with `sqlite3_stmt_readonly`
 *   (better-sqlite3's `stmt.readonly`) before it runs; the agent SQL guard refuses the statements that call
 *   themselves read-only yet change something (transactions, ATTACH, writing PRAGMAs). Not `PRAGMA
 *   query_only`: setting a flag PRAGMA expires every prepared statement, so toggling it around each tool
 *   call made every statement re-compile on every step.
 *   The tool runner sets access around each tool call and puts it back to "write" afterwards, so seeding
 *   normally happens in write mode anyway.
 * - Snapshots are `{format: "sqlite", bytes: base64(serialize()), random}`; restore deserializes them.
 *   Given the schema the environment expects (`RestoreChecks`: `readSchema()` of a database it built), a
 *   restore refuses with invalid_snapshot, naming the difference, any database whose file format (page size,
 *   text encoding) or schema objects differ from it (so no view, trigger, CHECK, default, generated column
 *   or index expression the environment did not write can come in and run), that fails
 *   `PRAGMA integrity_check` (b-trees, indexes against tables, NOT NULL, CHECK), or, with `strictTypes`,
 *   that holds a value of another storage class than its column declares. Without a schema only the header
 *   is checked: a snapshot's SQL objects then run as they are.
 * - Determinism: every handle is a deserialized ("memdb") database, so a fresh database and a restored one
 *   write identical bytes for identical operations. SQLite's own sources of nondeterminism are replaced on
 *   every handle: `random()` / `randomblob()` draw from a seeded `Rng` whose state is in the snapshot, and
 *   `'now'`, `CURRENT_TIMESTAMP`, `CURRENT_DATE`, `CURRENT_TIME` and the argument-less date functions read a
 *   virtual clock (the fixed `DEFAULT_EPOCH_MS` unless `setClock` is called). The host-time-zone
 *   modifiers `'localtime'` and `'utc'` are refused.
 * - Values leave the sandbox JSON-safe: BLOBs become `{"$blob": base64}`, integers outside the safe range
 *   become decimal strings, infinite REALs become `{"$real": "Infinity" | "-Infinity"}`.
 * - Limits, each ending in SandboxError("size_limit") with `details.limit` naming it: the database may not
 *   grow past `maxBytes` (`PRAGMA max_page_count`, set on every handle: it does not survive serialize); an
 *   agent statement may not be longer than `maxSqlLength` nor return more than `maxRows` rows or
 *   `maxResultBytes` bytes (cut, `truncated: true`); the functions that make a large value from a short
 *   call (`zeroblob`, `randomblob`, `printf`/`format` widths and precisions, `replace`, `hex`) are replaced by
 *   bounded versions that give SQLite's own result up to `MAX_VALUE_BYTES` and refuse beyond it. Temporary
 *   storage (sorts, materialized subqueries) stays in memory, never in host files.
 * - Not bounded here, stopped by the host's step deadline and memory cap: better-sqlite3 has no progress
 *   handler or interrupt, so the running time of one statement (a recursive CTE, a cross join) cannot be
 *   limited from JS; and values grown by operators and aggregates (`||`, `concat`, `group_concat`, JSON)
 *   are bounded only by SQLite's length limit (~512 MB per value).
 *
 * Not captured by snapshots: TEMP objects (agent SQL may not create them) and connection settings changed
 * with PRAGMA by the owner (a restored handle starts with better-sqlite3's defaults, e.g. foreign_keys=ON,
 * plus the sandbox's own: in-memory temporary storage and the `maxBytes` cap).
 */
import Database from "better-sqlite3";
import { z } from "zod";
import { DEFAULT_EPOCH_MS } from "../core/clock.js";
import { LlmixError, SandboxError, ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import { Rng, type RngState } from "../core/rng.js";
import type { AccessMode, Sandbox, SandboxCheckpoint } from "./sandbox.js";

type Handle = Database.Database;
type Statement = Database.Statement<unknown[], unknown>;

/** A JSON-safe SQL value as it leaves the sandbox. */
export type SqlValue = null | number | string | { $blob: string } | { $real: string };
/** A row: column name to JSON-safe value. */
export type Row = Record<string, SqlValue>;
/** Positional (`?`) or named (`@name`, `:name`, `$name`) bind parameters. */
export type SqlParams = readonly unknown[] | Record<string, unknown>;

export interface SqlRunResult {
  changes: number;
  lastInsertRowid: number;
}

/** What `query` returns: rows for statements that return data, change counts for the others. */
export type SqlQueryResult =
  | { kind: "rows"; columns: string[]; rows: SqlValue[][]; truncated: boolean }
  | { kind: "changes"; changes: number; lastInsertRowid?: number };

export interface SqlQueryOptions {
  /** Stop reading after this many rows (`truncated: true`); also ends runaway recursive queries that return rows. Default 10000. */
  maxRows?: number;
  /** Stop reading before the rows' values pass this many bytes (`truncated: true`). Default 4 MiB. */
  maxResultBytes?: number;
  /** Refuse statements longer than this many characters (size_limit). Default 65536. */
  maxSqlLength?: number;
}

/** The JSON snapshot of a database. `random` is the state of the `random()` generator. */
export interface SqliteSnapshot {
  format: "sqlite";
  bytes: string;
  random?: RngState;
}

const UINT32 = z.number().int().min(0).max(0xffffffff);

/**
 * The zod schema of exactly what `snapshot()` returns, for a database of at most `maxBytes` (its base64
 * text is 4/3 as long). Only the shape: `restore` checks the bytes themselves.
 */
export function sqliteSnapshotSchema(maxBytes: number = DEFAULT_MAX_DATABASE_BYTES) {
  return z.strictObject({
    format: z.literal("sqlite"),
    bytes: z.string().max(Math.ceil(maxBytes / 3) * 4),
    random: z.strictObject({ key: z.string().max(4096), s: z.tuple([UINT32, UINT32, UINT32, UINT32]) }),
  });
}

/** A column as dumps and diffs need it: its name and its position in the primary key (0: not in it). */
interface ColumnInfo {
  name: string;
  pk: number;
}

/** Anything that tells virtual time in epoch milliseconds (a `VirtualClock` fits). */
export type DbClock = { now(): number } | (() => number);

/** One object of `sqlite_schema`: a table, index, view or trigger with the SQL that made it (null for automatic indexes). */
export interface SchemaObject {
  type: string;
  name: string;
  /** The table it belongs to (its own name for a table). */
  table: string;
  sql: string | null;
}

/** A table column as `PRAGMA table_xinfo` reports it. */
export interface SchemaColumn {
  name: string;
  /** The declared type as written ("" when none). */
  type: string;
  notNull: boolean;
  /** The default value's SQL text, or null. */
  default: string | null;
  /** Position in the primary key (0: not in it). */
  pk: number;
  /** 0 ordinary, 1 hidden (virtual tables), 2 generated (virtual), 3 generated (stored). */
  hidden: number;
}

/** A database's file format and schema objects, as restore checks compare them (see `readSchema`). */
export interface DatabaseSchema {
  pageSize: number;
  encoding: string;
  /** Every object of `sqlite_schema`, sorted by type, then name. */
  objects: readonly SchemaObject[];
  /** The columns of every table, by table name. */
  columns: Readonly<Record<string, readonly SchemaColumn[]>>;
}

/** What a database must pass before a handle on its bytes is used (construction from bytes, `restore`). */
export interface RestoreChecks {
  /** The schema it must have exactly: `readSchema()` of a database the environment built. Default: none. */
  schema?: DatabaseSchema;
  /** With `schema`: every value must be of the storage class its column declares, as in a STRICT table. */
  strictTypes?: boolean;
}

export interface SqlDatabaseOptions extends RestoreChecks {
  /** Virtual time for `'now'` and `CURRENT_TIMESTAMP`. Default: the fixed `DEFAULT_EPOCH_MS`. */
  clock?: DbClock;
  /** Stream for SQL `random()` / `randomblob()`. Default: `Rng.fromKey("llmix/sqlite")`. */
  rng?: Rng;
  /** Start from these serialized bytes (a copy is used). Garbage fails with invalid_snapshot. Default: empty. */
  bytes?: Uint8Array;
  /** Largest size of the database in bytes: a write past it fails with size_limit, larger `bytes` with invalid_snapshot. Default 64 MiB. */
  maxBytes?: number;
}

/** Default `maxBytes` of a database. */
export const DEFAULT_MAX_DATABASE_BYTES = 64 * 1024 * 1024;
/** Largest value the bounded SQL functions (zeroblob, randomblob, printf/format, replace, hex) may make, in bytes. */
export const MAX_VALUE_BYTES = 16 * 1024 * 1024;
const DEFAULT_MAX_ROWS = 10_000;
const DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024;
const DEFAULT_MAX_SQL_LENGTH = 64 * 1024;
/** The page size of a database before its first write sets one (SQLITE_DEFAULT_PAGE_SIZE of better-sqlite3's build). */
const DEFAULT_PAGE_SIZE = 4096;
const SQLITE_HEADER = Buffer.from("SQLite format 3\u0000", "latin1");

/** Read-only PRAGMAs that agent SQL may run (also as `pragma_<name>` table-valued functions). */
export const ALLOWED_PRAGMAS: readonly string[] = [
  "table_info",
  "table_xinfo",
  "table_list",
  "index_list",
  "index_info",
  "index_xinfo",
  "foreign_key_list",
  "foreign_key_check",
  "integrity_check",
  "quick_check",
];

/** Functions that could reach the host (or corrupt the process) if a build ever exposed them. */
const FORBIDDEN_FUNCTIONS = new Set([
  "load_extension",
  "fts3_tokenizer",
  "readfile",
  "writefile",
  "sqlite_attach",
  "sqlite_detach",
  "sqlite_dbpage",
]);

const TRANSACTION_KEYWORDS = new Set(["begin", "commit", "end", "rollback", "savepoint", "release"]);

/** The date functions whose `'now'` (or missing time value) is redirected to the virtual clock. */
const DATE_FUNCTIONS = ["date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff"] as const;

/**
 * A per-episode SQLite database. See the module comment for the access, snapshot and determinism rules.
 */
export class SqlDatabase implements Sandbox {
  private db: Handle;
  private mode: AccessMode = "write";
  private closed = false;
  /** Savepoints taken so far (each mark gets a fresh name). */
  private marks = 0;
  private clock: DbClock;
  private rng: Rng;
  private readonly maxBytes: number;
  /** A plain connection (no overrides) that evaluates SQLite's built-in functions for the overrides. */
  private builtins: Handle | null = null;
  private readonly builtinStatements = new Map<string, Statement>();
  /** Prepared owner statements of the current handle: tools run the same few queries every step. */
  private readonly statements = new Map<string, Statement>();
  /**
   * Table names and columns, read once between writes: a dump or a diff asks for every table's columns,
   * some twice. Emptied by anything that may change the schema (any statement that is not read-only).
   */
  private schema: { tables: string[] | null; columns: Map<string, ColumnInfo[]> } | null = null;

  constructor(options: SqlDatabaseOptions = {}) {
    this.clock = options.clock ?? { now: () => DEFAULT_EPOCH_MS };
    this.rng = options.rng ?? Rng.fromKey("llmix/sqlite");
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_DATABASE_BYTES;
    if (!Number.isSafeInteger(this.maxBytes) || this.maxBytes < 512) {
      throw new ValidationError("invalid_config", `maxBytes must be an integer >= 512, got ${String(options.maxBytes)}`);
    }
    this.db = this.openChecked(options.bytes ? toBuffer(options.bytes) : Buffer.alloc(0), options);
  }

  /**
   * A database holding a copy of serialized bytes (from `serialize()`). Garbage, and bytes that fail the
   * options' `RestoreChecks`, fail with invalid_snapshot.
   */
  static fromBytes(bytes: Uint8Array, options: SqlDatabaseOptions = {}): SqlDatabase {
    return new SqlDatabase({ ...options, bytes });
  }

  /** A database restored from a `snapshot()`, after the options' `RestoreChecks` (invalid_snapshot). */
  static fromSnapshot(snapshot: JsonValue, options: SqlDatabaseOptions = {}): SqlDatabase {
    const { bytes, rng } = decodeSnapshot(snapshot);
    return new SqlDatabase({ ...options, bytes, rng: rng ?? options.rng });
  }

  // ----- access, clock, randomness -------------------------------------------------------------------

  /** "read": every later statement except the owner's `exec` must be read-only. "write" lifts it. */
  setAccess(mode: AccessMode): void {
    if (mode !== "read" && mode !== "write") {
      throw new ValidationError("invalid_argument", `access mode must be "read" or "write", got ${String(mode)}`);
    }
    this.mode = mode;
  }

  /** The current access mode. */
  access(): AccessMode {
    return this.mode;
  }

  /** Use this clock for `'now'` and `CURRENT_TIMESTAMP` from now on. */
  setClock(clock: DbClock): void {
    this.clock = clock;
  }

  /** Use this stream for `random()` / `randomblob()` from now on. */
  setRandom(rng: Rng): void {
    this.rng = rng;
  }

  // ----- owner API ------------------------------------------------------------------------------------

  /**
   * Run a script of any number of statements: schema and seed data. Owner-only (never pass agent SQL):
   * it runs with write access even while access is "read", then puts read-only access back.
   */
  exec(sql: string): void {
    const db = this.handle();
    this.schema = null;
    try {
      db.exec(sql);
      // The script may have set the page size, which the size cap counts in.
      db.exec(this.sizeLimit(db.prepare("PRAGMA page_size").pluck().get() as number));
    } catch (error) {
      throw sqlError(error, sql);
    }
    // A setup script leaves every page it wrote in the page cache, a second copy of the in-memory
    // database: released here, it is ~25 KB less per idle episode (10,000 live sessions in a service).
    this.prepare("PRAGMA shrink_memory").run();
  }

  /**
   * Compile owner statements now instead of at their first use (they join the statement cache). An
   * environment passes the queries its tools run, so a tool's first call in an episode does not pay for
   * compiling on the episode's new connection. A statement that does not compile fails here (sql_error).
   */
  precompile(statements: Iterable<string>): void {
    for (const sql of statements) this.prepare(sql);
  }

  /** Run one statement that returns no rows; honours the access mode. */
  run(sql: string, params?: SqlParams): SqlRunResult {
    const stmt = this.prepare(sql);
    this.checkWrite(stmt, sql);
    try {
      const result = stmt.run(...bindArgs(params));
      return { changes: result.changes, lastInsertRowid: Number(result.lastInsertRowid) };
    } catch (error) {
      throw sqlError(error, sql);
    }
  }

  /** All rows of one statement, JSON-safe; honours the access mode. */
  all<T = Row>(sql: string, params?: SqlParams): T[] {
    const stmt = this.prepare(sql);
    this.checkWrite(stmt, sql);
    try {
      const rows = stmt.safeIntegers(true).all(...bindArgs(params)) as Record<string, unknown>[];
      return rows.map((r) => toJsonRow(r) as T);
    } catch (error) {
      throw sqlError(error, sql);
    }
  }

  /** The first row of one statement (undefined if none), JSON-safe; honours the access mode. */
  get<T = Row>(sql: string, params?: SqlParams): T | undefined {
    const stmt = this.prepare(sql);
    this.checkWrite(stmt, sql);
    try {
      const row = stmt.safeIntegers(true).get(...bindArgs(params)) as Record<string, unknown> | undefined;
      return row === undefined ? undefined : (toJsonRow(row) as T);
    } catch (error) {
      throw sqlError(error, sql);
    }
  }

  /** Run `fn` in one transaction: committed if it returns, rolled back if it throws. Synchronous only. */
  transaction<T>(fn: () => T): T {
    const db = this.handle();
    try {
      return db.transaction(fn)();
    } catch (error) {
      // The rollback may have undone schema changes the cache saw inside the transaction.
      this.schema = null;
      if (error instanceof LlmixError) throw error;
      throw sqlError(error, "");
    }
  }

  /** User tables (ordinary and virtual; no sqlite_ internals, no FTS shadow tables), sorted by name. */
  tables(): string[] {
    const schema = this.currentSchema();
    if (schema.tables === null) {
      const rows = this.prepare("PRAGMA main.table_list").all() as { name: string; type: string }[];
      schema.tables = rows
        .filter((r) => (r.type === "table" || r.type === "virtual") && !r.name.toLowerCase().startsWith("sqlite_"))
        .map((r) => r.name)
        .sort(compareStrings);
    }
    return [...schema.tables];
  }

  /** Column names of a table or view, in declaration order (generated columns included). */
  columns(table: string): string[] {
    return this.columnInfo(table).map((c) => c.name);
  }

  /**
   * Primary-key columns in key order. Tables without a declared key fall back to the rowid, named by the
   * first of `rowid`, `_rowid_`, `oid` that no real column shadows (`[]` if all three are shadowed).
   */
  primaryKey(table: string): string[] {
    const info = this.columnInfo(table);
    const pk = info
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name);
    if (pk.length > 0) return pk;
    const names = new Set(info.map((c) => c.name.toLowerCase()));
    const alias = ["rowid", "_rowid_", "oid"].find((a) => !names.has(a));
    return alias === undefined ? [] : [alias];
  }

  // ----- agent SQL -----------------------------------------------------------------------------------

  /**
   * Run one agent-written statement. Refused with forbidden_statement: several statements, ATTACH/DETACH,
   * VACUUM INTO, PRAGMAs outside `ALLOWED_PRAGMAS`, load_extension() and similar functions, transaction
   * control, TEMP objects. Writes under read access fail with read_only; SQLite errors with sql_error;
   * statements over `maxSqlLength`, values over MAX_VALUE_BYTES and a database over `maxBytes` with
   * size_limit. Rows are cut at `maxRows` and `maxResultBytes` (`truncated: true`).
   */
  query(sql: string, params?: SqlParams, options: SqlQueryOptions = {}): SqlQueryResult {
    if (typeof sql !== "string") throw new SandboxError("sql_error", "SQL must be a string");
    const maxRows = limitOption(options, "maxRows", DEFAULT_MAX_ROWS);
    const maxResultBytes = limitOption(options, "maxResultBytes", DEFAULT_MAX_RESULT_BYTES);
    const maxSqlLength = limitOption(options, "maxSqlLength", DEFAULT_MAX_SQL_LENGTH);
    if (sql.length > maxSqlLength) {
      throw new SandboxError("size_limit", `SQL statement of ${sql.length} characters refused: the limit is ${maxSqlLength} (maxSqlLength)`, {
        limit: "maxSqlLength",
        max: maxSqlLength,
        size: sql.length,
      });
    }
    checkAgentSql(sql);
    const stmt = this.prepare(sql, true);
    this.checkWrite(stmt, sql);
    const args = bindArgs(params);
    try {
      if (!stmt.reader) {
        const result = stmt.run(...args);
        // SQLite's last_insert_rowid() is per connection: only meaningful right after an INSERT.
        return isInsert(sql) && result.changes > 0
          ? { kind: "changes", changes: result.changes, lastInsertRowid: Number(result.lastInsertRowid) }
          : { kind: "changes", changes: result.changes };
      }
      const columns = stmt.columns().map((c) => c.name);
      stmt.raw(true).safeIntegers(true);
      // INSERT ... RETURNING and friends run to completion so the write is whole; reads stop early.
      const source = (stmt.readonly ? stmt.iterate(...args) : stmt.all(...args)) as Iterable<unknown[]>;
      const { rows, truncated } = takeRows(source, maxRows, maxResultBytes);
      return { kind: "rows", columns, rows: rows.map((r) => r.map(toSqlValue)), truncated };
    } catch (error) {
      throw sqlError(error, sql);
    }
  }

  // ----- snapshots -----------------------------------------------------------------------------------

  /**
   * A mark to roll back to: a SAVEPOINT (nested ones work: each mark has its own name). Released or
   * rolled back on the handle it was taken on; a restore in between replaced that handle, and the mark
   * with it.
   */
  checkpoint(): SandboxCheckpoint {
    const db = this.handle();
    const name = `llmix_mark_${++this.marks}`;
    // Outermost, a rollback is a whole ROLLBACK: ROLLBACK TO then RELEASE would commit the rolled-back
    // transaction, and that commit bumps the header's change counter, so the bytes would differ.
    const outermost = !db.inTransaction;
    db.exec(`SAVEPOINT ${name}`);
    let done = false;
    const finish = (sql: string) => {
      if (done) return;
      done = true;
      if (!this.closed && this.db === db) db.exec(sql);
    };
    return { rollback: () => finish(outermost ? "ROLLBACK" : `ROLLBACK TO ${name}; RELEASE ${name}`), release: () => finish(`RELEASE ${name}`) };
  }

  /** The serialized main database (empty for a database that was never written). */
  serialize(): Buffer {
    return this.handle().serialize();
  }

  snapshot(): JsonValue {
    const state = this.rng.state();
    return {
      format: "sqlite",
      bytes: this.serialize().toString("base64"),
      random: { key: state.key, s: [...state.s] },
    };
  }

  /**
   * Replace the database with a snapshot's: validates it (invalid_snapshot on garbage or on failing
   * `checks`), deserializes it into a new handle, closes the old one and keeps the current access mode.
   * A refused snapshot changes nothing.
   */
  restore(snapshot: JsonValue, checks: RestoreChecks = {}): void {
    const { bytes, rng } = decodeSnapshot(snapshot);
    this.replaceHandle(bytes, checks);
    if (rng) this.rng = rng;
  }

  /** The file format and schema objects of the database, for `RestoreChecks.schema`. */
  readSchema(): DatabaseSchema {
    return readSchemaOf(this.handle());
  }

  /**
   * Check the database against an expected schema (and, with `strictTypes`, its values' storage classes)
   * as a restore does; ValidationError("invalid_snapshot") names every difference.
   */
  assertSchema(expected: DatabaseSchema, options: { strictTypes?: boolean } = {}): void {
    verifyDatabase(this.handle(), this.serialize(), expected, options.strictTypes === true);
  }

  /** Close the database. Idempotent; later calls fail with sql_error. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
    this.statements.clear();
    this.builtinStatements.clear();
    this.builtins?.close();
    this.builtins = null;
  }

  // ----- diff support --------------------------------------------------------------------------------

  /** A table's columns, key and rows with raw SQLite values (bigint integers, Buffer blobs). @internal */
  readTable(table: string): RawTable {
    const key = this.primaryKey(table);
    const declared = this.columns(table);
    const rowidKey = key.length === 1 && !declared.includes(key[0]) ? key[0] : null;
    const select = rowidKey ? `SELECT ${rowidKey} AS ${quoteIdent(rowidKey)}, * FROM` : "SELECT * FROM";
    try {
      const stmt = this.prepare(`${select} main.${quoteIdent(table)}`).safeIntegers(true);
      const rows = stmt.all() as Record<string, unknown>[];
      // After running: a cached "SELECT *" is compiled again when the schema changed, and only then
      // does it list the table's current columns.
      const columns = stmt.columns().map((c) => c.name);
      return { columns, key, rows };
    } catch (error) {
      throw sqlError(error, "");
    }
  }

  // ----- internals -----------------------------------------------------------------------------------

  private handle(): Handle {
    if (this.closed) throw new SandboxError("sql_error", "SQL error: the database is closed");
    return this.db;
  }

  private columnInfo(table: string): ColumnInfo[] {
    const schema = this.currentSchema();
    let columns = schema.columns.get(table);
    if (columns === undefined) {
      const rows = this.prepare("SELECT name, pk, hidden FROM pragma_table_xinfo(?, 'main')")
        .safeIntegers(false)
        .all(table) as { name: string; pk: number; hidden: number }[];
      if (rows.length === 0) throw new SandboxError("sql_error", `SQL error: no such table: ${table}`, { table });
      columns = rows.filter((r) => r.hidden !== 1).map((r) => ({ name: r.name, pk: r.pk }));
      schema.columns.set(table, columns);
    }
    return columns;
  }

  private currentSchema(): NonNullable<SqlDatabase["schema"]> {
    this.schema ??= { tables: null, columns: new Map() };
    return this.schema;
  }

  private prepare(sql: string, agent = false): Statement {
    const db = this.handle();
    const cached = agent ? undefined : this.statements.get(sql);
    if (cached) return cached;
    try {
      const stmt = db.prepare(sql) as Statement;
      if (!agent) {
        if (this.statements.size >= 256) this.statements.delete(this.statements.keys().next().value as string);
        this.statements.set(sql, stmt);
      }
      return stmt;
    } catch (error) {
      if (agent && error instanceof RangeError && /more than one statement/.test(error.message)) {
        throw new SandboxError(
          "forbidden_statement",
          "only one SQL statement per call is allowed; send the statements one at a time",
          { reason: "multiple_statements" },
        );
      }
      throw sqlError(error, sql);
    }
  }

  /** Refuse a write under read access; a statement that may write may change the schema. */
  private checkWrite(stmt: Statement, sql: string): void {
    if (!stmt.readonly) this.schema = null;
    if (this.mode === "read" && !stmt.readonly) throw readOnlyError(sql);
  }

  /** Validate `bytes` as a SQLite database and make it the live handle, closing the old one. */
  private replaceHandle(bytes: Buffer, checks: RestoreChecks): void {
    if (this.closed) throw new SandboxError("sql_error", "SQL error: the database is closed");
    const next = this.openChecked(bytes, checks);
    this.db.close();
    this.statements.clear();
    this.schema = null;
    this.db = next;
  }

  /** Open a handle on serialized bytes, checking they are a usable SQLite database that passes `checks`. */
  private openChecked(bytes: Buffer, checks: RestoreChecks): Handle {
    checkDatabaseBytes(bytes, this.maxBytes);
    let handle: Handle | undefined;
    try {
      handle = this.open(bytes);
      handle.prepare("SELECT count(*) FROM sqlite_schema").get();
    } catch (error) {
      handle?.close();
      throw new ValidationError("invalid_snapshot", `snapshot bytes are not a usable SQLite database: ${messageOf(error)}`);
    }
    try {
      if (checks.schema) verifyDatabase(handle, bytes, checks.schema, checks.strictTypes === true);
      // Reading the schema left its pages in the page cache; the parsed schema is all later statements need.
      handle.prepare("PRAGMA shrink_memory").run();
      return handle;
    } catch (error) {
      handle.close();
      if (error instanceof LlmixError) throw error;
      throw new ValidationError("invalid_snapshot", `snapshot bytes are not a usable SQLite database: ${messageOf(error)}`);
    }
  }

  /** A memdb-backed handle (fresh databases too, so they write the same bytes as restored ones). */
  private open(bytes: Buffer): Handle {
    const db = new Database(bytes);
    try {
      // Sorts and materialized subqueries would otherwise spill to files in the host's temp directory.
      db.exec(`PRAGMA temp_store = MEMORY; ${this.sizeLimit(fileFormat(bytes)?.pageSize ?? DEFAULT_PAGE_SIZE)}`);
      this.installDeterminism(db);
      this.installLimits(db);
    } catch (error) {
      db.close();
      throw error;
    }
    return db;
  }

  /** The PRAGMA that caps the database at `maxBytes` in pages of `pageSize` (per handle: serialize drops it). */
  private sizeLimit(pageSize: number): string {
    return `PRAGMA max_page_count = ${Math.floor(this.maxBytes / pageSize)}`;
  }

  private installDeterminism(db: Handle): void {
    db.function("random", { deterministic: false, safeIntegers: true }, () => {
      const hi = BigInt(this.rng.nextUint32());
      const lo = BigInt(this.rng.nextUint32());
      return BigInt.asIntN(64, (hi << 32n) | lo);
    });
    db.function("randomblob", { deterministic: false, safeIntegers: true }, (n: unknown) => {
      const out = Buffer.alloc(boundedSize("randomblob", this.int64(n), 1));
      for (let i = 0; i < out.length; i += 4) {
        const word = this.rng.nextUint32();
        for (let j = 0; j < 4 && i + j < out.length; j++) out[i + j] = (word >>> (8 * j)) & 0xff;
      }
      return out;
    });
    db.function("current_timestamp", { deterministic: false }, () => this.nowIso().slice(0, 19));
    db.function("current_date", { deterministic: false }, () => this.nowIso().slice(0, 10));
    db.function("current_time", { deterministic: false }, () => this.nowIso().slice(11, 19));
    for (const name of DATE_FUNCTIONS) {
      // Deterministic like SQLite's own (usable in indexes); 'now' is constant within a statement anyway.
      db.function(name, { varargs: true, deterministic: true, safeIntegers: true }, (...args: unknown[]) =>
        this.dateFunction(name, args),
      );
    }
  }

  /**
   * Replace the functions that make a large value from a short call with versions that give SQLite's own
   * result when it fits in MAX_VALUE_BYTES and refuse it (size_limit) before it is built otherwise.
   */
  private installLimits(db: Handle): void {
    const options = { deterministic: true, safeIntegers: true };
    db.function("zeroblob", options, (n: unknown) => Buffer.alloc(boundedSize("zeroblob", this.int64(n), 0)));
    db.function("hex", options, (x: unknown) => this.sizedBuiltin("hex", { x }));
    db.function("replace", options, (x: unknown, y: unknown, z: unknown) => this.sizedBuiltin("replace", { x, y, z }));
    for (const name of ["printf", "format"]) {
      db.function(name, { ...options, varargs: true }, (...args: unknown[]) => this.printf(name, args));
    }
  }

  /** SQLite's integer value of a function argument (as sqlite3_value_int64: text by its integer prefix, NULL 0). */
  private int64(value: unknown): bigint {
    if (typeof value === "bigint") return value;
    if (typeof value === "number") return doubleToInt64(value);
    if (value === null || value === undefined) return 0n;
    return (this.builtin("SELECT CAST(? AS INTEGER)", [value])[0] as bigint | null) ?? 0n;
  }

  /** `hex` or `replace` by SQLite, refused before it is built when its result (sized by SIZED_BUILTINS) is too large. */
  private sizedBuiltin(name: keyof typeof SIZED_BUILTINS, args: Record<string, unknown>): unknown {
    const [value, size] = this.builtin(SIZED_BUILTINS[name], args) as [unknown, bigint | null];
    if (size !== null && size > BigInt(MAX_VALUE_BYTES)) throw valueTooLarge(name, size);
    return value;
  }

  /** printf / format by SQLite, refused when the format and arguments could make more than MAX_VALUE_BYTES. */
  private printf(name: string, args: unknown[]): unknown {
    const format = textOf(args[0]);
    let bound = BigInt(Buffer.byteLength(format, "utf8"));
    for (const arg of args.slice(1)) bound += 2n * BigInt(textBytes(arg));
    bound += printfGrowth(format, (index) => this.int64(args[index] ?? null));
    if (bound > BigInt(MAX_VALUE_BYTES)) throw valueTooLarge(name, bound);
    return this.builtin(`SELECT printf(${args.map(() => "?").join(", ")})`, args)[0];
  }

  /** One row of SQL on the plain connection (SQLite's built-in functions), raw, integers as BigInt. */
  private builtin(sql: string, params: readonly unknown[] | Record<string, unknown>): unknown[] {
    let stmt = this.builtinStatements.get(sql);
    if (!stmt) {
      this.builtins ??= new Database(":memory:");
      stmt = this.builtins.prepare(sql).raw(true).safeIntegers(true) as Statement;
      if (this.builtinStatements.size >= 256) this.builtinStatements.delete(this.builtinStatements.keys().next().value as string);
      this.builtinStatements.set(sql, stmt);
    }
    return (Array.isArray(params) ? stmt.get(...params) : stmt.get(params)) as unknown[];
  }

  private nowIso(): string {
    const ms = typeof this.clock === "function" ? this.clock() : this.clock.now();
    return isoFromEpochMs(ms);
  }

  private dateFunction(name: string, args: unknown[]): unknown {
    const timeArgStart = name === "strftime" ? 1 : 0;
    const mapped = args.map((a, i) => {
      if (typeof a !== "string") return a;
      const lower = a.trim().toLowerCase();
      if (i > timeArgStart && (lower === "localtime" || lower === "utc")) {
        throw new SandboxError(
          "sql_error",
          `SQL error: the '${lower}' modifier is not available in the sandbox (it depends on the host time zone)`,
        );
      }
      return i >= timeArgStart && a.toLowerCase() === "now" ? this.nowIso() : a;
    });
    if (mapped.length === timeArgStart && name !== "timediff") mapped.push(this.nowIso());
    return this.builtin(`SELECT ${name}(${mapped.map(() => "?").join(", ")})`, mapped)[0];
  }
}

/** A table read for dumps and diffs, with raw values. */
export interface RawTable {
  columns: string[];
  key: string[];
  rows: Record<string, unknown>[];
}

// ----- dump and diff ---------------------------------------------------------------------------------

/** Which tables and columns a dump or diff leaves out. */
export interface DiffOptions {
  /** Tables to leave out entirely. */
  ignoreTables?: readonly string[];
  /**
   * Columns to leave out, by table; the key "*" applies to every table. Key columns are never left out
   * (they identify rows).
   */
  ignoreColumns?: Readonly<Record<string, readonly string[]>>;
}

export interface RowChange {
  /** The primary-key values identifying the row. */
  key: Record<string, SqlValue>;
  before: Row;
  after: Row;
  /** The columns whose values differ. */
  columns: string[];
}

export interface TableDiff {
  added: Row[];
  removed: Row[];
  changed: RowChange[];
}

export interface DatabaseDiff {
  /** Every table on either side (minus ignored ones), sorted by name; unchanged tables have empty lists. */
  tables: Record<string, TableDiff>;
  addedTables: string[];
  removedTables: string[];
  /** True when no table was added or removed and no row differs. */
  equal: boolean;
  /** Rows present and identical on both sides. */
  matched: number;
  /** matched + added + removed + changed: for partial-credit scores. */
  total: number;
}

type DbSource = SqlDatabase | JsonValue;

/** Every (non-ignored) table's rows, sorted by primary key: canonical, JSON-safe. */
export function dumpDatabase(source: DbSource, options: DiffOptions = {}): Record<string, Row[]> {
  return withDatabase(source, (db) => {
    const out: Record<string, Row[]> = {};
    for (const table of db.tables()) {
      if (options.ignoreTables?.includes(table)) continue;
      const raw = db.readTable(table);
      const ignored = ignoredColumns(options, table, raw.key);
      out[table] = sortRows(raw.rows, raw.key).map((r) => toJsonRow(r, ignored));
    }
    return out;
  });
}

/**
 * Row-level difference between two databases (live or snapshots). Rows are matched by primary key (the
 * rowid for tables without one); when the two sides declare different keys the after side's key is used.
 * Added and removed tables count all their rows as added / removed.
 */
export function diffDatabases(before: DbSource, after: DbSource, options: DiffOptions = {}): DatabaseDiff {
  return withDatabase(before, (b) =>
    withDatabase(after, (a) => {
      const bTables = new Set(b.tables().filter((t) => !options.ignoreTables?.includes(t)));
      const aTables = new Set(a.tables().filter((t) => !options.ignoreTables?.includes(t)));
      const all = [...new Set([...bTables, ...aTables])].sort(compareStrings);
      const result: DatabaseDiff = {
        tables: {},
        addedTables: all.filter((t) => !bTables.has(t)),
        removedTables: all.filter((t) => !aTables.has(t)),
        equal: true,
        matched: 0,
        total: 0,
      };
      for (const table of all) {
        const bRaw = bTables.has(table) ? b.readTable(table) : null;
        const aRaw = aTables.has(table) ? a.readTable(table) : null;
        const { diff, matched } = diffTable(bRaw, aRaw, options, table);
        result.tables[table] = diff;
        result.matched += matched;
        result.total += matched + diff.added.length + diff.removed.length + diff.changed.length;
      }
      result.equal =
        result.addedTables.length === 0 && result.removedTables.length === 0 && result.matched === result.total;
      return result;
    }),
  );
}

function diffTable(
  before: RawTable | null,
  after: RawTable | null,
  options: DiffOptions,
  table: string,
): { diff: TableDiff; matched: number } {
  const key = (after ?? before)!.key;
  const ignored = ignoredColumns(options, table, key);
  const columns = [...new Set([...(after?.columns ?? []), ...(before?.columns ?? [])])].filter((c) => !ignored.has(c));
  const group = (t: RawTable | null): Map<string, Record<string, unknown>[]> => {
    const m = new Map<string, Record<string, unknown>[]>();
    for (const row of t?.rows ?? []) {
      const k = keyString(row, key, columns);
      const list = m.get(k);
      if (list) list.push(row);
      else m.set(k, [row]);
    }
    return m;
  };
  const bGroups = group(before);
  const aGroups = group(after);
  const added: Record<string, unknown>[] = [];
  const removed: Record<string, unknown>[] = [];
  const changed: { b: Record<string, unknown>; a: Record<string, unknown>; columns: string[] }[] = [];
  let matched = 0;
  for (const k of new Set([...bGroups.keys(), ...aGroups.keys()])) {
    const bRows = bGroups.get(k) ?? [];
    const aRows = aGroups.get(k) ?? [];
    if (bRows.length === 1 && aRows.length === 1) {
      const diffCols = columns.filter((c) => encodeValue(bRows[0][c]) !== encodeValue(aRows[0][c]));
      if (diffCols.length === 0) matched++;
      else changed.push({ b: bRows[0], a: aRows[0], columns: diffCols });
      continue;
    }
    // Several rows share a key (NULL keys, or no usable key): compare them as multisets of whole rows.
    const remaining = new Map<string, number>();
    for (const r of bRows) {
      const e = rowString(r, columns);
      remaining.set(e, (remaining.get(e) ?? 0) + 1);
    }
    for (const r of aRows) {
      const e = rowString(r, columns);
      const n = remaining.get(e) ?? 0;
      if (n > 0) {
        remaining.set(e, n - 1);
        matched++;
      } else added.push(r);
    }
    for (const r of bRows) {
      const e = rowString(r, columns);
      const n = remaining.get(e) ?? 0;
      if (n > 0) {
        remaining.set(e, n - 1);
        removed.push(r);
      }
    }
  }
  const omit = new Set([...(before?.columns ?? []), ...(after?.columns ?? [])].filter((c) => ignored.has(c)));
  const byKey = (x: Record<string, unknown>, y: Record<string, unknown>): number =>
    compareRows(x, y, key) || compareStrings(rowString(x, columns), rowString(y, columns));
  changed.sort((x, y) => byKey(x.a, y.a));
  return {
    diff: {
      added: added.sort(byKey).map((r) => toJsonRow(r, omit)),
      removed: removed.sort(byKey).map((r) => toJsonRow(r, omit)),
      changed: changed.map((c) => ({
        key: Object.fromEntries(key.map((col) => [col, toSqlValue(c.a[col])])),
        before: toJsonRow(c.b, omit),
        after: toJsonRow(c.a, omit),
        columns: c.columns,
      })),
    },
    matched,
  };
}

function withDatabase<T>(source: DbSource, fn: (db: SqlDatabase) => T): T {
  if (source instanceof SqlDatabase) return fn(source);
  const db = SqlDatabase.fromSnapshot(source ?? null);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function ignoredColumns(options: DiffOptions, table: string, key: readonly string[]): Set<string> {
  const cols = [...(options.ignoreColumns?.["*"] ?? []), ...(options.ignoreColumns?.[table] ?? [])];
  return new Set(cols.filter((c) => !key.includes(c)));
}

function keyString(row: Record<string, unknown>, key: readonly string[], columns: readonly string[]): string {
  return key.length > 0 ? key.map((c) => encodeValue(row[c])).join("\u0000") : rowString(row, columns);
}

function rowString(row: Record<string, unknown>, columns: readonly string[]): string {
  return columns.map((c) => encodeValue(row[c])).join("\u0000");
}

/** A typed encoding for equality: INTEGER 1 and REAL 1.0 are equal, as in SQLite; text never equals a number. */
function encodeValue(v: unknown): string {
  if (v === undefined) return "u";
  if (v === null) return "n";
  if (typeof v === "bigint") return `#${v}`;
  if (typeof v === "number") {
    if (Number.isInteger(v) && Number.isFinite(v)) return `#${BigInt(v)}`;
    return `#${v}`;
  }
  if (typeof v === "string") return `s${JSON.stringify(v)}`;
  if (v instanceof Uint8Array) return `b${Buffer.from(v).toString("base64")}`;
  return `?${String(v)}`;
}

function sortRows(rows: Record<string, unknown>[], key: readonly string[]): Record<string, unknown>[] {
  const columns = rows.length > 0 ? Object.keys(rows[0]) : [];
  return [...rows].sort((x, y) => compareRows(x, y, key) || compareStrings(rowString(x, columns), rowString(y, columns)));
}

function compareRows(x: Record<string, unknown>, y: Record<string, unknown>, key: readonly string[]): number {
  for (const c of key) {
    const d = compareValues(x[c], y[c]);
    if (d !== 0) return d;
  }
  return 0;
}

/** SQLite's order: NULL < numbers < text (binary, UTF-8) < blobs. */
function compareValues(x: unknown, y: unknown): number {
  const rank = (v: unknown): number =>
    v === undefined ? -1 : v === null ? 0 : typeof v === "number" || typeof v === "bigint" ? 1 : typeof v === "string" ? 2 : 3;
  const rx = rank(x);
  const ry = rank(y);
  if (rx !== ry) return rx - ry;
  if (rx === 1) {
    const a = x as number | bigint;
    const b = y as number | bigint;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (rx === 2) return Buffer.compare(Buffer.from(x as string, "utf8"), Buffer.from(y as string, "utf8"));
  if (rx === 3) return Buffer.compare(Buffer.from(x as Uint8Array), Buffer.from(y as Uint8Array));
  return 0;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ----- value conversion ------------------------------------------------------------------------------

const MIN_SAFE_BIGINT = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE_BIGINT = BigInt(Number.MAX_SAFE_INTEGER);

/** A raw SQLite value as JSON: blobs {"$blob"}, unsafe integers as decimal strings, infinities {"$real"}. */
export function toSqlValue(v: unknown): SqlValue {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return v >= MIN_SAFE_BIGINT && v <= MAX_SAFE_BIGINT ? Number(v) : v.toString();
  if (typeof v === "number") {
    if (Number.isFinite(v)) return Object.is(v, -0) ? 0 : v;
    return { $real: v > 0 ? "Infinity" : "-Infinity" };
  }
  if (typeof v === "string") return v;
  if (v instanceof Uint8Array) return { $blob: Buffer.from(v).toString("base64") };
  return String(v);
}

function toJsonRow(row: Record<string, unknown>, omit?: ReadonlySet<string>): Row {
  const out: Row = {};
  // Rows are plain objects built by better-sqlite3: for-in sees exactly their own columns.
  for (const k in row) if (!omit?.has(k)) out[k] = toSqlValue(row[k]);
  return out;
}

/** Bind values: booleans become 1/0, {"$blob": base64} and Uint8Array become blobs. */
function toBindValue(v: unknown): unknown {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (v instanceof Uint8Array) return Buffer.isBuffer(v) ? v : Buffer.from(v);
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    const keys = Object.keys(v);
    const blob = (v as { $blob?: unknown }).$blob;
    if (keys.length === 1 && typeof blob === "string") return Buffer.from(blob, "base64");
  }
  return v;
}

function bindArgs(params: SqlParams | undefined): unknown[] {
  if (params === undefined) return [];
  if (Array.isArray(params)) return params.map(toBindValue);
  if (params !== null && typeof params === "object") {
    return [Object.fromEntries(Object.entries(params).map(([k, v]) => [k, toBindValue(v)]))];
  }
  throw new SandboxError("sql_error", "SQL error: parameters must be an array or an object");
}

function toBuffer(bytes: Uint8Array): Buffer {
  if (!(bytes instanceof Uint8Array)) throw new ValidationError("invalid_snapshot", "database bytes must be a Buffer or Uint8Array");
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// ----- errors ----------------------------------------------------------------------------------------

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The first few words of a statement, for messages. */
export function statementHead(sql: string, words = 3): string {
  const tokens = tokenize(sql);
  const head = tokens.slice(0, words).map((t) => t.text);
  let text = head.join(" ");
  if (text.length > 60) text = `${text.slice(0, 60)}…`;
  else if (tokens.length > words) text += " …";
  return text;
}

function readOnlyError(sql: string): SandboxError {
  const head = statementHead(sql);
  return new SandboxError("read_only", `write refused: this tool has read-only access to the database (${head})`, {
    statement: head,
  });
}

function sqlError(error: unknown, sql: string): LlmixError {
  if (error instanceof LlmixError) return error;
  const code = (error as { code?: unknown })?.code;
  if (code === "SQLITE_READONLY") return readOnlyError(sql);
  if (code === "SQLITE_FULL") {
    return new SandboxError("size_limit", "SQL error: the database is full: it reached its size limit (maxBytes)", {
      limit: "maxBytes",
      sqlite_code: code,
    });
  }
  const details: Record<string, unknown> = {};
  if (typeof code === "string") details.sqlite_code = code;
  return new SandboxError("sql_error", `SQL error: ${messageOf(error)}`, details);
}

// ----- snapshot validation ---------------------------------------------------------------------------

/** The bytes and RNG of a snapshot, validated. */
function decodeSnapshot(snapshot: JsonValue): { bytes: Buffer; rng: Rng | null } {
  if (snapshot === null || typeof snapshot !== "object" || Array.isArray(snapshot)) {
    throw new ValidationError("invalid_snapshot", "a database snapshot must be an object {format: \"sqlite\", bytes}");
  }
  if (snapshot.format !== "sqlite") {
    throw new ValidationError("invalid_snapshot", `database snapshot format must be "sqlite", got ${JSON.stringify(snapshot.format ?? null)}`);
  }
  const text = snapshot.bytes;
  const bytes = typeof text === "string" && text.length % 4 === 0 ? Buffer.from(text, "base64") : null;
  // Re-encoding is a native-speed check that the string was canonical base64 (Buffer skips bad characters).
  if (!bytes || bytes.toString("base64") !== text) {
    throw new ValidationError("invalid_snapshot", "database snapshot bytes must be a base64 string");
  }
  let rng: Rng | null = null;
  if (snapshot.random !== undefined) {
    try {
      rng = Rng.fromState(snapshot.random as unknown as RngState);
    } catch (error) {
      throw new ValidationError("invalid_snapshot", `database snapshot random state is invalid: ${messageOf(error)}`);
    }
  }
  return { bytes, rng };
}

/** Cheap structural checks before SQLite sees the bytes: size, header, page size, whole pages. */
function checkDatabaseBytes(bytes: Buffer, maxBytes: number): void {
  if (bytes.length > maxBytes) {
    throw new ValidationError("invalid_snapshot", `database of ${bytes.length} bytes refused: the limit is ${maxBytes} (maxBytes)`, {
      limit: "maxBytes",
      max: maxBytes,
      size: bytes.length,
    });
  }
  if (bytes.length === 0) return; // the empty database
  const bad = (why: string): never => {
    throw new ValidationError("invalid_snapshot", `snapshot bytes are not a SQLite database: ${why}`);
  };
  if (bytes.length < 100 || SQLITE_HEADER.compare(bytes, 0, 16) !== 0) bad("missing SQLite header");
  const raw = bytes.readUInt16BE(16);
  const pageSize = raw === 1 ? 65536 : raw;
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) bad(`invalid page size ${raw}`);
  if (bytes.length % pageSize !== 0) bad(`length ${bytes.length} is not a whole number of ${pageSize}-byte pages`);
}

// ----- restore checks --------------------------------------------------------------------------------

const FILE_FORMAT_SQL = "SELECT page_size, encoding FROM pragma_page_size, pragma_encoding";
const SCHEMA_OBJECTS_SQL = 'SELECT type, name, tbl_name AS "table", sql, rootpage FROM main.sqlite_schema ORDER BY type, name';
const COLUMNS_SQL = 'SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?, \'main\')';

/** The file format and schema objects of a handle, with every table's columns. */
function readSchemaOf(db: Handle): DatabaseSchema {
  const rows = db.prepare(SCHEMA_OBJECTS_SQL).all() as Array<SchemaObject & { rootpage: number }>;
  const objects = rows.map(({ type, name, table, sql }) => ({ type, name, table, sql }));
  const columns: Record<string, SchemaColumn[]> = {};
  for (const o of objects) if (o.type === "table") columns[o.name] = readColumns(db, o.name);
  return { ...readFileFormat(db), objects, columns };
}

function readFileFormat(db: Handle): { pageSize: number; encoding: string } {
  const row = db.prepare(FILE_FORMAT_SQL).raw(true).get() as [number, string];
  return { pageSize: row[0], encoding: row[1] };
}

function readColumns(db: Handle, table: string): SchemaColumn[] {
  const rows = db.prepare(COLUMNS_SQL).all(table) as Array<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number; hidden: number }>;
  return rows.map((r) => ({ name: r.name, type: r.type, notNull: r.notnull === 1, default: r.dflt_value, pk: r.pk, hidden: r.hidden }));
}

/** The page size and text encoding in a database file's header, or null for the empty database. */
function fileFormat(bytes: Buffer): { pageSize: number; encoding: string } | null {
  if (bytes.length < 100) return null;
  const raw = bytes.readUInt16BE(16);
  return { pageSize: raw === 1 ? 65536 : raw, encoding: ["UTF-8", "UTF-16le", "UTF-16be"][bytes.readUInt32BE(56) - 1] ?? "unknown" };
}

/** Whether a format and `sqlite_schema` rows (type, name, table, sql, ...) are the expected ones (columns follow from the SQL). */
function sameSchema(format: { pageSize: number; encoding: string }, rows: ReadonlyArray<readonly unknown[]>, expected: DatabaseSchema): boolean {
  if (format.pageSize !== expected.pageSize || format.encoding !== expected.encoding || rows.length !== expected.objects.length) return false;
  return expected.objects.every((o, i) => {
    const row = rows[i]!;
    return row[0] === o.type && row[1] === o.name && row[2] === o.table && row[3] === o.sql;
  });
}

/**
 * Refuse (invalid_snapshot) a database whose file format or schema objects differ from `expected`, that
 * fails `PRAGMA integrity_check`, or (with `strictTypes`) that holds a value its column's type does not admit.
 * The schema comes first: the integrity check evaluates CHECK constraints and index expressions, which
 * must be the environment's own by then.
 */
function verifyDatabase(db: Handle, bytes: Buffer, expected: DatabaseSchema, strictTypes: boolean): void {
  const format = fileFormat(bytes) ?? readFileFormat(db);
  const rows = db.prepare(SCHEMA_OBJECTS_SQL).raw(true).all() as Array<[string, string, string, string | null, number]>;
  if (!sameSchema(format, rows, expected)) {
    const found = rows.map(([type, name, table, sql]) => ({ type, name, table, sql }));
    const differences = schemaDifferences(db, format, found, expected);
    throw new ValidationError("invalid_snapshot", `database schema differs from the expected one: ${differences.join("; ")}`, { differences });
  }
  const integrity = db.prepare("PRAGMA integrity_check(1)").pluck().get();
  if (integrity !== "ok") throw new ValidationError("invalid_snapshot", `database fails its integrity check: ${String(integrity)}`);
  if (!strictTypes) return;
  const file = new DatabaseFile(bytes);
  for (const [type, name, , , rootPage] of rows) {
    if (type === "table" && rootPage > 0) checkStorageClasses(db, file, name, rootPage, expected.columns[name] ?? []);
  }
}

/** Every difference between a database's format and objects and the expected ones, in words. */
function schemaDifferences(db: Handle, format: { pageSize: number; encoding: string }, found: SchemaObject[], expected: DatabaseSchema): string[] {
  const out: string[] = [];
  if (format.pageSize !== expected.pageSize) out.push(`page size ${format.pageSize}, expected ${expected.pageSize}`);
  if (format.encoding !== expected.encoding) out.push(`text encoding ${format.encoding}, expected ${expected.encoding}`);
  const remaining = new Map(found.map((o) => [`${o.type} ${o.name}`, o]));
  for (const want of expected.objects) {
    const got = remaining.get(`${want.type} ${want.name}`);
    if (got) {
      remaining.delete(`${got.type} ${got.name}`);
      if (got.table !== want.table || got.sql !== want.sql) out.push(...definitionDifferences(db, want, got, expected));
      continue;
    }
    const other = [...remaining.values()].find((o) => o.name === want.name);
    if (other) remaining.delete(`${other.type} ${other.name}`);
    out.push(other ? `${want.name} is a ${other.type}, expected a ${want.type}` : `missing ${want.type} ${want.name}`);
  }
  for (const got of remaining.values()) out.push(`unexpected ${got.type} ${got.name}`);
  return out;
}

/** How an object of the expected type and name differs from the expected definition. */
function definitionDifferences(db: Handle, want: SchemaObject, got: SchemaObject, expected: DatabaseSchema): string[] {
  if (got.table !== want.table) return [`${want.type} ${want.name} is on table ${got.table}, expected ${want.table}`];
  const columns = want.type === "table" ? columnDifferences(want.name, expected.columns[want.name] ?? [], readColumns(db, want.name)) : [];
  if (columns.length > 0) return columns;
  return [`${want.type} ${want.name} has the definition ${clip(got.sql)}, expected ${clip(want.sql)}`];
}

function columnDifferences(table: string, expected: readonly SchemaColumn[], found: readonly SchemaColumn[]): string[] {
  const out: string[] = [];
  const byName = new Map(found.map((c) => [c.name, c]));
  const describe = (c: SchemaColumn, field: "type" | "notNull" | "default" | "pk" | "hidden"): string =>
    ({
      type: `type ${c.type || "(none)"}`,
      notNull: c.notNull ? "NOT NULL" : "nullable",
      default: `default ${c.default ?? "(none)"}`,
      pk: c.pk === 0 ? "not in the primary key" : `primary key column ${c.pk}`,
      hidden: ["stored", "hidden", "generated (virtual)", "generated (stored)"][c.hidden] ?? `hidden ${c.hidden}`,
    })[field];
  for (const want of expected) {
    const got = byName.get(want.name);
    if (!got) {
      out.push(`table ${table}: missing column ${want.name}`);
      continue;
    }
    byName.delete(want.name);
    for (const field of ["type", "notNull", "default", "pk", "hidden"] as const) {
      if (got[field] !== want[field]) out.push(`table ${table}: column ${want.name} has ${describe(got, field)}, expected ${describe(want, field)}`);
    }
  }
  for (const got of byName.values()) out.push(`table ${table}: unexpected column ${got.name}`);
  if (out.length === 0 && found.some((c, i) => c.name !== expected[i]?.name)) out.push(`table ${table}: columns in another order`);
  return out;
}

function clip(sql: string | null, n = 160): string {
  if (sql === null) return "(none)";
  const flat = sql.replace(/\s+/g, " ");
  return JSON.stringify(flat.length > n ? `${flat.slice(0, n - 1)}…` : flat);
}

/** The storage classes a declared type admits in a STRICT table (SQLite's affinity rules); null: any. */
function admittedClasses(declared: string): readonly string[] | null {
  const type = declared.toUpperCase();
  if (type.includes("INT")) return ["integer"];
  if (type.includes("CHAR") || type.includes("CLOB") || type.includes("TEXT")) return ["text"];
  if (type === "" || type.includes("BLOB")) return null;
  if (type.includes("REAL") || type.includes("FLOA") || type.includes("DOUB")) return ["real"];
  return ["integer", "real"];
}

/**
 * Refuse a table holding a value whose storage class its column's declared type does not admit. The classes
 * are read from the record headers in the database file (SQLite's file format), one pass over the table's
 * b-tree with no SQL to compile, which per restore costs more than the pass itself. Runs after the integrity
 * check, so the b-tree is well formed; a page that is not is refused all the same. WITHOUT ROWID tables
 * (index b-trees) are checked with SQL instead.
 */
function checkStorageClasses(db: Handle, file: DatabaseFile, table: string, rootPage: number, columns: readonly SchemaColumn[]): void {
  const stored = columns.filter((c) => c.hidden !== 1 && c.hidden !== 2);
  if (stored.every((c) => admittedClasses(c.type) === null)) return;
  if (!file.isTablePage(rootPage)) {
    checkStorageClassesWithSql(db, table, stored);
    return;
  }
  const found = file.findMistyped(rootPage, stored.map((c) => admittedMask(c.type)));
  if (found) throw mistyped(table, stored[found.field]!, STORAGE_CLASSES[found.classIndex]!, `row ${found.rowid}`);
}

function checkStorageClassesWithSql(db: Handle, table: string, columns: readonly SchemaColumn[]): void {
  for (const column of columns) {
    const admitted = admittedClasses(column.type);
    if (admitted === null) continue;
    const sql = `SELECT typeof(${quoteIdent(column.name)}) FROM main.${quoteIdent(table)} WHERE typeof(${quoteIdent(column.name)}) NOT IN (${[...admitted, "null"].map((c) => `'${c}'`).join(", ")}) LIMIT 1`;
    const found = db.prepare(sql).pluck().get();
    if (found !== undefined) throw mistyped(table, column, String(found), "a row");
  }
}

function mistyped(table: string, column: SchemaColumn, found: string, where: string): ValidationError {
  return new ValidationError(
    "invalid_snapshot",
    `table ${table}: column ${column.name} holds a ${found} value in ${where}, but its type ${column.type} admits ${admittedClasses(column.type)!.join(" or ")} (strictTypes)`,
    { table, column: column.name },
  );
}

/** Storage classes by index; a set of them is a bit mask (bit i: STORAGE_CLASSES[i]). */
const STORAGE_CLASSES = ["null", "integer", "real", "text", "blob", "reserved serial type"] as const;

/**
 * The storage classes a column admits on disk, as a mask: its declared type's, and NULL (NOT NULL is the
 * integrity check's business; a rowid alias, INTEGER PRIMARY KEY, is stored as NULL). A REAL column
 * stores whole values as integers, and reads them back as REAL.
 */
function admittedMask(declared: string): number {
  const admitted = admittedClasses(declared);
  if (admitted === null) return 0b11111;
  let mask = 1;
  for (const c of admitted) mask |= 1 << (STORAGE_CLASSES as readonly string[]).indexOf(c);
  return admitted.includes("real") ? mask | 0b10 : mask;
}

/** The index in STORAGE_CLASSES of a record field's serial type (SQLite file format, "Record Format"). */
function serialTypeClass(serialType: number): number {
  if (serialType === 0) return 0;
  if (serialType <= 6 || serialType === 8 || serialType === 9) return 1;
  if (serialType === 7) return 2;
  if (serialType >= 12) return serialType % 2 === 0 ? 4 : 3;
  return 5; // 10 and 11 are reserved
}

/**
 * Read-only access to the table b-trees of a serialized database (SQLite file format §1.6): enough to
 * check the storage class of every field of every row. Throws invalid_snapshot on anything malformed.
 */
class DatabaseFile {
  private readonly pageSize: number;
  private readonly usable: number;
  /** Where the last `varint` read ended. */
  private next = 0;

  constructor(private readonly bytes: Buffer) {
    const raw = bytes.readUInt16BE(16);
    this.pageSize = raw === 1 ? 65536 : raw;
    this.usable = this.pageSize - bytes[20]!;
  }

  /** Whether a page is a table b-tree page (interior 0x05 or leaf 0x0d), not an index one. */
  isTablePage(page: number): boolean {
    const type = this.bytes[this.headerOffset(page)];
    return type === 0x05 || type === 0x0d;
  }

  /** The first row, in rowid order, of the table rooted at `root` with a field whose class `masks` does not admit. */
  findMistyped(root: number, masks: readonly number[]): { rowid: number; field: number; classIndex: number } | null {
    const pending = [root];
    const seen = new Set<number>();
    while (pending.length > 0) {
      const page = pending.pop()!;
      if (seen.has(page)) throw malformed(`page ${page} is reached twice`);
      seen.add(page);
      const header = this.headerOffset(page);
      const type = this.bytes[header];
      if (type !== 0x05 && type !== 0x0d) throw malformed(`page ${page} is not a table b-tree page`);
      const start = (page - 1) * this.pageSize;
      const count = this.bytes.readUInt16BE(header + 3);
      const pointers = header + (type === 0x05 ? 12 : 8);
      if (type === 0x05) {
        // Children right to left on a stack: rows come out in rowid order.
        pending.push(this.bytes.readUInt32BE(header + 8));
        for (let i = count - 1; i >= 0; i--) pending.push(this.bytes.readUInt32BE(start + this.bytes.readUInt16BE(pointers + 2 * i)));
        continue;
      }
      for (let i = 0; i < count; i++) {
        const found = this.findMistypedField(start + this.bytes.readUInt16BE(pointers + 2 * i), masks);
        if (found) return found;
      }
    }
    return null;
  }

  /** The first field of a leaf cell's record that its mask does not admit, with the cell's rowid. */
  private findMistypedField(cell: number, masks: readonly number[]): { rowid: number; field: number; classIndex: number } | null {
    const payloadSize = this.varint(this.bytes, cell);
    const rowid = this.varint(this.bytes, this.next);
    const payloadStart = this.next;
    const local = this.localSize(payloadSize);
    if (payloadStart + local > this.bytes.length) throw malformed("a cell runs past the end of the file");
    let record = this.bytes;
    let at = payloadStart;
    const headerSize = this.varint(record, at);
    if (headerSize > local) {
      // The record header reaches into overflow pages (a table of many columns, small pages).
      record = this.payload(payloadStart, payloadSize, local);
      at = 0;
      this.varint(record, at);
    }
    const end = at + headerSize;
    for (let field = 0, p = this.next; p < end; field++) {
      const classIndex = serialTypeClass(this.varint(record, p));
      p = this.next;
      if ((((masks[field] ?? 0b11111) >> classIndex) & 1) === 0) return { rowid, field, classIndex };
    }
    return null;
  }

  /** How much of a payload of `size` bytes a table leaf cell holds itself (the rest is in overflow pages). */
  private localSize(size: number): number {
    const maxLocal = this.usable - 35;
    const minLocal = Math.floor(((this.usable - 12) * 32) / 255) - 23;
    const spill = minLocal + ((size - minLocal) % (this.usable - 4));
    return size <= maxLocal ? size : spill <= maxLocal ? spill : minLocal;
  }

  /** A whole payload: its local part and its overflow pages. */
  private payload(start: number, size: number, local: number): Buffer {
    const parts = [this.bytes.subarray(start, start + local)];
    let remaining = size - local;
    let overflow = this.bytes.readUInt32BE(start + local);
    const seen = new Set<number>();
    while (remaining > 0) {
      const at = (overflow - 1) * this.pageSize;
      if (overflow < 1 || at + this.pageSize > this.bytes.length || seen.has(overflow)) throw malformed(`overflow page ${overflow} is out of range or reached twice`);
      seen.add(overflow);
      const take = Math.min(remaining, this.usable - 4);
      parts.push(this.bytes.subarray(at + 4, at + 4 + take));
      remaining -= take;
      overflow = this.bytes.readUInt32BE(at);
    }
    return Buffer.concat(parts);
  }

  private headerOffset(page: number): number {
    if (!Number.isInteger(page) || page < 1 || page * this.pageSize > this.bytes.length) throw malformed(`page ${page} is out of range`);
    return (page - 1) * this.pageSize + (page === 1 ? 100 : 0);
  }

  /** A SQLite varint (1-9 bytes, big-endian) at `offset` as a number; `next` is set to the offset after it. */
  private varint(bytes: Buffer, offset: number): number {
    let value = 0;
    for (let i = 0; i < 9; i++) {
      const byte = bytes[offset + i];
      if (byte === undefined) throw malformed("a varint runs past the end of its buffer");
      if (i === 8) {
        this.next = offset + 9;
        return value * 256 + byte;
      }
      value = value * 128 + (byte & 0x7f);
      if (byte < 0x80) {
        this.next = offset + i + 1;
        return value;
      }
    }
    return value;
  }
}

function malformed(why: string): ValidationError {
  return new ValidationError("invalid_snapshot", `database file is malformed: ${why}`);
}

// ----- bounded functions -----------------------------------------------------------------------------

/**
 * SQL for `hex` and `replace` on the plain connection: the result when its size fits MAX_VALUE_BYTES, and
 * the size, computed without building the result (replace's from the occurrences it removes).
 */
const SIZED_BUILTINS = {
  hex: `SELECT CASE WHEN size <= ${MAX_VALUE_BYTES} THEN hex(@x) END, size FROM (SELECT 2 * coalesce(octet_length(@x), 0) AS size)`,
  replace: `SELECT CASE WHEN coalesce(size, 0) <= ${MAX_VALUE_BYTES} THEN replace(@x, @y, @z) END, size FROM (SELECT
    octet_length(@x) + (octet_length(@x) - octet_length(replace(@x, @y, ''))) / octet_length(@y) * (octet_length(@z) - octet_length(@y)) AS size)`,
} as const;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** A REAL as SQLite turns it into an integer: truncated, clamped to the 64-bit range. */
function doubleToInt64(value: number): bigint {
  if (Number.isNaN(value)) return 0n;
  if (value <= -9223372036854775808) return INT64_MIN;
  if (value >= 9223372036854775807) return INT64_MAX;
  return BigInt(Math.trunc(value));
}

/** A requested blob size raised to `min`, or size_limit when it exceeds MAX_VALUE_BYTES. */
function boundedSize(fn: string, requested: bigint, min: number): number {
  const size = requested < BigInt(min) ? BigInt(min) : requested;
  if (size > BigInt(MAX_VALUE_BYTES)) throw valueTooLarge(fn, size);
  return Number(size);
}

function valueTooLarge(fn: string, size: bigint): SandboxError {
  return new SandboxError("size_limit", `SQL error: ${fn}() could make a value of ${size} bytes; the sandbox allows ${MAX_VALUE_BYTES} (MAX_VALUE_BYTES)`, {
    limit: "MAX_VALUE_BYTES",
    max: MAX_VALUE_BYTES,
    function: fn,
  });
}

/** A function argument's text as SQLite's printf reads a format (blobs as UTF-8; numbers hold no `%`). */
function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  return value instanceof Uint8Array ? Buffer.from(value).toString("utf8") : "";
}

/** An upper bound of a value's length as text, in bytes. */
function textBytes(value: unknown): number {
  if (typeof value === "string") return Buffer.byteLength(value, "utf8");
  if (value instanceof Uint8Array) return value.byteLength;
  return value === null || value === undefined ? 0 : 32;
}

/** printf conversions that take an argument. `%%` and `%n` take none; any other letter ends SQLite's output. */
const PRINTF_CONVERSIONS = new Set("dsgzqQwcouxXfeEGipr");
const PRINTF_FLAGS = new Set("-+ #!0,");
/** The most one conversion writes beyond its width, precision and argument (the digits of a huge REAL). */
const PRINTF_CONVERSION_BYTES = 512n;

/**
 * What a printf format's conversions can add to the text of its arguments, parsed as SQLite parses it:
 * each conversion's width plus its precision (4 bytes per unit for %c, which repeats a character),
 * literal or read from a `*` argument with `intArg`, plus PRINTF_CONVERSION_BYTES.
 */
function printfGrowth(format: string, intArg: (index: number) => bigint): bigint {
  const abs = (n: bigint): bigint => (n < 0n ? -n : n);
  let growth = 0n;
  let arg = 1;
  let i = format.indexOf("%");
  while (i >= 0) {
    i++;
    while (PRINTF_FLAGS.has(format[i] ?? "")) i++;
    const sizes: bigint[] = [];
    for (const part of ["width", "precision"] as const) {
      if (part === "precision") {
        if (format[i] !== ".") break;
        i++;
      }
      if (format[i] === "*") {
        sizes.push(abs(intArg(arg++)));
        i++;
        continue;
      }
      const start = i;
      while (/[0-9]/.test(format[i] ?? "")) i++;
      sizes.push(i > start ? BigInt(format.slice(start, i)) : 0n);
    }
    if (format[i] === "l") i++;
    if (format[i] === "l") i++;
    const type = format[i] ?? "";
    if (type !== "%" && type !== "n") {
      if (!PRINTF_CONVERSIONS.has(type)) break;
      arg++;
    }
    const [width = 0n, precision = 0n] = sizes;
    growth += width + (type === "c" ? 4n : 1n) * precision + PRINTF_CONVERSION_BYTES;
    i = format.indexOf("%", i + 1);
  }
  return growth;
}

// ----- agent SQL limits ------------------------------------------------------------------------------

/** A non-negative integer limit of `query`'s options, or its default. */
function limitOption(options: SqlQueryOptions, name: keyof SqlQueryOptions, fallback: number): number {
  const value = options[name] ?? fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError("invalid_argument", `${name} must be a non-negative integer, got ${value}`);
  }
  return value;
}

/** The first rows that fit in `maxRows` rows and `maxResultBytes` bytes of values, and whether any were cut. */
function takeRows(source: Iterable<unknown[]>, maxRows: number, maxResultBytes: number): { rows: unknown[][]; truncated: boolean } {
  const rows: unknown[][] = [];
  let bytes = 0;
  for (const row of source) {
    for (const value of row) bytes += textBytes(value);
    // Leaving the loop early resets an iterated statement: nothing more is read.
    if (rows.length >= maxRows || bytes > maxResultBytes) return { rows, truncated: true };
    rows.push(row);
  }
  return { rows, truncated: false };
}

// ----- agent SQL checks ------------------------------------------------------------------------------

interface Token {
  kind: "word" | "quoted" | "string" | "number" | "param" | "punct";
  /** Source text (for words: as written; for quoted identifiers: the unquoted name). */
  text: string;
}

/**
 * A SQLite-like tokenizer that drops comments and keeps literals as opaque tokens. It never absorbs text
 * that SQLite would read as a keyword, so keyword checks on its words cannot be hidden by quoting tricks.
 */
function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  const n = sql.length;
  let i = 0;
  const isIdStart = (c: string): boolean => /[A-Za-z_]/.test(c) || c.charCodeAt(0) >= 0x80;
  const isIdChar = (c: string): boolean => /[A-Za-z0-9_$]/.test(c) || c.charCodeAt(0) >= 0x80;
  const quoted = (close: string, doubled: boolean): string => {
    let out = "";
    i++;
    while (i < n) {
      const c = sql[i];
      if (c === close) {
        if (doubled && sql[i + 1] === close) {
          out += close;
          i += 2;
          continue;
        }
        i++;
        return out;
      }
      out += c;
      i++;
    }
    return out; // unterminated: SQLite rejects the statement
  };
  while (i < n) {
    const c = sql[i];
    if (c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f") {
      i++;
    } else if (c === "-" && sql[i + 1] === "-") {
      while (i < n && sql[i] !== "\n") i++;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? n : end + 2;
    } else if (c === "'") {
      tokens.push({ kind: "string", text: `'${quoted("'", true)}'` });
    } else if (c === '"') {
      tokens.push({ kind: "quoted", text: quoted('"', true) });
    } else if (c === "`") {
      tokens.push({ kind: "quoted", text: quoted("`", true) });
    } else if (c === "[") {
      tokens.push({ kind: "quoted", text: quoted("]", false) });
    } else if ((c === ":" || c === "@" || c === "$" || c === "?") && i + 1 < n && isIdChar(sql[i + 1])) {
      const start = i++;
      while (i < n && isIdChar(sql[i])) i++;
      tokens.push({ kind: "param", text: sql.slice(start, i) });
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(sql[i + 1] ?? ""))) {
      const start = i++;
      while (i < n && /[0-9A-Za-z_.]/.test(sql[i])) i++;
      tokens.push({ kind: "number", text: sql.slice(start, i) });
    } else if (isIdStart(c)) {
      const start = i++;
      while (i < n && isIdChar(sql[i])) i++;
      tokens.push({ kind: "word", text: sql.slice(start, i) });
    } else {
      tokens.push({ kind: "punct", text: c });
      i++;
    }
  }
  return tokens;
}

/** INSERT / REPLACE, possibly after a WITH clause. */
function isInsert(sql: string): boolean {
  const words = tokenize(sql)
    .filter((t) => t.kind === "word")
    .map((t) => t.text.toLowerCase());
  if (words[0] === "insert" || words[0] === "replace") return true;
  return words[0] === "with" && words.includes("insert");
}

function forbidden(message: string, keyword: string): SandboxError {
  return new SandboxError("forbidden_statement", message, { keyword });
}

/** Refuse agent SQL that could reach outside the sandbox or break snapshots. */
function checkAgentSql(sql: string): void {
  const tokens = tokenize(sql);
  const lower = tokens.map((t) => (t.kind === "word" || t.kind === "quoted" ? t.text.toLowerCase() : ""));
  const first = tokens[0]?.kind === "word" ? lower[0] : "";
  if (TRANSACTION_KEYWORDS.has(first)) {
    throw forbidden(
      `${first.toUpperCase()} is not allowed: transaction control is not available, each call runs as its own transaction`,
      first.toUpperCase(),
    );
  }
  let sawVacuum = false;
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    const word = lower[k];
    if (t.kind === "word") {
      if (word === "attach" || word === "detach") {
        throw forbidden(`${word.toUpperCase()} is not allowed: it could open databases outside the sandbox`, word.toUpperCase());
      }
      if (word === "vacuum") sawVacuum = true;
      if (word === "into" && sawVacuum) {
        throw forbidden("VACUUM INTO is not allowed: it writes a file outside the sandbox", "VACUUM INTO");
      }
      if (word === "pragma") checkPragma(tokens, lower, k);
    }
    if (t.kind === "word" || t.kind === "quoted") {
      if (FORBIDDEN_FUNCTIONS.has(word)) {
        throw forbidden(`${word}() is not allowed: it could reach outside the sandbox`, word);
      }
      if (word.startsWith("pragma_") && !ALLOWED_PRAGMAS.includes(word.slice("pragma_".length))) {
        throw forbidden(
          `${word} is not allowed: only these pragmas are available: ${ALLOWED_PRAGMAS.join(", ")}`,
          word,
        );
      }
    }
  }
  if (first === "create") checkCreate(tokens, lower);
}

function checkPragma(tokens: Token[], lower: string[], at: number): void {
  let k = at + 1;
  let name = lower[k] ?? "";
  if (tokens[k + 1]?.text === "." && tokens[k + 1]?.kind === "punct") {
    k += 2;
    name = lower[k] ?? "";
  }
  if (!ALLOWED_PRAGMAS.includes(name)) {
    const shown = name === "" ? "PRAGMA" : `PRAGMA ${name}`;
    throw forbidden(`${shown} is not allowed: only these read-only pragmas are available: ${ALLOWED_PRAGMAS.join(", ")}`, shown);
  }
}

/** CREATE [TEMP|TEMPORARY] [UNIQUE|VIRTUAL] TABLE|VIEW|INDEX|TRIGGER [IF NOT EXISTS] [schema.]name */
function checkCreate(tokens: Token[], lower: string[]): void {
  const refuse = (): never => {
    throw forbidden("TEMP objects are not allowed: they are not part of the database snapshot", "TEMP");
  };
  let k = 1;
  if (lower[k] === "temp" || lower[k] === "temporary") refuse();
  if (lower[k] === "unique" || lower[k] === "virtual") k++;
  k++; // TABLE / VIEW / INDEX / TRIGGER
  if (lower[k] === "if" && lower[k + 1] === "not" && lower[k + 2] === "exists") k += 3;
  if (lower[k] === "temp" && tokens[k + 1]?.kind === "punct" && tokens[k + 1]?.text === ".") refuse();
}

// ----- time ------------------------------------------------------------------------------------------

/** "YYYY-MM-DD HH:MM:SS.SSS" (UTC) for epoch milliseconds, computed without the host's Date. */
export function isoFromEpochMs(ms: number): string {
  if (!Number.isFinite(ms)) throw new SandboxError("sql_error", `SQL error: the virtual clock returned ${ms}`);
  const text = formatUtc(ms, "sqlite");
  if (text === null) throw new SandboxError("sql_error", `SQL error: the virtual clock is out of range (${ms})`);
  return text;
}

/** Layouts of `formatUtc`: SQLite's "YYYY-MM-DD HH:MM:SS.SSS", ISO "YYYY-MM-DDTHH:MM:SSZ", or "YYYY-MM-DD". */
export type UtcLayout = "sqlite" | "iso-seconds" | "date";

const TWO_DIGITS: readonly string[] = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, "0"));

/**
 * UTC text of finite epoch milliseconds (rounded down) in the years 0-9999, null outside them (and for
 * NaN). The digits are those of `new Date(ms).toISOString()`; it is several times faster, which matters
 * to seeding and task generation (hundreds of timestamps per reset).
 */
export function formatUtc(ms: number, layout: UtcLayout): string | null {
  const t = Math.floor(ms);
  const days = Math.floor(t / 86_400_000);
  let rem = t - days * 86_400_000;
  const hh = Math.floor(rem / 3_600_000);
  rem -= hh * 3_600_000;
  const mi = Math.floor(rem / 60_000);
  rem -= mi * 60_000;
  const ss = Math.floor(rem / 1000);
  const mss = rem - ss * 1000;
  // civil_from_days (H. Hinnant)
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  if (!(y >= 0 && y <= 9999)) return null;
  const D = TWO_DIGITS;
  const date = `${D[Math.floor(y / 100)]}${D[y % 100]}-${D[m]}-${D[d]}`;
  if (layout === "date") return date;
  if (layout === "iso-seconds") return `${date}T${D[hh]}:${D[mi]}:${D[ss]}Z`;
  return `${date} ${D[hh]}:${D[mi]}:${D[ss]}.${Math.floor(mss / 100)}${D[mss % 100]}`;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * An environment's empty database, built once per thread from its DDL: `bytes()` to start every episode's
 * database from (`SqlDatabase.fromBytes`, no DDL run per episode), `schema()` for restores to check
 * against (`RestoreChecks.schema`). `pageSize` small keeps snapshots small: every table costs a page.
 */
export function databaseTemplate(ddl: string, pageSize = 512): { bytes(): Buffer; schema(): DatabaseSchema } {
  let bytes: Buffer | null = null;
  let schema: DatabaseSchema | null = null;
  const built = (): Buffer => {
    if (bytes === null) {
      const db = new SqlDatabase();
      try {
        db.exec(`PRAGMA page_size = ${pageSize};\n${ddl}`);
        bytes = db.serialize();
        schema = db.readSchema();
      } finally {
        db.close();
      }
    }
    return bytes;
  };
  return { bytes: built, schema: () => (built(), schema as DatabaseSchema) };
}
