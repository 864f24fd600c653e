/**
 * The PostgreSQL trajectory store's schema, as an ordered list of migrations. The versions a schema has
 * taken live in its `schema_version` table, one row per applied migration, written in the same
 * transaction as the migration's DDL (PostgreSQL's DDL is transactional), so a failure leaves the schema
 * exactly at the version it had. Migrations run under a transaction-scoped advisory lock keyed by the
 * schema name: two processes opening a new store at once take turns, and the second finds nothing to do.
 *
 * Append new migrations at the end; never edit or reorder one that has shipped. Version 1 is the schema
 * the SQLite store reached at its version 3, so both stores hold the same columns.
 */
import { LlmixError, NotFoundError } from "../core/errors.js";
import { messageOf } from "./records.js";
import { checkOrder, refuseNewerSchema } from "./migrations.js";

/** One schema step: `up` takes a schema at `version - 1` to `version`; it runs with the store's schema first on the search path. */
export interface PostgresMigration {
  version: number;
  description: string;
  up: string;
}

/** Anything that runs a query: a pg Client or PoolClient. */
export interface Queryable {
  query<R extends Record<string, unknown> = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>;
}

/** Every migration, in order. The last one's version is the schema version this code writes. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    description: "runs, episodes and steps; each row keeps its full record as JSON text; indexes for every EpisodeQuery filter",
    // Key and order columns use the "C" collation: byte order, as SQLite's BINARY collation orders them,
    // whatever the database's locale (a locale collation would order "B" after "a" and differ by host).
    // Records are text, not jsonb: jsonb would reorder keys, rewrite numbers and refuse \u0000.
    up: `
      CREATE TABLE runs (
        seq          bigint GENERATED ALWAYS AS IDENTITY,
        run_id       text COLLATE "C" PRIMARY KEY,
        env          text COLLATE "C" NOT NULL,
        status       text NOT NULL CHECK (status IN ('running', 'interrupted', 'finished', 'failed')),
        created_at   text COLLATE "C" NOT NULL,
        finished_at  text,
        owner_host   text,
        owner_pid    bigint,
        heartbeat_at text,
        record       text NOT NULL
      );
      -- seq breaks created_at ties as SQLite's rowid does: the later insert lists first.
      CREATE INDEX runs_by_created ON runs (created_at, seq);

      CREATE TABLE episodes (
        episode_id   text COLLATE "C" PRIMARY KEY,
        run_id       text COLLATE "C" NOT NULL,
        env          text COLLATE "C" NOT NULL,
        task_id      text COLLATE "C" NOT NULL,
        difficulty   text COLLATE "C" NOT NULL,
        group_index  bigint NOT NULL,
        status       text NOT NULL CHECK (status IN ('ok', 'error')),
        total_reward double precision NOT NULL,
        passed       boolean NOT NULL,
        advantages   text,
        record       text NOT NULL
      );
      -- The order every episode query returns; episode_id last so keyset paging is total. Each equality
      -- filter is followed by the query order, so a filtered page is one index range, and keyset paging
      -- continues from the last key instead of re-reading the prefix.
      CREATE INDEX episodes_by_order ON episodes (run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_env ON episodes (env, run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_task ON episodes (task_id, run_id, group_index, episode_id);
      CREATE INDEX episodes_by_difficulty ON episodes (difficulty, run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_status ON episodes (status, run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_passed ON episodes (passed, run_id, task_id, group_index, episode_id);
      CREATE INDEX episodes_by_reward ON episodes (total_reward);

      -- No foreign key to episodes: steps are only ever inserted by writeEpisodes, in the transaction that
      -- inserted their episode, so an orphan cannot arise through the store, and the per-row check (a
      -- trigger and an index probe for every step) measured a sixth of the server's insert time. Whatever
      -- deletes episodes (retention) deletes their steps in the same transaction.
      CREATE TABLE steps (
        episode_id text COLLATE "C" NOT NULL,
        step       bigint NOT NULL,
        record     text NOT NULL,
        PRIMARY KEY (episode_id, step)
      );

      -- Records past ~2 KB are compressed as they are stored: lz4 (PostgreSQL 14+ built with it, as
      -- Debian's is) takes a fraction of the default pglz's CPU. Dynamic SQL, so a server without it
      -- fails at run time, inside the handler, and keeps pglz.
      DO $$
      BEGIN
        EXECUTE 'ALTER TABLE steps ALTER COLUMN record SET COMPRESSION lz4';
        EXECUTE 'ALTER TABLE episodes ALTER COLUMN record SET COMPRESSION lz4';
      EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
        NULL;
      END $$;
    `,
  },
  {
    version: 2,
    description: "data boundaries: run tenants, episode finish times (for retention) and the append-only audit log",
    up: `
      ALTER TABLE runs ADD COLUMN tenant text COLLATE "C";
      UPDATE runs SET tenant = (record::json ->> 'tenant');
      CREATE INDEX runs_by_tenant ON runs (tenant, created_at);
      ALTER TABLE episodes ADD COLUMN finished_at text COLLATE "C";
      UPDATE episodes SET finished_at = (record::json ->> 'finished_at');
      CREATE INDEX episodes_by_finished ON episodes (finished_at);

      CREATE TABLE audit (
        seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at          text COLLATE "C" NOT NULL,
        token       text NOT NULL,
        token_id    text,
        tenant      text,
        action      text NOT NULL,
        target_kind text NOT NULL,
        target_id   text NOT NULL,
        via         text NOT NULL,
        detail      text NOT NULL
      );
      CREATE INDEX audit_by_at ON audit (at);
      -- Append-only: no statement may rewrite or remove what was recorded (TRUNCATE included).
      CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'the audit log is append-only';
      END $$;
      CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit FOR EACH ROW EXECUTE FUNCTION audit_append_only();
      CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
    `,
  },
];

/** The schema version this code writes. */
export const POSTGRES_SCHEMA_VERSION: number = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]?.version ?? 0;

/** `name` as a quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The version of the store in `schema` (0 if it has no schema_version table: no store there yet). */
export async function postgresSchemaVersion(db: Queryable, schema: string): Promise<number> {
  const exists = await db.query<{ t: string | null }>("SELECT to_regclass($1) AS t", [`${quoteIdent(schema)}.schema_version`]);
  if (exists.rows[0]?.t == null) return 0;
  const found = await db.query<{ v: number | string | null }>(`SELECT max(version) AS v FROM ${quoteIdent(schema)}.schema_version`);
  return Number(found.rows[0]?.v ?? 0);
}

/**
 * Bring the store in `schema` up to the last of `migrations`, all pending steps in one transaction under
 * the schema's advisory lock. A store newer than this code is refused (store_error) before anything is
 * written; with `create: false` a schema without a store is unknown_store and nothing is created.
 * `display` names the database in messages (the URL without its password). Returns the versions applied.
 */
export async function migratePostgres(
  db: Queryable,
  schema: string,
  options: { create?: boolean; display?: string; migrations?: readonly PostgresMigration[] } = {},
): Promise<number[]> {
  const migrations = options.migrations ?? POSTGRES_MIGRATIONS;
  checkOrder(migrations);
  const where = `${options.display ?? "the database"} (schema ${schema})`;
  const latest = migrations[migrations.length - 1]?.version ?? 0;
  // Read without locks first: an up-to-date or newer store is never locked or written.
  const before = refuseNewerSchema(await postgresSchemaVersion(db, schema), latest, `the trajectory store in ${where}`);
  if (before === latest) return [];
  if (before === 0 && options.create === false) {
    throw new NotFoundError("unknown_store", `no trajectory store in ${where}; llmix rollout (or serve) --store URL creates one`, { schema });
  }
  const q = quoteIdent(schema);
  const applied: number[] = [];
  await db.query("BEGIN");
  try {
    // hashtextextended gives a 64-bit key: one lock per schema, so stores in other schemas never wait.
    await db.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`llmix trajectory store ${schema}`]);
    const exists = await db.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    // Only create what is missing: CREATE SCHEMA needs a privilege an existing schema's owner may lack.
    if (exists.rows.length === 0) await db.query(`CREATE SCHEMA ${q}`);
    await db.query(
      `CREATE TABLE IF NOT EXISTS ${q}.schema_version (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    // Another process may have migrated while this one waited for the lock.
    const current = refuseNewerSchema(await postgresSchemaVersion(db, schema), latest, `the trajectory store in ${where}`);
    // Unqualified names in the migrations resolve to (and create in) the store's schema only.
    await db.query(`SET LOCAL search_path TO ${q}`);
    for (const m of migrations) {
      if (m.version <= current) continue;
      try {
        await db.query(m.up);
      } catch (error) {
        throw new LlmixError("store_error", `trajectory store migration ${m.version} (${m.description}) failed in ${where}: ${messageOf(error)}`, {
          migration: m.version,
        });
      }
      await db.query(`INSERT INTO ${q}.schema_version (version, description) VALUES ($1, $2)`, [m.version, m.description]);
      applied.push(m.version);
    }
    await db.query("COMMIT");
  } catch (error) {
    await db.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
  return applied;
}

