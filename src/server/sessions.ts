/**
 * Live sessions of the service (DESIGN §7), driven by HTTP, WebSocket and MCP alike. The sessions
 * themselves run on environment hosts (src/hosts): this thread never runs environment code. The
 * manager owns the rules every transport shares: a capacity limit, idle sessions reaped after a TTL,
 * one operation at a time per session (a second concurrent one is refused with `session_busy`, never
 * interleaved), sessions owned by the token that created them (another token gets `unknown_session`,
 * admin excepted), snapshots restored only when this service signed them (admin excepted), and, for
 * sessions created with `record`, the episode written to the trajectory store when it ends or is closed.
 *
 * A step that overruns the step deadline, pushes its host over its memory cap or ends its host's thread
 * ends its session with `step_timeout`, `resource_exhausted` or `host_failed`; a recorded one is stored
 * with that end reason (outcome 0). The host's other sessions are rebuilt on a new host and go on.
 *
 * With a `fleet` (fleet.ts), sessions belong to the fleet, not to this replica: every operation takes
 * the session's fleet-wide lock, brings this replica's copy up to date (replaying what other replicas
 * did, or rebuilding it from the shared checkpoint), and commits what it changed before answering. The
 * local sessions are then a cache: capacity bounds the copies held here, and a copy unused for a while
 * is dropped. A replica that stops leaves its sessions to the others instead of closing them.
 */
import { randomBytes } from "node:crypto";
import type { Observation, ToolSpec, TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError, ServiceError, toLlmixError, ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import { toStepRecord } from "../core/trajectory.js";
import { HostPool, modulesFor, type HostPoolStats } from "../hosts/host-pool.js";
import { randomSnapshotKey } from "../hosts/signing.js";
import type { RedactionRules } from "../store/redaction.js";
import { episodeRecord, type EpisodeJob } from "../rollout/episode.js";
import { startHeartbeat, type Heartbeat } from "../store/liveness.js";
import type { EpisodeRecord, RunRecord, TrajectoryStore } from "../store/types.js";
import type { Fleet, FleetCommit, FleetSessionMeta, FleetSessionState } from "./fleet.js";
import { JsonText } from "./json-text.js";

/** Limits and collaborators of a session manager. */
export interface SessionManagerOptions {
  registry: EnvironmentRegistry;
  /** Where `record` sessions go; without it `record: true` is refused. */
  store?: TrajectoryStore;
  /** Live sessions at most (default 10,000). */
  capacity?: number;
  /** A session unused this long is closed (default 15 minutes; 0 turns reaping off). */
  idleTtlMs?: number;
  /** A step (or reset) running longer is stopped: step_timeout, and its session is closed (default 60 s; 0: none). */
  stepTimeoutMs?: number;
  /** Environment host threads (default: the core count). */
  hosts?: number;
  /** Heap cap of each host thread, MiB (default 1024). */
  hostMemoryMb?: number;
  /** Key of snapshot signatures, hex (default: random, so snapshots die with the server). */
  snapshotKey?: string;
  /** Sessions each host keeps live before parking the least recently used (default 1000). */
  residentSessions?: number;
  /** The clock for idle times (tests). */
  now?: () => number;
  /** Share sessions with other replicas through Redis (joined by the caller); see fleet.ts. */
  fleet?: Fleet;
  /** Options each environment's session instances are created with, by environment id (a judge, a step budget). */
  envOptions?: Record<string, Record<string, unknown>>;
  /** The data policy's redaction rules: the hosts redact recorded steps, episode summaries and replay reports (src/store/redaction.ts). */
  redaction?: RedactionRules;
}

/**
 * Who is asking: the token's name and whether it holds `admin`, and under a data policy its id, its
 * tenant and the environments it may use; null when the service has no auth.
 */
export type Caller = { name: string; admin: boolean; id?: string; tenant?: string | null; environments?: readonly string[] | null } | null;

/** The owner a session records for its creator: the tenant when there is one (its tokens share sessions), else the token. */
export function ownerOf(caller: Caller): string | null {
  if (caller === null) return null;
  return caller.tenant ? `tenant:${caller.tenant}` : caller.name;
}

/** What creating a session takes: a new episode, or a fork of a snapshot. */
export type CreateSessionRequest =
  | { env: string; task_id: string; seed: number; policy_checkpoint?: string | null; record?: boolean }
  | { snapshot: unknown; policy_checkpoint?: string | null; record?: boolean };

/** The wire form of a step result (DESIGN §1, snake_case), with the tool result lifted out of `info`. */
export interface StepResponse {
  observation: Observation;
  reward: number;
  reward_components: Record<string, number>;
  terminated: boolean;
  truncated: boolean;
  tool_result: import("../core/contract.js").ToolResult | null;
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

/** A live session: what it was created as (the fields a fleet shares, fleet.ts) and where it stands. */
interface Session extends Omit<FleetSessionMeta, "createdAt"> {
  id: string;
  stepCount: number;
  ended: boolean;
  /** Step records of a recorded session until its episode is stored (the host keeps none). */
  records: TrajectoryStepRecord[];
  /** The last answer (JSON text): a lost reply is answered again from it, and it holds the observation the next action acts on. */
  lastAnswer: string | null;
  /** The episode as written to the store; a recorded session is stored once. */
  stored: EpisodeRecord | null;
  busy: boolean;
  createdAt: Date;
  lastUsed: number;
  /** Fleet only: counted actions since the start, the epoch (bumped by a restore), and the fleet's checkpoint position. */
  seq: number;
  epoch: number;
  fleetBase: number;
  /** Fleet only: another replica stored the episode already. */
  storedElsewhere: boolean;
}

/** The fleet lock an operation holds, and whether its commit already released it. */
interface FleetTurn {
  token: string;
  state: FleetSessionState;
  released: boolean;
}

/** Counters for /metrics. */
export interface SessionStats {
  live: number;
  created_total: number;
  steps_total: number;
  reaped_total: number;
  /** Step latencies in seconds since the last `drainStats` (for a histogram). */
  latencies: number[];
  hosts: HostPoolStats;
  /** Fleet only: sessions this replica brought here from the fleet's state, and actions it replayed to catch up copies. */
  fleet_adopted_total: number;
  fleet_replayed_total: number;
}

const DEFAULTS = { capacity: 10_000, idleTtlMs: 15 * 60_000, stepTimeoutMs: 60_000 };
/** In a fleet, a local copy unused this long is dropped (the fleet keeps the session). */
const FLEET_COPY_IDLE_MS = 60_000;
/** How long a stop waits for in-flight steps before it stops their hosts. */
const SHUTDOWN_GRACE_MS = 5_000;

/** Error codes with which a host stop ends the session it was running. */
const HOST_STOPS = new Set(["step_timeout", "resource_exhausted", "host_failed"]);

/** Creates, drives and ends sessions. One instance per server. */
export class SessionManager {
  private readonly sessions = new Map<string, Session>();
  private readonly capacity: number;
  private readonly idleTtlMs: number;
  private readonly stepTimeoutMs: number;
  private readonly now: () => number;
  private readonly pool: HostPool;
  private readonly runs = new Map<string, Promise<string>>();
  /** Ids of this server's runs (one per environment with recorded sessions), kept alive by a heartbeat. */
  private readonly runIds: string[] = [];
  private heartbeat: Heartbeat | null = null;
  /** The tool set of each environment's run, from its first recorded session. */
  private readonly runTools = new Map<string, ToolSpec[]>();
  private readonly started = new Date();
  private reaper: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing = false;
  private stopped: Promise<void> | undefined;
  private readonly stats = { created_total: 0, steps_total: 0, reaped_total: 0, latencies: [] as number[], fleet_adopted_total: 0, fleet_replayed_total: 0 };
  private readonly fleet: Fleet | undefined;

  constructor(private readonly options: SessionManagerOptions) {
    this.capacity = options.capacity ?? DEFAULTS.capacity;
    this.idleTtlMs = options.idleTtlMs ?? DEFAULTS.idleTtlMs;
    this.stepTimeoutMs = options.stepTimeoutMs ?? DEFAULTS.stepTimeoutMs;
    this.now = options.now ?? Date.now;
    this.fleet = options.fleet;
    for (const [name, value] of [["capacity", this.capacity], ["idleTtlMs", this.idleTtlMs], ["stepTimeoutMs", this.stepTimeoutMs]] as const) {
      if (!Number.isSafeInteger(value) || value < 0) throw new ValidationError("invalid_config", `${name} must be an integer >= 0, got ${value}`);
    }
    this.pool = new HostPool({
      modules: modulesFor(options.registry),
      size: options.hosts,
      heapMb: options.hostMemoryMb,
      stepTimeoutMs: this.stepTimeoutMs,
      snapshotKey: options.snapshotKey ?? randomSnapshotKey(),
      residentSessions: options.residentSessions,
      onSessionLost: (sid, error) => void this.onLost(sid, error),
      envOptions: options.envOptions,
      redaction: options.redaction,
    });
  }

  /** Resolves once the environment hosts are up (rejects with host_failed if they cannot start). */
  ready(): Promise<void> {
    return this.pool.ready();
  }

  /** Reap idle sessions every `intervalMs` (a timer that does not keep the process alive). */
  startReaper(intervalMs = Math.max(1000, Math.min(60_000, this.idleTtlMs / 4))): void {
    if (this.idleTtlMs === 0 || this.reaper) return;
    this.reaper = setInterval(() => void this.reapIdle(), intervalMs);
    this.reaper.unref();
  }

  /** Start a session: a new episode (env, task_id, seed) or a fork of a snapshot. */
  async create(request: CreateSessionRequest, caller: Caller = null): Promise<JsonText<CreatedSession>> {
    this.assertOpen();
    if (this.sessions.size >= this.capacity && !this.evictCopy()) {
      throw new ServiceError("capacity_reached", `the service holds ${this.sessions.size} live sessions, its capacity; close one or retry later`, {
        capacity: this.capacity,
        retry_after_s: 1,
      });
    }
    const record = request.record === true;
    if (record && !this.options.store) throw new ValidationError("invalid_argument", "record: true needs a trajectory store; start the service with --store");
    const fork = "snapshot" in request;
    const envId = fork ? snapshotEnv(request.snapshot) : request.env;
    // Unknown ids fail here, before a host is asked.
    this.options.registry.get(envId);
    const id = `ses_${randomBytes(12).toString("hex")}`;
    // Reserve the slot at once, so concurrent creates cannot overshoot the capacity.
    this.sessions.set(id, { id, busy: true } as Session);
    const work = this.open(id, request, envId, record, caller);
    this.inFlight.add(work);
    try {
      return await work;
    } catch (error) {
      this.sessions.delete(id);
      throw error;
    } finally {
      this.inFlight.delete(work);
    }
  }

  private async open(id: string, request: CreateSessionRequest, envId: string, record: boolean, caller: Caller): Promise<JsonText<CreatedSession>> {
    const policyCheckpoint = request.policy_checkpoint ?? null;
    const start =
      "snapshot" in request
        ? { sid: id, env: envId, record, policy_checkpoint: policyCheckpoint, snapshot: request.snapshot, trusted: caller?.admin === true }
        : { sid: id, env: envId, record, policy_checkpoint: policyCheckpoint, task_id: request.task_id, seed: request.seed };
    const opened = await this.pool.open(start);
    if (record && !this.runTools.has(envId)) this.runTools.set(envId, (JSON.parse(opened.body) as CreatedSession).tools);
    const now = this.now();
    const session: Session = {
      id, owner: ownerOf(caller), tenant: caller?.tenant ?? null, envId, envVersion: opened.env_version, taskId: opened.task_id, seed: opened.seed, policyCheckpoint, record,
      stepCount: opened.step, ended: opened.ended, records: [], lastAnswer: record && !("snapshot" in request) ? opened.body : null, stored: null,
      busy: true, createdAt: new Date(now), lastUsed: now, seq: 0, epoch: 0, fleetBase: 0, storedElsewhere: false,
    };
    if (this.fleet) {
      const track = this.pool.trackOf(id);
      const meta = { owner: session.owner, tenant: session.tenant ?? null, envId, envVersion: session.envVersion, taskId: session.taskId, seed: session.seed, policyCheckpoint, record, createdAt: session.createdAt.toISOString() };
      try {
        await this.fleet.register(id, meta, track.start, { steps: opened.step, digest: opened.digest, ended: opened.ended, checkpoint: track.checkpoint, body: opened.body }, now);
      } catch (error) {
        void this.pool.closeSession(id, session.createdAt, session.createdAt).catch(() => undefined);
        throw error;
      }
    }
    session.busy = false;
    this.sessions.set(id, session);
    this.stats.created_total++;
    return new JsonText<CreatedSession>(opened.body);
  }

  /**
   * Apply one action. A malformed action is answered by the environment (invalid_call), not thrown.
   * With `expectSteps` (the steps the client counted before this action), a retry of an action whose
   * answer was lost gets that answer again instead of acting twice; any other mismatch is step_conflict.
   */
  async step(sessionId: string, action: unknown, caller: Caller = null, expectSteps?: number): Promise<JsonText<StepResponse>> {
    return this.exclusive(sessionId, caller, async (s, turn) => {
      if (expectSteps !== undefined && expectSteps !== s.stepCount) {
        if (expectSteps === s.stepCount - 1 && s.lastAnswer !== null) return new JsonText<StepResponse>(s.lastAnswer);
        throw new LlmixError("step_conflict", `the session has taken ${s.stepCount} steps, not the ${expectSteps} this step expected: the action was not applied`, { steps: s.stepCount, expect_steps: expectSteps });
      }
      const started = performance.now();
      let reply;
      try {
        reply = await this.pool.step(s.id, action);
      } catch (error) {
        throw await this.afterFailedStep(s, action, error);
      }
      this.stats.steps_total++;
      s.stepCount++;
      this.stats.latencies.push((performance.now() - started) / 1000);
      if (this.stats.latencies.length > 100_000) this.stats.latencies.splice(0, 50_000);
      if (turn) await this.commitStep(s, turn, action, reply);
      else if (reply.record && !s.stored) s.records.push(reply.record);
      // Kept for every session: a retried step (expect_steps) whose answer was lost gets it again.
      s.lastAnswer = reply.body;
      let body = reply.body;
      if (reply.ended) {
        s.ended = true;
        // The step happened whatever the store says: its result is answered, with the failure to record it.
        await this.saveEpisode(s).catch((error: unknown) => {
          const value = JSON.parse(body) as StepResponse;
          value.info = { ...value.info, record_error: toLlmixError(error).toJSON() };
          body = JSON.stringify(value);
        });
      }
      return new JsonText<StepResponse>(body);
    });
  }

  /** The session's signed snapshot, as `{"snapshot": {...}}` (restore or fork it later). */
  async snapshot(sessionId: string, caller: Caller = null): Promise<JsonText<{ snapshot: JsonValue }>> {
    return this.exclusive(sessionId, caller, async (s) => new JsonText(await this.pool.snapshot(s.id)));
  }

  /** Continue the session from a snapshot of the same environment (recording restarts from there). */
  async restore(sessionId: string, snapshot: unknown, caller: Caller = null): Promise<void> {
    return this.exclusive(sessionId, caller, async (s, turn) => {
      let restored;
      try {
        restored = await this.pool.restore(s.id, snapshot, caller?.admin === true);
      } catch (error) {
        throw await this.afterFailedStep(s, null, error);
      }
      s.taskId = restored.task_id;
      s.seed = restored.seed;
      s.records = [];
      s.lastAnswer = null;
      s.stepCount = restored.step;
      s.ended = restored.ended;
      if (turn && this.fleet) {
        // A new epoch: copies on other replicas are of the session before the restore, and are rebuilt.
        const track = this.pool.trackOf(s.id);
        s.epoch++;
        s.fleetBase = s.seq;
        await this.fleet.commit(s.id, turn.token, { seq: s.seq, steps: s.stepCount, digest: track.digest, ended: s.ended, last: "", mode: "restart", checkpoint: track.checkpoint, base: s.seq, epoch: s.epoch }, this.now());
        turn.released = true;
      }
    });
  }

  /** The tools valid in the session's episode: JSON-Schema specs and their MCP form. */
  async tools(sessionId: string, caller: Caller = null): Promise<{ tools: ToolSpec[]; mcp: Array<Record<string, unknown>> }> {
    return this.exclusive(sessionId, caller, (s) => this.pool.tools(s.id));
  }

  /** A live session's state. */
  async info(sessionId: string, caller: Caller = null): Promise<SessionInfo> {
    if (this.fleet) return this.fleetInfo(sessionId, caller);
    const s = this.require(sessionId, caller);
    return {
      session_id: s.id, env: s.envId, env_version: s.envVersion, task_id: s.taskId, seed: s.seed, steps: s.stepCount,
      ended: s.ended, record: s.record, created_at: s.createdAt.toISOString(), idle_ms: this.now() - s.lastUsed,
    };
  }

  /** End a session: the episode summary (stored first when recording). Unknown id: unknown_session. */
  async close(sessionId: string, caller: Caller = null): Promise<EpisodeRecord> {
    let failed: unknown;
    const summary = await this.exclusive(sessionId, caller, async (s, turn) => {
      this.sessions.delete(s.id);
      // A store that refuses the episode must not keep the session alive: it is closed, and the error told.
      // (In a fleet, an episode that ended elsewhere may still be unstored: the replica that ended it died first.)
      if (s.record && (!s.ended || turn)) await this.saveEpisode(s).catch((error: unknown) => (failed = error));
      if (turn && this.fleet) {
        await this.fleet.remove(s.id);
        turn.released = true;
      }
      const closed = await this.pool.closeSession(s.id, s.createdAt, new Date(this.now()));
      return s.stored ?? closed.summary;
    });
    if (failed !== undefined) throw failed;
    return summary;
  }

  /** Close sessions idle longer than the TTL; returns how many. */
  async reapIdle(): Promise<number> {
    if (this.fleet) return this.reapFleet();
    if (this.idleTtlMs === 0) return 0;
    const now = this.now();
    const idle = [...this.sessions.values()].filter((s) => !s.busy && s.createdAt && now - s.lastUsed > this.idleTtlMs);
    for (const s of idle) {
      await this.close(s.id, { name: "reaper", admin: true }).catch(() => undefined);
      this.stats.reaped_total++;
    }
    return idle.length;
  }

  /** Counters for /metrics; latencies are drained (each reported once). */
  drainStats(): SessionStats {
    const latencies = this.stats.latencies;
    this.stats.latencies = [];
    return {
      live: this.sessions.size, created_total: this.stats.created_total, steps_total: this.stats.steps_total, reaped_total: this.stats.reaped_total, latencies,
      hosts: this.pool.snapshotStats(), fleet_adopted_total: this.stats.fleet_adopted_total, fleet_replayed_total: this.stats.fleet_replayed_total,
    };
  }

  /** Live session count. */
  get size(): number {
    return this.sessions.size;
  }

  /** Run a job (replay, task listing, environment details) on the hosts' job thread. */
  job(job: Parameters<HostPool["job"]>[0]): Promise<unknown> {
    this.assertOpen();
    return this.pool.job(job);
  }

  /**
   * Stop: refuse new work, wait for in-flight operations, store recorded episodes that are still open,
   * close every session and stop the hosts. Idempotent.
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
    // In-flight steps may finish within the grace; a step that never returns must not hold the stop
    // hostage (it would until its deadline): past the grace the hosts are stopped under it.
    const grace = new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref());
    const settled = (async () => {
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    })();
    if ((await Promise.race([settled.then(() => "done" as const), grace.then(() => "late" as const)])) === "late") {
      await this.pool.close();
      await settled;
    }
    for (const s of [...this.sessions.values()]) {
      // In a fleet the sessions live on (another replica takes them over); alone, they end here.
      if (!this.fleet && s.record && !s.ended && s.createdAt) await this.saveEpisode(s).catch(() => undefined);
      this.drop(s.id);
    }
    await this.pool.close();
    await this.fleet?.leave();
    // A clean stop: this server's runs are finished (a killed server's stay running, and read as interrupted).
    this.heartbeat?.stop();
    const store = this.options.store;
    if (store) await Promise.all(this.runIds.map((id) => store.finishRun(id, "finished").catch(() => undefined)));
  }


  // ----- the fleet (see fleet.ts) --------------------------------------------------------------------

  /** `exclusive` in a fleet: the fleet-wide lock, this replica's copy brought up to date, the lock released. */
  private async fleetExclusive<T>(fleet: Fleet, sessionId: string, caller: Caller, fn: (s: Session, turn: FleetTurn) => Promise<T> | T): Promise<T> {
    if (typeof sessionId !== "string" || sessionId === "") throw new ServiceError("unknown_session", `no live session "${String(sessionId)}"`);
    const local = this.sessions.get(sessionId);
    if (local?.busy) throw new ServiceError("session_busy", `session ${sessionId} is busy with another request; send its operations one at a time`);
    const turn: FleetTurn = { token: fleet.token(), state: undefined as unknown as FleetSessionState, released: false };
    const work = (async () => {
      turn.state = await fleet.acquire(sessionId, turn.token);
      if (!visibleTo(turn.state.meta.owner, caller)) throw new ServiceError("unknown_session", `no live session "${sessionId}" (closed, reaped after being idle, or never created)`);
      const s = await this.currentCopy(fleet, sessionId, turn.state);
      s.busy = true;
      try {
        return await fn(s, turn);
      } finally {
        s.busy = false;
        s.lastUsed = this.now();
      }
    })();
    this.inFlight.add(work);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
      // A refused acquire holds nothing; otherwise the lock goes unless a commit already released it.
      if (turn.state && !turn.released) await fleet.release(sessionId, turn.token, this.now()).catch(() => undefined);
    }
  }

  /**
   * This replica's copy of a fleet session, as the fleet has it: kept if current, caught up by replaying
   * the actions it missed (when it is of the same epoch and not older than the fleet's checkpoint), or
   * else rebuilt from the checkpoint. A replay that does not end on the fleet's digest is rebuilt too.
   */
  private async currentCopy(fleet: Fleet, sid: string, state: FleetSessionState): Promise<Session> {
    let s = this.sessions.get(sid);
    if (s?.createdAt && s.epoch === state.epoch && s.seq === state.seq && this.pool.trackOf(sid).digest === state.digest) {
      // Steps after the end change nothing but the count and the last answer: take those from the fleet.
      if (s.stepCount !== state.steps) s.lastAnswer = await fleet.lastAnswer(sid);
      return Object.assign(s, this.fleetFields(state));
    }
    if (s?.createdAt && s.epoch === state.epoch && s.seq < state.seq && s.seq >= state.abase) {
      const { actions } = await fleet.history(sid, state, s.seq, false);
      for (const action of actions) await this.pool.step(sid, action);
      this.stats.fleet_replayed_total += actions.length;
      if (this.pool.trackOf(sid).digest === state.digest) {
        Object.assign(s, this.fleetFields(state), { lastAnswer: await fleet.lastAnswer(sid) });
        return s;
      }
    }
    if (s) this.drop(sid);
    if (this.sessions.size >= this.capacity && !this.evictCopy()) {
      throw new ServiceError("capacity_reached", `this replica holds ${this.sessions.size} sessions, its capacity, all busy; retry later`, { capacity: this.capacity, retry_after_s: 1 });
    }
    const { checkpoint, actions } = await fleet.history(sid, state, state.base, true);
    await this.pool.adopt({ start: state.start, checkpoint, actions, digest: state.digest });
    this.stats.fleet_adopted_total++;
    const m = state.meta;
    const createdAt = new Date(m.createdAt);
    s = {
      id: sid, owner: m.owner, tenant: m.tenant ?? null, envId: m.envId, envVersion: m.envVersion, taskId: m.taskId, seed: m.seed, policyCheckpoint: m.policyCheckpoint, record: m.record,
      records: [], lastAnswer: await fleet.lastAnswer(sid), stored: null, busy: false, createdAt, lastUsed: this.now(), ...this.fleetFields(state),
    };
    this.sessions.set(sid, s);
    return s;
  }

  /** The fields of a local copy that follow the fleet's state. */
  private fleetFields(state: FleetSessionState): Pick<Session, "seq" | "epoch" | "fleetBase" | "stepCount" | "ended" | "storedElsewhere"> {
    return { seq: state.seq, epoch: state.epoch, fleetBase: state.base, stepCount: state.steps, ended: state.ended, storedElsewhere: state.stored };
  }

  /** Commit a step to the fleet (and release its lock): the action after the checkpoint, or a newer checkpoint. */
  private async commitStep(s: Session, turn: FleetTurn, action: unknown, reply: { body: string; counted: boolean; ended: boolean; record?: TrajectoryStepRecord }): Promise<void> {
    const fleet = this.fleet as Fleet;
    // The track's digest, not the reply's: a step after the end changes the answer but not the session.
    const track = this.pool.trackOf(s.id);
    const change: FleetCommit = { seq: s.seq, steps: s.stepCount, digest: track.digest, ended: s.ended || reply.ended, last: reply.body, mode: "none" };
    if (reply.counted) {
      change.seq = ++s.seq;
      change.action = action;
      const trackBase = s.seq - track.actions.length;
      if (trackBase > s.fleetBase) {
        // The host took a checkpoint since the fleet's: it becomes the fleet's, so a rebuild replays little.
        Object.assign(change, { mode: "checkpoint", checkpoint: track.checkpoint, base: trackBase });
        s.fleetBase = trackBase;
      } else change.mode = "push";
    }
    if (reply.record && s.record) change.records = [reply.record];
    await fleet.commit(s.id, turn.token, change, this.now());
    turn.released = true;
  }

  /** Drop the least recently used idle local copy of a fleet session to make room; false when none can go. */
  private evictCopy(): boolean {
    if (!this.fleet) return false;
    let oldest: Session | undefined;
    for (const s of this.sessions.values()) if (!s.busy && s.createdAt && (!oldest || s.lastUsed < oldest.lastUsed)) oldest = s;
    if (!oldest) return false;
    this.drop(oldest.id);
    return true;
  }

  /** GET /v1/sessions/:id in a fleet: the fleet's state, read without the lock (a step in progress is not waited for). */
  private async fleetInfo(sessionId: string, caller: Caller): Promise<SessionInfo> {
    const state = await (this.fleet as Fleet).peek(sessionId);
    if (!state || !visibleTo(state.meta.owner, caller)) throw new ServiceError("unknown_session", `no live session "${String(sessionId)}" (closed, reaped after being idle, or never created)`);
    return {
      session_id: sessionId, env: state.meta.envId, env_version: state.meta.envVersion, task_id: state.meta.taskId, seed: state.meta.seed, steps: state.steps,
      ended: state.ended, record: state.meta.record, created_at: state.meta.createdAt, idle_ms: Math.max(0, this.now() - state.lastUsed),
    };
  }

  /**
   * Reaping in a fleet: sessions the whole fleet left idle past the TTL are closed (any replica may do
   * it; a session in use elsewhere is skipped), and local copies unused for a minute are dropped.
   */
  private async reapFleet(): Promise<number> {
    const fleet = this.fleet as Fleet;
    const now = this.now();
    for (const s of [...this.sessions.values()]) if (!s.busy && s.createdAt && now - s.lastUsed > FLEET_COPY_IDLE_MS) this.drop(s.id);
    if (this.idleTtlMs === 0) return 0;
    let reaped = 0;
    for (const sid of await fleet.idleSince(now - this.idleTtlMs, 100)) if (await this.reapFleetSession(fleet, sid)) reaped++;
    this.stats.reaped_total += reaped;
    return reaped;
  }

  /**
   * Close an idle fleet session without bringing it here: a reaper needs no summary, so nothing is
   * rebuilt; a recorded episode is stored from the fleet's records. False when it is in use or gone.
   */
  private async reapFleetSession(fleet: Fleet, sid: string): Promise<boolean> {
    const token = fleet.token();
    let state: FleetSessionState;
    try {
      state = await fleet.acquire(sid, token);
    } catch {
      return false;
    }
    try {
      const m = state.meta;
      if (m.record && !state.stored) {
        const s: Session = {
          id: sid, owner: m.owner, tenant: m.tenant ?? null, envId: m.envId, envVersion: m.envVersion, taskId: m.taskId, seed: m.seed, policyCheckpoint: m.policyCheckpoint, record: true,
          records: [], lastAnswer: null, stored: null, busy: true, createdAt: new Date(m.createdAt), lastUsed: this.now(), ...this.fleetFields(state),
        };
        await this.saveEpisode(s).catch(() => undefined);
      }
      await fleet.remove(sid);
      const local = this.sessions.get(sid);
      if (local && !local.busy) this.drop(sid);
      return true;
    } catch {
      await fleet.release(sid, token, this.now()).catch(() => undefined);
      return false;
    }
  }

  // ----- internals -----------------------------------------------------------------------------------

  private require(sessionId: string, caller: Caller): Session {
    const s = typeof sessionId === "string" ? this.sessions.get(sessionId) : undefined;
    // Another tenant's session is answered exactly like one that does not exist: its id tells them nothing.
    if (!s || !s.createdAt || !visibleTo(s.owner, caller)) {
      throw new ServiceError("unknown_session", `no live session "${String(sessionId)}" (closed, reaped after being idle, or never created)`);
    }
    return s;
  }

  private assertOpen(): void {
    if (this.closing) throw new ServiceError("capacity_reached", "the service is shutting down", { retry_after_s: 5 });
  }

  /** Run `fn` as the session's only operation (fleet-wide in a fleet); a concurrent one gets session_busy. */
  private async exclusive<T>(sessionId: string, caller: Caller, fn: (s: Session, turn: FleetTurn | null) => Promise<T> | T): Promise<T> {
    this.assertOpen();
    if (this.fleet) return this.fleetExclusive(this.fleet, sessionId, caller, fn);
    const s = this.require(sessionId, caller);
    if (s.busy) throw new ServiceError("session_busy", `session ${sessionId} is busy with another request; send its operations one at a time`);
    s.busy = true;
    const work = (async () => fn(s, null))();
    this.inFlight.add(work);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
      s.busy = false;
      s.lastUsed = this.now();
    }
  }

  /**
   * A request of this session stopped its host: the session is over. A recorded episode is stored with
   * a last step that says so (outcome 0), so the policy's failure counts as one. The error is returned
   * for the caller to throw, naming what happened to the session.
   */
  private async afterFailedStep(s: Session, action: unknown, error: unknown): Promise<LlmixError> {
    const e = toLlmixError(error);
    if (!HOST_STOPS.has(e.code) || e.details.host_stopped !== true) return e;
    if (action !== null && s.record && !s.stored) {
      s.ended = true;
      await this.saveEpisode(s, { action, error: e }).catch(() => undefined);
    }
    this.drop(s.id);
    await this.fleet?.remove(s.id).catch(() => undefined);
    return new ServiceError(e.code as "step_timeout", `${e.message}; the session was closed`, { ...e.details, session_closed: true, stored: s.stored !== null });
  }

  /** The record of a step that never finished: truncated, outcome 0, the reason in `info`. */
  private stoppedStep(s: Session, step: number, action: unknown, error: LlmixError): TrajectoryStepRecord {
    const last = s.lastAnswer ? (JSON.parse(s.lastAnswer) as { observation?: Observation }).observation : undefined;
    const message = `The step was stopped: ${error.message}.`;
    // This record is made here, on the serving thread, not on a host. Under redaction rules the raw action
    // and observation are not stored (scanning an agent's megabyte here would stall the thread): the
    // observation is the previous record's result, stored redacted already, and the action never ran to its end.
    const redact = this.options.redaction !== undefined;
    return toStepRecord({
      episodeId: s.id, taskId: s.taskId, envVersion: s.envVersion, policyCheckpoint: s.policyCheckpoint, step,
      observation: redact ? { rendered: "[redacted:stopped-step]", tokens: 0 } : (last ?? { rendered: "", tokens: 0 }),
      action: redact ? { type: "message", content: "[redacted:stopped-step]" } : action,
      result: {
        observation: { rendered: message, tokens: 0 }, reward: 0, rewardComponents: { task: 0 }, terminated: false, truncated: true,
        info: { end_reason: error.code, error: error.toJSON() },
      },
    });
  }

  /** A session its host could not bring back: stored (if recorded) as failed, then forgotten. */
  private async onLost(sid: string, error: LlmixError): Promise<void> {
    const s = this.sessions.get(sid);
    if (!s) return;
    if (this.fleet) {
      // Only this replica's copy is gone: the fleet still has the session, and its next request rebuilds it.
      this.sessions.delete(sid);
      return;
    }
    if (s.record && !s.stored && s.records.length > 0) {
      const runId = await this.runFor(s).catch(() => null);
      if (runId) {
        const episode = episodeRecord(this.jobOf(s, runId), s.records, error, s.createdAt, new Date(this.now()));
        await this.options.store?.writeEpisodes([{ episode, steps: s.records }]).catch(() => undefined);
      }
    }
    this.sessions.delete(sid);
  }

  private jobOf(s: Session, runId: string): EpisodeJob {
    return {
      run_id: runId, episode_id: s.id, env: s.envId, task_id: s.taskId, seed: s.seed, group_id: s.id, group_index: 0,
      policy: "service", policy_checkpoint: s.policyCheckpoint,
    };
  }

  /**
   * Write a recorded session's episode (once) under this server's run for its environment; `stopped`
   * adds a last step that never finished. In a fleet the records so far are the fleet's.
   */
  private async saveEpisode(s: Session, stopped?: { action: unknown; error: LlmixError }): Promise<void> {
    const store = this.options.store;
    if (!s.record || s.stored || s.storedElsewhere || !store) return;
    let records = this.fleet ? await this.fleet.records(s.id) : s.records;
    if (stopped) records = [...records, this.stoppedStep(s, records.length + 1, stopped.action, stopped.error)];
    if (records.length === 0) return;
    if (this.fleet && (await store.getEpisode(s.id))) {
      // A replica that died between storing the episode and marking it stored: it is in the store already.
      s.storedElsewhere = true;
      await this.fleet.markStored(s.id);
      return;
    }
    const runId = await this.runFor(s);
    const episode = episodeRecord(this.jobOf(s, runId), records, null, s.createdAt, new Date(this.now()));
    await store.writeEpisodes([{ episode, steps: records }]);
    // Stored once: a later close, restore or reap must not write the same episode id again.
    s.stored = episode;
    s.records = [];
    await this.fleet?.markStored(s.id);
  }

  /** The run that holds this server's recorded sessions of one environment and tenant (created on first use). */
  private runFor(s: Session): Promise<string> {
    const tenant = s.tenant ?? null;
    const key = `${tenant ?? ""}\u241f${s.envId}`;
    let run = this.runs.get(key);
    if (!run) {
      const store = this.options.store as TrajectoryStore;
      const stamp = this.started.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
      const runId = `serve-${stamp}-${randomBytes(3).toString("hex")}-${tenant === null ? "" : `${tenant}-`}${s.envId}`;
      const record: RunRecord = {
        run_id: runId, env: s.envId, env_version: s.envVersion, policy: "service", policy_checkpoint: null,
        // The environment's options go with the run, so a replay or reverify of its episodes scores them the same way.
        config: {
          source: "llmix serve", env_options: (this.options.envOptions?.[s.envId] ?? {}) as JsonValue,
          // The rules its episodes were stored under: a replay restores their markers, an export applies them again.
          ...(this.options.redaction ? { redaction: this.options.redaction as unknown as JsonValue } : {}),
        } as JsonValue, tools: this.runTools.get(s.envId) ?? [], status: "running", planned_episodes: 0,
        created_at: this.started.toISOString(), finished_at: null, tenant,
      };
      run = store.createRun(record).then(() => {
        // While this server lives its runs read as running; if it dies they read as interrupted.
        this.runIds.push(runId);
        this.heartbeat ??= startHeartbeat(store, () => this.runIds);
        return runId;
      });
      run.catch(() => this.runs.delete(key));
      this.runs.set(key, run);
    }
    return run;
  }

  private drop(sessionId: string): void {
    const s = this.sessions.get(sessionId);
    this.sessions.delete(sessionId);
    // A session whose host still holds it is closed there too (without waiting: nobody needs the summary).
    if (s?.createdAt) void this.pool.closeSession(sessionId, s.createdAt, new Date(this.now())).catch(() => undefined);
    else this.pool.forget(sessionId);
  }
}

/** Whether `caller` may see a session owned by `owner` (its creator's token or tenant, or admin; everyone without auth). */
function visibleTo(owner: string | null, caller: Caller): boolean {
  return owner === null || caller === null || caller.admin || ownerOf(caller) === owner;
}

function snapshotEnv(snapshot: unknown): string {
  const env = (snapshot as { env?: unknown } | null)?.env;
  if (typeof env !== "string") throw new ValidationError("invalid_snapshot", "snapshot.env must name the environment the snapshot is of");
  return env;
}
