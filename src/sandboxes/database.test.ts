import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { VirtualClock } from "../core/clock.js";
import { LlmixError } from "../core/errors.js";
import { canonicalJson, type JsonValue } from "../core/json.js";
import { Rng } from "../core/rng.js";
import { SqlDatabase, diffDatabases, dumpDatabase, formatUtc, isoFromEpochMs, statementHead, toSqlValue } from "./database.js";

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof LlmixError) return error.code;
    return `untyped: ${String(error)}`;
  }
  return "no error";
}

function errorOf(fn: () => unknown): LlmixError {
  try {
    fn();
  } catch (error) {
    if (error instanceof LlmixError) return error;
    throw error;
  }
  throw new Error("expected an error");
}

const SCHEMA = `
  CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, updated_at TEXT);
  CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), total REAL);
  INSERT INTO users (id, name, email) VALUES (1, 'Ada', 'ada@example.com'), (2, 'Bob', 'bob@example.com');
  INSERT INTO orders (id, user_id, total) VALUES (10, 1, 9.5), (11, 2, 20);
`;

function seeded(): SqlDatabase {
  const db = new SqlDatabase();
  db.exec(SCHEMA);
  return db;
}

describe("SqlDatabase owner API", () => {
  it("runs scripts, statements, reads and transactions", () => {
    const db = seeded();
    expect(db.tables()).toEqual(["orders", "users"]);
    expect(db.columns("users")).toEqual(["id", "name", "email", "updated_at"]);
    expect(db.primaryKey("users")).toEqual(["id"]);
    const r = db.run("INSERT INTO users (name) VALUES (?)", ["Cy"]);
    expect(r).toEqual({ changes: 1, lastInsertRowid: 3 });
    expect(db.get("SELECT name FROM users WHERE id = @id", { id: 3 })).toEqual({ name: "Cy" });
    expect(db.all<{ id: number }>("SELECT id FROM users ORDER BY id").map((u) => u.id)).toEqual([1, 2, 3]);
    expect(db.get("SELECT * FROM users WHERE id = 99")).toBeUndefined();

    const n = db.transaction(() => {
      db.run("UPDATE users SET email = NULL WHERE id = 3");
      return db.get<{ c: number }>("SELECT count(*) AS c FROM users WHERE email IS NULL")!.c;
    });
    expect(n).toBe(1);
    expect(() =>
      db.transaction(() => {
        db.run("DELETE FROM users WHERE id = 3");
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(db.get("SELECT count(*) AS c FROM users")).toEqual({ c: 3 }); // rolled back
    db.close();
    db.close(); // idempotent
    expect(codeOf(() => db.all("SELECT 1"))).toBe("sql_error");
  });

  it("converts values to JSON-safe forms and binds booleans and blobs", () => {
    const db = new SqlDatabase();
    db.exec("CREATE TABLE v (id INTEGER PRIMARY KEY, b BLOB, big INTEGER, r REAL, flag INTEGER)");
    db.run("INSERT INTO v VALUES (1, ?, 9007199254740993, 1e999, ?)", [Buffer.from([0, 255]), true]);
    db.run("INSERT INTO v VALUES (2, ?, 42, -0.0, ?)", [{ $blob: Buffer.from("hi").toString("base64") }, false]);
    const rows = db.all("SELECT * FROM v ORDER BY id");
    expect(rows).toEqual([
      { id: 1, b: { $blob: "AP8=" }, big: "9007199254740993", r: { $real: "Infinity" }, flag: 1 },
      { id: 2, b: { $blob: "aGk=" }, big: 42, r: 0, flag: 0 },
    ]);
    expect(() => canonicalJson(rows)).not.toThrow();
  });

  it("falls back to the rowid for tables without a declared key", () => {
    const db = new SqlDatabase();
    db.exec(`
      CREATE TABLE plain (a TEXT);
      CREATE TABLE shadowed (rowid TEXT, b TEXT);
      CREATE TABLE comp (a INTEGER, b TEXT, c TEXT, PRIMARY KEY (b, a)) WITHOUT ROWID;
    `);
    expect(db.primaryKey("plain")).toEqual(["rowid"]);
    expect(db.primaryKey("shadowed")).toEqual(["_rowid_"]);
    expect(db.primaryKey("comp")).toEqual(["b", "a"]);
    expect(codeOf(() => db.columns("nope"))).toBe("sql_error");
  });

  it("types SQLite errors with SQLite's message", () => {
    const db = seeded();
    const e1 = errorOf(() => db.query("SELECT * FROM foo"));
    expect(e1.code).toBe("sql_error");
    expect(e1.message).toContain("no such table: foo");
    const e2 = errorOf(() => db.query("SELEC * FROM users"));
    expect(e2.code).toBe("sql_error");
    expect(e2.message).toContain("syntax error");
    expect(codeOf(() => db.query(""))).toBe("sql_error");
    expect(codeOf(() => db.run("INSERT INTO users (id, name) VALUES (1, 'dup')"))).toBe("sql_error");
    expect(codeOf(() => db.exec("CREATE TABLE users (x)"))).toBe("sql_error");
    expect(codeOf(() => db.run("SELECT ?", [{ not: "bindable" }]))).toBe("sql_error");
  });

  it("precompiles owner statements without running them or changing the bytes", () => {
    const db = seeded();
    const before = db.serialize();
    db.setAccess("read");
    // A write statement compiles under read access: only running it is refused.
    db.precompile(["SELECT name FROM users WHERE id = ?", "INSERT INTO users (id, name) VALUES (?, ?)"]);
    expect(db.serialize().equals(before)).toBe(true);
    expect(db.get("SELECT name FROM users WHERE id = ?", [1])).toEqual({ name: "Ada" });
    expect(codeOf(() => db.run("INSERT INTO users (id, name) VALUES (?, ?)", [9, "x"]))).toBe("read_only");
    const bad = errorOf(() => db.precompile(["SELECT 1", "SELECT * FROM nowhere"]));
    expect(bad.code).toBe("sql_error");
    expect(bad.message).toContain("no such table: nowhere");
  });
});

describe("schema cache (tables and columns are read once between writes)", () => {
  it("sees every way the schema can change", () => {
    const db = seeded();
    expect(db.tables()).toEqual(["orders", "users"]);
    db.run("CREATE TABLE extra (k TEXT PRIMARY KEY, v TEXT)");
    expect(db.tables()).toEqual(["extra", "orders", "users"]);
    expect(db.primaryKey("extra")).toEqual(["k"]);
    db.query("ALTER TABLE extra ADD COLUMN w INTEGER");
    expect(db.columns("extra")).toEqual(["k", "v", "w"]);
    db.exec("DROP TABLE extra");
    expect(db.tables()).toEqual(["orders", "users"]);
    expect(codeOf(() => db.columns("extra"))).toBe("sql_error");
    // Seen inside a transaction that rolls back: the cache must not keep the undone table.
    expect(() =>
      db.transaction(() => {
        db.run("CREATE TABLE doomed (a)");
        expect(db.tables()).toContain("doomed");
        throw new Error("roll back");
      }),
    ).toThrow("roll back");
    expect(db.tables()).toEqual(["orders", "users"]);
    db.run("CREATE TABLE kept (b)");
    expect(db.tables()).toEqual(["kept", "orders", "users"]);
    // A restore brings another schema.
    const other = new SqlDatabase();
    other.exec("CREATE TABLE only_here (x INTEGER PRIMARY KEY)");
    db.restore(other.snapshot());
    expect(db.tables()).toEqual(["only_here"]);
    expect(db.columns("only_here")).toEqual(["x"]);
    // Callers get copies.
    db.tables().push("junk");
    expect(db.tables()).toEqual(["only_here"]);
  });
});

describe("read-only access", () => {
  it.each([
    ["INSERT INTO users (name) VALUES ('Eve')", "INSERT INTO users …"],
    ["UPDATE users SET name = 'x'", "UPDATE users SET …"],
    ["DELETE FROM users", "DELETE FROM users"],
    ["CREATE TABLE t (x)", "CREATE TABLE t …"],
    ["DROP TABLE orders", "DROP TABLE orders"],
    ["INSERT INTO users (name) VALUES ('Eve') RETURNING id", "INSERT INTO users …"],
  ])("refuses %s through query and run", (sql, head) => {
    const db = seeded();
    const before = db.serialize();
    db.setAccess("read");
    const e = errorOf(() => db.query(sql));
    expect(e.code).toBe("read_only");
    expect(e.message).toBe(`write refused: this tool has read-only access to the database (${head})`);
    expect(codeOf(() => db.run(sql))).toBe("read_only");
    expect(db.serialize().equals(before)).toBe(true);
  });

  it("allows reads, lifts with setAccess('write'), and lets the owner exec", () => {
    const db = seeded();
    db.setAccess("read");
    expect(db.access()).toBe("read");
    expect(db.query("SELECT name FROM users ORDER BY id")).toEqual({
      kind: "rows",
      columns: ["name"],
      rows: [["Ada"], ["Bob"]],
      truncated: false,
    });
    expect(codeOf(() => db.transaction(() => db.run("DELETE FROM orders")))).toBe("read_only");

    db.exec("INSERT INTO users (name) VALUES ('Owner')"); // owner setup path
    expect(codeOf(() => db.query("DELETE FROM users"))).toBe("read_only");

    db.setAccess("write");
    expect(db.query("DELETE FROM orders WHERE id = 10")).toEqual({ kind: "changes", changes: 1 });
    expect(db.query("INSERT INTO orders (user_id, total) VALUES (1, 2)")).toEqual({
      kind: "changes",
      changes: 1,
      lastInsertRowid: 12,
    });
    expect(db.get("SELECT count(*) AS c FROM users")).toEqual({ c: 3 });
    expect(codeOf(() => db.setAccess("admin" as never))).toBe("invalid_argument");
  });

  it("keeps the access mode across restore", () => {
    const db = seeded();
    const snap = db.snapshot();
    db.setAccess("read");
    db.restore(snap);
    expect(codeOf(() => db.query("DELETE FROM users"))).toBe("read_only");
    db.setAccess("write");
    expect(db.query("DELETE FROM orders WHERE id = 11")).toMatchObject({ kind: "changes", changes: 1 });
  });
});

describe("agent SQL guard", () => {
  it.each([
    ["ATTACH '/etc/passwd' AS pw", "ATTACH"],
    ["attach database 'file:/etc/passwd?mode=ro' as x", "ATTACH"],
    ["/* hi */ ATTACH/**/'x.db' AS y", "ATTACH"],
    ["DETACH main", "DETACH"],
    ["VACUUM INTO '/tmp/stolen.db'", "VACUUM INTO"],
    ["vacuum main into 'x.db'", "VACUUM INTO"],
    ["SELECT load_extension('/tmp/evil.so')", "load_extension"],
    ['SELECT "load_extension"(\'/tmp/evil.so\')', "load_extension"],
    ["SELECT [load_extension]('x')", "load_extension"],
    ["PRAGMA writable_schema = 1", "PRAGMA writable_schema"],
    ["PRAGMA query_only = OFF", "PRAGMA query_only"],
    ["pragma main.journal_mode", "PRAGMA journal_mode"],
    ['PRAGMA "foreign_keys" = 0', "PRAGMA foreign_keys"],
    ["SELECT * FROM pragma_compile_options", "pragma_compile_options"],
    ["BEGIN", "BEGIN"],
    ["COMMIT", "COMMIT"],
    ["SAVEPOINT a", "SAVEPOINT"],
    ["CREATE TEMP TABLE t (x)", "TEMP"],
    ["CREATE TABLE temp.t (x)", "TEMP"],
    ["CREATE VIEW IF NOT EXISTS temp.v AS SELECT 1", "TEMP"],
  ])("refuses %s", (sql, keyword) => {
    const db = seeded();
    const e = errorOf(() => db.query(sql));
    expect(e.code).toBe("forbidden_statement");
    expect(e.details.keyword).toBe(keyword);
    expect(e.message).toContain(keyword.split(" ")[0]);
  });

  it("refuses forbidden statements under read access too", () => {
    const db = seeded();
    db.setAccess("read");
    expect(codeOf(() => db.query("ATTACH '/etc/passwd' AS pw"))).toBe("forbidden_statement");
  });

  it.each([
    "SELECT 'attach' AS a",
    "SELECT 'VACUUM INTO x' AS a",
    "SELECT 1 AS a -- ATTACH '/etc/passwd'",
    "SELECT /* load_extension('x') */ 1 AS a",
    "SELECT 'PRAGMA writable_schema' AS a",
    "SELECT :attach AS a",
  ])("does not flag keywords inside literals, comments and parameters: %s", (sql) => {
    const db = seeded();
    const params = sql.includes(":attach") ? { attach: 7 } : undefined;
    const r = db.query(sql, params);
    expect(r.kind).toBe("rows");
  });

  it("allows whitelisted pragmas, quoted keyword identifiers and ordinary DDL", () => {
    const db = seeded();
    const info = db.query("PRAGMA table_info(users)");
    expect(info.kind === "rows" && info.rows.map((r) => r[1])).toEqual(["id", "name", "email", "updated_at"]);
    expect(db.query("SELECT name FROM pragma_table_info('orders') ORDER BY cid")).toMatchObject({
      rows: [["id"], ["user_id"], ["total"]],
    });
    expect(db.query("PRAGMA main.index_list(users)").kind).toBe("rows");
    db.query('CREATE TABLE notes ("attach" TEXT, temp REAL)');
    db.query("INSERT INTO notes VALUES ('x', 21.5)");
    expect(db.query('SELECT "attach", temp FROM notes')).toMatchObject({ rows: [["x", 21.5]] });
    db.query("CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN UPDATE users SET email = NULL WHERE id = 1; END;");
    db.query("INSERT INTO notes VALUES ('y', 1)");
    expect(db.get("SELECT email FROM users WHERE id = 1")).toEqual({ email: null });
    db.query("VACUUM"); // in-memory only
  });

  it("rejects several statements but accepts a trailing semicolon and comment", () => {
    const db = seeded();
    const e = errorOf(() => db.query("SELECT 1; DROP TABLE users"));
    expect(e.code).toBe("forbidden_statement");
    expect(e.message).toContain("one SQL statement");
    expect(db.tables()).toContain("users");
    expect(db.query("SELECT 1 AS one; -- done").kind).toBe("rows");
  });

  it("returns rows or changes, bounds rows with maxRows", () => {
    const db = seeded();
    expect(db.query("UPDATE users SET updated_at = ? WHERE id = ?", ["t", 1])).toEqual({
      kind: "changes",
      changes: 1,
    });
    expect(db.query("INSERT INTO users (name) VALUES ('Cy') RETURNING id, name")).toEqual({
      kind: "rows",
      columns: ["id", "name"],
      rows: [[3, "Cy"]],
      truncated: false,
    });
    const r = db.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c", [], {
      maxRows: 5,
    });
    expect(r).toEqual({ kind: "rows", columns: ["x"], rows: [[1], [2], [3], [4], [5]], truncated: true });
    expect(codeOf(() => db.query("SELECT 1", [], { maxRows: -1 }))).toBe("invalid_argument");
  });

  it("shows the first words of a statement", () => {
    expect(statementHead("  -- c\n insert   into users values (1)")).toBe("insert into users …");
    expect(statementHead("DELETE FROM t")).toBe("DELETE FROM t");
  });
});

describe("snapshots", () => {
  const ops1 = (db: SqlDatabase): void => {
    db.exec(SCHEMA);
    db.run("UPDATE users SET email = 'a@x' WHERE id = 1");
  };
  const ops2 = (db: SqlDatabase): JsonValue[] => {
    db.run("INSERT INTO orders (user_id, total) VALUES (1, 3.25)");
    db.query("DELETE FROM orders WHERE user_id = 2");
    db.query("DELETE FROM users WHERE id = 2");
    db.exec("CREATE INDEX orders_user ON orders (user_id)");
    db.run("INSERT INTO orders (user_id, total) VALUES (1, abs(random() % 100))");
    return db.all("SELECT random() AS r, hex(randomblob(4)) AS h, CURRENT_TIMESTAMP AS t") as unknown as JsonValue[];
  };

  it("gives byte-identical serialize() for the same operations", () => {
    const a = new SqlDatabase();
    const b = new SqlDatabase();
    expect(a.serialize().equals(b.serialize())).toBe(true);
    ops1(a);
    ops1(b);
    ops2(a);
    ops2(b);
    expect(a.serialize().length).toBeGreaterThan(0);
    expect(a.serialize().equals(b.serialize())).toBe(true);
    expect(canonicalJson(a.snapshot())).toBe(canonicalJson(b.snapshot()));
    b.run("UPDATE users SET name = 'Ada!' WHERE id = 1");
    expect(a.serialize().equals(b.serialize())).toBe(false);
  });

  it("restores and continues identically (bytes, data and random())", () => {
    const a = new SqlDatabase();
    ops1(a);
    const snap = a.snapshot();
    expect(snap).toMatchObject({ format: "sqlite", bytes: expect.any(String) });
    const b = SqlDatabase.fromSnapshot(snap);
    expect(b.serialize().equals(a.serialize())).toBe(true);
    const outA = ops2(a);
    const outB = ops2(b);
    expect(outB).toEqual(outA);
    expect(b.serialize().equals(a.serialize())).toBe(true);

    // restoring into a used database replaces everything
    const c = seeded();
    c.run("DELETE FROM orders");
    c.restore(snap);
    ops2(c);
    expect(c.serialize().equals(a.serialize())).toBe(true);
    expect(SqlDatabase.fromBytes(a.serialize()).serialize().equals(a.serialize())).toBe(true);
  });

  it("round-trips the empty database", () => {
    const a = new SqlDatabase();
    const snap = a.snapshot() as { bytes: string };
    expect(snap.bytes).toBe("");
    const b = SqlDatabase.fromSnapshot(snap as unknown as JsonValue);
    expect(b.tables()).toEqual([]);
    b.exec("CREATE TABLE t (x)");
    expect(b.tables()).toEqual(["t"]);
  });

  it.each([
    ["null", null],
    ["array", []],
    ["string", "sqlite"],
    ["missing format", { bytes: "" }],
    ["wrong format", { format: "files", bytes: "" }],
    ["bytes not a string", { format: "sqlite", bytes: 5 }],
    ["bytes not base64", { format: "sqlite", bytes: "not base64!" }],
    ["bytes not sqlite", { format: "sqlite", bytes: Buffer.from("hello world, not a database").toString("base64") }],
    [
      "header but truncated",
      { format: "sqlite", bytes: Buffer.concat([Buffer.from("SQLite format 3\0"), Buffer.alloc(200)]).toString("base64") },
    ],
    ["bad random state", { format: "sqlite", bytes: "", random: { key: "k", s: [0, 0, 0, 0] } }],
    ["random not an object", { format: "sqlite", bytes: "", random: 7 }],
  ])("refuses a garbage snapshot: %s", (_name, snap) => {
    const db = seeded();
    const before = db.serialize();
    expect(codeOf(() => db.restore(snap as JsonValue))).toBe("invalid_snapshot");
    expect(db.serialize().equals(before)).toBe(true); // untouched
    expect(db.all("SELECT id FROM users")).toHaveLength(2);
  });

  it("refuses corrupt pages behind a valid header", () => {
    const good = seeded().serialize();
    const bad = Buffer.from(good);
    bad.fill(0xab, 100); // keep the header, wreck the schema page and the rest
    expect(codeOf(() => SqlDatabase.fromBytes(bad))).toBe("invalid_snapshot");
    expect(codeOf(() => SqlDatabase.fromBytes(Buffer.from("garbage")))).toBe("invalid_snapshot");
  });
});

describe("determinism of SQL functions", () => {
  it("reads 'now' and CURRENT_TIMESTAMP from the virtual clock", () => {
    const clock = new VirtualClock(Date.UTC(2024, 1, 29, 23, 59, 59, 250));
    const db = new SqlDatabase({ clock });
    db.exec("CREATE TABLE e (id INTEGER PRIMARY KEY, at TEXT DEFAULT CURRENT_TIMESTAMP, d TEXT DEFAULT (date('now')))");
    db.run("INSERT INTO e (id) VALUES (1)");
    expect(db.get("SELECT at, d FROM e")).toEqual({ at: "2024-02-29 23:59:59", d: "2024-02-29" });
    expect(
      db.get(
        "SELECT datetime() AS a, strftime('%Y-%m-%dT%H:%M:%fZ') AS b, unixepoch('now') AS c, date('now', '+1 day') AS d, CURRENT_TIME AS t, CURRENT_DATE AS cd",
      ),
    ).toEqual({ a: "2024-02-29 23:59:59", b: "2024-02-29T23:59:59.250Z", c: 1709251199, d: "2024-03-01", t: "23:59:59", cd: "2024-02-29" });
    clock.advance(1000);
    expect(db.get("SELECT datetime('now') AS a")).toEqual({ a: "2024-03-01 00:00:00" });
    // built-in semantics are kept for explicit values
    expect(db.get("SELECT date('2020-01-31', '+1 month') AS a, julianday('2000-01-01') AS j")).toEqual({
      a: "2020-03-02",
      j: 2451544.5,
    });
    expect(codeOf(() => db.get("SELECT datetime('now', 'localtime')"))).toBe("sql_error");
    db.setClock(() => 0);
    expect(db.get("SELECT CURRENT_TIMESTAMP AS t")).toEqual({ t: "1970-01-01 00:00:00" });
  });

  it("draws random() and randomblob() from the seeded stream", () => {
    const draw = (db: SqlDatabase): unknown => db.all("SELECT random() AS r, hex(randomblob(7)) AS h FROM (SELECT 1 UNION ALL SELECT 2)");
    const a = draw(new SqlDatabase({ rng: Rng.fromKey("x") }));
    expect(draw(new SqlDatabase({ rng: Rng.fromKey("x") }))).toEqual(a);
    expect(draw(new SqlDatabase({ rng: Rng.fromKey("y") }))).not.toEqual(a);
    const db = new SqlDatabase();
    expect(db.get<{ n: number }>("SELECT length(randomblob(0)) AS n")!.n).toBe(1);
  });

  it("formats epoch milliseconds without the host Date", () => {
    expect(isoFromEpochMs(0)).toBe("1970-01-01 00:00:00.000");
    expect(isoFromEpochMs(Date.UTC(2000, 1, 29, 12, 34, 56, 789))).toBe("2000-02-29 12:34:56.789");
    expect(isoFromEpochMs(Date.UTC(1969, 11, 31, 23, 59, 59, 999))).toBe("1969-12-31 23:59:59.999");
    expect(isoFromEpochMs(Date.UTC(2100, 2, 1))).toBe("2100-03-01 00:00:00.000");
  });

  it("formats like Date.toISOString across the years 0-9999 and returns null outside them", () => {
    const first = new Date(0).setUTCFullYear(0, 0, 1); // Date.UTC would read year 0 as 1900
    const last = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
    const times = [0, -1, 1, first, last, 951_782_400_000, 4_107_542_399_999];
    for (let k = 0; k < 50_000; k++) times.push(first + Math.floor(((k * 2_654_435_761) % 4_294_967_296) / 4_294_967_296 * (last - first)));
    for (const ms of times) {
      const iso = new Date(ms).toISOString();
      expect(formatUtc(ms, "sqlite")).toBe(iso.slice(0, 23).replace("T", " "));
      expect(formatUtc(ms, "iso-seconds")).toBe(`${iso.slice(0, 19)}Z`);
      expect(formatUtc(ms, "date")).toBe(iso.slice(0, 10));
    }
    expect(formatUtc(1.9, "sqlite")).toBe("1970-01-01 00:00:00.001");
    expect(formatUtc(first - 1, "date")).toBeNull();
    expect(formatUtc(last + 1, "date")).toBeNull();
    expect(formatUtc(Number.NaN, "date")).toBeNull();
    expect(() => isoFromEpochMs(last + 1)).toThrow(/out of range/);
    expect(() => isoFromEpochMs(Number.POSITIVE_INFINITY)).toThrow(/virtual clock returned/);
  });
});

describe("dump and diff", () => {
  it("sees schema changes made after a table was read (its statements are cached per handle)", () => {
    const db = new SqlDatabase();
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)");
    expect(db.readTable("t").columns).toEqual(["id", "a"]);
    db.exec("ALTER TABLE t ADD COLUMN b INTEGER DEFAULT 7");
    expect(db.readTable("t").columns).toEqual(["id", "a", "b"]); // no rows: the columns come from the statement
    expect(db.columns("t")).toEqual(["id", "a", "b"]);
    db.exec("INSERT INTO t (a) VALUES ('x')");
    expect(dumpDatabase(db)).toEqual({ t: [{ id: 1, a: "x", b: 7 }] });
    db.exec("DROP TABLE t; CREATE TABLE t (k TEXT PRIMARY KEY, z REAL); INSERT INTO t VALUES ('q', 1.5)");
    expect(db.primaryKey("t")).toEqual(["k"]);
    expect(dumpDatabase(db)).toEqual({ t: [{ k: "q", z: 1.5 }] });
    db.exec("DROP TABLE t");
    expect(() => db.readTable("t")).toThrow(/no such table/);
  });

  it("dumps every table sorted by key, JSON-safe", () => {
    const db = new SqlDatabase();
    db.exec(`
      CREATE TABLE k (id TEXT PRIMARY KEY, v BLOB);
      INSERT INTO k VALUES ('b', x'01'), ('a', NULL), ('c', 3);
      CREATE TABLE r (x TEXT);
      INSERT INTO r VALUES ('z'), ('y');
    `);
    expect(dumpDatabase(db)).toEqual({
      k: [
        { id: "a", v: null },
        { id: "b", v: { $blob: "AQ==" } },
        { id: "c", v: 3 },
      ],
      r: [
        { rowid: 1, x: "z" },
        { rowid: 2, x: "y" },
      ],
    });
    expect(dumpDatabase(db.snapshot(), { ignoreTables: ["r"], ignoreColumns: { k: ["v"] } })).toEqual({
      k: [{ id: "a" }, { id: "b" }, { id: "c" }],
    });
  });

  it("reports added, removed and changed rows by primary key", () => {
    const before = seeded();
    const after = SqlDatabase.fromSnapshot(before.snapshot());
    after.run("INSERT INTO users (id, name) VALUES (5, 'Eve'), (3, 'Cy')");
    after.run("DELETE FROM orders WHERE id = 10");
    after.run("UPDATE users SET email = 'b@new' WHERE id = 2");
    after.run("UPDATE orders SET total = 21, user_id = 1 WHERE id = 11");
    const d = diffDatabases(before, after);
    expect(d.equal).toBe(false);
    expect(d.addedTables).toEqual([]);
    expect(d.removedTables).toEqual([]);
    expect(Object.keys(d.tables)).toEqual(["orders", "users"]);
    expect(d.tables.users.added).toEqual([
      { id: 3, name: "Cy", email: null, updated_at: null },
      { id: 5, name: "Eve", email: null, updated_at: null },
    ]);
    expect(d.tables.users.removed).toEqual([]);
    expect(d.tables.users.changed).toEqual([
      {
        key: { id: 2 },
        before: { id: 2, name: "Bob", email: "bob@example.com", updated_at: null },
        after: { id: 2, name: "Bob", email: "b@new", updated_at: null },
        columns: ["email"],
      },
    ]);
    expect(d.tables.orders.removed).toEqual([{ id: 10, user_id: 1, total: 9.5 }]);
    expect(d.tables.orders.changed[0].columns).toEqual(["user_id", "total"]);
    expect(d.matched).toBe(1); // users 1
    expect(d.total).toBe(6);
    // snapshots work as inputs and give the same answer
    expect(diffDatabases(before.snapshot(), after.snapshot())).toEqual(d);
    expect(diffDatabases(before, before.snapshot())).toMatchObject({ equal: true, matched: 4, total: 4 });
  });

  it("matches composite primary keys and sorts by them", () => {
    const before = new SqlDatabase();
    before.exec(`
      CREATE TABLE stock (store TEXT, sku INTEGER, qty INTEGER, PRIMARY KEY (store, sku)) WITHOUT ROWID;
      INSERT INTO stock VALUES ('b', 1, 5), ('a', 2, 1), ('a', 1, 7);
    `);
    const after = SqlDatabase.fromSnapshot(before.snapshot());
    after.exec("UPDATE stock SET qty = 0 WHERE store = 'a' AND sku = 1; INSERT INTO stock VALUES ('a', 10, 1), ('a', 3, 2); DELETE FROM stock WHERE store = 'b';");
    const d = diffDatabases(before, after).tables.stock;
    expect(d.changed).toEqual([
      { key: { store: "a", sku: 1 }, before: { store: "a", sku: 1, qty: 7 }, after: { store: "a", sku: 1, qty: 0 }, columns: ["qty"] },
    ]);
    expect(d.added.map((r) => [r.store, r.sku])).toEqual([
      ["a", 3],
      ["a", 10],
    ]);
    expect(d.removed).toEqual([{ store: "b", sku: 1, qty: 5 }]);
  });

  it("matches rowid tables by rowid", () => {
    const before = new SqlDatabase();
    before.exec("CREATE TABLE log (msg TEXT); INSERT INTO log VALUES ('one'), ('two'), ('three');");
    const after = SqlDatabase.fromSnapshot(before.snapshot());
    after.exec("UPDATE log SET msg = 'TWO' WHERE rowid = 2; DELETE FROM log WHERE rowid = 1; INSERT INTO log VALUES ('four');");
    const d = diffDatabases(before, after).tables.log;
    expect(d.changed).toEqual([
      { key: { rowid: 2 }, before: { rowid: 2, msg: "two" }, after: { rowid: 2, msg: "TWO" }, columns: ["msg"] },
    ]);
    expect(d.removed).toEqual([{ rowid: 1, msg: "one" }]);
    expect(d.added).toEqual([{ rowid: 4, msg: "four" }]);
  });

  it("ignores columns and tables on request", () => {
    const before = seeded();
    const after = SqlDatabase.fromSnapshot(before.snapshot());
    after.exec("UPDATE users SET updated_at = '2026-01-01'; CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT); INSERT INTO audit (what) VALUES ('x');");
    expect(diffDatabases(before, after).equal).toBe(false);
    const d = diffDatabases(before, after, { ignoreTables: ["audit"], ignoreColumns: { users: ["updated_at"] } });
    expect(d.equal).toBe(true);
    expect(d.tables.users).toEqual({ added: [], removed: [], changed: [] });
    expect(Object.keys(d.tables)).toEqual(["orders", "users"]);
    // "*" applies to every table; key columns are never ignored
    after.run("UPDATE users SET name = 'Zed' WHERE id = 1");
    const star = diffDatabases(before, after, { ignoreTables: ["audit"], ignoreColumns: { "*": ["updated_at", "id"] } });
    expect(star.tables.users.changed).toEqual([
      { key: { id: 1 }, before: { id: 1, name: "Ada", email: "ada@example.com" }, after: { id: 1, name: "Zed", email: "ada@example.com" }, columns: ["name"] },
    ]);
  });

  it("reports added and removed tables with their rows", () => {
    const before = seeded();
    const after = SqlDatabase.fromSnapshot(before.snapshot());
    after.exec("DROP TABLE orders; CREATE TABLE tags (name TEXT PRIMARY KEY); INSERT INTO tags VALUES ('vip');");
    const d = diffDatabases(before, after);
    expect(d.addedTables).toEqual(["tags"]);
    expect(d.removedTables).toEqual(["orders"]);
    expect(d.tables.tags.added).toEqual([{ name: "vip" }]);
    expect(d.tables.orders.removed).toHaveLength(2);
    expect(d.equal).toBe(false);
  });

  it("treats INTEGER 1 and REAL 1.0 as equal and text '1' as different", () => {
    const before = new SqlDatabase();
    before.exec("CREATE TABLE n (id INTEGER PRIMARY KEY, v); INSERT INTO n VALUES (1, 1), (2, 1);");
    const after = SqlDatabase.fromSnapshot(before.snapshot());
    after.exec("UPDATE n SET v = 1.0 WHERE id = 1; UPDATE n SET v = '1' WHERE id = 2;");
    const d = diffDatabases(before, after).tables.n;
    expect(d.changed.map((c) => c.key)).toEqual([{ id: 2 }]);
  });

  it("refuses garbage snapshots as diff inputs", () => {
    expect(codeOf(() => diffDatabases({ format: "sqlite", bytes: "!!" }, seeded()))).toBe("invalid_snapshot");
  });
});

// ----- restore checks ----------------------------------------------------------------------------------

const LEDGER_DDL = `
  CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, balance INTEGER NOT NULL CHECK (balance >= 0), rate REAL, note);
  CREATE INDEX accounts_name ON accounts (name);
  CREATE TABLE tags (account_id INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (account_id, tag)) WITHOUT ROWID;
`;

/** A database with LEDGER_DDL and a few rows, its expected schema (from a fresh build) and its snapshot. */
function ledger(options: { pageSize?: number } = {}) {
  const template = new SqlDatabase();
  template.exec(`${options.pageSize ? `PRAGMA page_size = ${options.pageSize};` : ""}${LEDGER_DDL}`);
  const schema = template.readSchema();
  template.close();
  const db = new SqlDatabase();
  db.exec(`${options.pageSize ? `PRAGMA page_size = ${options.pageSize};` : ""}${LEDGER_DDL}
    INSERT INTO accounts (name, balance, rate, note) VALUES ('ada', 10, 0.5, 'x'), ('bob', 0, NULL, x'00'), ('cyd', 7, 1.0, 3);
    INSERT INTO tags VALUES (1, 'vip'), (2, 'new');`);
  return { db, schema, snapshot: db.snapshot() };
}

/** A snapshot whose database went through `sql` on a plain connection that may write the schema table. */
function edited(snapshot: JsonValue, sql: string): JsonValue {
  const s = snapshot as { bytes: string };
  const db = new Database(Buffer.from(s.bytes, "base64"));
  db.unsafeMode(true);
  db.exec(sql);
  const bytes = db.serialize().toString("base64");
  db.close();
  return { ...s, bytes };
}

/** Rebuild `accounts` from `ddl` (same rows) and put the index back: a table whose definition changed. */
const rebuiltAccounts = (ddl: string) => `ALTER TABLE accounts RENAME TO old; ${ddl};
  INSERT INTO accounts SELECT * FROM old; DROP TABLE old; CREATE INDEX accounts_name ON accounts (name);`;

describe("restore checks (schema, integrity, storage classes)", () => {
  it("reads a database's schema: file format, every object sorted by type and name, every table's columns", () => {
    const { schema } = ledger();
    expect(schema.pageSize).toBe(4096);
    expect(schema.encoding).toBe("UTF-8");
    expect(schema.objects.map((o) => `${o.type} ${o.name}`)).toEqual(["index accounts_name", "table accounts", "table tags"]);
    expect(schema.columns.accounts!.map((c) => [c.name, c.type, c.notNull, c.pk])).toEqual([
      ["id", "INTEGER", false, 1],
      ["name", "TEXT", true, 0],
      ["balance", "INTEGER", true, 0],
      ["rate", "REAL", false, 0],
      ["note", "", false, 0],
    ]);
  });

  it("accepts what the schema allows, and keeps restoring byte for byte", () => {
    const { db, schema, snapshot } = ledger();
    const restored = SqlDatabase.fromSnapshot(snapshot, { schema, strictTypes: true });
    expect(restored.serialize().equals(db.serialize())).toBe(true);
    restored.restore(snapshot, { schema, strictTypes: true });
    expect(canonicalJson(restored.snapshot())).toBe(canonicalJson(snapshot));
    expect(() => db.assertSchema(schema, { strictTypes: true })).not.toThrow();
  });

  const refused: Array<[string, string, RegExp]> = [
    ["a view", "CREATE VIEW everyone AS SELECT * FROM accounts", /unexpected view everyone/],
    ["a trigger", "CREATE TRIGGER audit AFTER INSERT ON accounts BEGIN SELECT 1; END", /unexpected trigger audit/],
    ["an index", "CREATE INDEX extra ON accounts (balance)", /unexpected index extra/],
    ["a dropped index", "DROP INDEX accounts_name", /missing index accounts_name/],
    ["a dropped table", "DROP TABLE tags", /: missing table tags$/],
    ["a renamed table", "ALTER TABLE tags RENAME TO labels", /missing table tags.*unexpected table labels/],
    ["an added column", "ALTER TABLE accounts ADD COLUMN extra TEXT", /table accounts: unexpected column extra/],
    ["a generated column", "ALTER TABLE accounts ADD COLUMN g AS (balance * 2)", /table accounts: unexpected column g/],
    [
      "a retyped column",
      rebuiltAccounts("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, balance TEXT NOT NULL CHECK (balance >= 0), rate REAL, note)"),
      /table accounts: column balance has type TEXT, expected type INTEGER/,
    ],
    [
      "a column made nullable",
      rebuiltAccounts("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT, balance INTEGER NOT NULL CHECK (balance >= 0), rate REAL, note)"),
      /table accounts: column name has nullable, expected NOT NULL/,
    ],
    [
      "a CHECK constraint calling a function",
      rebuiltAccounts("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, balance INTEGER NOT NULL CHECK (length(zeroblob(balance)) >= 0), rate REAL, note)"),
      /table accounts has the definition .*zeroblob.*, expected .*balance >= 0/,
    ],
    [
      "a table replaced by a never-ending recursive view",
      "ALTER TABLE accounts RENAME TO old; CREATE VIEW accounts AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT old.* FROM old, r",
      /accounts is a view, expected a table/,
    ],
  ];

  it.each(refused)("refuses %s, naming the difference, and leaves the database as it was", (_name, sql, message) => {
    const { db, schema, snapshot } = ledger();
    const before = db.serialize();
    const error = errorOf(() => db.restore(edited(snapshot, sql), { schema }));
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(/^database schema differs from the expected one: /);
    expect(error.message).toMatch(message);
    expect(db.serialize().equals(before)).toBe(true);
    expect(codeOf(() => SqlDatabase.fromSnapshot(edited(snapshot, sql), { schema }))).toBe("invalid_snapshot");
  });

  it("restores a database whose objects differ without a schema to compare with (the checks are opt-in)", () => {
    const { snapshot } = ledger();
    expect(() => SqlDatabase.fromSnapshot(edited(snapshot, "CREATE VIEW everyone AS SELECT * FROM accounts"))).not.toThrow();
  });

  it("refuses another page size or text encoding", () => {
    const { schema } = ledger();
    const big = ledger({ pageSize: 1024 });
    expect(errorOf(() => SqlDatabase.fromSnapshot(big.snapshot, { schema })).message).toMatch(/page size 1024, expected 4096/);
    const utf16 = new SqlDatabase();
    utf16.exec(`PRAGMA encoding = 'UTF-16le'; ${LEDGER_DDL}`);
    expect(errorOf(() => SqlDatabase.fromSnapshot(utf16.snapshot(), { schema })).message).toMatch(/text encoding UTF-16le, expected UTF-8/);
  });

  it("refuses a database that fails the integrity check (a NOT NULL column holding NULL behind the expected schema text)", () => {
    const { schema, snapshot } = ledger();
    // Relax the column, write a NULL, then put the expected definition back: the schema text matches, the row does not.
    const relaxed = "CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT, balance INTEGER NOT NULL CHECK (balance >= 0), rate REAL, note)";
    const strict = schema.objects.find((o) => o.name === "accounts")!.sql!;
    const step1 = edited(snapshot, `PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = '${relaxed}' WHERE name = 'accounts';`);
    const step2 = edited(step1, "INSERT INTO accounts (name, balance) VALUES (NULL, 1)");
    const broken = edited(step2, `PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = '${strict.replace(/'/g, "''")}' WHERE name = 'accounts';`);
    const error = errorOf(() => SqlDatabase.fromSnapshot(broken, { schema }));
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(/database fails its integrity check: NULL value in accounts\.name/);
  });

  it("refuses an index whose entries do not match its table", () => {
    const { schema, snapshot } = ledger();
    const indexSql = schema.objects.find((o) => o.name === "accounts_name")!.sql!;
    const step1 = edited(snapshot, "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = 'CREATE INDEX accounts_name ON accounts (note)' WHERE name = 'accounts_name';");
    const step2 = edited(step1, "REINDEX accounts_name");
    const broken = edited(step2, `PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = '${indexSql}' WHERE name = 'accounts_name';`);
    expect(errorOf(() => SqlDatabase.fromSnapshot(broken, { schema })).message).toMatch(/integrity check/);
  });

  const mistyped: Array<[string, string, RegExp]> = [
    ["text in an INTEGER column", "UPDATE accounts SET balance = 'lots' WHERE id = 2", /table accounts: column balance holds a text value in row 2, but its type INTEGER admits integer/],
    ["a blob in a TEXT column", "UPDATE accounts SET name = x'00ff' WHERE id = 3", /table accounts: column name holds a blob value in row 3/],
    ["text in a REAL column", "UPDATE accounts SET rate = '1x' WHERE id = 1", /column rate holds a text value in row 1, but its type REAL admits real/],
    ["text in a WITHOUT ROWID table", "UPDATE tags SET account_id = 'one' WHERE tag = 'vip'", /table tags: column account_id holds a text value/],
  ];

  it.each(mistyped)("with strictTypes, refuses %s naming table, column and row", (_name, sql, message) => {
    const { schema, snapshot } = ledger();
    const bad = edited(snapshot, sql);
    expect(() => SqlDatabase.fromSnapshot(bad, { schema })).not.toThrow();
    const error = errorOf(() => SqlDatabase.fromSnapshot(bad, { schema, strictTypes: true }));
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(message);
  });

  it("reads storage classes through overflow pages (a record header longer than a cell's local part)", () => {
    const columns = Array.from({ length: 300 }, (_, i) => `c${i} INTEGER`).join(", ");
    const template = new SqlDatabase();
    template.exec(`PRAGMA page_size = 512; CREATE TABLE wide (${columns});`);
    const schema = template.readSchema();
    const values = Array.from({ length: 300 }, (_, i) => String(i)).join(", ");
    template.exec(`INSERT INTO wide VALUES (${values}); INSERT INTO wide VALUES (${values});`);
    const good = template.snapshot();
    expect(() => SqlDatabase.fromSnapshot(good, { schema, strictTypes: true })).not.toThrow();
    const bad = edited(good, "UPDATE wide SET c299 = 'late' WHERE rowid = 2");
    expect(errorOf(() => SqlDatabase.fromSnapshot(bad, { schema, strictTypes: true })).message).toMatch(/column c299 holds a text value in row 2/);
  });

  it("refuses pages that are garbage behind a valid schema page", () => {
    const { db, schema } = ledger();
    db.exec("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 300) INSERT INTO accounts (name, balance) SELECT 'n' || n, n FROM r");
    const bytes = db.serialize();
    bytes.fill(0x7f, 4096 * 2 + 8, 4096 * 3);
    expect(codeOf(() => SqlDatabase.fromBytes(bytes, { schema, strictTypes: true }))).toBe("invalid_snapshot");
  });

  it("asserts a live database against a schema", () => {
    const { db, schema } = ledger();
    db.exec("CREATE VIEW everyone AS SELECT * FROM accounts");
    expect(errorOf(() => db.assertSchema(schema)).message).toMatch(/unexpected view everyone/);
  });
});

// ----- limits ------------------------------------------------------------------------------------------

describe("size limits", () => {
  it("caps the database at maxBytes, on fresh and on restored handles (the cap does not survive serialize)", () => {
    const db = new SqlDatabase({ maxBytes: 64 * 1024 });
    db.exec("CREATE TABLE blobs (b BLOB)");
    const fill = () => {
      for (let i = 0; i < 100; i++) db.run("INSERT INTO blobs VALUES (zeroblob(4000))");
    };
    const error = errorOf(fill);
    expect([error.code, error.details.limit]).toEqual(["size_limit", "maxBytes"]);
    expect(error.message).toMatch(/database is full.*maxBytes/);
    const snapshot = db.snapshot();
    const restored = SqlDatabase.fromSnapshot(snapshot, { maxBytes: 64 * 1024 });
    expect(errorOf(() => restored.run("INSERT INTO blobs VALUES (zeroblob(8000))")).code).toBe("size_limit");
    const small = errorOf(() => SqlDatabase.fromSnapshot(snapshot, { maxBytes: 16 * 1024 }));
    expect([small.code, small.details.limit]).toEqual(["invalid_snapshot", "maxBytes"]);
    expect(codeOf(() => new SqlDatabase({ maxBytes: 100 }))).toBe("invalid_config");
  });

  it("keeps the cap in bytes when a setup script sets the page size", () => {
    const db = new SqlDatabase({ maxBytes: 64 * 1024 });
    db.exec("PRAGMA page_size = 512; CREATE TABLE blobs (b BLOB)");
    expect(db.get<{ max_page_count: number }>("PRAGMA max_page_count")?.max_page_count).toBe(128);
  });

  it("keeps temporary storage in memory", () => {
    expect(new SqlDatabase().get<{ temp_store: number }>("PRAGMA temp_store")?.temp_store).toBe(2);
  });

  it("refuses agent statements longer than maxSqlLength", () => {
    const db = seeded();
    const sql = `SELECT 1 ${" ".repeat(70_000)}`;
    const error = errorOf(() => db.query(sql));
    expect([error.code, error.details.limit]).toEqual(["size_limit", "maxSqlLength"]);
    expect(db.query("SELECT 1 AS one", undefined, { maxSqlLength: 20 })).toMatchObject({ rows: [[1]] });
    expect(codeOf(() => db.query("SELECT 1 AS one, 2 AS two", undefined, { maxSqlLength: 20 }))).toBe("size_limit");
    expect(codeOf(() => db.query("SELECT 1", undefined, { maxSqlLength: -1 }))).toBe("invalid_argument");
  });

  it("cuts results at maxResultBytes", () => {
    const db = seeded();
    const sql = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100) SELECT printf('%.*c', 1000, 'x') FROM r";
    const cut = db.query(sql, undefined, { maxResultBytes: 10_500 });
    expect(cut).toMatchObject({ kind: "rows", truncated: true });
    expect((cut as { rows: unknown[] }).rows).toHaveLength(10);
    expect(db.query(sql)).toMatchObject({ truncated: false });
    expect((db.query("SELECT printf('%.*c', 100, 'x')", undefined, { maxResultBytes: 50 }) as { rows: unknown[] }).rows).toEqual([]);
  });

  /** Expressions whose results the bounded functions must give exactly as SQLite's own do. */
  const exact = [
    "zeroblob(3)", "length(zeroblob('12abc'))", "length(zeroblob(2.9))", "zeroblob(-1)", "zeroblob(NULL)", "length(zeroblob(x'3132'))",
    "length(randomblob('3'))", "length(randomblob(0))", "length(randomblob(-5))",
    "hex('abc')", "hex(NULL)", "hex(12.5)", "hex(x'00ff')", "hex(42)",
    "replace('abcabc', 'b', 'XYZ')", "replace('abc', '', 'x')", "replace(12, '', 'x')", "typeof(replace(12, '', 'x'))",
    "replace(NULL, 'a', 'b')", "replace('aaa', 'a', NULL)", "replace(12.5, '2', 'xx')", "replace('ééé', 'é', 'e')",
    "printf('%d|%5s|%-5d|%.3f', 42, 'ab', 7, 3.14159)", "printf('%.*c', 5, 'x')", "format('%q', 'it''s')", "printf(NULL)",
    "printf(123)", "printf()", "printf('%,d', 1234567)", "printf('%*d', -6, 5)", "printf('%y%10d', 5)", "printf('%5%')",
    "printf('%.3c', 'é')", "printf('%!.20g', 0.1)", "printf('%lld %llx', 9223372036854775807, 255)", "printf('%0*d|%n%s', '4', 7, 'z')",
  ];

  it("bounded functions give SQLite's own results", () => {
    const db = new SqlDatabase();
    const plain = new Database(":memory:");
    for (const expression of exact) {
      const sql = `SELECT ${expression} AS v`;
      const own = (plain.prepare(sql).raw(true).safeIntegers(true).all() as unknown[][]).map((row) => row.map(toSqlValue));
      expect([expression, db.query(sql)]).toEqual([expression, { kind: "rows", columns: ["v"], rows: own, truncated: false }]);
    }
  });

  const tooLarge: Array<[string, string]> = [
    ["zeroblob(1e9)", "zeroblob"],
    ["randomblob(2e7)", "randomblob"],
    ["printf('%.*c', 1e9, 'x')", "printf"],
    ["printf('%1000000000d', 1)", "printf"],
    ["format('%.*c', 5000000, 'x')", "format"],
    ["replace(printf('%.*c', 1000000, 'a'), 'a', printf('%.*c', 100, 'b'))", "replace"],
    ["hex(zeroblob(10000000))", "hex"],
  ];

  it.each(tooLarge)("refuses %s before building it (size_limit naming MAX_VALUE_BYTES)", (expression, fn) => {
    const db = new SqlDatabase();
    const started = performance.now();
    const error = errorOf(() => db.query(`SELECT length(${expression})`));
    expect([error.code, error.details.limit, error.details.function]).toEqual(["size_limit", "MAX_VALUE_BYTES", fn]);
    expect(error.message).toContain(`${fn}() could make a value of`);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
