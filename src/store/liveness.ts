/**
 * Whether a run's process is still alive. A run row records its owner (host name and pid of the process
 * driving it) and a heartbeat time the owner stamps every few seconds. A `running` run reads as
 * `interrupted` once its owner is known to be gone: its pid no longer exists on this host, or its
 * heartbeat is older than a few intervals (the only sign that works across machines, for stores shared
 * by several hosts). Nothing is written when a run is read as interrupted: the row stays `running` until
 * a resume claims it, so readers on different hosts never race to rewrite it.
 */
import { hostname } from "node:os";
import type { RunOwner, RunStatus, TrajectoryStore } from "./types.js";

/** How often an owner stamps its runs' heartbeat. */
export const RUN_HEARTBEAT_INTERVAL_MS = 5_000;

/** A `running` run whose heartbeat is older than this reads as interrupted (six missed heartbeats). */
export const STALE_RUN_AFTER_MS = 6 * RUN_HEARTBEAT_INTERVAL_MS;

/** This process, as a run owner. */
export function currentOwner(): RunOwner {
  return { host: hostname(), pid: process.pid };
}

/** True unless no process with this pid exists on this host (a pid we may not signal still exists). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** What a run row says about its owner's liveness. */
export interface RunLivenessRow {
  status: RunStatus;
  created_at: string;
  owner_host: string | null;
  owner_pid: number | null;
  heartbeat_at: string | null;
}

/**
 * The status a run reads as at `now`: a stored `running` becomes `interrupted` when the owner's pid is
 * gone from this host or the last sign of life (the heartbeat, or the creation of a run from before
 * heartbeats) is older than `staleAfterMs`.
 */
export function effectiveStatus(row: RunLivenessRow, now: number, staleAfterMs: number): RunStatus {
  if (row.status !== "running") return row.status;
  const lastSeen = Date.parse(row.heartbeat_at ?? row.created_at);
  if (!(now - lastSeen <= staleAfterMs)) return "interrupted";
  if (row.owner_host === hostname() && row.owner_pid !== null && !processExists(row.owner_pid)) return "interrupted";
  return "running";
}

/** A running heartbeat; `stop` ends it. */
export interface Heartbeat {
  stop(): void;
}

/**
 * Stamp the heartbeat of the runs `runIds()` names every `intervalMs` on an unref'd timer (it never keeps
 * the process alive) until stopped. A failed stamp (say, the store is busy) is passed to `onError` and
 * the next one tries again: a run reads as interrupted only after several missed heartbeats.
 */
export function startHeartbeat(
  store: Pick<TrajectoryStore, "heartbeatRuns">,
  runIds: () => readonly string[],
  options: { intervalMs?: number; onError?: (error: unknown) => void } = {},
): Heartbeat {
  const beat = () => {
    const ids = runIds();
    if (ids.length === 0) return;
    store.heartbeatRuns(ids).catch((error: unknown) => options.onError?.(error));
  };
  const timer = setInterval(beat, options.intervalMs ?? RUN_HEARTBEAT_INTERVAL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
