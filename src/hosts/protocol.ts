/**
 * The messages between the thread that serves requests and an environment host (a worker thread that
 * runs sessions, see host-worker.ts). Everything crosses by structured clone; results that go straight
 * back to a client travel as JSON text the host already serialized, so the serving thread only copies.
 */
import type { ToolSpec, TrajectoryStepRecord } from "../core/contract.js";
import type { RedactionRules } from "../store/redaction.js";
import type { EpisodeRecord, StoredEpisode } from "../store/types.js";

/** What a host is started with (workerData). */
/** Sessions a host keeps live by default before it parks the least recently used (hosted-sessions.ts). */
export const DEFAULT_RESIDENT_SESSIONS = 2500;
/** A session must be idle this long before it may be parked (so a round of steps never thrashes). */
export const PARK_IDLE_MS = 2000;

export interface HostConfig {
  /** `--module` files to load next to the built-in environments, in order. */
  modules: string[];
  /** Key of the snapshot signatures (see signing.ts), hex. */
  snapshotKey: string;
  /** Sessions the host keeps live before it parks the least recently used (see hosted-sessions.ts). */
  residentSessions?: number;
  /** Options each environment's session instances are created with, by environment id. */
  envOptions?: Record<string, Record<string, unknown>>;
  /** The data policy's redaction rules: applied to recorded steps, episode summaries and replay reports. */
  redaction?: RedactionRules;
}

/** The channel a host is given besides its config: where requests arrive and replies go (see host.ts). */
export interface HostChannel {
  requests: import("node:worker_threads").MessagePort;
  replies: import("node:worker_threads").MessagePort;
  /** Shared state (CONTROL_BYTES): Int32 slots at the indices below, and a Float64 at RUNNING_SINCE. */
  control: SharedArrayBuffer;
}

/** Int32 index: requests the serving thread has posted (bumped after each post). */
export const REQUESTS_POSTED = 0;
/** Int32 index: the id of the request the host is running, 0 when it runs none. */
export const RUNNING = 1;
/** Int32 index: 1 while the host sleeps on the futex waiting for requests (the serving thread notifies only then). */
export const LINGERING = 2;
/** Float64 index: when the running request started (epoch ms; written before RUNNING is set). */
export const RUNNING_SINCE = 2;
/** Size of the shared state. */
export const CONTROL_BYTES = 3 * Float64Array.BYTES_PER_ELEMENT;

/** How a session starts: a new episode, or a snapshot (a fork or a rebuild's checkpoint). */
export interface SessionStart {
  sid: string;
  env: string;
  record: boolean;
  policy_checkpoint: string | null;
  task_id?: string;
  seed?: number;
  /** A snapshot object to continue from (a fork); checked against its signature unless `trusted`. */
  snapshot?: unknown;
  /** Skip the signature check (an admin token, or a snapshot this server kept itself). */
  trusted?: boolean;
}

/**
 * What brings a session back on a new host after its old host was stopped: the start, an optional
 * checkpoint (host-made, see `StepReply.checkpoint`), and the actions taken since, replayed in order.
 * `digest` is what the last step reported; the rebuilt session must report the same.
 */
export interface SessionRebuild {
  start: SessionStart;
  checkpoint: string | null;
  actions: unknown[];
  digest: string;
}

/** A request to a host. `id` matches the reply. */
export type HostRequest =
  | { id: number; kind: "open"; start: SessionStart }
  | { id: number; kind: "rebuild"; rebuild: SessionRebuild }
  | { id: number; kind: "step"; sid: string; action: unknown; checkpoint: boolean }
  | { id: number; kind: "snapshot"; sid: string }
  | { id: number; kind: "restore"; sid: string; snapshot: unknown; trusted: boolean }
  | { id: number; kind: "tools"; sid: string }
  | { id: number; kind: "close"; sid: string; created_at: string; closed_at: string }
  | { id: number; kind: "job"; job: HostJob };

/** POST /v1/tasks/sample, validated by the serving thread's schema (SampleTasksBody) before it gets here. */
export interface SampleTasksRequest {
  spec?: unknown;
  state?: unknown;
  split?: "train" | "eval";
  seed?: number;
  n?: number;
  step?: number;
  results?: Array<{ task_id: string; outcome: number }>;
}

/** Work that belongs to no session (heavy or environment-defined, so it runs on a host too). */
export type HostJob =
  | { kind: "summaries" }
  | { kind: "env_detail"; env: string }
  | { kind: "tasks"; env: string; query: Record<string, unknown> }
  | { kind: "sample"; env: string; request: SampleTasksRequest }
  | { kind: "replay"; stored: StoredEpisode; env_options: Record<string, unknown> }
  | { kind: "task_features"; env: string; task_ids: string[] };

/** A session as it starts (what `open` answers; the client's create response is built from it). */
export interface OpenedSession {
  env_version: string;
  task_id: string;
  seed: number;
  step: number;
  ended: boolean;
  /** The create response's JSON text: {session_id, env, env_version, task_id, seed, observation, tools}. */
  body: string;
  digest: string;
  /** For a session that starts from a snapshot: its checkpoint, the base of a later rebuild. */
  checkpoint?: string;
}

/** What a step answers. */
export interface StepReply {
  /** The step response's JSON text (DESIGN §1 wire form). */
  body: string;
  /** The episode ended with this step (the first end; later steps change nothing). */
  ended: boolean;
  /** The step counted in the episode (false for a step after the end). */
  counted: boolean;
  digest: string;
  /** The step record, for recorded sessions (the serving thread keeps them until the episode is stored). */
  record?: TrajectoryStepRecord;
  /** When asked for: the session's state after this step, from which a rebuild can start. */
  checkpoint?: string;
}

/** A closed session's episode summary. */
export interface ClosedSession {
  summary: EpisodeRecord;
}

/** The result of each request kind. */
export interface HostResults {
  open: OpenedSession;
  rebuild: { digest: string };
  step: StepReply;
  snapshot: { body: string };
  restore: { task_id: string; seed: number; step: number; ended: boolean; checkpoint: string; digest: string };
  tools: { tools: ToolSpec[]; mcp: Array<Record<string, unknown>> };
  close: ClosedSession;
  job: unknown;
}

/** A host's answer to a request. */
export type HostReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { code: string; message: string; details: Record<string, unknown> } };

/** What a host says on its own (not an answer): it finished starting. */
export type HostNotice = { ready: true } | { fatal: string };
