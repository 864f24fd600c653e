/**
 * The sessions of one environment host: what runs inside the host thread (host-worker.ts), kept free of
 * threads and messages so it can be tested directly. Each session is one environment instance plus
 * what the wire needs: the observation the next action acts on, the step count, and the running totals
 * of its steps (the episode summary at close). Recorded sessions also hand each step's full record
 * back to the serving thread, which keeps them until the episode is stored, so nothing recorded lives
 * only here: a host can be stopped at any time and its sessions rebuilt elsewhere (`rebuild`) from
 * their start, a checkpoint and the actions since, byte-identical (checked by the step digest).
 */
import { createHash } from "node:crypto";
import type { Action, Observation, StepResult, ToolResult, TrajectoryStepRecord } from "../core/contract.js";
import type { EnvironmentSnapshot } from "../core/environment.js";
import { LlmixError, ServiceError, ValidationError } from "../core/errors.js";
import type { AnyEnvironment, EnvironmentRegistry } from "../core/registry.js";
import { toStepRecord } from "../core/trajectory.js";
import { emptyTally, episodeRecordOf, tallyStep, type EpisodeTally } from "../rollout/episode.js";
import type { EpisodeRecord } from "../store/types.js";
import type { AnyTool } from "../tools/define.js";
import type { OpenedSession, SessionRebuild, SessionStart, StepReply } from "./protocol.js";
import type { SnapshotSigner } from "./signing.js";

interface HostedSession {
  sid: string;
  env: AnyEnvironment;
  envId: string;
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

  constructor(
    private readonly registry: EnvironmentRegistry,
    private readonly signer: SnapshotSigner,
  ) {}

  /** Sessions held. */
  get size(): number {
    return this.sessions.size;
  }

  /** Start a session: reset to (task_id, seed), or continue from a snapshot (checked unless trusted). */
  async open(start: SessionStart): Promise<OpenedSession> {
    if (this.sessions.has(start.sid)) throw new LlmixError("internal", `host already holds session ${start.sid}`);
    const entry = this.registry.get(start.env);
    const env = entry.create();
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
        sid: start.sid, env, envId: entry.id, taskId, seed, record: start.record, policyCheckpoint: start.policy_checkpoint, observation,
        stepCount: step, ended, tally: emptyTally(), digest: digestOf(body),
      };
      this.sessions.set(start.sid, session);
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
    const result: StepResult = await s.env.step(action as Action);
    s.stepCount++;
    const counted = !s.ended;
    let record: TrajectoryStepRecord | undefined;
    if (counted) {
      const full = toStepRecord({
        episodeId: s.sid, taskId: s.taskId, envVersion: s.env.info.version, policyCheckpoint: s.policyCheckpoint,
        step: s.tally.steps + 1, observation: s.observation, action, result,
      });
      tallyStep(s.tally, summaryOnly(full));
      if (s.record) record = full;
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
    const snapshot = await this.require(sid).env.snapshot();
    return { body: JSON.stringify({ snapshot: this.signer.sign(snapshot) }) };
  }

  /** Continue the session from a snapshot of the same environment (checked unless trusted). */
  async restore(sid: string, raw: unknown, trusted: boolean): Promise<{ task_id: string; seed: number; step: number; ended: boolean; checkpoint: string }> {
    const s = this.require(sid);
    const snapshot = this.checkedSnapshot(raw, trusted);
    if (snapshot.env !== s.envId) {
      throw new ValidationError("invalid_snapshot", `snapshot is of ${String(snapshot.env)}; this session runs ${s.envId}`);
    }
    await s.env.restore(snapshot);
    s.taskId = snapshot.task_id;
    s.seed = snapshot.seed;
    s.tally = emptyTally();
    s.stepCount = snapshot.step;
    // The observation before the restore is not the one the next action acts on.
    s.observation = EMPTY_OBSERVATION;
    s.ended = snapshot.status !== "running";
    s.digest = digestOf(`restored:${snapshot.step}`);
    return { task_id: s.taskId, seed: s.seed, step: s.stepCount, ended: s.ended, checkpoint: await this.checkpoint(s) };
  }

  /** The session's tools: the JSON-Schema specs and their MCP form. */
  tools(sid: string): { tools: ReturnType<AnyEnvironment["tools"]>; mcp: Array<Record<string, unknown>> } {
    const env = this.require(sid).env;
    return { tools: env.tools(), mcp: env.toolDefinitions().map((t: AnyTool) => t.mcp() as unknown as Record<string, unknown>) };
  }

  /** A checkpoint of the session as it stands (what `open` of a fork or `restore` keep as their base). */
  async checkpointOf(sid: string): Promise<string> {
    return this.checkpoint(this.require(sid));
  }

  /** End a session: its episode summary (times from the serving thread, which saw the session start). */
  async close(sid: string, createdAt: Date, closedAt: Date): Promise<{ summary: EpisodeRecord }> {
    const s = this.require(sid);
    this.sessions.delete(sid);
    await s.env.close().catch(() => undefined);
    const job = {
      run_id: "", episode_id: s.sid, env: s.envId, task_id: s.taskId, seed: s.seed, group_id: s.sid, group_index: 0,
      policy: "service", policy_checkpoint: s.policyCheckpoint,
    };
    // A session closed before its first step still has a version; the record would take it from a step.
    return { summary: { ...episodeRecordOf(job, s.tally, null, createdAt, closedAt), env_version: s.env.info.version } };
  }

  /** Close every session (the host is stopping). */
  async closeAll(): Promise<void> {
    for (const sid of [...this.sessions.keys()]) await this.close(sid, new Date(0), new Date(0)).catch(() => undefined);
  }

  private async checkpoint(s: HostedSession): Promise<string> {
    const state: Checkpoint = {
      snapshot: await s.env.snapshot(), observation: s.observation, stepCount: s.stepCount, ended: s.ended, tally: s.tally, digest: s.digest,
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
