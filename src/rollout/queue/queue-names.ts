/**
 * Names shared by the two sides of a distributed rollout (docs/scale-out.md): the queue's default name,
 * how an episode id becomes a BullMQ job id, the Redis URL and its reachability check, and the lock
 * duration of a worker's jobs.
 */
import { Redis } from "ioredis";
import { LlmixError, ValidationError } from "../../core/errors.js";

/** The queue's name when `--queue-name` is not given. */
export const DEFAULT_QUEUE_NAME = "llmix-episodes";

/** How long a worker's lock on a job lasts without renewal; a job whose lock expired is stalled. */
export const DEFAULT_LOCK_MS = 30_000;

/** BullMQ's name of a job: every job of the queue is one episode. */
export const EPISODE_JOB_NAME = "episode";

/** BullMQ's failedReason of a job that stalled more often than a worker's maxStalledCount (its Lua script's words). */
export const STALLED_TOO_OFTEN = "job stalled more than allowable limit";

/**
 * The job id of an episode: its id, with `%` and `:` escaped (BullMQ refuses a custom id with a colon).
 * Deterministic, so enqueuing an episode twice adds one job.
 */
export function jobIdOf(episodeId: string): string {
  return episodeId.replace(/%/g, "%25").replace(/:/g, "%3A");
}

/** The episode id of a job id (the inverse of `jobIdOf`). */
export function episodeIdOfJob(jobId: string): string {
  return jobId.replace(/%3A/g, ":").replace(/%25/g, "%");
}

/** A `redis://` or `rediss://` URL, checked; invalid_argument otherwise. */
export function redisUrl(value: string, flag = "--redis"): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ValidationError("invalid_argument", `${flag} must be a URL like redis://HOST:PORT[/DB], got "${value}"`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    throw new ValidationError("invalid_argument", `${flag} must be a redis:// or rediss:// URL, got "${value}"`);
  }
  const db = url.pathname.replace(/^\//, "");
  if (db !== "" && !/^\d+$/.test(db)) throw new ValidationError("invalid_argument", `${flag}: the database must be a number, got "${db}"`);
  return value;
}

/** The URL without its password, for messages and logs. */
export function displayRedisUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return value;
  }
}

/** BullMQ connection options for a Redis URL (a worker's blocking commands must never give up retrying). */
export function connectionOf(url: string): { url: string; maxRetriesPerRequest: null } {
  return { url, maxRetriesPerRequest: null };
}

/**
 * Check that Redis at `url` answers a PING within `timeoutMs`; queue_unavailable (with the URL, never
 * its password) if not. BullMQ's own connections retry forever, so without this an unreachable server
 * would look like an idle queue.
 */
export async function checkRedis(url: string, timeoutMs = 5000): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  // The failure is reported by connect()/ping() below; an unhandled 'error' event would crash the process.
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new LlmixError("queue_unavailable", `cannot reach Redis at ${displayRedisUrl(url)}: ${(error as Error).message || String(error)}`);
  } finally {
    client.disconnect();
  }
}
