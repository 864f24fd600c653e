/**
 * The environment hosts of a service (DESIGN §7, execution model): `size` host threads for sessions and
 * one more for jobs (replay, task listing, environment details), so heavy work never delays a session.
 *
 * A session lives on one host for its life. Because episodes are deterministic, the pool keeps for each
 * session what fully describes it — how it started, a checkpoint, the actions since — so when a host
 * is stopped (a step overran the deadline, the thread exceeded its memory cap or exited) the one
 * session to blame ends with that error, and every other session of that host is rebuilt on a fresh
 * host by replay, ending on the same answer (checked by digest): their clients see at most a delay.
 */
import { availableParallelism } from "node:os";
import { LlmixError, ServiceError, ValidationError } from "../core/errors.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import { BUILTIN_ENVIRONMENTS } from "../envs/index.js";
import { parseRedactionRules, type RedactionRules } from "../store/redaction.js";
import { Host, type HostDeath, type PendingRequest } from "./host.js";
import type { HostConfig, HostJob, HostRequest, HostResults, OpenedSession, SessionRebuild, SessionStart, StepReply } from "./protocol.js";
import { DEFAULT_THREAD_HEAP_MB } from "./thread.js";

/** How a pool is set up. */
export interface HostPoolOptions {
  /** `--module` files every host loads next to the built-in environments. */
  modules: readonly string[];
  /** Session hosts (default: the machine's core count). */
  size?: number;
  /** Heap cap of each host thread, MiB. */
  heapMb?: number;
  /** Deadline of one request (a step, a reset, a restore); 0: none. */
  stepTimeoutMs: number;
  /** Deadline of a job (replay, task listing); default 10 x stepTimeoutMs, at least 10 s. */
  jobTimeoutMs?: number;
  /** Key of snapshot signatures, hex. */
  snapshotKey: string;
  /** Sessions each host keeps live; beyond it the least recently used are parked as snapshots. */
  residentSessions?: number;
  /** Actions between checkpoints of a session (bounds what a rebuild replays and what the pool keeps). */
  checkpointEvery?: number;
  /** Options each environment's session instances are created with, by environment id. */
  envOptions?: Record<string, Record<string, unknown>>;
  /**
   * The data policy's redaction rules (src/store/redaction.ts): hosts redact each recorded step and
   * episode summary before handing it over, and replay jobs their reports. Replies to the live client
   * are never redacted. Absent: nothing is.
   */
  redaction?: RedactionRules;
  /** A session that could not be rebuilt after its host stopped (the pool has forgotten it). */
  onSessionLost?: (sid: string, error: LlmixError) => void;
}

/** What the pool keeps of each session to rebuild it. */
interface SessionTrack {
  slot: number;
  /** How it started, without the snapshot of a fork (its checkpoint stands in for it). */
  start: SessionStart;
  checkpoint: string | null;
  actions: unknown[];
  digest: string;
}

/** Rebuild figures of the last host that was stopped. */
export interface RebuildStats {
  sessions: number;
  rebuilt: number;
  lost: number;
  ms: number;
}

/** Counters of the pool (for /metrics and the benchmarks). */
export interface HostPoolStats {
  hosts: number;
  hosts_started: number;
  hosts_stopped: Record<HostDeath["code"], number>;
  sessions_rebuilt: number;
  sessions_lost: number;
  last_rebuild: RebuildStats | null;
}

/** What a superseded rebuild request is rejected with (a newer rebuild of the same session replaces it). */
const SUPERSEDED = new ServiceError("host_failed", "superseded by a newer rebuild");
/** Hosts of one slot that may die while starting, in a row, before the slot gives up. */
const MAX_START_FAILURES = 3;

type SessionRequest = Exclude<HostRequest, { kind: "job" } | { kind: "open" } | { kind: "rebuild" }>;
type Omitted<T> = T extends unknown ? Omit<T, "id"> : never;

/** Thread-backed environment hosts with deadlines, memory caps and rebuild by replay. */
export class HostPool {
  private readonly slots: Host[] = [];
  private jobs: Host | null = null;
  private readonly tracks = new Map<string, SessionTrack>();
  private readonly lost = new Map<string, LlmixError>();
  private readonly counts: number[];
  private readonly startFailures: number[];
  private readonly config: HostConfig;
  private readonly heapMb: number;
  private readonly jobTimeoutMs: number;
  private readonly checkpointEvery: number;
  private closed = false;
  private readonly stats: HostPoolStats;

  constructor(private readonly options: HostPoolOptions) {
    const size = options.size ?? availableParallelism();
    if (!Number.isSafeInteger(size) || size < 1 || size > 256) throw new ValidationError("invalid_config", `hosts must be an integer in [1, 256], got ${size}`);
    this.heapMb = options.heapMb ?? DEFAULT_THREAD_HEAP_MB;
    if (!Number.isSafeInteger(this.heapMb) || this.heapMb < 16) throw new ValidationError("invalid_config", `host memory must be an integer >= 16 MiB, got ${this.heapMb}`);
    this.jobTimeoutMs = options.jobTimeoutMs ?? (options.stepTimeoutMs === 0 ? 0 : Math.max(10_000, options.stepTimeoutMs * 10));
    this.checkpointEvery = options.checkpointEvery ?? 32;
    // Checked here, where the caller sees the error, not in each host as it starts.
    if (options.redaction !== undefined) parseRedactionRules(options.redaction);
    this.config = { modules: [...options.modules], snapshotKey: options.snapshotKey, residentSessions: options.residentSessions, envOptions: options.envOptions, redaction: options.redaction };
    this.counts = new Array<number>(size).fill(0);
    this.startFailures = new Array<number>(size).fill(0);
    this.stats = { hosts: size, hosts_started: 0, hosts_stopped: { step_timeout: 0, resource_exhausted: 0, host_failed: 0 }, sessions_rebuilt: 0, sessions_lost: 0, last_rebuild: null };
    for (let slot = 0; slot < size; slot++) this.slots.push(this.spawn(slot));
  }

  /** Resolves once every session host has loaded its environments; rejects (host_failed) if one cannot. */
  async ready(): Promise<void> {
    await Promise.all(this.slots.map((host) => host.started));
  }

  /** Counters so far. */
  snapshotStats(): HostPoolStats {
    return { ...this.stats, hosts_stopped: { ...this.stats.hosts_stopped } };
  }

  /** Sessions the pool holds. */
  get sessions(): number {
    return this.tracks.size;
  }

  /** Start a session on the least loaded host. */
  async open(start: SessionStart): Promise<OpenedSession> {
    const slot = this.leastLoaded();
    this.counts[slot] = (this.counts[slot] ?? 0) + 1;
    try {
      const opened = (await this.request(this.slots[slot] as Host, { kind: "open", start }, this.options.stepTimeoutMs)) as OpenedSession;
      const { snapshot: _fork, ...rest } = start;
      this.tracks.set(start.sid, { slot, start: rest, checkpoint: opened.checkpoint ?? null, actions: [], digest: opened.digest });
      delete opened.checkpoint;
      return opened;
    } catch (error) {
      this.counts[slot] = (this.counts[slot] ?? 1) - 1;
      throw error;
    }
  }

  /**
   * Bring a session that lives elsewhere (another replica of a fleet) onto the least loaded host, from
   * its start, checkpoint and actions since; host_failed if the replayed answer differs from `digest`.
   */
  async adopt(rebuild: SessionRebuild): Promise<void> {
    const sid = rebuild.start.sid;
    if (this.tracks.has(sid)) throw new ServiceError("host_failed", `session ${sid} is already on a host of this pool`);
    const slot = this.leastLoaded();
    this.counts[slot] = (this.counts[slot] ?? 0) + 1;
    try {
      const deadline = this.options.stepTimeoutMs === 0 ? 0 : this.options.stepTimeoutMs * (rebuild.actions.length + 2);
      await this.request(this.slots[slot] as Host, { kind: "rebuild", rebuild }, deadline);
      this.tracks.set(sid, { slot, start: rebuild.start, checkpoint: rebuild.checkpoint, actions: [...rebuild.actions], digest: rebuild.digest });
    } catch (error) {
      this.counts[slot] = (this.counts[slot] ?? 1) - 1;
      throw error;
    }
  }

  /** What the pool keeps to rebuild a session (read-only): its start, latest checkpoint, actions since and digest. */
  trackOf(sid: string): Readonly<SessionRebuild> {
    const { start, checkpoint, actions, digest } = this.track(sid);
    return { start, checkpoint, actions, digest };
  }

  /** Apply one action. A step that stops its host fails with that error, and the session is gone. */
  async step(sid: string, action: unknown): Promise<StepReply> {
    const track = this.track(sid);
    const checkpoint = track.actions.length + 1 >= this.checkpointEvery;
    const reply = (await this.onSession(sid, { kind: "step", sid, action, checkpoint })) as StepReply;
    // A step after the end changes nothing: it is neither replayed nor part of the digest.
    if (reply.counted) {
      if (reply.checkpoint !== undefined) {
        track.checkpoint = reply.checkpoint;
        track.actions = [];
      } else track.actions.push(action);
      track.digest = reply.digest;
    }
    delete reply.checkpoint;
    return reply;
  }

  /** The session's signed snapshot, as the body `{"snapshot": ...}`. */
  async snapshot(sid: string): Promise<string> {
    return ((await this.onSession(sid, { kind: "snapshot", sid })) as HostResults["snapshot"]).body;
  }

  /** Continue the session from a snapshot (its signature checked unless `trusted`). */
  async restore(sid: string, snapshot: unknown, trusted: boolean): Promise<Omit<HostResults["restore"], "checkpoint" | "digest">> {
    const track = this.track(sid);
    const { checkpoint, digest, ...result } = (await this.onSession(sid, { kind: "restore", sid, snapshot, trusted })) as HostResults["restore"];
    track.checkpoint = checkpoint;
    track.actions = [];
    // The rebuilt session starts from this checkpoint, so it must end on the restore's digest.
    track.digest = digest;
    return result;
  }

  /** The session's tools (JSON-Schema specs and their MCP form). */
  async tools(sid: string): Promise<HostResults["tools"]> {
    return (await this.onSession(sid, { kind: "tools", sid })) as HostResults["tools"];
  }

  /** End a session on its host; its episode summary. */
  async closeSession(sid: string, createdAt: Date, closedAt: Date): Promise<HostResults["close"]> {
    const host = this.slots[this.track(sid).slot] as Host;
    // Forgotten at once, not when the host answers: the same id may be opened again (a fleet replica
    // taking the session back) before then, and the host answers requests in order.
    this.forget(sid);
    const request = { kind: "close", sid, created_at: createdAt.toISOString(), closed_at: closedAt.toISOString() } as const;
    return (await this.request(host, request, this.options.stepTimeoutMs)) as HostResults["close"];
  }

  /** Forget a session the caller has given up on (its host's copy goes when the host does). */
  forget(sid: string): void {
    const track = this.tracks.get(sid);
    if (track) {
      this.tracks.delete(sid);
      this.counts[track.slot] = (this.counts[track.slot] ?? 1) - 1;
    }
    this.lost.delete(sid);
  }

  /** Run a job on the jobs host (started on first use). */
  async job(job: HostJob): Promise<unknown> {
    this.jobs ??= this.spawn(-1);
    return this.request(this.jobs, { kind: "job", job }, this.jobTimeoutMs);
  }

  /** Stop every host. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.slots, ...(this.jobs ? [this.jobs] : [])].map((host) => host.close()));
  }

  // ----- internals -----------------------------------------------------------------------------------

  private spawn(slot: number): Host {
    this.stats.hosts_started++;
    return new Host({
      config: this.config,
      heapMb: this.heapMb,
      name: slot < 0 ? "llmix-host-jobs" : `llmix-host-${slot}`,
      onDeath: (death) => this.onDeath(slot, death),
    });
  }

  private leastLoaded(): number {
    let best = 0;
    for (let slot = 1; slot < this.counts.length; slot++) if ((this.counts[slot] ?? 0) < (this.counts[best] ?? 0)) best = slot;
    return best;
  }

  private track(sid: string): SessionTrack {
    const track = this.tracks.get(sid);
    if (track) return track;
    throw this.lost.get(sid) ?? new ServiceError("unknown_session", `no live session "${sid}"`);
  }

  /** A request about a session, sent to the host the session is on now (which may change by a rebuild). */
  private onSession(sid: string, request: Omitted<SessionRequest>): Promise<unknown> {
    const track = this.track(sid);
    return this.request(this.slots[track.slot] as Host, request, this.options.stepTimeoutMs).catch((error: unknown) => {
      // A session lost while this request waited: its own error says more than the host's "unknown session".
      throw this.lost.get(sid) ?? error;
    });
  }

  private request(host: Host, request: PendingRequest["request"], deadlineMs: number): Promise<unknown> {
    return new Promise((resolve, reject) => host.send({ request, deadlineMs, resolve, reject }));
  }

  private onDeath(slot: number, death: HostDeath): void {
    this.stats.hosts_stopped[death.code]++;
    if (this.closed) return;
    if (slot < 0) {
      // The jobs host: its waiting jobs go to a new one (the late job already failed).
      this.jobs = this.spawn(-1);
      for (const pending of death.waiting) this.jobs.send(pending);
      return;
    }
    const blamed = sessionOf(death.running?.request);
    if (blamed !== null && this.tracks.has(blamed)) {
      this.forget(blamed);
      this.stats.sessions_lost++;
    }
    // Rebuilds that were still waiting are replaced by the new ones below.
    const waiting = death.waiting.filter((pending) => {
      if (pending.request.kind !== "rebuild") return true;
      pending.reject(SUPERSEDED);
      return false;
    });
    this.startFailures[slot] = death.started ? 0 : (this.startFailures[slot] ?? 0) + 1;
    if ((this.startFailures[slot] ?? 0) >= MAX_START_FAILURES) {
      // A host that cannot start will not start next time either: give up its sessions rather than loop.
      const error = new ServiceError("host_failed", `environment host ${slot} failed to start ${MAX_START_FAILURES} times in a row: ${death.message}`, { host_stopped: true });
      for (const [sid, track] of [...this.tracks]) if (track.slot === slot) this.lose(sid, error);
      for (const pending of waiting) pending.reject(error);
      this.counts[slot] = Number.POSITIVE_INFINITY;
      return;
    }
    const host = this.spawn(slot);
    this.slots[slot] = host;
    void this.rebuild(slot, host, waiting);
  }

  /** Rebuild the sessions of a stopped host on its successor, then send it what was still waiting. */
  private async rebuild(slot: number, host: Host, waiting: PendingRequest[]): Promise<void> {
    const started = performance.now();
    const tracks = [...this.tracks.entries()].filter(([, t]) => t.slot === slot);
    let rebuilt = 0;
    const done = tracks.map(
      ([sid, track]) =>
        new Promise<void>((resolve) => {
          host.send({
            request: { kind: "rebuild", rebuild: { start: track.start, checkpoint: track.checkpoint, actions: track.actions, digest: track.digest } },
            // Each replayed action gets a step's time.
            deadlineMs: this.options.stepTimeoutMs === 0 ? 0 : this.options.stepTimeoutMs * (track.actions.length + 2),
            resolve: () => {
              rebuilt++;
              this.stats.sessions_rebuilt++;
              resolve();
            },
            reject: (error) => {
              if (error !== SUPERSEDED) this.lose(sid, error);
              resolve();
            },
          });
        }),
    );
    // Requests that were waiting go after the rebuilds (the host answers in order).
    for (const pending of waiting) host.send(pending);
    await Promise.all(done);
    this.stats.last_rebuild = { sessions: tracks.length, rebuilt, lost: tracks.length - rebuilt, ms: performance.now() - started };
  }

  private lose(sid: string, error: LlmixError): void {
    if (!this.tracks.has(sid)) return;
    const reason = error.code === "host_failed" || error.code === "step_timeout" || error.code === "resource_exhausted" ? error : new ServiceError("host_failed", error.message);
    const lost = new ServiceError("host_failed", `the session was lost: its host was stopped by another session's request and it could not be rebuilt (${reason.message})`, { host_stopped: true });
    this.forget(sid);
    this.lost.set(sid, lost);
    // Bounded: a tombstone only needs to outlive the requests that were waiting for the session.
    if (this.lost.size > 10_000) this.lost.delete(this.lost.keys().next().value as string);
    this.stats.sessions_lost++;
    this.options.onSessionLost?.(sid, lost);
  }
}

/** The session a request is about, if any. */
function sessionOf(request: PendingRequest["request"] | undefined): string | null {
  if (!request) return null;
  switch (request.kind) {
    case "open":
      return request.start.sid;
    case "rebuild":
      return request.rebuild.start.sid;
    case "job":
      return null;
    default:
      return request.sid;
  }
}

/**
 * The `--module` files a host must load to hold every environment of `registry`. Hosts rebuild the
 * registry in their own thread (built-ins plus these files), so an environment registered in code
 * cannot run on a host: it is refused here, naming it, with what to do instead.
 */
export function modulesFor(registry: EnvironmentRegistry): string[] {
  const modules: string[] = [];
  for (const entry of registry.list()) {
    if (entry.module !== undefined) {
      if (!modules.includes(entry.module)) modules.push(entry.module);
    } else if (!BUILTIN_ENVIRONMENTS.includes(entry)) {
      throw new ValidationError(
        "invalid_config",
        `environment "${entry.id}" was registered in code; the service runs environments on host threads, which load them from files: put it in a module and load it with addModules (llmix serve --module FILE)`,
      );
    }
  }
  return modules;
}
