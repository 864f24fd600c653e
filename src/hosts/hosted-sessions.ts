/**
 * The sessions of one environment host: what runs inside the host thread (host-worker.ts), kept free of
 * threads and messages so it can be tested directly. Each session is one environment instance plus
 * what the wire needs: the observation the next action acts on, the step count, and the running totals
 * of its steps (the episode summary at close). Recorded sessions also hand each step's full record
 * back to the serving thread, which keeps them until the episode is stored, so nothing recorded lives
 * only here: a host can be stopped at any time and its sessions rebuilt elsewhere (`rebuild`) from
 * their start, a checkpoint and the actions since, byte-identical (checked by the step digest).
 *
 * Memory: a live environment holds its sandboxes (a billing-dispute world is a SQLite connection,
 * ~180 KB resident), its snapshot JSON deflated about 10 KB. So beyond `residentSessions` per host the
 * least recently used sessions are parked: their environment is snapshotted (deflated JSON: a string
 * would hold any non-Latin-1 text as UTF-16, twice its size) and closed, and restored from it when the
 * session is next used (inflate and restore, ~1-2 ms, on that request). A parked session
 * continues exactly as a resident one would: restore-then-continue is the contract `llmix check`
 * verifies (snapshot-restore), and a rebuild checks the same property by its digest.
 */
import { createHash } from "node:crypto";
import { deflateSync, inflateSync } from "node:zlib";
import type { Action, Observation, StepResult, ToolResult, TrajectoryStepRecord } from "../core/contract.js";
import type { EnvironmentSnapshot } from "../core/environment.js";
import { LlmixError, ServiceError, toLlmixError, ValidationError } from "../core/errors.js";
import type { AnyEnvironment, EnvironmentRegistry } from "../core/registry.js";
import { toStepRecord } from "../core/trajectory.js";
import { emptyTally, episodeRecordOf, tallyStep, type EpisodeTally } from "../rollout/episode.js";
import { Redactor, type RedactionRules } from "../store/redaction.js";
import type { EpisodeRecord } from "../store/types.js";
import { mcpTools } from "../tools/mcp-tools.js";
import { DEFAULT_RESIDENT_SESSIONS, PARK_IDLE_MS, type OpenedSession, type SessionRebuild, type SessionStart, type StepReply } from "./protocol.js";
import type { SnapshotSigner } from "./signing.js";

interface HostedSession {
  sid: string;
  /** The live environment; null while the session is parked (then `parked` holds its snapshot). */
  env: AnyEnvironment | null;
  parked: string | null;
  envId: string;
  envVersion: string;
  /** When the session was last used (wall clock, ms): only sessions idle PARK_IDLE_MS are parked. */
  lastUsed: number;
  taskId: string;
  seed: number;
  record: boolean;
  policyCheckpoint: string | null;
  /** The observation the next action acts on (the step record's `observation`). */
  observation: Observation;
  /** Steps answered, including those after the end (what the session's info reports). */
  stepCount: number;
  ended: boolean;
  /** Totals of the episode's steps (up to its end): the close summary is built from them. */
  tally: EpisodeTally;
  digest: string;
  /** With redaction rules: the episode's redactor (its values are the world's at reset or the last restore). */
  redactor: Redactor | null;
}

/** What a checkpoint holds: enough to continue the session exactly, without replaying what came before. */
interface Checkpoint {
  snapshot: EnvironmentSnapshot;
  observation: Observation;
  stepCount: number;
  ended: boolean;
  tally: EpisodeTally;
  digest: string;
}

const EMPTY_OBSERVATION: Observation = { rendered: "", tokens: 0 };

/** The digest of an answer: two rebuilds that answer the same bytes have the same digest. */
export function digestOf(text: string): string {
  return createHash("sha1").update(text).digest("base64");
}

/** The sessions one host holds, and the operations on them. */
export class HostedSessions {
  private readonly sessions = new Map<string, HostedSession>();
  /** The sessions whose environment is live, least recently used first. */
  private readonly resident = new Map<string, HostedSession>();

  constructor(
    private readonly registry: EnvironmentRegistry,
    private readonly signer: SnapshotSigner,
    private readonly residentSessions = DEFAULT_RESIDENT_SESSIONS,
    /** The wall clock of idle times (tests pass their own). */
    private readonly now: () => number = Date.now,
    /** Options each environment's instances are created with, by environment id (`llmix serve --env-options`). */
    private readonly envOptions: Readonly<Record<string, Record<string, unknown>>> = {},
    /**
     * The data policy's redaction rules: each recorded step and the episode summary are redacted here,
     * before they leave the host; the step's answer to the live client is not.
     */
    private readonly redaction?: RedactionRules,
  ) {
    if (!Number.isSafeInteger(residentSessions) || residentSessions < 1) throw new LlmixError("internal", `resident sessions must be an integer >= 1, got ${residentSessions}`);
  }

  /** Sessions held. */
  get size(): number {
    return this.sessions.size;
  }

  /** Sessions held whose environment is parked (snapshotted and closed until next used). */
  get parkedCount(): number {
    return this.sessions.size - this.resident.size;
  }

  /** Start a session: reset to (task_id, seed), or continue from a snapshot (checked unless trusted). */
  async open(start: SessionStart): Promise<OpenedSession> {
    if (this.sessions.has(start.sid)) throw new LlmixError("internal", `host already holds session ${start.sid}`);
    const entry = this.registry.get(start.env);
    const env = entry.create({ ...this.envOptions[entry.id] });
    try {
      let observation: Observation;
      let taskId: string;
      let seed: number;
      let step = 0;
      let ended = false;
      if (start.snapshot !== undefined) {
        const snapshot = this.checkedSnapshot(start.snapshot, start.trusted === true);
        await env.restore(snapshot);
        taskId = snapshot.task_id;
        seed = snapshot.seed;
        step = snapshot.step;
        ended = snapshot.status !== "running";
        // A snapshot does not hold the last observation; the fork's first step record starts empty.
        observation = EMPTY_OBSERVATION;
      } else {
        taskId = start.task_id as string;
        seed = start.seed as number;
        observation = await env.reset(taskId, seed);
      }
      const body = JSON.stringify({ session_id: start.sid, env: entry.id, env_version: env.info.version, task_id: taskId, seed, observation, tools: env.tools() });
      const session: HostedSession = {
        sid: start.sid, env, parked: null, envId: entry.id, envVersion: env.info.version, lastUsed: this.now(), taskId, seed, record: start.record, policyCheckpoint: start.policy_checkpoint, observation,
        stepCount: step, ended, tally: emptyTally(), digest: digestOf(body), redactor: this.redactorFor(env),
      };
      this.sessions.set(start.sid, session);
      await this.makeResident(session, env);
      const opened: OpenedSession = { env_version: env.info.version, task_id: taskId, seed, step, ended, body, digest: session.digest };
      // A fork's base is this checkpoint: a rebuild must not need the client's snapshot again.
      if (start.snapshot !== undefined) opened.checkpoint = await this.checkpoint(session);
      return opened;
    } catch (error) {
      await env.close();
      throw error;
    }
  }

  /**
   * Bring a session back from its start, a checkpoint and the actions since; the result must end
   * where the original did (same digest), or the session is refused as not reproducible.
   */
  async rebuild(rebuild: SessionRebuild): Promise<{ digest: string }> {
    const { start, checkpoint, actions } = rebuild;
    if (checkpoint === null) await this.open(start);
    else await this.openCheckpoint(start, JSON.parse(checkpoint) as Checkpoint);
    const session = this.require(start.sid);
    try {
      // The serving thread already holds the records of these steps: replay them without making records.
      session.record = false;
      for (const action of actions) await this.step(start.sid, action, false);
      session.record = start.record;
      if (session.digest !== rebuild.digest) {
        throw new ServiceError("host_failed", `session ${start.sid} could not be rebuilt identically after its host was stopped: the environment answered its ${actions.length} replayed actions differently (it is not deterministic)`);
      }
      return { digest: session.digest };
    } catch (error) {
      await this.close(start.sid, new Date(), new Date()).catch(() => undefined);
      throw error;
    }
  }

  /** Apply one action; the answer is the wire form, already serialized. */
  async step(sid: string, action: unknown, checkpoint: boolean): Promise<StepReply> {
    const s = this.require(sid);
    const result: StepResult = await (await this.live(s)).step(action as Action);
    s.stepCount++;
    const counted = !s.ended;
    let record: TrajectoryStepRecord | undefined;
    if (counted) {
      const full = toStepRecord({
        episodeId: s.sid, taskId: s.taskId, envVersion: s.envVersion, policyCheckpoint: s.policyCheckpoint,
        step: s.tally.steps + 1, observation: s.observation, action, result,
      });
      // The summary keeps only the last step's info (its verdict): redacting it is cheap on every step.
      const summary = summaryOnly(full);
      tallyStep(s.tally, s.redactor ? s.redactor.redactRecord(summary) : summary);
      if (s.record) record = s.redactor ? s.redactor.redactRecord(full) : full;
    }
    s.observation = result.observation;
    const ended = counted && (result.terminated || result.truncated);
    if (ended) s.ended = true;
    const body = JSON.stringify({
      observation: result.observation,
      reward: result.reward,
      reward_components: result.rewardComponents,
      terminated: result.terminated,
      truncated: result.truncated,
      tool_result: (result.info.tool_result as ToolResult | undefined) ?? null,
      info: result.info,
    });
    s.digest = digestOf(body);
    const reply: StepReply = { body, ended, counted, digest: s.digest };
    if (record) reply.record = record;
    if (checkpoint) reply.checkpoint = await this.checkpoint(s);
    return reply;
  }

  /** The session's snapshot, signed, as the body `{"snapshot": {...}}`. */
  async snapshot(sid: string): Promise<{ body: string }> {
    const snapshot = await (await this.live(this.require(sid))).snapshot();
    return { body: JSON.stringify({ snapshot: this.signer.sign(snapshot) }) };
  }

  /** Continue the session from a snapshot of the same environment (checked unless trusted). */
  async restore(sid: string, raw: unknown, trusted: boolean): Promise<{ task_id: string; seed: number; step: number; ended: boolean; checkpoint: string; digest: string }> {
    const s = this.require(sid);
    const snapshot = this.checkedSnapshot(raw, trusted);
    if (snapshot.env !== s.envId) {
      throw new ValidationError("invalid_snapshot", `snapshot is of ${String(snapshot.env)}; this session runs ${s.envId}`);
    }
    const env = await this.live(s);
    await env.restore(snapshot);
    // Another task or seed has other people in its world.
    s.redactor = this.redactorFor(env);
    s.taskId = snapshot.task_id;
    s.seed = snapshot.seed;
    s.tally = emptyTally();
    s.stepCount = snapshot.step;
    // The observation before the restore is not the one the next action acts on.
    s.observation = EMPTY_OBSERVATION;
    s.ended = snapshot.status !== "running";
    s.digest = digestOf(`restored:${snapshot.step}`);
    return { task_id: s.taskId, seed: s.seed, step: s.stepCount, ended: s.ended, checkpoint: await this.checkpoint(s), digest: s.digest };
  }

  /** The session's tools: the JSON-Schema specs and their MCP form (with the message tool, src/tools/mcp-tools.ts). */
  async tools(sid: string): Promise<{ tools: ReturnType<AnyEnvironment["tools"]>; mcp: Array<Record<string, unknown>> }> {
    const env = await this.live(this.require(sid));
    return { tools: env.tools(), mcp: mcpTools(env.toolDefinitions(), env.info.messages) as unknown as Array<Record<string, unknown>> };
  }

  /** A checkpoint of the session as it stands (what `open` of a fork or `restore` keep as their base). */
  async checkpointOf(sid: string): Promise<string> {
    return this.checkpoint(this.require(sid));
  }

  /** End a session: its episode summary (times from the serving thread, which saw the session start). */
  async close(sid: string, createdAt: Date, closedAt: Date): Promise<{ summary: EpisodeRecord }> {
    const s = this.require(sid);
    this.sessions.delete(sid);
    this.resident.delete(sid);
    await s.env?.close().catch(() => undefined);
    const job = {
      run_id: "", episode_id: s.sid, env: s.envId, task_id: s.taskId, seed: s.seed, group_id: s.sid, group_index: 0,
      policy: "service", policy_checkpoint: s.policyCheckpoint,
    };
    // A session closed before its first step still has a version; the record would take it from a step.
    return { summary: { ...episodeRecordOf(job, s.tally, null, createdAt, closedAt), env_version: s.envVersion } };
  }

  /** Close every session (the host is stopping). */
  async closeAll(): Promise<void> {
    for (const sid of [...this.sessions.keys()]) await this.close(sid, new Date(0), new Date(0)).catch(() => undefined);
  }

  /** The session's environment, restored from its parked snapshot if need be; now the most recently used. */
  private async live(s: HostedSession): Promise<AnyEnvironment> {
    s.lastUsed = this.now();
    if (s.env !== null) {
      // Most recently used goes last (a Map keeps insertion order).
      this.resident.delete(s.sid);
      this.resident.set(s.sid, s);
      if (this.resident.size > this.residentSessions) await this.parkIdle();
      return s.env;
    }
    const env = this.registry.get(s.envId).create({ ...this.envOptions[s.envId] });
    try {
      await env.restore(JSON.parse(inflateSync(Buffer.from(s.parked as string, "latin1")).toString("utf8")) as EnvironmentSnapshot);
    } catch (error) {
      await env.close().catch(() => undefined);
      throw new LlmixError("internal", `session ${s.sid} could not be brought back from its parked snapshot: ${toLlmixError(error).message}`);
    }
    s.parked = null;
    await this.makeResident(s, env);
    return env;
  }

  /** Give the session its live environment, parking the least recently used ones beyond the cap. */
  private async makeResident(s: HostedSession, env: AnyEnvironment): Promise<void> {
    s.env = env;
    this.resident.set(s.sid, s);
    await this.parkIdle();
  }

  /**
   * Park the least recently used sessions while more than the cap are resident — but only those idle
   * PARK_IDLE_MS: a client stepping more sessions in turn than the cap would otherwise pay a restore
   * on every step (least recently used is exactly the next one asked for). Over the cap with nothing
   * idle, memory waits until they are.
   */
  private async parkIdle(): Promise<void> {
    const idleBefore = this.now() - PARK_IDLE_MS;
    for (const [sid, oldest] of this.resident) {
      if (this.resident.size <= this.residentSessions || oldest.lastUsed > idleBefore) break;
      const parkedEnv = oldest.env as AnyEnvironment;
      let snapshot: string;
      try {
        // Level 1: nearly the size of level 6 (9.8 vs 8.8 KB for billing-dispute) at less cost.
        snapshot = deflateSync(JSON.stringify(await parkedEnv.snapshot()), { level: 1 }).toString("latin1");
      } catch {
        // An environment that cannot snapshot now stays resident: memory over the cap, never a lost session.
        break;
      }
      this.resident.delete(sid);
      oldest.parked = snapshot;
      oldest.env = null;
      await parkedEnv.close().catch(() => undefined);
    }
  }

  private async checkpoint(s: HostedSession): Promise<string> {
    const state: Checkpoint = {
      snapshot: await (await this.live(s)).snapshot(), observation: s.observation, stepCount: s.stepCount, ended: s.ended, tally: s.tally, digest: s.digest,
    };
    return JSON.stringify(state);
  }

  private async openCheckpoint(start: SessionStart, checkpoint: Checkpoint): Promise<void> {
    await this.open({ ...start, snapshot: checkpoint.snapshot, trusted: true });
    const s = this.require(start.sid);
    s.observation = checkpoint.observation;
    s.stepCount = checkpoint.stepCount;
    s.ended = checkpoint.ended;
    s.tally = checkpoint.tally;
    s.digest = checkpoint.digest;
  }

  /** The redactor of the episode `env` holds now (null without rules). */
  private redactorFor(env: AnyEnvironment): Redactor | null {
    return this.redaction ? Redactor.forEpisode(this.redaction, env) : null;
  }

  private checkedSnapshot(raw: unknown, trusted: boolean): EnvironmentSnapshot {
    if (!trusted) this.signer.verify(raw);
    return raw as EnvironmentSnapshot;
  }

  private require(sid: string): HostedSession {
    const s = this.sessions.get(sid);
    if (!s) throw new ServiceError("unknown_session", `no live session "${sid}" on this host`);
    return s;
  }
}

/** A step record cut down to what an episode summary reads (tokens, rewards, tool status and cost, the end). */
export function summaryOnly(record: TrajectoryStepRecord): TrajectoryStepRecord {
  const ended = record.terminated || record.truncated;
  const tool = record.tool_result;
  return {
    ...record,
    action: { type: "message", content: "" },
    observation: { rendered: "", tokens: record.observation.tokens },
    tool_result: tool ? { status: tool.status, latency_ms: tool.latency_ms, cost: tool.cost, output: null } : null,
    info: ended ? record.info : {},
  };
}
