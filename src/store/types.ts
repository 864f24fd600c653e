/**
 * The trajectory store's records and interface (DESIGN §1, §6). A run is one `llmix rollout`; an episode
 * is one reset-to-end of one environment under one policy; its steps are the trajectory records of
 * DESIGN §1, stored exactly as `toStepRecord` made them. Field names are snake_case: they are what the
 * exports and the service show.
 */
import type { RewardComponents, ToolSpec, TrajectoryStepRecord } from "../core/contract.js";
import type { JsonValue } from "../core/json.js";

/**
 * How a run stands. `running`: its owner is alive. `interrupted`: it stopped before every planned episode
 * was stored — its owner stopped on an error, or its process died (a `running` run reads so once its
 * owner's pid is gone or its heartbeat is stale, see liveness.ts); `llmix rollout --resume` finishes it.
 * `finished`: every planned episode is stored. `failed`: its owner gave it up.
 */
export type RunStatus = "running" | "interrupted" | "finished" | "failed";

/** The process driving a run: the host it runs on and its pid there. */
export interface RunOwner {
  host: string;
  pid: number;
}

/** One rollout run. */
export interface RunRecord {
  run_id: string;
  env: string;
  env_version: string;
  /** The policy spec as given, e.g. "noisy-oracle:0.3". */
  policy: string;
  policy_checkpoint: string | null;
  /** Everything needed to resume the run: the runner's options (task selection, n, group size, seeds...). */
  config: JsonValue;
  /** The environment's full tool set at the start of the run (the exports' `tools` column). */
  tools: ToolSpec[];
  status: RunStatus;
  /** Episodes the run will have when finished. */
  planned_episodes: number;
  created_at: string;
  finished_at: string | null;
  /**
   * The process driving the run. Given to `createRun`, it is the owner (default: the store's owner, this
   * process); read back, the stored owner (null for runs from before owners were recorded).
   */
  owner?: RunOwner | null;
  /** The owner's last heartbeat (ISO time; stamped by createRun, claimRun and heartbeatRuns). Ignored by createRun. */
  heartbeat_at?: string | null;
  /**
   * The tenant whose data the run is (DESIGN §9): its episodes are visible to that tenant's tokens and to
   * admins only. null or absent: the deployment's own run, which only admins see once a data policy
   * names tenants.
   */
  tenant?: string | null;
}

/** Per-group advantages of one episode (null until its whole group is in the store). */
export interface Advantages {
  /** (r - mean) / (std + eps) over the group (population std, as in TRL / verl GRPO). */
  grpo: number;
  /** r - mean (Dr. GRPO: no std normalisation). */
  dr_grpo: number;
  /** r - mean of the other k-1 rewards (RLOO). */
  rloo: number;
}

/**
 * `ok`: the episode ran to terminated/truncated and was scored. `error`: an infrastructure failure
 * (policy server down, timeout, crash) — recorded with its error, excluded from outcome metrics.
 */
export type EpisodeStatus = "ok" | "error";

/** One episode: the row DESIGN §1 adds to the step records. */
export interface EpisodeRecord {
  /** Deterministic: `${run_id}/${task_id}/g${group_index}` (see `episodeIdOf`). */
  episode_id: string;
  run_id: string;
  env: string;
  env_version: string;
  task_id: string;
  /** The task id's difficulty part ("easy", "medium", ...). */
  difficulty: string;
  seed: number;
  /** Episodes with the same group id share task id and seed: a GRPO group. */
  group_id: string;
  /** 0..k-1 within the group. */
  group_index: number;
  policy: string;
  policy_checkpoint: string | null;
  status: EpisodeStatus;
  error: { code: string; message: string } | null;
  steps: number;
  /** Tokens of the observations the policy acted on (the reset observation and each step result before the last). */
  tokens: number;
  /** Sum of every step reward. */
  total_reward: number;
  /** The `task` component of the final step (the verifier's outcome), null if the episode never ended. */
  outcome: number | null;
  /** Each reward component summed over the steps. */
  reward_components: RewardComponents;
  /** The verifier's verdict (`info.verdict` of the final step): passed, score, parts, details. */
  verdict: JsonValue | null;
  end_reason: string | null;
  terminated: boolean;
  truncated: boolean;
  /** Sum of tool-call costs (dollars, as the tools declare them). */
  cost: number;
  /** Tool calls by status, e.g. {"ok": 9, "error": 1}. */
  tool_calls: Record<string, number>;
  advantages: Advantages | null;
  started_at: string;
  finished_at: string;
  duration_ms: number;
}

/** Filters for episode queries; every field is optional and they combine with AND. */
export interface EpisodeQuery {
  run_id?: string;
  env?: string;
  task_id?: string;
  difficulty?: string;
  status?: EpisodeStatus;
  min_reward?: number;
  max_reward?: number;
  /** Only episodes whose verdict passed (true) or did not (false). */
  passed?: boolean;
  /** Only episodes of runs of this tenant (null: of runs without a tenant). */
  tenant?: string | null;
  /** Episodes are returned ordered by (run_id, task_id, group_index); limit/offset page through them. */
  limit?: number;
  offset?: number;
}

/** An episode with its steps, as exports and replay read them. */
export interface StoredEpisode {
  episode: EpisodeRecord;
  steps: TrajectoryStepRecord[];
}

/** What a purge removes: episodes matching every given field (at least one must be given). */
export interface PurgeCriteria {
  /** Episodes that finished before this ISO time. */
  finished_before?: string;
  /** Episodes of runs of this tenant (null: runs without a tenant). */
  tenant?: string | null;
  env?: string;
  run_id?: string;
  episode_ids?: readonly string[];
  /** Report what would be removed without removing it. */
  dry_run?: boolean;
  /** At most this many episodes (lowest ids first): retention purges in batches, so no call holds the store long. */
  limit?: number;
}

/** What a purge removed: the episodes (their steps with them) and the runs left empty. */
export interface PurgeResult {
  episodes: string[];
  steps: number;
  /** Runs whose last episode was removed (or that had none) and that are not running: removed too. */
  runs: string[];
}

/** What the audit log records (DESIGN §9). */
export type AuditAction = "create" | "read" | "export" | "replay" | "delete" | "purge" | "denied";

/** One audit event: who did what to which data, and when. */
export interface AuditEvent {
  /** Position in the log (assigned by the store; ignored by appendAudit). */
  seq?: number;
  /** ISO time. */
  at: string;
  /** The token's name ("cli" for the command line without a token, "server" for the server's own sweeps). */
  token: string;
  /** A stable id of the token (a digest prefix, never the secret), or null. */
  token_id: string | null;
  /** The acting token's tenant (null: admin or no tenant). */
  tenant: string | null;
  action: AuditAction;
  /** What was acted on: "session", "run", "episode", "runs", "episodes", "audit". */
  target_kind: string;
  target_id: string;
  /** Where it came from: "http", "ws", "mcp", "cli", "schedule". */
  via: string;
  detail: JsonValue;
}

/** Filters of the audit log; they combine with AND. */
export interface AuditQuery {
  token?: string;
  tenant?: string;
  action?: AuditAction;
  target_id?: string;
  /** ISO times, inclusive / exclusive. */
  since?: string;
  until?: string;
  /** Newest first, at most this many (default 100). */
  limit?: number;
}

/**
 * Where trajectories go. Writes are transactional per call: an episode is stored whole with all its
 * steps, or not at all, so a crash loses at most the episodes in flight.
 */
export interface TrajectoryStore {
  /** Create a run owned by `run.owner` (default: the store's owner), its heartbeat now (fails with invalid_argument if the id exists). */
  createRun(run: RunRecord): Promise<void>;
  /**
   * Take a run over to resume it: the store's owner becomes its owner, its heartbeat now, its status
   * `running`. Refused with invalid_argument while the run is `running` under another live owner.
   */
  claimRun(runId: string): Promise<RunRecord>;
  /** Stamp the heartbeat of those of these runs that are `running` under the store's owner; returns how many were stamped. */
  heartbeatRuns(runIds: readonly string[]): Promise<number>;
  /** Set a run's status as its owner leaves it (finished_at is stamped unless it is `interrupted`). */
  finishRun(runId: string, status: Exclude<RunStatus, "running">): Promise<void>;
  /** A run, or undefined; a `running` run whose owner is gone reads as `interrupted`. */
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Runs, newest first, with their status read as getRun reads it; `tenant` keeps one tenant's (null: those without). */
  listRuns(options?: { limit?: number; tenant?: string | null }): Promise<RunRecord[]>;
  /** Store episodes with their steps in one transaction. An episode id already stored fails the call. */
  writeEpisodes(episodes: StoredEpisode[]): Promise<void>;
  /** Set the advantages of stored episodes (one transaction). */
  setAdvantages(values: ReadonlyArray<{ episode_id: string; advantages: Advantages }>): Promise<void>;
  /** Episodes matching a query. */
  episodes(query?: EpisodeQuery): Promise<EpisodeRecord[]>;
  /** Episodes matching a query, with their steps, streamed in pages (constant memory for any run size). */
  streamEpisodes(query?: EpisodeQuery): AsyncIterable<StoredEpisode>;
  /** Count of episodes matching a query. */
  countEpisodes(query?: EpisodeQuery): Promise<number>;
  /** One episode, or undefined. */
  getEpisode(episodeId: string): Promise<EpisodeRecord | undefined>;
  /** The steps of one episode, in order (empty if unknown). */
  getSteps(episodeId: string): Promise<TrajectoryStepRecord[]>;
  /**
   * Remove the episodes matching `criteria` with every step, and then the runs left without episodes
   * (unless running), in one transaction; freed bytes are overwritten, not left in the file. `audit`
   * makes the event that records the removal, appended in the same transaction: a crash cannot leave a
   * deletion the audit log does not hold (not called for a dry run or when nothing matched).
   */
  purge(criteria: PurgeCriteria, audit?: (result: PurgeResult) => AuditEvent): Promise<PurgeResult>;
  /** Append events to the audit log (append-only: the store refuses to change or remove them). */
  appendAudit(events: readonly AuditEvent[]): Promise<void>;
  /** Audit events matching a query, newest first. */
  auditLog(query?: AuditQuery): Promise<AuditEvent[]>;
  /** Release the store (flushes and closes connections). Idempotent. */
  close(): Promise<void>;
}

/** The deterministic id of the `groupIndex`-th rollout of a task in a run. */
export function episodeIdOf(runId: string, taskId: string, groupIndex: number): string {
  return `${runId}/${taskId}/g${groupIndex}`;
}
