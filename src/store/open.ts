/**
 * One way to open the trajectory store a `--store` value names: a `postgres://` or `postgresql://` URL
 * opens the shared PostgreSQL store (DESIGN §8), anything else is the path of the embedded SQLite file.
 * The rest of LLMix sees only the TrajectoryStore contract, so the distributed store is a flag away.
 */
import { isPostgresUrl, redactUrl } from "./postgres-location.js";
import { openPostgresStore, type PostgresStoreOptions } from "./postgres-store.js";
import { DEFAULT_STORE_PATH, openStore, type SqliteStoreOptions } from "./sqlite-store.js";
import type { TrajectoryStore } from "./types.js";

/** Options of either store; each takes the ones it knows (`busyTimeoutMs` is SQLite's, `schema`, `connectTimeoutMs` and `poolSize` PostgreSQL's). */
export type OpenStoreOptions = SqliteStoreOptions & PostgresStoreOptions;

/**
 * Open the store `spec` names (default ./llmix-data/llmix.db): PostgreSQL for a postgres:// or
 * postgresql:// URL (connected and migrated before this resolves), else the SQLite file at that path.
 * With `create: false` a missing store is unknown_store rather than a new empty one.
 */
export async function openStoreAt(spec: string = DEFAULT_STORE_PATH, options: OpenStoreOptions = {}): Promise<TrajectoryStore> {
  if (typeof spec === "string" && isPostgresUrl(spec)) return openPostgresStore(spec, options);
  return openStore(spec, options);
}


/** `spec` as messages and logs may show it: a URL without its password, a path as given. */
export function displayStore(spec: string): string {
  return isPostgresUrl(spec) ? redactUrl(spec) : spec;
}
