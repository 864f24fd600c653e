/**
 * The shared state of a fleet of `llmix serve` replicas (docs/scale-out.md, "A service fleet"): what
 * lets any replica step a session another replica created, and a replica's death lose none.
 *
 * Each session is kept in Redis as what fully describes it — how it started, the host's latest
 * checkpoint, the actions taken since, and the digest of the last answer — the same things a host pool
 * keeps to rebuild sessions when a host thread dies (src/hosts/host-pool.ts). A replica that holds a
 * copy of the session that is behind replays the few actions it missed; one that holds none rebuilds
 * the session from the checkpoint. Either way the rebuilt answer is checked against the digest.
 *
 * One operation at a time per session, fleet-wide: an operation takes the session's lock (a Redis key
 * naming the replica); a second one gets session_busy, and a lock whose replica stopped heartbeating
 * is taken over, so a killed replica holds nothing for longer than its heartbeat TTL. A step commits
 * (action, digest, answer, record) and releases the lock in one script, so a step is in the fleet's
 * state entirely or not at all: a replica killed mid-step leaves the session as it was before it.
 *
 * The actions kept reach back to the checkpoint before the latest, so a copy that was current a few
 * steps before a new checkpoint still catches up by replay rather than by a rebuild.
 *
 * Keys (prefix P, default `llmix:fleet:`): P s:ID (hash of small fields), P s:ID:cp (checkpoint),
 * P s:ID:a (actions abase+1 .. seq), P s:ID:r (step records of recorded sessions), P s:ID:last (the last
 * answer), P s:ID:lock; P sessions (zset: id by last use), P replicas (zset: replica by last
 * heartbeat, Redis time), P snapshot-key.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import type { TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError, ServiceError } from "../core/errors.js";
import type { SessionStart } from "../hosts/protocol.js";
import { displayRedisUrl } from "../rollout/queue/queue-names.js";

/** How a fleet member connects and how long its claims last. */
export interface FleetOptions {
  /** redis://HOST:PORT[/DB] shared by every replica. */
  redisUrl: string;
  /** Key prefix: one per fleet sharing a Redis (default `llmix:fleet:`). */
  prefix?: string;
  /** A replica that has not heartbeated for this long is dead: its locks may be taken (default 5 s). */
  replicaTtlMs?: number;
  /** How long a session's lock lasts at most (a step's deadline plus a margin). */
  lockMs: number;
  /** Sessions in the whole fleet at most (default 1,000,000). */
  capacity?: number;
}

/** What a session was created as (fixed for its life). */
export interface FleetSessionMeta {
  owner: string | null;
  /** The tenant whose data the session is (its recorded episode goes to that tenant's run); absent: none. */
  tenant?: string | null;
  envId: string;
  envVersion: string;
  taskId: string;
  seed: number;
  policyCheckpoint: string | null;
  record: boolean;
  createdAt: string;
}

/** A session's shared state as an operation finds it (without its checkpoint and actions). */
export interface FleetSessionState {
  meta: FleetSessionMeta;
  start: SessionStart;
  /** Counted actions taken since the session's start (its version within the epoch). */
  seq: number;
  /** `seq` at the checkpoint. */
  base: number;
  /** The actions list holds actions abase+1 .. seq (abase <= base). */
  abase: number;
  /** Bumped by a restore: a copy of another epoch is not the same session any more. */
  epoch: number;
  /** Steps taken, counted or not (what GET /v1/sessions/:id reports). */
  steps: number;
  digest: string;
  ended: boolean;
  stored: boolean;
  /** The replica that made the last change. */
  holder: string;
  hasCheckpoint: boolean;
}

/** What a step (or a restore) changes, committed with the lock's release. */
export interface FleetCommit {
  seq: number;
  steps: number;
  digest: string;
  ended: boolean;
  /** The answer, kept so a lost reply can be given again (and a stopped step knows the last observation). */
  last: string;
  /**
   * `push`: one counted step (`action`); `checkpoint`: the same with a newer checkpoint at `base`;
   * `restart`: a restore, a new `epoch` from `checkpoint` (the actions and records start over);
   * `none`: nothing counted (a step after the end).
   */
  mode: "push" | "checkpoint" | "restart" | "none";
  action?: unknown;
  checkpoint?: string | null;
  base?: number;
  epoch?: number;
  records?: TrajectoryStepRecord[];
}

/** Fleet-wide figures for /metrics and /readyz. */
export interface FleetStats {
  replica: string;
  sessions: number;
  replicas: number;
}

const SMALL_FIELDS = ["meta", "start", "seq", "base", "abase", "epoch", "steps", "digest", "ended", "stored", "holder", "cp"] as const;

// Takes the session's lock unless a live replica holds it; answers the small fields. A replica is live
// when its heartbeat (Redis's own clock, so replicas' clocks need not agree) is younger than the TTL.
const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local holder = redis.call('GET', KEYS[2])
if holder then
  local replica = string.match(holder, '^(.*)/[^/]*$') or holder
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local seen = redis.call('ZSCORE', KEYS[3], replica)
  if seen and tonumber(seen) > now - tonumber(ARGV[3]) then return {'busy', holder} end
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
local out = {'ok'}
for i = 4, #ARGV do out[#out + 1] = redis.call('HGET', KEYS[1], ARGV[i]) or '' end
return out
`;

// Commits a change if the lock is still this operation's, and releases it. KEYS: hash, lock, actions,
// records, cp, last, sessions. ARGV: token, seq, steps, digest, ended, last, mode, now, holder, sid,
// action ('' for none), checkpoint ('' for none: the start), base, epoch, then the records.
const COMMIT = `
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('DEL', KEYS[2]) return -1 end
local mode = ARGV[7]
redis.call('HSET', KEYS[1], 'seq', ARGV[2], 'steps', ARGV[3], 'digest', ARGV[4], 'ended', ARGV[5], 'holder', ARGV[9])
redis.call('SET', KEYS[6], ARGV[6])
if mode == 'checkpoint' or mode == 'restart' then
  if ARGV[12] == '' then redis.call('DEL', KEYS[5]) else redis.call('SET', KEYS[5], ARGV[12]) end
  redis.call('HSET', KEYS[1], 'cp', ARGV[12] == '' and '0' or '1')
end
if mode == 'checkpoint' then
  -- keep the actions since the previous checkpoint, drop older ones
  local abase = tonumber(redis.call('HGET', KEYS[1], 'abase'))
  local previous = tonumber(redis.call('HGET', KEYS[1], 'base'))
  if previous > abase then redis.call('LTRIM', KEYS[3], previous - abase, -1) end
  redis.call('HSET', KEYS[1], 'abase', previous, 'base', ARGV[13])
elseif mode == 'restart' then
  redis.call('DEL', KEYS[3], KEYS[4])
  redis.call('HSET', KEYS[1], 'abase', ARGV[13], 'base', ARGV[13], 'epoch', ARGV[14])
end
if (mode == 'push' or mode == 'checkpoint') then redis.call('RPUSH', KEYS[3], ARGV[11]) end
for i = 15, #ARGV do redis.call('RPUSH', KEYS[4], ARGV[i]) end
redis.call('ZADD', KEYS[7], ARGV[8], ARGV[10])
redis.call('DEL', KEYS[2])
return 1
`;

// Releases the lock if it is still this operation's (and marks the session used).
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if redis.call('ZSCORE', KEYS[2], ARGV[3]) then redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3]) end
return 1
`;

// Registers a new session unless the fleet is full.
const REGISTER = `
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'meta', ARGV[2], 'start', ARGV[3], 'seq', '0', 'base', '0', 'abase', '0', 'epoch', '0', 'steps', ARGV[4], 'digest', ARGV[5], 'ended', ARGV[6], 'stored', '0', 'holder', ARGV[7], 'cp', ARGV[8] == '' and '0' or '1')
if ARGV[8] ~= '' then redis.call('SET', KEYS[3], ARGV[8]) end
redis.call('SET', KEYS[4], ARGV[9])
redis.call('ZADD', KEYS[2], ARGV[10], ARGV[11])
return 1
`;

const HEARTBEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 10 * tonumber(ARGV[2]))
return 1
`;

const ALIVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {redis.call('ZCOUNT', KEYS[1], now - tonumber(ARGV[1]), '+inf'), redis.call('ZCARD', KEYS[2])}
`;

type FleetRedis = Redis & {
  fleetAlive(...args: Array<string | number>): Promise<[number, number]>;
  fleetAcquire(...args: Array<string | number>): Promise<string[]>;
  fleetCommit(...args: Array<string | number>): Promise<number>;
  fleetRelease(...args: Array<string | number>): Promise<number>;
  fleetRegister(...args: Array<string | number>): Promise<number>;
  fleetHeartbeat(...args: Array<string | number>): Promise<number>;
};

/** Defaults of the fleet's timing. */
export const FLEET_DEFAULTS = { prefix: "llmix:fleet:", replicaTtlMs: 5_000, capacity: 1_000_000 } as const;

/** One replica's connection to the fleet's shared state. */
export class Fleet {
  /** This replica's id (random per start, so a restarted replica never inherits a dead one's locks). */
  readonly replica = `rep_${randomBytes(6).toString("hex")}`;
  private readonly redis: FleetRedis;
  private readonly prefix: string;
  private readonly replicaTtlMs: number;
  private readonly capacity: number;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private operations = 0;
  private lastError: string | null = null;

  constructor(private readonly options: FleetOptions) {
    this.prefix = options.prefix ?? FLEET_DEFAULTS.prefix;
    this.replicaTtlMs = options.replicaTtlMs ?? FLEET_DEFAULTS.replicaTtlMs;
    this.capacity = options.capacity ?? FLEET_DEFAULTS.capacity;
    // Commands fail at once while Redis is away (no offline queue): a step must answer, not hang.
    this.redis = new Redis(options.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5_000 }) as FleetRedis;
    this.redis.on("error", (error: Error) => {
      this.lastError = error.message;
    });
    this.redis.defineCommand("fleetAcquire", { numberOfKeys: 3, lua: ACQUIRE });
    this.redis.defineCommand("fleetCommit", { numberOfKeys: 7, lua: COMMIT });
    this.redis.defineCommand("fleetRelease", { numberOfKeys: 2, lua: RELEASE });
    this.redis.defineCommand("fleetRegister", { numberOfKeys: 4, lua: REGISTER });
    this.redis.defineCommand("fleetHeartbeat", { numberOfKeys: 1, lua: HEARTBEAT });
    this.redis.defineCommand("fleetAlive", { numberOfKeys: 2, lua: ALIVE });
  }

  /** Connect, announce this replica, and keep heartbeating (a timer that does not hold the process). */
  async join(): Promise<void> {
    await this.call(() => this.redis.connect());
    await this.heartbeat();
    this.heartbeatTimer = setInterval(() => void this.heartbeat().catch(() => undefined), Math.max(100, Math.floor(this.replicaTtlMs / 4)));
    this.heartbeatTimer.unref();
  }

  /** The fleet's snapshot signing key: the first replica's random key, shared through Redis. */
  async sharedSnapshotKey(): Promise<string> {
    const key = `${this.prefix}snapshot-key`;
    await this.call(() => this.redis.set(key, randomBytes(32).toString("hex"), "NX"));
    return (await this.call(() => this.redis.get(key))) as string;
  }

  /** Add a session (fails with capacity_reached when the fleet is full). */
  async register(sid: string, meta: FleetSessionMeta, start: SessionStart, opened: { steps: number; digest: string; ended: boolean; checkpoint: string | null; body: string }, now: number): Promise<void> {
    const added = await this.call(() =>
      this.redis.fleetRegister(
        this.key(sid), this.sessionsKey(), this.key(sid, "cp"), this.key(sid, "last"),
        this.capacity, JSON.stringify(meta), JSON.stringify(start), opened.steps, opened.digest, opened.ended ? "1" : "0", this.replica, opened.checkpoint ?? "", opened.body, now, sid,
      ),
    );
    if (added !== 1) throw new ServiceError("capacity_reached", `the fleet holds ${this.capacity} live sessions, its capacity; close one or retry later`, { fleet_capacity: this.capacity, retry_after_s: 1 });
  }

  /** A fresh lock token of this replica. */
  token(): string {
    return `${this.replica}/${++this.operations}`;
  }

  /** Take the session's lock and read its state; unknown_session or session_busy otherwise. */
  async acquire(sid: string, token: string): Promise<FleetSessionState> {
    const reply = await this.call(() => this.redis.fleetAcquire(this.key(sid), this.key(sid, "lock"), this.replicasKey(), token, this.options.lockMs, this.replicaTtlMs, ...SMALL_FIELDS));
    if (reply[0] === "missing") throw new ServiceError("unknown_session", `no live session "${sid}" (closed, reaped after being idle, or never created)`);
    if (reply[0] === "busy") throw new ServiceError("session_busy", `session ${sid} is busy with another request; send its operations one at a time`, { held_by: reply[1]?.split("/")[0] });
    return stateOf(reply.slice(1));
  }

  /** The session's state without taking its lock (null when it does not exist), with when it was last used. */
  async peek(sid: string): Promise<(FleetSessionState & { lastUsed: number }) | null> {
    const [fields, score] = await this.call(() => Promise.all([this.redis.hmget(this.key(sid), ...SMALL_FIELDS), this.redis.zscore(this.sessionsKey(), sid)]));
    if (fields[0] === null) return null;
    return { ...stateOf(fields), lastUsed: Number(score ?? 0) };
  }

  /** The actions after `from` (a seq >= state.abase) and, if asked, the checkpoint: what rebuilds or catches up a copy. */
  async history(sid: string, state: FleetSessionState, from: number, withCheckpoint: boolean): Promise<{ checkpoint: string | null; actions: unknown[] }> {
    const [checkpoint, actions] = await this.call(() =>
      Promise.all([withCheckpoint && state.hasCheckpoint ? this.redis.get(this.key(sid, "cp")) : Promise.resolve(null), this.redis.lrange(this.key(sid, "a"), from - state.abase, -1)]),
    );
    return { checkpoint, actions: actions.map((text) => JSON.parse(text) as unknown) };
  }

  /** The last answer of the session (JSON text), or null. */
  async lastAnswer(sid: string): Promise<string | null> {
    return this.call(() => this.redis.get(this.key(sid, "last")));
  }

  /** A recorded session's step records so far. */
  async records(sid: string): Promise<TrajectoryStepRecord[]> {
    return (await this.call(() => this.redis.lrange(this.key(sid, "r"), 0, -1))).map((text) => JSON.parse(text) as TrajectoryStepRecord);
  }

  /** Commit a change and release the lock; host_failed if the lock was lost (the session moved on without us). */
  async commit(sid: string, token: string, change: FleetCommit, now: number): Promise<void> {
    const records = (change.records ?? []).map((r) => JSON.stringify(r));
    const result = await this.call(() =>
      this.redis.fleetCommit(
        this.key(sid), this.key(sid, "lock"), this.key(sid, "a"), this.key(sid, "r"), this.key(sid, "cp"), this.key(sid, "last"), this.sessionsKey(),
        token, change.seq, change.steps, change.digest, change.ended ? "1" : "0", change.last, change.mode, now, this.replica, sid,
        change.action === undefined ? "" : JSON.stringify(change.action), change.checkpoint ?? "", change.base ?? 0, change.epoch ?? 0, ...records,
      ),
    );
    if (result === 0) throw new ServiceError("host_failed", `session ${sid}: this replica's lock lapsed before its change was committed (another replica may have taken the session over); the change was not kept`, { lock_lost: true });
    if (result === -1) throw new ServiceError("unknown_session", `no live session "${sid}" (closed while this request ran)`);
  }

  /** Mark the session's episode stored (a recorded session is stored once, by whichever replica ends it). */
  async markStored(sid: string): Promise<void> {
    await this.call(() => this.redis.hset(this.key(sid), "stored", "1"));
  }

  /** Release the lock without a change. */
  async release(sid: string, token: string, now: number): Promise<void> {
    await this.call(() => this.redis.fleetRelease(this.key(sid, "lock"), this.sessionsKey(), token, now, sid));
  }

  /** Remove the session from the fleet. */
  async remove(sid: string): Promise<void> {
    await this.call(() => this.redis.multi().del(this.key(sid), this.key(sid, "cp"), this.key(sid, "a"), this.key(sid, "r"), this.key(sid, "last"), this.key(sid, "lock")).zrem(this.sessionsKey(), sid).exec());
  }

  /** Sessions unused since `before` (epoch ms), oldest first, at most `limit`. */
  async idleSince(before: number, limit: number): Promise<string[]> {
    return this.call(() => this.redis.zrangebyscore(this.sessionsKey(), "-inf", before, "LIMIT", 0, limit));
  }

  /** Fleet-wide counts, as Redis has them now. */
  async stats(): Promise<FleetStats> {
    const [replicas, sessions] = await this.call(() => this.redis.fleetAlive(this.replicasKey(), this.sessionsKey(), this.replicaTtlMs));
    return { replica: this.replica, sessions, replicas };
  }

  /** Whether Redis answers now, and the last connection error if not. */
  async health(): Promise<{ ok: boolean; error?: string }> {
    try {
      await this.call(() => this.redis.ping());
      return { ok: true };
    } catch (error) {
      return { ok: false, error: (error as Error).message || this.lastError || "unreachable" };
    }
  }

  /** Stop heartbeating, withdraw this replica (its locks become takeable at once) and disconnect. */
  async leave(): Promise<void> {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    await this.redis.zrem(this.replicasKey(), this.replica).catch(() => undefined);
    this.redis.disconnect();
  }

  private async heartbeat(): Promise<void> {
    await this.call(() => this.redis.fleetHeartbeat(this.replicasKey(), this.replica, this.replicaTtlMs));
  }

  private key(sid: string, part?: string): string {
    return part ? `${this.prefix}s:${sid}:${part}` : `${this.prefix}s:${sid}`;
  }

  private sessionsKey(): string {
    return `${this.prefix}sessions`;
  }

  private replicasKey(): string {
    return `${this.prefix}replicas`;
  }

  /** Run a Redis command; a failure is fleet_unavailable naming the server (never its password). */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof LlmixError) throw error;
      throw new LlmixError("fleet_unavailable", `the fleet's Redis at ${displayRedisUrl(this.options.redisUrl)} failed: ${(error as Error).message || String(error)}`);
    }
  }
}

/** A session's state from its small fields, in SMALL_FIELDS order. */
function stateOf(values: ReadonlyArray<string | null | undefined>): FleetSessionState {
  const field = Object.fromEntries(SMALL_FIELDS.map((name, i) => [name, values[i] ?? ""])) as Record<(typeof SMALL_FIELDS)[number], string>;
  return {
    meta: JSON.parse(field.meta) as FleetSessionMeta, start: JSON.parse(field.start) as SessionStart, seq: Number(field.seq), base: Number(field.base), abase: Number(field.abase),
    epoch: Number(field.epoch), steps: Number(field.steps), digest: field.digest, ended: field.ended === "1", stored: field.stored === "1", holder: field.holder,
    hasCheckpoint: field.cp === "1",
  };
}
