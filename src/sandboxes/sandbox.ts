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
}
