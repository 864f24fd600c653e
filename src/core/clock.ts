import { ValidationError } from "./errors.js";

/** The default start of every episode's virtual time: a fixed instant, never the host's clock. */
export const DEFAULT_EPOCH_MS = Date.UTC(2026, 0, 5, 9, 0, 0);

// The range a JavaScript Date can represent; beyond it iso() could not work.
const MAX_TIME_MS = 8.64e15;

/** Serializable clock state. */
export interface ClockState {
  nowMs: number;
}

/**
 * Virtual time for an episode (DESIGN §2). Environment code reads time only from here; simulated
 * tool latency advances it. It never moves backwards.
 */
export class VirtualClock {
  private nowMs: number;

  constructor(startMs: number = DEFAULT_EPOCH_MS) {
    if (!Number.isFinite(startMs) || Math.abs(startMs) > MAX_TIME_MS) {
      throw new ValidationError("invalid_argument", `clock start must be a finite time within ±${MAX_TIME_MS} ms, got ${startMs}`);
    }
    this.nowMs = startMs;
  }

  /** Milliseconds since the Unix epoch, in virtual time. */
  now(): number {
    return this.nowMs;
  }

  /** The current virtual instant as an ISO-8601 string. */
  iso(): string {
    return new Date(this.nowMs).toISOString();
  }

  /** Move time forward by `ms` (>= 0). */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new ValidationError("invalid_argument", `clock.advance needs a finite ms >= 0, got ${ms}`);
    }
    if (this.nowMs + ms > MAX_TIME_MS) throw new ValidationError("invalid_argument", "clock.advance would pass the latest representable time");
    this.nowMs += ms;
  }

  /** State for snapshots. */
  state(): ClockState {
    return { nowMs: this.nowMs };
  }

  /** Restore from `state()`. */
  static fromState(state: ClockState): VirtualClock {
    if (!state || typeof state !== "object" || !Number.isFinite(state.nowMs) || Math.abs(state.nowMs) > MAX_TIME_MS) {
      throw new ValidationError("invalid_snapshot", "clock state must be {nowMs: finite number}");
    }
    return new VirtualClock(state.nowMs);
  }
}
