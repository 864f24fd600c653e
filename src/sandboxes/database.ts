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
 * - Determinism: every handle is a deserialized ("memdb") database, so a fresh database and a restored one
 *   write identical bytes for identical operations. SQLite's own sources of nondeterminism are replaced on
 *   every handle: `random()` / `randomblob()` draw from a seeded `Rng` whose state is in the snapshot, and
 *   `'now'`, `CURRENT_TIMESTAMP`, `CURRENT_DATE`, `CURRENT_TIME` and the argument-less date functions read a
 *   virtual clock (the fixed `DEFAULT_EPOCH_MS` unless `setClock` is called). The host-time-zone
 *   modifiers `'localtime'` and `'utc'` are refused.
 * - Values leave the sandbox JSON-safe: BLOBs become `{"$blob": base64}`, integers outside the safe range
 *   become decimal strings, infinite REALs become `{"$real": "Infinity" | "-Infinity"}`.
 *
 * Not captured by snapshots: TEMP objects (agent SQL may not create them) and connection settings changed
 * with PRAGMA by the owner (a restored handle starts with better-sqlite3's defaults, e.g. foreign_keys=ON).
 */
import Database from "better-sqlite3";
import { DEFAULT_EPOCH_MS } from "../core/clock.js";
import { LlmixError, SandboxError, ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import { Rng, type RngState } from "../core/rng.js";
import type { AccessMode, Sandbox } from "./sandbox.js";

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
  /** Stop reading after this many rows (`truncated: true`); also ends runaway recursive queries. Default 10000. */
  maxRows?: number;
}

/** The JSON snapshot of a database. `random` is the state of the `random()` generator. */
export interface SqliteSnapshot {
  format: "sqlite";
  bytes: string;
  random?: RngState;
}

/** A column as dumps and diffs need it: its name and its position in the primary key (0: not in it). */
interface ColumnInfo {
  name: string;
  pk: number;
}

/** Anything that tells virtual time in epoch milliseconds (a `VirtualClock` fits). */
export type DbClock = { now(): number } | (() => number);

export interface SqlDatabaseOptions {
  /** Virtual time for `'now'` and `CURRENT_TIMESTAMP`. Default: the fixed `DEFAULT_EPOCH_MS`. */
  clock?: DbClock;
  /** Stream for SQL `random()` / `randomblob()`. Default: `Rng.fromKey("llmix/sqlite")`. */
  rng?: Rng;
  /** Start from these serialized bytes (a copy is used). Garbage fails with invalid_snapshot. Default: empty. */
  bytes?: Uint8Array;
}

const DEFAULT_MAX_ROWS = 10_000;
const MAX_RANDOMBLOB = 16 * 1024 * 1024;
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
  private clock: DbClock;
  private rng: Rng;
  /** A plain connection (no overrides) that evaluates SQLite's built-in date functions for the overrides. */
  private dateHelper: Handle | null = null;
  private readonly dateStatements = new Map<string, Statement>();
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
    this.db = this.openChecked(options.bytes ? toBuffer(options.bytes) : Buffer.alloc(0));
  }

  /** A database holding a copy of serialized bytes (from `serialize()`). Garbage fails with invalid_snapshot. */
  static fromBytes(bytes: Uint8Array, options: SqlDatabaseOptions = {}): SqlDatabase {
    return new SqlDatabase({ ...options, bytes });
  }

  /** A database restored from a `snapshot()`. */
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
   * control, TEMP objects. Writes under read access fail with read_only; SQLite errors with sql_error.
   */
  query(sql: string, params?: SqlParams, options: SqlQueryOptions = {}): SqlQueryResult {
    if (typeof sql !== "string") throw new SandboxError("sql_error", "SQL must be a string");
    const maxRows = options.maxRows ?? DEFAULT_MAX_ROWS;
    if (!Number.isSafeInteger(maxRows) || maxRows < 0) {
      throw new ValidationError("invalid_argument", `maxRows must be a non-negative integer, got ${maxRows}`);
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
      let rows: unknown[][];
      let truncated = false;
      if (!stmt.readonly) {
        // INSERT ... RETURNING and friends: run to completion so the write is whole, then cut the output.
        rows = stmt.all(...args) as unknown[][];
        if (rows.length > maxRows) {
          rows = rows.slice(0, maxRows);
          truncated = true;
        }
      } else {
        rows = [];
        for (const row of stmt.iterate(...args) as IterableIterator<unknown[]>) {
          if (rows.length >= maxRows) {
            truncated = true;
            break;
          }
          rows.push(row);
        }
      }
      return { kind: "rows", columns, rows: rows.map((r) => r.map(toSqlValue)), truncated };
    } catch (error) {
      throw sqlError(error, sql);
    }
  }

  // ----- snapshots -----------------------------------------------------------------------------------

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
   * Replace the database with a snapshot's: validates it (invalid_snapshot on garbage), deserializes it
   * into a new handle, closes the old one and keeps the current access mode.
   */
  restore(snapshot: JsonValue): void {
    const { bytes, rng } = decodeSnapshot(snapshot);
    this.replaceHandle(bytes);
    if (rng) this.rng = rng;
  }

  /** Close the database. Idempotent; later calls fail with sql_error. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
    this.statements.clear();
    this.dateStatements.clear();
    this.dateHelper?.close();
    this.dateHelper = null;
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
  private replaceHandle(bytes: Buffer): void {
    if (this.closed) throw new SandboxError("sql_error", "SQL error: the database is closed");
    const next = this.openChecked(bytes);
    this.db.close();
    this.statements.clear();
    this.schema = null;
    this.db = next;
  }

  /** Open a handle on serialized bytes, checking they are a usable SQLite database. */
  private openChecked(bytes: Buffer): Handle {
    checkDatabaseBytes(bytes);
    let handle: Handle | undefined;
    try {
      handle = this.open(bytes);
      handle.prepare("SELECT count(*) FROM sqlite_schema").get();
      // Reading the schema left its pages in the page cache; the parsed schema is all later statements need.
      handle.prepare("PRAGMA shrink_memory").run();
      return handle;
    } catch (error) {
      handle?.close();
      throw new ValidationError("invalid_snapshot", `snapshot bytes are not a usable SQLite database: ${messageOf(error)}`);
    }
  }

  /** A memdb-backed handle (fresh databases too, so they write the same bytes as restored ones). */
  private open(bytes: Buffer): Handle {
    const db = new Database(bytes);
    try {
      this.installDeterminism(db);
    } catch (error) {
      db.close();
      throw error;
    }
    return db;
  }

  private installDeterminism(db: Handle): void {
    db.function("random", { deterministic: false, safeIntegers: true }, () => {
      const hi = BigInt(this.rng.nextUint32());
      const lo = BigInt(this.rng.nextUint32());
      return BigInt.asIntN(64, (hi << 32n) | lo);
    });
    db.function("randomblob", { deterministic: false, safeIntegers: true }, (n: unknown) => {
      const num = typeof n === "bigint" ? n : Number(n);
      let size = typeof num === "bigint" ? num : Number.isFinite(num) ? BigInt(Math.trunc(num)) : 1n;
      if (size < 1n) size = 1n;
      if (size > BigInt(MAX_RANDOMBLOB)) throw new Error(`randomblob: at most ${MAX_RANDOMBLOB} bytes in the sandbox`);
      const out = Buffer.alloc(Number(size));
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
    const key = `${name}/${mapped.length}`;
    let stmt = this.dateStatements.get(key);
    if (!stmt) {
      this.dateHelper ??= new Database(":memory:");
      const placeholders = mapped.map(() => "?").join(", ");
      stmt = this.dateHelper.prepare(`SELECT ${name}(${placeholders})`).pluck().safeIntegers(true) as Statement;
      this.dateStatements.set(key, stmt);
    }
    return stmt.get(...mapped);
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

/** Cheap structural checks before SQLite sees the bytes: header, page size, whole pages. */
function checkDatabaseBytes(bytes: Buffer): void {
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
