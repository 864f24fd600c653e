/**
 * The trajectory store's schema, as an ordered list of migrations. The version a database file is at
 * lives in `PRAGMA user_version` (in the file header, so it is transactional with the schema change).
 * Append new migrations at the end; never edit or reorder a migration that has shipped, because files
 * already at that version will not run it again.
 */
import type Database from "better-sqlite3";
import { LlmixError } from "../core/errors.js";

/** One schema step: `up` takes a database at `version - 1` to `version`. */
export interface Migration {
  version: number;
  description: string;
  up: string;
}

/** Every migration, in order. `MIGRATIONS.at(-1).version` is the schema version this code writes. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "runs, episodes and steps; each row keeps its full record as JSON text",
    up: `
      CREATE TABLE runs (
        run_id      TEXT PRIMARY KEY,
        env         TEXT NOT NULL,
        status      TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed')),
        created_at  TEXT NOT NULL,
        finished_at TEXT,
        record      TEXT NOT NULL
      );
      CREATE INDEX runs_by_created ON runs (created_at);

      CREATE TABLE episodes (
        episode_id   TEXT PRIMARY KEY,
        run_id       TEXT NOT NULL,
        env          TEXT NOT NULL,
        task_id      TEXT NOT NULL,
        difficulty   TEXT NOT NULL,
        group_index  INTEGER NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('ok', 'error')),
        total_reward REAL NOT NULL,
        advantages   TEXT,
        record       TEXT NOT NULL
      );
      -- The order every episode query returns; episode_id last so keyset paging is total.
      CREATE INDEX episodes_by_order ON episodes (run_id, task_id, group_index, episode_id);

      CREATE TABLE steps (
        episode_id TEXT NOT NULL REFERENCES episodes (episode_id) ON DELETE CASCADE,
        step       INTEGER NOT NULL,
        record     TEXT NOT NULL,
        PRIMARY KEY (episode_id, step)
      );
    `,
  },
  {
    version: 2,
    description: "episode filter columns: passed (backfilled from the stored verdict) and indexes for every EpisodeQuery filter",
    up: `
      ALTER TABLE episodes ADD COLUMN passed INTEGER NOT NULL DEFAULT 0 CHECK (passed IN (0, 1));
      UPDATE episodes SET passed = CASE json_type(record, '$.verdict.passed') WHEN 'true' THEN 1 ELSE 0 END;
      -- Each equality filter is followed by the query order, so a filtered page is an index range
      -- (no sort) and keyset paging continues from the last key instead of re-reading the prefix.
      CREATE INDEX episodes_by_env ON episodes (env, run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_task ON episodes (task_id, run_id, group_index, episode_id);
      CREATE INDEX episodes_by_difficulty ON episodes (difficulty, run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_status ON episodes (status, run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_passed ON episodes (passed, run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_reward ON episodes (total_reward);
    `,
  },
  {
    version: 3,
    description: "run owners and heartbeats (owner_host, owner_pid, heartbeat_at) and the interrupted status",
    // SQLite cannot change a CHECK constraint in place: the table is rebuilt, rows in their rowid order
    // (listRuns breaks created_at ties by rowid). Runs from before keep null owners and heartbeats.
    up: `
      CREATE TABLE runs_v3 (
        run_id       TEXT PRIMARY KEY,
        env          TEXT NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'finished', 'failed')),
        created_at   TEXT NOT NULL,
        finished_at  TEXT,
        owner_host   TEXT,
        owner_pid    INTEGER,
        heartbeat_at TEXT,
        record       TEXT NOT NULL
      );
      INSERT INTO runs_v3 (run_id, env, status, created_at, finished_at, record)
        SELECT run_id, env, status, created_at, finished_at, record FROM runs ORDER BY rowid;
      DROP TABLE runs;
      ALTER TABLE runs_v3 RENAME TO runs;
      CREATE INDEX runs_by_created ON runs (created_at);
    `,
  },
  {
    version: 4,
    description: "data boundaries: run tenants, episode finish times (for retention) and the append-only audit log",
    up: `
      ALTER TABLE runs ADD COLUMN tenant TEXT;
      UPDATE runs SET tenant = json_extract(record, '$.tenant');
      CREATE INDEX runs_by_tenant ON runs (tenant, created_at);
      ALTER TABLE episodes ADD COLUMN finished_at TEXT;
      UPDATE episodes SET finished_at = json_extract(record, '$.finished_at');
      CREATE INDEX episodes_by_finished ON episodes (finished_at);

      CREATE TABLE audit (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        at          TEXT NOT NULL,
        token       TEXT NOT NULL,
        token_id    TEXT,
        tenant      TEXT,
        action      TEXT NOT NULL,
        target_kind TEXT NOT NULL,
        target_id   TEXT NOT NULL,
        via         TEXT NOT NULL,
        detail      TEXT NOT NULL
      );
      CREATE INDEX audit_by_at ON audit (at);
      -- Append-only: no statement of this code or any other may rewrite or remove what was recorded.
      CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
      CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    `,
  },
];

/** The schema version this code writes. */
export const SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/** The schema version of an open database (0 for a new, empty file). */
export function schemaVersion(db: Database.Database): number {
  return db.pragma("user_version", { simple: true }) as number;
}

/**
 * Bring `db` up to the last of `migrations`, all pending steps in one transaction: a failure leaves
 * the file exactly at the version it had. A file newer than this code is refused rather than
 * written, since this code cannot know what the newer columns mean. Returns the versions applied.
 */
export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number[] {
  checkOrder(migrations);
  const latest = migrations[migrations.length - 1]?.version ?? 0;
  // Checked outside a write transaction first, so a newer file is never locked for writing.
  const before = checkSupported(db, migrations);
  if (before === latest) return [];
  const applied: number[] = [];
  // IMMEDIATE takes the write lock up front: two processes opening the same new file cannot both migrate.
  db.transaction(() => {
    const current = checkSupported(db, migrations);
    for (const m of migrations) {
      if (m.version <= current) continue;
      try {
        db.exec(m.up);
      } catch (error) {
        throw new LlmixError("store_error", `trajectory store migration ${m.version} (${m.description}) failed: ${messageOf(error)}`, {
          migration: m.version,
        });
      }
      db.pragma(`user_version = ${m.version}`);
      applied.push(m.version);
    }
  }).immediate();
  return applied;
}

/**
 * The schema version of `db`, or store_error if it is newer than `migrations` know: this code cannot
 * know what the newer columns mean, so it must not write the file. Call before anything that writes
 * (even `journal_mode = WAL` changes the file header).
 */
export function checkSupported(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number {
  return refuseNewerSchema(schemaVersion(db), migrations[migrations.length - 1]?.version ?? 0, "the trajectory store");
}

/** `found`, or store_error if it is newer than `latest` (both stores: the newer columns are unknown here, so nothing may write them). */
export function refuseNewerSchema(found: number, latest: number, what: string): number {
  if (found > latest) {
    throw new LlmixError("store_error", `${what} has schema version ${found}, newer than this llmix knows (${latest}): upgrade llmix to open it`, {
      schema_version: found,
      supported_version: latest,
    });
  }
  return found;
}

/** Migrations must be numbered 1, 2, 3, ... in order (both stores). */
export function checkOrder(migrations: ReadonlyArray<{ version: number }>): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new LlmixError("internal", `migration at position ${i} has version ${m.version}; versions must be 1, 2, 3, ...`);
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
