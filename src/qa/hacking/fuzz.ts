/**
 * Generic fuzzed final states for the robustness check: transforms of a world snapshot (`snapshotWorld`
 * JSON) that an agent could plausibly leave behind — odd file names, empty, huge and non-ASCII files,
 * missing database rows, missing list items, empty and unicode strings. The sandboxes' snapshot formats
 * are recognised by shape (files: `{entries: [{path, type, content}]}`; SQLite: `{format: "sqlite", bytes}`),
 * so any environment built on them is fuzzed where its agent can act.
 */
import Database from "better-sqlite3";
import type { FuzzedWorld } from "../../core/hacking.js";
import { cloneJson, type JsonValue } from "../../core/json.js";

type Obj = { [key: string]: JsonValue };
type Path = Array<string | number>;

const ODD_NAMES = ["utils copy.js", "ünïcødé (1).js", "-rf #tmp$.js"];
const UNICODE = "\u202e ünïcødé 名前 🎉 \u0000 \ud800";
/** Big enough to stress a verifier that reads whole files, small enough for the sandboxes' limits to decide. */
const HUGE_BYTES = 200_000;

/** Every object in `value` with its path, depth first. */
function objects(value: JsonValue, path: Path = [], out: Array<{ path: Path; obj: Obj }> = []): Array<{ path: Path; obj: Obj }> {
  if (Array.isArray(value)) value.forEach((v, i) => objects(v, [...path, i], out));
  else if (value && typeof value === "object") {
    out.push({ path, obj: value });
    for (const [k, v] of Object.entries(value)) objects(v, [...path, k], out);
  }
  return out;
}

/** A copy of `world` with `edit` applied to the value at `path`. */
function edited(world: JsonValue, path: Path, edit: (value: JsonValue) => JsonValue): JsonValue {
  const copy = cloneJson(world);
  if (path.length === 0) return edit(copy);
  let parent = copy as Record<string | number, JsonValue>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, JsonValue>;
  const last = path.at(-1) as string | number;
  parent[last] = edit(parent[last] as JsonValue);
  return copy;
}

type Entry = { path: string; type: string; content?: string };

/** File-system snapshots: odd names next to a file the agent touched, and that file empty, huge and non-ASCII. */
function fileFuzz(world: JsonValue, at: Path, fs: Obj, touched: readonly string[]): FuzzedWorld[] {
  const entries = fs.entries as unknown as Entry[];
  const files = entries.filter((e) => e.type === "file" && typeof e.content === "string");
  const target = files.find((f) => touched.some((t) => f.path.endsWith(t))) ?? files[0];
  if (!target) return [];
  const dir = target.path.slice(0, target.path.lastIndexOf("/")) || "";
  const withEntries = (name: string, change: (list: Entry[]) => Entry[]): FuzzedWorld => ({
    name,
    world: edited(world, [...at, "entries"], (list) => change(cloneJson(list) as unknown as Entry[]).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) as unknown as JsonValue),
  });
  const setContent = (content: string) => (list: Entry[]) => list.map((e) => (e.path === target.path ? { ...e, content } : e));
  return [
    ...ODD_NAMES.map((name) => withEntries(`file "${dir}/${name}" added`, (list) => [...list, { path: `${dir}/${name}`, type: "file", content: target.content ?? "" }])),
    withEntries(`${target.path} emptied`, setContent("")),
    withEntries(`${target.path} made huge (${HUGE_BYTES} bytes)`, setContent((target.content ?? "x").repeat(Math.ceil(HUGE_BYTES / Math.max(1, (target.content ?? "x").length))).slice(0, HUGE_BYTES))),
    withEntries(`${target.path} given non-ASCII content`, setContent(`${target.content ?? ""}\n// ${UNICODE}\n`)),
  ];
}

/** SQLite snapshots: the last row of each table deleted (up to three tables), and a text cell made unicode. */
function sqliteFuzz(world: JsonValue, at: Path, snap: Obj): FuzzedWorld[] {
  const out: FuzzedWorld[] = [];
  const change = (name: string, sql: (db: Database.Database) => boolean) => {
    const db = new Database(Buffer.from(snap.bytes as string, "base64"));
    try {
      if (sql(db)) out.push({ name, world: edited(world, [...at, "bytes"], () => db.serialize().toString("base64")) });
    } finally {
      db.close();
    }
  };
  const probe = new Database(Buffer.from(snap.bytes as string, "base64"));
  const tables = (probe.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{ name: string }>)
    .map((t) => t.name)
    .filter((t) => (probe.prepare(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n > 0);
  probe.close();
  for (const table of tables.slice(0, 3)) {
    change(`last row of table ${table} deleted`, (db) => {
      try {
        return db.prepare(`DELETE FROM "${table}" WHERE rowid = (SELECT max(rowid) FROM "${table}")`).run().changes > 0;
      } catch {
        return false; // a WITHOUT ROWID table or a constraint: not this transform
      }
    });
  }
  const first = tables[0];
  if (first) {
    change(`text cells of ${first}'s first row made unicode`, (db) => {
      const cols = (db.prepare(`PRAGMA table_info("${first}")`).all() as Array<{ name: string; type: string; pk: number }>).filter((c) => /TEXT/i.test(c.type) && c.pk === 0);
      if (cols.length === 0) return false;
      try {
        const set = cols.map((c) => `"${c.name}" = ?`).join(", ");
        return db.prepare(`UPDATE "${first}" SET ${set} WHERE rowid = (SELECT min(rowid) FROM "${first}")`).run(...cols.map(() => UNICODE)).changes > 0;
      } catch {
        return false;
      }
    });
  }
  return out;
}

/** Plain JSON: the first few lists lose their last item, the first few strings become empty and unicode. */
function jsonFuzz(world: JsonValue, limit: number): FuzzedWorld[] {
  const out: FuzzedWorld[] = [];
  const walk = (value: JsonValue, path: Path) => {
    if (out.length >= limit) return;
    if (Array.isArray(value)) {
      if (value.length > 0) out.push({ name: `last item of ${path.join(".") || "world"} removed`, world: edited(world, path, (v) => (v as JsonValue[]).slice(0, -1)) });
      value.forEach((v, i) => walk(v, [...path, i]));
    } else if (value && typeof value === "object") {
      // Sandbox snapshots are fuzzed by their own transforms.
      if ("entries" in value || value.format === "sqlite") return;
      for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    } else if (typeof value === "string" && value.length > 0 && value.length < 200) {
      out.push({ name: `${path.join(".")} emptied`, world: edited(world, path, () => "") });
      out.push({ name: `${path.join(".")} made unicode`, world: edited(world, path, () => UNICODE) });
    }
  };
  walk(world, []);
  return out;
}

/** Generic fuzzed versions of a final world; `touched` are paths the agent wrote (fuzzed first). */
export function fuzzWorld(world: JsonValue, touched: readonly string[], limit = 12): FuzzedWorld[] {
  const out: FuzzedWorld[] = [];
  for (const { path, obj } of objects(world)) {
    if (Array.isArray(obj.entries) && (obj.entries as JsonValue[]).every((e) => e !== null && typeof e === "object" && "path" in (e as Obj))) {
      out.push(...fileFuzz(world, path, obj, touched));
    } else if (obj.format === "sqlite" && typeof obj.bytes === "string") {
      out.push(...sqliteFuzz(world, path, obj));
    }
  }
  out.push(...jsonFuzz(world, Math.max(2, limit - out.length)));
  return out.slice(0, limit);
}
