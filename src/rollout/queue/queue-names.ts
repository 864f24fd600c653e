/**
 * Names shared by the two sides of a distributed rollout (docs/scale-out.md): the queue's default name,
 * how an episode id becomes a BullMQ job id, the Redis URL and its reachability check, and the lock
 * duration of a worker's jobs.
 */
import { Redis } from "ioredis";
import { LlmixError, ValidationError } from "../../core/errors.js";

/** The queue's name when `--queue-name` is not given. */
export const DEFAULT_QUEUE_NAME = "llmix-episodes";

/**
 * How long a worker's lock on a job lasts without renewal; a job whose lock expired is stalled. It bounds
 * how long a worker may be silent (no renewal reached Redis), not how long an episode may take: a
 * worker's main thread renews its jobs' locks every lock/4 to lock/2 while the episodes run on other
 * threads, however long they are. 10 s tolerates seconds of silence (GC, a busy machine, a Redis blip)
 * and lets a dead worker's jobs run elsewhere ~10 s after it died (docs/scale-out.md, "Stalled jobs").
 */
export const DEFAULT_LOCK_MS = 10_000;

/** The longest wait between two stall checks of a worker, whatever its lock. */
export const MAX_STALLED_CHECK_MS = 5_000;

/**
 * How often a worker checks for stalled jobs, given the lock duration: a quarter of it, at most 5 s.
 * A check moves a job back to the queue only when its lock is gone, so checking more often than a lock
 * lasts never takes a live worker's job: it only shortens the wait between a dead worker's locks
 * lapsing and its jobs being handed on, to at most this interval (with a check every lock, as before,
 * that wait was up to two lock durations: a 30 s lock took 46-59 s to recover, a 2 s lock 4.9-5.7 s).
 * One check per interval runs for the whole queue (BullMQ's stalled-check key), so it is cheap.
 */
export function stalledCheckMs(lockMs: number): number {
  return Math.max(1, Math.min(Math.round(lockMs / 4), MAX_STALLED_CHECK_MS));
}

/** BullMQ's name of a job: every job of the queue is one episode. */
export const EPISODE_JOB_NAME = "episode";

/**
 * Stalls a job may have before it fails (BullMQ's maxStalledCount): the worker running it died that many
 * times. Worker deaths are rarely an episode's doing (episodes run on worker threads, whose deaths the
 * worker handles itself), so an innocent episode caught in several deaths — a rolling restart, an
 * operator's kills — still runs to its end; an episode that kills a fourth worker is recorded as failed.
 */
export const MAX_STALLS = 3;

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
