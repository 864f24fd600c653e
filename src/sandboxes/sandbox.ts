import type { JsonValue } from "../core/json.js";

/** How a tool may touch a sandbox: read tools get read-only access, write tools full access. */
export type AccessMode = "read" | "write";

/**
 * What every sandbox offers the environment base: a JSON snapshot that captures all of its state,
 * restore from that snapshot, and an access mode that the tool middleware switches around each call
 * so a read tool can never write.
 */
export interface Sandbox {
  /** Full state as JSON; equal states give equal canonical JSON. */
  snapshot(): JsonValue;
  /** Replace all state with a snapshot taken from a sandbox of the same kind. */
  restore(snapshot: JsonValue): void;
  /** Set the access of subsequent operations until the next call. */
  setAccess(mode: AccessMode): void;
  /** Release resources (database handles). Idempotent. */
  close?(): void;
  /**
   * Mark the current state, cheaply; the mark's `rollback` puts the state back, `release` forgets it.
   * The tool runner marks around every write call and rolls back a call that fails, so a failed call is
   * all-or-nothing. Without this method the runner falls back to `snapshot()` / `restore()`.
   */
  checkpoint?(): SandboxCheckpoint;
}

/** A mark taken by `Sandbox.checkpoint()`: exactly one of its methods is called, once. */
export interface SandboxCheckpoint {
  rollback(): void;
  release(): void;
}

/** A checkpoint of any sandbox: its own if it has one, else a snapshot to restore. */
export function checkpointOf(sandbox: Sandbox): SandboxCheckpoint {
  if (sandbox.checkpoint) return sandbox.checkpoint();
  const saved = sandbox.snapshot();
  return { rollback: () => sandbox.restore(saved), release: () => undefined };
}
