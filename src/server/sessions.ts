/**
 * Live sessions of the service (DESIGN §7): one environment instance per session, driven by HTTP,
 * WebSocket and MCP alike. The manager owns the rules every transport shares: a capacity limit, idle
 * sessions reaped after a TTL, a per-step time limit, one operation at a time per session (a second
 * concurrent one is refused with `session_busy`, never interleaved), and, for sessions created with
 * `record`, the episode written to the trajectory store when it ends or is closed.
 */
import { randomBytes } from "node:crypto";
import type { Action, Observation, ToolResult, ToolSpec, TrajectoryStepRecord } from "../core/contract.js";
import { ServiceError, toLlmixError, ValidationError } from "../core/errors.js";
import type { EnvironmentSnapshot } from "../core/environment.js";
import type { JsonValue } from "../core/json.js";
import type { AnyEnvironment, EnvironmentRegistry } from "../core/registry.js";
import { toStepRecord } from "../core/trajectory.js";
import { episodeRecord, type EpisodeJob } from "../rollout/episode.js";
import type { EpisodeRecord, RunRecord, TrajectoryStore } from "../store/types.js";

/** Limits and collaborators of a session manager. */
export interface SessionManagerOptions {
  registry: EnvironmentRegistry;
  /** Where `record` sessions go; without it `record: true` is refused. */
  store?: TrajectoryStore;
  /** Live sessions at most (default 10,000). */
  capacity?: number;
  /** A session unused this long is closed (default 15 minutes; 0 turns reaping off). */
  idleTtlMs?: number;
  /** A step (or reset) running longer fails with step_timeout and closes its session (default 60 s). */
  stepTimeoutMs?: number;
  /** The clock for idle times (tests). */
  now?: () => number;
}

/** What creating a session takes: a new episode, or a fork of a snapshot. */
export type CreateSessionRequest =
  | { env: string; task_id: string; seed: number; policy_checkpoint?: string | null; record?: boolean }
  | { snapshot: EnvironmentSnapshot; policy_checkpoint?: string | null; record?: boolean };

/** The wire form of a step result (DESIGN §1, snake_case), with the tool result lifted out of `info`. */
export interface StepResponse {
  observation: Observation;
  reward: number;
  reward_components: Record<string, number>;
  terminated: boolean;
  truncated: boolean;
  tool_result: ToolResult | null;
  info: Record<string, unknown>;
}

/** What a new session returns. */
export interface CreatedSession {
  session_id: string;
  env: string;
  env_version: string;
  task_id: string;
  seed: number;
  observation: Observation;
  tools: ToolSpec[];
}

/** A live session's public state. */
export interface SessionInfo {
  session_id: string;
  env: string;
  env_version: string;
  task_id: string;
  seed: number;
  steps: number;
  ended: boolean;
  record: boolean;
  created_at: string;
  idle_ms: number;
}

interface Session {
  id: string;
  env: AnyEnvironment;
  envId: string;
  taskId: string;
  seed: number;
  policyCheckpoint: string | null;
  record: boolean;
  /** The observation the next action will act on (what the step record's `observation` holds). */
  observation: Observation;
  /**
   * Step records up to the end of the episode: whole when recording, otherwise trimmed to what the
   * episode summary needs (so `close` can summarise any session without holding every observation).
   */
  steps: TrajectoryStepRecord[];
  stepCount: number;
  ended: boolean;
  /** The episode as written to the store; a recorded session is stored once. */
  stored: EpisodeRecord | null;
  busy: boolean;
  createdAt: Date;
  lastUsed: number;
}

/** Counters for /metrics. */
export interface SessionStats {
  live: number;
  created_total: number;
  steps_total: number;
  reaped_total: number;
  /** Step latencies in seconds since the last `drainLatencies` (for a histogram). */
  latencies: number[];
}

const DEFAULTS = { capacity: 10_000, idleTtlMs: 15 * 60_000, stepTimeoutMs: 60_000 };

/** Creates, drives and ends sessions. One instance per server. */
export class SessionManager {
  private readonly sessions = new Map<string, Session>();
  private readonly capacity: number;
  private readonly idleTtlMs: number;
  private readonly stepTimeoutMs: number;
  private readonly now: () => number;
  private readonly runs = new Map<string, Promise<string>>();
  private readonly started = new Date();
  private reaper: NodeJS.Timeout | null = null;
  private inFlight = new Set<Promise<unknown>>();
  private closing = false;
  private stopped: Promise<void> | undefined;
  private readonly stats = { created_total: 0, steps_total: 0, reaped_total: 0, latencies: [] as number[] };

  constructor(private readonly options: SessionManagerOptions) {
    this.capacity = options.capacity ?? DEFAULTS.capacity;
    this.idleTtlMs = options.idleTtlMs ?? DEFAULTS.idleTtlMs;
    this.stepTimeoutMs = options.stepTimeoutMs ?? DEFAULTS.stepTimeoutMs;
    this.now = options.now ?? Date.now;
    for (const [name, value] of [["capacity", this.capacity], ["idleTtlMs", this.idleTtlMs], ["stepTimeoutMs", this.stepTimeoutMs]] as const) {
      if (!Number.isSafeInteger(value) || value < 0) throw new ValidationError("invalid_config", `${name} must be an integer >= 0, got ${value}`);
    }
  }

  /** Reap idle sessions every `intervalMs` (a timer that does not keep the process alive). */
  startReaper(intervalMs = Math.max(1000, Math.min(60_000, this.idleTtlMs / 4))): void {
    if (this.idleTtlMs === 0 || this.reaper) return;
    this.reaper = setInterval(() => void this.reapIdle(), intervalMs);
    this.reaper.unref();
  }

  /** Start a session: a new episode (env, task_id, seed) or a fork of a snapshot. */
  async create(request: CreateSessionRequest): Promise<CreatedSession> {
    this.assertOpen();
    if (this.sessions.size >= this.capacity) {
      throw new ServiceError("capacity_reached", `the service holds ${this.sessions.size} live sessions, its capacity; close one or retry later`, {
        capacity: this.capacity,
        retry_after_s: 1,
      });
    }
    const record = request.record === true;
    if (record && !this.options.store) throw new ValidationError("invalid_argument", "record: true needs a trajectory store; start the service with --store");
    const fork = "snapshot" in request;
    const envId = fork ? snapshotEnv(request.snapshot) : request.env;
    const entry = this.options.registry.get(envId);
    const env = entry.create();
    const id = `ses_${randomBytes(12).toString("hex")}`;
    // Reserve the slot at once, so concurrent creates cannot overshoot the capacity.
    const placeholder = { id, busy: true } as Session;
    this.sessions.set(id, placeholder);
    // Tracked like a step, so shutdown waits for it instead of leaving its environment open.
    const work = this.createSession(request, id, entry, env, record);
    this.inFlight.add(work);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
    }
  }

  private async createSession(
    request: CreateSessionRequest,
    id: string,
    entry: { id: string; version: string },
    env: AnyEnvironment,
    record: boolean,
  ): Promise<CreatedSession> {
    try {
      let observation: Observation;
      let taskId: string;
      let seed: number;
      let stepCount = 0;
      if ("snapshot" in request) {
        await this.withTimeout(env.restore(request.snapshot), "restore");
        taskId = request.snapshot.task_id;
        seed = request.snapshot.seed;
        stepCount = request.snapshot.step;
        // A snapshot does not hold the last observation; the fork's first step record starts empty.
        observation = { rendered: "", tokens: 0 };
      } else {
        taskId = request.task_id;
        seed = request.seed;
        observation = await this.withTimeout(env.reset(taskId, seed), "reset");
      }
      const session: Session = {
        id, env, envId: entry.id, taskId, seed, policyCheckpoint: request.policy_checkpoint ?? null, record, observation,
        steps: [], stepCount, ended: "snapshot" in request && request.snapshot.status !== "running", stored: null, busy: false,
        createdAt: new Date(this.now()), lastUsed: this.now(),
      };
      this.sessions.set(id, session);
      this.stats.created_total++;
      return { session_id: id, env: entry.id, env_version: entry.version, task_id: taskId, seed, observation, tools: env.tools() };
    } catch (error) {
      this.sessions.delete(id);
      await env.close();
      throw error;
    }
  }

  /** Apply one action. A malformed action is answered by the environment (invalid_call), not thrown. */
  async step(sessionId: string, action: unknown): Promise<StepResponse> {
    return this.exclusive(sessionId, async (s) => {
      const started = performance.now();
      const result = await this.withTimeout(s.env.step(action as Action), "step", s);
      this.stats.steps_total++;
      s.stepCount++;
      this.stats.latencies.push((performance.now() - started) / 1000);
      if (this.stats.latencies.length > 100_000) this.stats.latencies.splice(0, 50_000);
      // Steps after the end are answered by the environment but are not part of the episode.
      if (!s.ended) {
        const record = toStepRecord({
          episodeId: s.id, taskId: s.taskId, envVersion: s.env.info.version, policyCheckpoint: s.policyCheckpoint,
          step: s.steps.length + 1, observation: s.observation, action, result,
        });
        s.steps.push(s.record && !s.stored ? record : summaryOnly(record));
      }
      s.observation = result.observation;
      let info = result.info;
      if ((result.terminated || result.truncated) && !s.ended) {
        s.ended = true;
        // The step happened whatever the store says: its result is answered, with the failure to record it.
        await this.saveEpisode(s).catch((error: unknown) => {
          info = { ...info, record_error: toLlmixError(error).toJSON() };
        });
      }
      return {
        observation: result.observation,
        reward: result.reward,
        reward_components: result.rewardComponents,
        terminated: result.terminated,
        truncated: result.truncated,
        tool_result: (result.info.tool_result as ToolResult | undefined) ?? null,
        info,
      };
    });
  }

  /** The session's full snapshot (restore or fork it later). */
  async snapshot(sessionId: string): Promise<EnvironmentSnapshot> {
    return this.exclusive(sessionId, (s) => s.env.snapshot());
  }

  /** Continue the session from a snapshot of the same environment (recording restarts from there). */
  async restore(sessionId: string, snapshot: unknown): Promise<void> {
    return this.exclusive(sessionId, async (s) => {
      await this.withTimeout(s.env.restore(snapshot as EnvironmentSnapshot), "restore", s);
      const snap = snapshot as EnvironmentSnapshot;
      s.taskId = snap.task_id;
      s.seed = snap.seed;
      s.steps = [];
      s.stepCount = snap.step;
      // The observation before the restore is not the one the next action acts on.
      s.observation = { rendered: "", tokens: 0 };
      s.ended = snap.status !== "running";
    });
  }

  /** The tools valid in the session's episode (declared form: the MCP and OpenAI shapes come from it). */
  toolDefinitions(sessionId: string) {
    return this.require(sessionId).env.toolDefinitions();
  }

  /** The JSON-Schema tool definitions of the session's episode. */
  tools(sessionId: string): ToolSpec[] {
    return this.require(sessionId).env.tools();
  }

  /** A live session's state. */
  info(sessionId: string): SessionInfo {
    const s = this.require(sessionId);
    return {
      session_id: s.id, env: s.envId, env_version: s.env.info.version, task_id: s.taskId, seed: s.seed, steps: s.stepCount,
      ended: s.ended, record: s.record, created_at: s.createdAt.toISOString(), idle_ms: this.now() - s.lastUsed,
    };
  }

  /** End a session: the episode summary (stored first when recording). Unknown id: unknown_session. */
  async close(sessionId: string): Promise<EpisodeRecord> {
    let failed: unknown;
    const summary = await this.exclusive(sessionId, async (s) => {
      // A store that refuses the episode must not keep the session alive: it is closed, and the error told.
      if (s.record && !s.ended) await this.saveEpisode(s).catch((error: unknown) => (failed = error));
      return s.stored ?? this.summary(s);
    });
    await this.drop(sessionId);
    if (failed !== undefined) throw failed;
    return summary;
  }

  /** Close sessions idle longer than the TTL; returns how many. */
  async reapIdle(): Promise<number> {
    if (this.idleTtlMs === 0) return 0;
    const now = this.now();
    const idle = [...this.sessions.values()].filter((s) => !s.busy && now - s.lastUsed > this.idleTtlMs);
    for (const s of idle) {
      if (s.record && !s.ended) await this.saveEpisode(s).catch(() => undefined);
      await this.drop(s.id);
      this.stats.reaped_total++;
    }
    return idle.length;
  }

  /** Counters for /metrics; latencies are drained (each reported once). */
  drainStats(): SessionStats {
    const latencies = this.stats.latencies;
    this.stats.latencies = [];
    return { live: this.sessions.size, created_total: this.stats.created_total, steps_total: this.stats.steps_total, reaped_total: this.stats.reaped_total, latencies };
  }

  /** Live session count. */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * Stop: refuse new work, wait for in-flight operations, store recorded episodes that are still open,
   * close every environment. Idempotent.
   */
  shutdown(): Promise<void> {
    // One shutdown however many callers (a signal handler and the app's close hook): two concurrent
    // passes would both try to store the same open episodes.
    return (this.stopped ??= this.stopAll());
  }

  private async stopAll(): Promise<void> {
    this.closing = true;
    if (this.reaper) clearInterval(this.reaper);
    this.reaper = null;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    for (const s of [...this.sessions.values()]) {
      if (s.record && !s.ended && s.env) await this.saveEpisode(s).catch(() => undefined);
      await this.drop(s.id);
    }
  }

  // ----- internals -----------------------------------------------------------------------------------

  private require(sessionId: string): Session {
    const s = typeof sessionId === "string" ? this.sessions.get(sessionId) : undefined;
    if (!s || !s.env) throw new ServiceError("unknown_session", `no live session "${String(sessionId)}" (closed, reaped after being idle, or never created)`);
    return s;
  }

  private assertOpen(): void {
    if (this.closing) throw new ServiceError("capacity_reached", "the service is shutting down", { retry_after_s: 5 });
  }

  /** Run `fn` as the session's only operation; a concurrent one gets session_busy. */
  private async exclusive<T>(sessionId: string, fn: (s: Session) => Promise<T> | T): Promise<T> {
    this.assertOpen();
    const s = this.require(sessionId);
    if (s.busy) throw new ServiceError("session_busy", `session ${sessionId} is busy with another request; send its operations one at a time`);
    s.busy = true;
    const work = (async () => fn(s))();
    this.inFlight.add(work);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
      s.busy = false;
      s.lastUsed = this.now();
    }
  }

  /** Race an environment call against the step time limit; on timeout the session is closed. */
  private async withTimeout<T>(work: Promise<T>, what: string, session?: Session): Promise<T> {
    if (this.stepTimeoutMs === 0) return work;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ServiceError("step_timeout", `${what} took longer than ${this.stepTimeoutMs} ms; the session was closed`)), this.stepTimeoutMs);
    });
    try {
      return await Promise.race([work, timeout]);
    } catch (error) {
      if (error instanceof ServiceError && error.code === "step_timeout" && session) {
        work.catch(() => undefined);
        // The environment may still be inside the call: drop the session, close the instance when it is done.
        this.sessions.delete(session.id);
        void work.finally(() => session.env.close()).catch(() => undefined);
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private summary(s: Session): EpisodeRecord {
    // A session closed before its first step still has a version; the record would take it from a step.
    return { ...episodeRecord(this.jobOf(s, ""), s.steps, null, s.createdAt, new Date(this.now())), env_version: s.env.info.version };
  }

  private jobOf(s: Session, runId: string): EpisodeJob {
    return {
      run_id: runId, episode_id: s.id, env: s.envId, task_id: s.taskId, seed: s.seed, group_id: s.id, group_index: 0,
      policy: "service", policy_checkpoint: s.policyCheckpoint,
    };
  }

  /** Write a recorded session's episode (once) under this server's run for its environment. */
  private async saveEpisode(s: Session): Promise<void> {
    const store = this.options.store;
    if (!s.record || s.stored || !store || s.steps.length === 0) return;
    const runId = await this.runFor(s);
    const episode = episodeRecord(this.jobOf(s, runId), s.steps, null, s.createdAt, new Date(this.now()));
    await store.writeEpisodes([{ episode, steps: s.steps }]);
    // Stored once: a later close, restore or reap must not write the same episode id again.
    s.stored = episode;
    s.steps = s.steps.map(summaryOnly);
  }

  /** The run that holds this server's recorded sessions of one environment (created on first use). */
  private runFor(s: Session): Promise<string> {
    let run = this.runs.get(s.envId);
    if (!run) {
      const store = this.options.store as TrajectoryStore;
      const stamp = this.started.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
      const runId = `serve-${stamp}-${randomBytes(3).toString("hex")}-${s.envId}`;
      const record: RunRecord = {
        run_id: runId, env: s.envId, env_version: s.env.info.version, policy: "service", policy_checkpoint: null,
        config: { source: "llmix serve" } as JsonValue, tools: s.env.tools(), status: "running", planned_episodes: 0,
        created_at: this.started.toISOString(), finished_at: null,
      };
      run = store.createRun(record).then(() => runId);
      run.catch(() => this.runs.delete(s.envId));
      this.runs.set(s.envId, run);
    }
    return run;
  }

  private async drop(sessionId: string): Promise<void> {
    const s = this.sessions.get(sessionId);
    this.sessions.delete(sessionId);
    if (s?.env) await s.env.close().catch(() => undefined);
  }
}

/** A step record cut down to what an episode summary reads (tokens, rewards, tool status and cost, the end). */
function summaryOnly(record: TrajectoryStepRecord): TrajectoryStepRecord {
  const ended = record.terminated || record.truncated;
  const tool = record.tool_result;
  return {
    ...record,
    observation: { rendered: "", tokens: record.observation.tokens },
    tool_result: tool ? { status: tool.status, latency_ms: tool.latency_ms, cost: tool.cost, output: null } : null,
    info: ended ? record.info : {},
  };
}

function snapshotEnv(snapshot: unknown): string {
  const env = (snapshot as { env?: unknown } | null)?.env;
  if (typeof env !== "string") throw new ValidationError("invalid_snapshot", "snapshot.env must name the environment the snapshot is of");
  return env;
}
