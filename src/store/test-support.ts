/**
 * The TrajectoryStore contract as a test suite: `describeTrajectoryStore(name, factory)` runs every test
 * against one store implementation, so the SQLite and PostgreSQL stores are held to the same answers,
 * field for field. Tests that only make sense for one store (files, WAL, connection failures) stay in
 * that store's own test file.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError } from "../core/errors.js";
import { toStepRecord } from "../core/trajectory.js";
import { currentOwner } from "./liveness.js";
import { episodeIdOf, type EpisodeQuery, type EpisodeRecord, type RunOwner, type RunRecord, type StoredEpisode, type TrajectoryStore } from "./types.js";

/** Options every store takes, as the contract tests use them. */
export interface ContractStoreOptions {
  pageSize?: number;
  owner?: RunOwner;
  now?: () => number;
  staleRunAfterMs?: number;
}

/** How the contract suite gets stores of one implementation. */
export interface StoreFactory {
  /** A new, empty store (its own file, or its own schema). */
  open(options?: ContractStoreOptions): Promise<TrajectoryStore>;
  /** A second, independent instance on the same data as `store` (another connection, as another process would open it). */
  reopen(store: TrajectoryStore, options?: ContractStoreOptions): Promise<TrajectoryStore>;
}

/** A pid no process has: above Linux's largest pid_max (2^22). */
export const DEAD_PID = 2 ** 30;

/** The LlmixError a promise rejects with (failing the test if it resolves or rejects with anything else). */
export async function rejection(promise: Promise<unknown>): Promise<LlmixError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(LlmixError);
    return error as LlmixError;
  }
  throw new Error("expected the call to fail");
}

/** A run record as a runner makes it. */
export function run(runId: string, createdAt = "2025-01-01T00:00:00.000Z", extra: Partial<RunRecord> = {}): RunRecord {
  return {
    run_id: runId,
    env: "tiny",
    env_version: "1.0.0",
    policy: "noisy-oracle:0.3",
    policy_checkpoint: null,
    config: { n: 3, group_size: 4, seeds: [1, 2], nested: { temperature: 0.7 } },
    tools: [{ name: "lookup", description: "Look a thing up.", parameters: { type: "object", properties: {} }, effect: "read" }],
    status: "running",
    planned_episodes: 12,
    created_at: createdAt,
    finished_at: null,
    ...extra,
  };
}

/** How `episode` shapes an episode. */
export interface EpisodeOptions {
  env?: string;
  difficulty?: string;
  status?: "ok" | "error";
  reward?: number;
  passed?: boolean | null;
  steps?: number;
  /** ISO time the episode finished (default 2025-01-01T00:00:01.500Z). */
  finishedAt?: string;
}

function step(episodeId: string, taskId: string, n: number, last: boolean): TrajectoryStepRecord {
  return toStepRecord({
    episodeId,
    taskId,
    envVersion: "1.0.0",
    policyCheckpoint: "step_01800",
    step: n,
    observation: { rendered: `observation ${n} of ${episodeId}: ${"x".repeat(40)}`, tokens: 17 + n },
    action: { type: "tool_call", tool: "lookup", args: { id: n, query: "ünïcode ✓", flags: [true, false, null] } },
    result: {
      observation: { rendered: "next", tokens: 1 },
      reward: last ? 1 : -0.01,
      rewardComponents: { task: last ? 1.01 : 0, step_cost: -0.01 },
      terminated: last,
      truncated: false,
      info: { tool_result: { status: "ok", latency_ms: 84, cost: 0.001, output: { rows: [1, 2.5, -3e-7] } }, note: n === 0 ? "first" : undefined },
    },
  });
}

/** An episode with its steps, as a runner stores it. */
export function episode(runId: string, taskId: string, groupIndex: number, o: EpisodeOptions = {}): StoredEpisode {
  const id = episodeIdOf(runId, taskId, groupIndex);
  const n = o.steps ?? 3;
  const passed = o.passed === undefined ? (o.reward ?? 0) > 0.5 : o.passed;
  const record: EpisodeRecord = {
    episode_id: id,
    run_id: runId,
    env: o.env ?? "tiny",
    env_version: "1.0.0",
    task_id: taskId,
    difficulty: o.difficulty ?? taskId.split("/")[1] ?? "easy",
    seed: 771,
    group_id: `${runId}/${taskId}`,
    group_index: groupIndex,
    policy: "noisy-oracle:0.3",
    policy_checkpoint: "step_01800",
    status: o.status ?? "ok",
    error: o.status === "error" ? { code: "policy_failed", message: "server down" } : null,
    steps: n,
    tokens: 120,
    total_reward: o.reward ?? 0,
    outcome: o.status === "error" ? null : (o.reward ?? 0),
    reward_components: { task: o.reward ?? 0, step_cost: -0.03 },
    verdict: passed === null ? null : { passed, score: o.reward ?? 0, parts: { a: true }, details: "ok" },
    end_reason: "terminated",
    terminated: true,
    truncated: false,
    cost: 0.003,
    tool_calls: { ok: n - 1, error: 1 },
    advantages: null,
    started_at: "2025-01-01T00:00:00.000Z",
    finished_at: o.finishedAt ?? "2025-01-01T00:00:01.500Z",
    duration_ms: 1500,
  };
  return { episode: record, steps: Array.from({ length: n }, (_, i) => step(id, taskId, i, i === n - 1)) };
}

/** JSON text with keys in insertion order: equal texts mean the record came back exactly, key order included. */
export const exact = (value: unknown) => JSON.stringify(value);

/** A run as read back, without the owner and heartbeat the store adds. */
export function stored(value: RunRecord | undefined): Omit<RunRecord, "owner" | "heartbeat_at"> | undefined {
  if (!value) return value;
  const { owner: _owner, heartbeat_at: _heartbeat, ...rest } = value;
  return rest;
}

/** Byte order of UTF-8, as SQLite's BINARY collation and PostgreSQL's "C" collation compare text. */
export function byteCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** Run the TrajectoryStore contract against the stores `factory` opens. */
export function describeTrajectoryStore(name: string, factory: StoreFactory): void {
  describe(`${name}: the TrajectoryStore contract`, () => {
    let store: TrajectoryStore;
    const opened: TrajectoryStore[] = [];
    /** A new store of this kind, closed after the test. */
    const open = async (options?: ContractStoreOptions) => {
      const s = await factory.open(options);
      opened.push(s);
      return s;
    };
    /** Another instance on `of`'s data, closed after the test. */
    const reopen = async (of: TrajectoryStore, options?: ContractStoreOptions) => {
      const s = await factory.reopen(of, options);
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      store = await open();
    });

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });

    describe("runs", () => {
      it("round-trips a run, lists newest first and finishes it", async () => {
        await store.createRun(run("r-old", "2025-01-01T00:00:00.000Z"));
        await store.createRun(run("r-new", "2025-03-01T00:00:00.000Z"));
        await store.createRun(run("r-mid", "2025-02-01T00:00:00.000Z"));
        await store.createRun(run("r-mid-later", "2025-02-01T00:00:00.000Z"));
        const old = await store.getRun("r-old");
        expect(exact(stored(old))).toBe(exact(run("r-old", "2025-01-01T00:00:00.000Z")));
        expect(old?.owner).toEqual(currentOwner());
        expect(Date.parse(old?.heartbeat_at ?? "")).toBeGreaterThan(Date.parse("2025-01-01"));
        expect((await store.listRuns()).map((r) => r.run_id)).toEqual(["r-new", "r-mid-later", "r-mid", "r-old"]);
        expect((await store.listRuns({ limit: 2 })).map((r) => r.run_id)).toEqual(["r-new", "r-mid-later"]);
        expect(await store.listRuns({ limit: 0 })).toEqual([]);

        await store.finishRun("r-old", "finished");
        const finished = await store.getRun("r-old");
        expect(finished?.status).toBe("finished");
        expect(Date.parse(finished?.finished_at ?? "")).toBeGreaterThan(Date.parse("2025-01-01"));
        expect(finished?.config).toEqual(run("r-old").config);
        await store.finishRun("r-new", "failed");
        expect((await store.listRuns()).find((r) => r.run_id === "r-new")?.status).toBe("failed");
        expect(await store.getRun("nope")).toBeUndefined();
      });

      it("refuses duplicates, unknown runs and malformed runs with typed errors", async () => {
        await store.createRun(run("r1"));
        const dup = await rejection(store.createRun(run("r1")));
        expect(dup.code).toBe("invalid_argument");
        expect(dup.message).toContain("r1");
        const unknown = await rejection(store.finishRun("ghost", "finished"));
        expect(unknown.code).toBe("unknown_run");
        expect(unknown.message).toContain("ghost");

        const bad: Array<[unknown, string]> = [
          [{ ...run("x"), run_id: undefined }, "run_id"],
          [{ ...run("x"), run_id: "" }, "run_id"],
          [{ ...run("x"), status: "done" }, "status"],
          [{ ...run("x"), planned_episodes: -1 }, "planned_episodes"],
          [{ ...run("x"), planned_episodes: 1.5 }, "planned_episodes"],
          [{ ...run("x"), tools: "lookup" }, "tools"],
          [{ ...run("x"), config: { temperature: Number.NaN } }, "run.config.temperature"],
          [{ ...run("x"), config: undefined }, "config"],
          [null, "object"],
          ["r", "object"],
        ];
        for (const [value, mention] of bad) {
          const error = await rejection(store.createRun(value as RunRecord));
          expect(error.code, mention).toBe("invalid_argument");
          expect(error.message).toContain(mention);
        }
        expect((await rejection(store.finishRun("r1", "running" as "finished"))).code).toBe("invalid_argument");
        expect((await rejection(store.finishRun(42 as unknown as string, "finished"))).code).toBe("invalid_argument");
        expect((await rejection(store.listRuns({ limit: -1 }))).code).toBe("invalid_argument");
        expect((await rejection(store.listRuns({ limit: 2.5 }))).code).toBe("invalid_argument");
        expect((await rejection(store.listRuns({ lmit: 2 } as { limit?: number }))).code).toBe("invalid_argument");
        expect((await store.listRuns()).map((r) => r.run_id)).toEqual(["r1"]);
      });
    });

    describe("run liveness", () => {
      it("a running run reads interrupted once its owner's pid is gone from this host or its heartbeat is stale", async () => {
        let now = Date.parse("2026-01-01T00:00:00.000Z");
        const s = await open({ now: () => now, staleRunAfterMs: 30_000 });
        await s.createRun(run("mine"));
        await s.createRun(run("dead", undefined, { owner: { host: currentOwner().host, pid: DEAD_PID } }));
        // A pid on another host says nothing here: only its heartbeat does.
        await s.createRun(run("remote", undefined, { owner: { host: "another-host", pid: DEAD_PID } }));
        const statuses = async () => Object.fromEntries((await s.listRuns()).map((r) => [r.run_id, r.status]));
        expect(await statuses()).toEqual({ mine: "running", dead: "interrupted", remote: "running" });
        expect((await s.getRun("mine"))?.owner).toEqual(currentOwner());
        expect((await s.getRun("remote"))?.owner).toEqual({ host: "another-host", pid: DEAD_PID });

        now += 30_000;
        expect(await statuses()).toEqual({ mine: "running", dead: "interrupted", remote: "running" });
        now += 1;
        expect(await statuses()).toEqual({ mine: "interrupted", dead: "interrupted", remote: "interrupted" });

        // Only this owner's running runs take the heartbeat; unknown and repeated ids are skipped.
        expect(await s.heartbeatRuns(["mine", "remote", "dead", "ghost", "mine"])).toBe(1);
        expect(await statuses()).toEqual({ mine: "running", dead: "interrupted", remote: "interrupted" });
        expect((await s.getRun("mine"))?.heartbeat_at).toBe(new Date(now).toISOString());

        await s.finishRun("mine", "finished");
        now += 3_600_000;
        expect((await s.getRun("mine"))?.status).toBe("finished");
        expect(await s.heartbeatRuns(["mine"])).toBe(0);
        expect(await s.heartbeatRuns([])).toBe(0);
        expect((await rejection(s.heartbeatRuns([""]))).code).toBe("invalid_argument");
        expect((await rejection(s.heartbeatRuns("mine" as unknown as string[]))).code).toBe("invalid_argument");
        expect((await rejection(s.createRun(run("bad-owner", undefined, { owner: { host: "", pid: 1 } })))).code).toBe("invalid_argument");
      });

      it("an owner that stops on an error leaves its run interrupted (no finished_at); a new owner claims it, a live one is refused", async () => {
        const other = await open({ owner: { host: "another-host", pid: 7 } });
        const mine = await reopen(other);
        await other.createRun(run("r"));
        const refused = await rejection(mine.claimRun("r"));
        expect(refused.code).toBe("invalid_argument");
        expect(refused.message).toMatch(/run r is running \(owner another-host pid 7/);

        await other.finishRun("r", "interrupted");
        const left = await mine.getRun("r");
        expect([left?.status, left?.finished_at]).toEqual(["interrupted", null]);
        expect(await mine.claimRun("r")).toMatchObject({ run_id: "r", status: "running", finished_at: null, owner: currentOwner() });
        // The old owner has lost the run: its heartbeats no longer stamp it.
        expect(await other.heartbeatRuns(["r"])).toBe(0);
        expect(await mine.heartbeatRuns(["r"])).toBe(1);
        // Claiming a run one already owns is a no-op take-over.
        expect((await mine.claimRun("r")).owner).toEqual(currentOwner());

        await mine.finishRun("r", "finished");
        expect(await other.claimRun("r")).toMatchObject({ status: "running", owner: { host: "another-host", pid: 7 } });
        expect((await rejection(mine.claimRun("ghost"))).code).toBe("unknown_run");
        expect((await rejection(mine.claimRun(""))).code).toBe("invalid_argument");
      });

      it("two stores claiming one interrupted run at once: exactly one takes it", async () => {
        const a = await open({ owner: { host: "host-a", pid: 11 } });
        const b = await reopen(a, { owner: { host: "host-b", pid: 12 } });
        for (let i = 0; i < 5; i++) {
          const id = `contested-${i}`;
          await a.createRun(run(id, undefined, { status: "interrupted", owner: { host: "gone", pid: 1 } }));
          await a.finishRun(id, "interrupted");
          const results = await Promise.allSettled([a.claimRun(id), b.claimRun(id)]);
          const won = results.filter((r) => r.status === "fulfilled");
          expect(won, id).toHaveLength(1);
          const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
          expect((lost.reason as LlmixError).code).toBe("invalid_argument");
          const winner = (won[0] as PromiseFulfilledResult<RunRecord>).value.owner;
          expect((await a.getRun(id))?.owner).toEqual(winner);
        }
      });
    });

    describe("writing episodes", () => {
      it("round-trips episodes and steps exactly, steps ordered by step", async () => {
        const a = episode("r1", "tiny/easy/seed-1", 0, { reward: 1, steps: 4 });
        const b = episode("r1", "tiny/easy/seed-1", 1, { reward: 0 });
        const shuffled = { ...b, steps: [b.steps[2], b.steps[0], b.steps[1]] as TrajectoryStepRecord[] };
        await store.writeEpisodes([a, shuffled]);
        expect(exact(await store.getEpisode(a.episode.episode_id))).toBe(exact(a.episode));
        expect(exact(await store.getSteps(a.episode.episode_id))).toBe(exact(a.steps));
        expect(exact(await store.getSteps(b.episode.episode_id))).toBe(exact(b.steps));
        // the undefined info entry is dropped, as JSON does; everything else is identical
        expect((await store.getSteps(a.episode.episode_id))[0]).toEqual(a.steps[0]);
        expect(await store.getEpisode("r1/none/g0")).toBeUndefined();
        expect(await store.getSteps("r1/none/g0")).toEqual([]);
        await store.writeEpisodes([]);
        expect(await store.countEpisodes()).toBe(2);
      });

      it("keeps exotic but valid JSON: unicode, big and tiny numbers, nested arrays, empty steps", async () => {
        const e = episode("r1", "tiny/hard/seed-2", 0, { steps: 1 });
        e.episode.verdict = { passed: true, score: 1e-300, details: { text: "😀 \u0000 \"quoted\"", deep: [[[{ x: -0 }]]] } };
        (e.steps[0] as TrajectoryStepRecord).observation.rendered = "line\nbreak\ttab \u2028 ✓".repeat(100);
        (e.steps[0] as TrajectoryStepRecord).policy = { prompt_token_ids: [1, 2, 3], logprobs: [-0.5, -1e-9], model: "m" };
        const empty = episode("r1", "tiny/hard/seed-2", 1, { steps: 0 });
        await store.writeEpisodes([e, empty]);
        expect(exact(await store.getEpisode(e.episode.episode_id))).toBe(exact(e.episode));
        expect(exact(await store.getSteps(e.episode.episode_id))).toBe(exact(e.steps));
        expect(await store.getSteps(empty.episode.episode_id)).toEqual([]);
        expect(await store.episodes({ passed: true })).toHaveLength(1);
      });

      it("keeps NUL characters inside records (JSON escapes them) and refuses them in ids and key fields", async () => {
        const nul = "before\u0000after \u0000\u0000 end";
        const e = episode("r1", "tiny/easy/seed-1", 0, { steps: 2 });
        e.episode.verdict = { passed: true, details: nul, [`key${"\u0000"}with nul`]: nul };
        e.episode.error = { code: "x\u0000y", message: nul };
        (e.steps[0] as TrajectoryStepRecord).observation.rendered = nul.repeat(50);
        (e.steps[1] as TrajectoryStepRecord).action = { type: "message", content: nul };
        await store.createRun(run("r1", undefined, { config: { prompt: nul }, policy: `p${"\u0000"}` }));
        await store.writeEpisodes([e]);
        expect(exact(await store.getEpisode(e.episode.episode_id))).toBe(exact(e.episode));
        expect(exact(await store.getSteps(e.episode.episode_id))).toBe(exact(e.steps));
        expect(exact(stored(await store.getRun("r1")))).toBe(exact(run("r1", undefined, { config: { prompt: nul }, policy: `p${"\u0000"}` })));
        const streamed: StoredEpisode[] = [];
        for await (const s of store.streamEpisodes()) streamed.push(s);
        expect(exact(streamed)).toBe(exact([e]));

        const bad = (patch: Partial<EpisodeRecord>) => {
          const x = episode("r1", "tiny/easy/seed-1", 1);
          return { ...x, episode: { ...x.episode, ...patch } };
        };
        const refusals: Array<[() => Promise<unknown>, string]> = [
          [() => store.writeEpisodes([bad({ task_id: "tiny/easy\u0000" })]), "task_id"],
          [() => store.writeEpisodes([bad({ env: "ti\u0000ny" })]), "env"],
          [() => store.writeEpisodes([bad({ difficulty: "\u0000" })]), "difficulty"],
          [() => store.writeEpisodes([bad({ run_id: "r\u00001" })]), "run_id"],
          [() => store.writeEpisodes([episode("r\u00002", "t/easy/seed-1", 0)]), "episode_id"],
          [() => store.createRun(run("r\u00003")), "run_id"],
          [() => store.createRun(run("r4", "2025\u0000")), "created_at"],
          [() => store.createRun(run("r5", undefined, { owner: { host: "h\u0000", pid: 1 } })), "host"],
          [() => store.getRun("r\u00001"), "runId"],
          [() => store.getEpisode("e\u0000"), "episodeId"],
          [() => store.getSteps("e\u0000"), "episodeId"],
          [() => store.episodes({ task_id: "a\u0000" }), "task_id"],
          [() => store.countEpisodes({ run_id: "\u0000" }), "run_id"],
          [() => store.heartbeatRuns(["r1", "x\u0000"]), "runIds[1]"],
        ];
        for (const [call, mention] of refusals) {
          const error = await rejection(call());
          expect(error.code, mention).toBe("invalid_argument");
          expect(error.message, mention).toContain(mention);
          expect(error.message, mention).toContain("NUL");
        }
        expect(await store.countEpisodes()).toBe(1);
        expect((await store.listRuns()).map((r) => r.run_id)).toEqual(["r1"]);
      });

      it("round-trips ids and records full of what bulk formats escape: tabs, newlines, backslashes, \\N, \\., emoji, lone surrogates", async () => {
        // Each is special somewhere: COPY's text format (delimiter tab, row end newline, \r, backslash escapes,
        // \N for NULL, \. for end of data), CSV (quotes), JSON (quotes, backslashes, U+2028), UTF-16 (surrogates).
        const nasty = ["tab\there", "new\nline", "cr\rlf\r\n", "back\\slash", "\\N", "\\.", "\\.\n", "ends with \\", "\\\\N", "\\t not a tab", "\\x41\\u0041\\101", "emoji 😀👩‍👩‍👧 \u{1F600}", "\u2028\u2029\u0085", "quote \" ' \"\"", "ctl \u0001\u001f\u007f\b\f\v", "ünïcödé ✓ 中文"];
        // Ids are columns, and a column holds only well-formed text: lone surrogates go in the JSON records,
        // which write them as \ud800-style escapes, and come back as they went in.
        const lone = ["lone \ud800 high", "lone \udfff low", "\udc00\ud800 reversed", "split 😀".slice(0, -1)];
        const runId = `\\.\n${nasty.join("|")}`;
        const written: StoredEpisode[] = [];
        for (const [i, text] of [...nasty, runId].entries()) {
          const e = episode(runId, `${text}/easy/seed-${i}`, i, { steps: 3, difficulty: text, env: text });
          e.episode.verdict = { passed: true, details: { [text]: [...nasty, ...lone] } };
          e.episode.error = { code: text, message: lone.join(text) };
          for (const s of e.steps) {
            s.observation.rendered = [...nasty, ...lone].join(text);
            s.info = { [text]: lone, [lone[0] as string]: text };
          }
          written.push(e);
        }
        // Enough steps of ~2 KB to cross the pieces a bulk write is cut into (64 KiB of COPY text).
        const long = episode(runId, "\t\n\\/easy/seed-99", 99, { steps: 120 });
        for (const s of long.steps) s.observation.rendered = `${nasty.join("\\")}${"\\\t\n".repeat(200)}${lone.join("")}${s.step}`;
        written.push(long);
        await store.writeEpisodes(written);

        for (const e of written) {
          const id = e.episode.episode_id;
          expect(exact(await store.getEpisode(id)), JSON.stringify(id)).toBe(exact(e.episode));
          expect(exact(await store.getSteps(id)), JSON.stringify(id)).toBe(exact(e.steps));
        }
        const back = (await store.getSteps(long.episode.episode_id))[5] as TrajectoryStepRecord;
        expect(back.observation.rendered).toBe((long.steps[5] as TrajectoryStepRecord).observation.rendered);
        expect((await store.getSteps(written[0]?.episode.episode_id as string))[0]?.info).toEqual({ [nasty[0] as string]: lone, [lone[0] as string]: nasty[0] });
        expect(await store.countEpisodes({ run_id: runId })).toBe(written.length);
        expect(await store.countEpisodes({ task_id: "\\N/easy/seed-4" })).toBe(1);
        const idsOf = (list: EpisodeRecord[]) => list.map((e) => e.episode_id);
        expect(idsOf(await store.episodes({ env: "\\." }))).toEqual([episodeIdOf(runId, "\\./easy/seed-5", 5)]);
        const sortedIds = [...written].sort((a, b) => byteCompare(a.episode.task_id, b.episode.task_id)).map((e) => e.episode.episode_id);
        expect(idsOf(await store.episodes({ run_id: runId }))).toEqual(sortedIds);
        const streamed: StoredEpisode[] = [];
        for await (const s of store.streamEpisodes({ run_id: runId })) streamed.push(s);
        expect(exact(streamed)).toBe(exact(sortedIds.map((id) => written.find((e) => e.episode.episode_id === id))));
        // a rewrite of a stored episode is refused whole, and leaves the first write exactly as it was
        const again = episode(runId, `${nasty[0]}/easy/seed-0`, 0, { steps: 1 });
        expect((await rejection(store.writeEpisodes([again]))).details.episode_id).toBe(again.episode.episode_id);
        expect(exact(await store.getSteps(again.episode.episode_id))).toBe(exact(written[0]?.steps));
      });

      it("refuses a batch with a duplicate id, naming it, and writes nothing of it", async () => {
        const a = episode("r1", "tiny/easy/seed-1", 0);
        const b = episode("r1", "tiny/easy/seed-1", 1);
        const inBatch = await rejection(store.writeEpisodes([a, b, episode("r1", "tiny/easy/seed-1", 0)]));
        expect(inBatch.code).toBe("invalid_argument");
        expect(inBatch.message).toContain(a.episode.episode_id);
        expect(await store.countEpisodes()).toBe(0);

        await store.writeEpisodes([a]);
        const c = episode("r1", "tiny/easy/seed-1", 2);
        const again = await rejection(store.writeEpisodes([b, c, episode("r1", "tiny/easy/seed-1", 0)]));
        expect(again.code).toBe("invalid_argument");
        expect(again.message).toContain(a.episode.episode_id);
        expect(again.details.episode_id).toBe(a.episode.episode_id);
        // b and c were in the failed batch: neither they nor their steps are stored
        expect(await store.countEpisodes()).toBe(1);
        expect(await store.getEpisode(b.episode.episode_id)).toBeUndefined();
        expect(await store.getSteps(b.episode.episode_id)).toEqual([]);
        expect(await store.getSteps(c.episode.episode_id)).toEqual([]);
        // the store is still writable after a refused batch
        await store.writeEpisodes([b, c]);
        expect(await store.countEpisodes()).toBe(3);
      });

      it("names the first already-stored id in the caller's order, whatever the id order", async () => {
        const ids = ["r1/t/easy/seed-1/g9", "r1/t/easy/seed-1/g1", "r1/t/easy/seed-1/g5"];
        const make = (g: number) => episode("r1", "t/easy/seed-1", g);
        await store.writeEpisodes([make(1), make(5)]);
        const error = await rejection(store.writeEpisodes([make(9), make(5), make(1), make(2)]));
        expect(error.details.episode_id).toBe(ids[2]);
        expect(await store.countEpisodes()).toBe(2);
      });

      it("refuses malformed batches with invalid_argument naming the problem, writing nothing", async () => {
        const good = () => episode("r1", "tiny/easy/seed-1", 0);
        const other = () => episode("r1", "tiny/easy/seed-1", 1);
        type Case = [string, () => unknown, string];
        const cases: Case[] = [
          ["not an array", () => ({ episode: good().episode }), "array"],
          ["null item", () => [other(), null], "episodes[1]"],
          ["missing episode", () => [{ steps: [] }], "episodes[0].episode"],
          ["missing episode_id", () => [other(), { ...good(), episode: { ...good().episode, episode_id: undefined } }], "episodes[1].episode.episode_id"],
          ["numeric episode_id", () => [{ ...good(), episode: { ...good().episode, episode_id: 7 } }], "episode_id"],
          ["steps of another episode", () => [{ ...good(), steps: [...good().steps, other().steps[0]] }], "belongs to episode"],
          ["steps not an array", () => [{ ...good(), steps: "none" }], "steps"],
          ["duplicate step", () => [{ ...good(), steps: [good().steps[0], good().steps[0]] }], "step 0 twice"],
          ["negative step", () => [{ ...good(), steps: [{ ...good().steps[0], step: -1 }] }], ".step"],
          ["NaN total_reward", () => [other(), { ...good(), episode: { ...good().episode, total_reward: Number.NaN } }], "total_reward"],
          ["Infinity cost", () => [{ ...good(), episode: { ...good().episode, cost: Number.POSITIVE_INFINITY } }], "cost"],
          ["NaN reward component", () => [{ ...good(), episode: { ...good().episode, reward_components: { task: Number.NaN } } }], "reward_components.task"],
          ["NaN deep in a step", () => {
            const e = good();
            (e.steps[1] as TrajectoryStepRecord).info = { tool_result: { output: { rows: [1, Number.NEGATIVE_INFINITY] } } };
            return [e];
          }, "episodes[0].steps[1].info.tool_result.output.rows[1]"],
          ["bigint in a step", () => {
            const e = good();
            (e.steps[0] as TrajectoryStepRecord).info = { big: 10n };
            return [e];
          }, "bigint"],
          ["function in a verdict", () => [{ ...good(), episode: { ...good().episode, verdict: { passed: true, fn: () => 1 } } }], "verdict.fn"],
          ["circular info", () => {
            const e = good();
            const loop: Record<string, unknown> = {};
            loop.self = loop;
            (e.steps[0] as TrajectoryStepRecord).info = loop;
            return [e];
          }, "circular"],
          ["bad status", () => [{ ...good(), episode: { ...good().episode, status: "crashed" } }], "status"],
          ["bad group_index", () => [{ ...good(), episode: { ...good().episode, group_index: -1 } }], "group_index"],
          ["huge group_index", () => [{ ...good(), episode: { ...good().episode, group_index: 2 ** 60 } }], "group_index"],
          ["missing task_id", () => [{ ...good(), episode: { ...good().episode, task_id: undefined } }], "task_id"],
          ["bad advantages", () => [{ ...good(), episode: { ...good().episode, advantages: { grpo: 1, dr_grpo: Number.NaN, rloo: 0 } } }], "advantages.dr_grpo"],
          ["missing advantages", () => [{ ...good(), episode: { ...good().episode, advantages: undefined } }], "advantages"],
          ["verdict missing", () => [{ ...good(), episode: { ...good().episode, verdict: undefined } }], "verdict"],
        ];
        for (const [name, input, mention] of cases) {
          const error = await rejection(store.writeEpisodes(input() as StoredEpisode[]));
          expect(error.code, name).toBe("invalid_argument");
          expect(error.message, name).toContain(mention);
        }
        expect(await store.countEpisodes()).toBe(0);
        expect(await store.getSteps(episodeIdOf("r1", "tiny/easy/seed-1", 1))).toEqual([]);
      });

      it("stores huge batches whole: 6,000 episodes and 24,000 steps in one call, and steps of several MB", async () => {
        const many: StoredEpisode[] = [];
        for (let g = 0; g < 6_000; g++) {
          const e = episode("big", `t/easy/seed-${g % 7}`, g, { steps: 0 });
          many.push(e);
        }
        // 6,000 episodes of 11 columns and 24,000 steps of 3 are each past PostgreSQL's 65,535 parameters of one statement
        for (let k = 0; k < 3; k++) {
          const e = many[k] as StoredEpisode;
          e.steps = Array.from({ length: 8_000 }, (_, n) => ({ ...(step(e.episode.episode_id, e.episode.task_id, 0, false) as TrajectoryStepRecord), step: n }));
          e.episode.steps = e.steps.length;
        }
        await store.writeEpisodes(many);
        expect(await store.countEpisodes({ run_id: "big" })).toBe(6_000);
        const first = many[0] as StoredEpisode;
        const steps = await store.getSteps(first.episode.episode_id);
        expect(steps).toHaveLength(8_000);
        expect(steps.map((s) => s.step)).toEqual(first.steps.map((s) => s.step));
        let streamedSteps = 0;
        let streamed = 0;
        for await (const s of store.streamEpisodes({ run_id: "big" })) {
          streamed++;
          streamedSteps += s.steps.length;
          expect(s.steps.length).toBe(s.episode.steps);
        }
        expect([streamed, streamedSteps]).toEqual([6_000, 24_000]);

        // a few steps of 6 MB each: a statement's size is bounded by bytes too, not only by rows
        const large = episode("big", "t/hard/seed-1", 0, { steps: 3 });
        for (const s of large.steps) s.observation.rendered = `${s.step}`.repeat(6 * 1024 * 1024);
        await store.writeEpisodes([large]);
        const back = await store.getSteps(large.episode.episode_id);
        expect(back.map((s) => s.observation.rendered.length)).toEqual([6, 6, 6].map((mb) => mb * 1024 * 1024));
        expect(exact(back)).toBe(exact(large.steps));
        // a failing huge batch leaves nothing behind either
        const failing = Array.from({ length: 3_000 }, (_, g) => episode("big2", "t/easy/seed-1", g, { steps: 2 }));
        failing.push(episode("big", "t/easy/seed-0", 0, { steps: 1 }));
        expect((await rejection(store.writeEpisodes(failing))).details.episode_id).toBe(episodeIdOf("big", "t/easy/seed-0", 0));
        expect(await store.countEpisodes({ run_id: "big2" })).toBe(0);
      });

      it("two store instances writing at once: disjoint batches all land; overlapping batches and advantages land whole or not at all", async () => {
        const other = await reopen(store);
        const batch = (runId: string, from: number, to: number, order: "up" | "down" = "up") => {
          const list = Array.from({ length: to - from }, (_, i) => episode(runId, "t/easy/seed-1", from + i, { steps: 2 }));
          return order === "up" ? list : list.reverse();
        };
        // disjoint: 10 batches each, interleaved
        await Promise.all(
          Array.from({ length: 10 }, (_, i) => [store.writeEpisodes(batch("a", i * 10, i * 10 + 10)), other.writeEpisodes(batch("b", i * 10, i * 10 + 10))]).flat(),
        );
        expect(await store.countEpisodes({ run_id: "a" })).toBe(100);
        expect(await other.countEpisodes({ run_id: "b" })).toBe(100);

        // overlapping, in opposite orders (a store that locked rows in batch order would deadlock here)
        for (let round = 0; round < 5; round++) {
          const runId = `overlap-${round}`;
          const results = await Promise.allSettled([store.writeEpisodes(batch(runId, 0, 30, "up")), other.writeEpisodes(batch(runId, 20, 50, "down"))]);
          const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
          expect(failed, runId).toHaveLength(1);
          const error = (failed[0] as PromiseRejectedResult).reason as LlmixError;
          expect(error).toBeInstanceOf(LlmixError);
          expect(error.code).toBe("invalid_argument");
          expect(error.message).toMatch(/is already stored/);
          const count = await store.countEpisodes({ run_id: runId });
          expect(count).toBe(30);
          const ids = (await store.episodes({ run_id: runId })).map((e) => e.group_index);
          expect(ids).toEqual(results[0]?.status === "fulfilled" ? range(0, 30) : range(20, 50));
          for await (const s of other.streamEpisodes({ run_id: runId })) expect(s.steps.length).toBe(2);
        }
        // advantages set by both at once, over the same episodes in opposite orders: both calls succeed
        const ids = (await store.episodes({ run_id: "a" })).map((e) => e.episode_id);
        for (let round = 0; round < 3; round++) {
          const mine = { grpo: round, dr_grpo: 0, rloo: 0 };
          const theirs = { grpo: -round, dr_grpo: 0, rloo: 0 };
          await Promise.all([
            store.setAdvantages(ids.map((episode_id) => ({ episode_id, advantages: mine }))),
            other.setAdvantages([...ids].reverse().map((episode_id) => ({ episode_id, advantages: theirs }))),
          ]);
          const seen = new Set((await store.episodes({ run_id: "a" })).map((e) => exact(e.advantages)));
          // each call is one transaction: every episode shows the same call's value
          expect(seen.size, `round ${round}`).toBe(1);
        }
        // both are still usable
        await store.writeEpisodes(batch("after", 0, 1));
        await other.writeEpisodes(batch("after", 1, 2));
        expect(await store.countEpisodes({ run_id: "after" })).toBe(2);
      });
    });

    describe("advantages", () => {
      it("shows set advantages in every read, and an unknown id rolls the whole call back", async () => {
        const a = episode("r1", "tiny/easy/seed-1", 0, { reward: 1 });
        const b = episode("r1", "tiny/easy/seed-1", 1, { reward: 0 });
        b.episode.advantages = { grpo: 0, dr_grpo: 0, rloo: 0 };
        await store.writeEpisodes([a, b]);
        expect((await store.getEpisode(b.episode.episode_id))?.advantages).toEqual({ grpo: 0, dr_grpo: 0, rloo: 0 });

        const adv = { grpo: 0.99999, dr_grpo: 0.5, rloo: 1 };
        await store.setAdvantages([{ episode_id: a.episode.episode_id, advantages: adv }]);
        const read = await store.getEpisode(a.episode.episode_id);
        expect(read?.advantages).toEqual(adv);
        expect(exact(read)).toBe(exact({ ...a.episode, advantages: adv }));
        expect((await store.episodes({ run_id: "r1" }))[0]?.advantages).toEqual(adv);
        for await (const s of store.streamEpisodes({ run_id: "r1", limit: 1 })) expect(s.episode.advantages).toEqual(adv);

        const unknown = await rejection(
          store.setAdvantages([
            { episode_id: b.episode.episode_id, advantages: { grpo: -1, dr_grpo: -0.5, rloo: -1 } },
            { episode_id: "r1/ghost/g0", advantages: adv },
          ]),
        );
        expect(unknown.code).toBe("unknown_episode");
        expect(unknown.message).toContain("r1/ghost/g0");
        expect((await store.getEpisode(b.episode.episode_id))?.advantages).toEqual({ grpo: 0, dr_grpo: 0, rloo: 0 });

        // the same id twice: the later value wins, as when applied one by one
        await store.setAdvantages([
          { episode_id: b.episode.episode_id, advantages: { grpo: 1, dr_grpo: 1, rloo: 1 } },
          { episode_id: b.episode.episode_id, advantages: { grpo: 2, dr_grpo: 2, rloo: 2 } },
        ]);
        expect((await store.getEpisode(b.episode.episode_id))?.advantages).toEqual({ grpo: 2, dr_grpo: 2, rloo: 2 });

        for (const bad of [
          [{ episode_id: a.episode.episode_id, advantages: { grpo: Number.NaN, dr_grpo: 0, rloo: 0 } }],
          [{ episode_id: a.episode.episode_id, advantages: null }],
          [{ episode_id: "", advantages: adv }],
          [{ advantages: adv }],
          "not an array",
        ]) {
          expect((await rejection(store.setAdvantages(bad as never))).code).toBe("invalid_argument");
        }
        expect((await store.getEpisode(a.episode.episode_id))?.advantages).toEqual(adv);
        await store.setAdvantages([]);
      });
    });

    describe("queries", () => {
      const data: StoredEpisode[] = [];
      for (const runId of ["run-b", "run-a"]) {
        for (const [t, taskId] of ["tiny/hard/seed-3", "tiny/easy/seed-1", "other/medium/seed-2"].entries()) {
          for (let g = 3; g >= 0; g--) {
            data.push(
              episode(runId, taskId, g, {
                env: taskId.split("/")[0],
                reward: ((g + t) % 3) / 2,
                status: g === 3 && t === 1 ? "error" : "ok",
                passed: g === 2 && t === 2 ? null : undefined,
                steps: 1 + ((g + t) % 3),
              }),
            );
          }
        }
      }
      const sorted = [...data].sort((x, y) => {
        const a = x.episode;
        const b = y.episode;
        return byteCompare(a.run_id, b.run_id) || byteCompare(a.task_id, b.task_id) || a.group_index - b.group_index;
      });
      const ids = (list: Array<EpisodeRecord | StoredEpisode>) => list.map((e) => ("episode" in e && typeof e.episode === "object" ? e.episode : (e as EpisodeRecord)).episode_id);
      const matching = (f: (e: EpisodeRecord) => boolean) => sorted.filter((s) => f(s.episode)).map((s) => s.episode.episode_id);

      beforeEach(async () => {
        await store.writeEpisodes(data.slice(0, 10));
        await store.writeEpisodes(data.slice(10));
      });

      it("filters, orders by (run_id, task_id, group_index) and pages", async () => {
        expect(ids(await store.episodes())).toEqual(sorted.map((s) => s.episode.episode_id));
        const checks: Array<[EpisodeQuery, (e: EpisodeRecord) => boolean]> = [
          [{ run_id: "run-a" }, (e) => e.run_id === "run-a"],
          [{ env: "other" }, (e) => e.env === "other"],
          [{ task_id: "tiny/easy/seed-1" }, (e) => e.task_id === "tiny/easy/seed-1"],
          [{ difficulty: "hard" }, (e) => e.difficulty === "hard"],
          [{ status: "error" }, (e) => e.status === "error"],
          [{ status: "ok", run_id: "run-b" }, (e) => e.status === "ok" && e.run_id === "run-b"],
          [{ min_reward: 0.5 }, (e) => e.total_reward >= 0.5],
          [{ max_reward: 0.5 }, (e) => e.total_reward <= 0.5],
          [{ min_reward: 0.25, max_reward: 0.75 }, (e) => e.total_reward >= 0.25 && e.total_reward <= 0.75],
          [{ passed: true }, (e) => (e.verdict as { passed?: boolean } | null)?.passed === true],
          [{ passed: false }, (e) => (e.verdict as { passed?: boolean } | null)?.passed !== true],
          [{ passed: false, env: "other", difficulty: "medium", run_id: "run-a" }, (e) => (e.verdict as { passed?: boolean } | null)?.passed !== true && e.env === "other" && e.run_id === "run-a"],
          [{ run_id: "nope" }, () => false],
          [{ run_id: undefined, env: undefined }, () => true],
        ];
        for (const [query, predicate] of checks) {
          const expected = matching(predicate);
          expect(ids(await store.episodes(query)), JSON.stringify(query)).toEqual(expected);
          expect(await store.countEpisodes(query), JSON.stringify(query)).toBe(expected.length);
          const streamed: StoredEpisode[] = [];
          for await (const s of store.streamEpisodes(query)) streamed.push(s);
          expect(ids(streamed)).toEqual(expected);
        }
        expect(matching((e) => (e.verdict as { passed?: boolean } | null)?.passed === true).length).toBeGreaterThan(0);

        const all = sorted.map((s) => s.episode.episode_id);
        expect(ids(await store.episodes({ limit: 5 }))).toEqual(all.slice(0, 5));
        expect(ids(await store.episodes({ limit: 5, offset: 20 }))).toEqual(all.slice(20, 25));
        expect(ids(await store.episodes({ offset: 22 }))).toEqual(all.slice(22));
        expect(await store.episodes({ limit: 0 })).toEqual([]);
        expect(await store.episodes({ offset: 100 })).toEqual([]);
        // count is the total to page through: limit and offset do not shrink it
        expect(await store.countEpisodes({ run_id: "run-a", limit: 2, offset: 1 })).toBe(12);
      });

      it("streams in pages with the same episodes and steps as the point reads", async () => {
        const paged = await open({ pageSize: 3 });
        await paged.writeEpisodes(data);
        const streamed: StoredEpisode[] = [];
        for await (const s of paged.streamEpisodes()) streamed.push(s);
        expect(exact(streamed.map((s) => s.episode))).toBe(exact(sorted.map((s) => s.episode)));
        expect(exact(streamed)).toBe(exact(sorted));
        // every kind of filter, paged: the key a page continues from leaves out the columns a filter fixes
        const queries: EpisodeQuery[] = [
          { run_id: "run-a" },
          { task_id: "tiny/easy/seed-1" },
          { run_id: "run-b", task_id: "other/medium/seed-2" },
          { env: "tiny", passed: false },
          { difficulty: "hard", status: "ok" },
          { min_reward: 0.5, run_id: "run-a" },
          { max_reward: 0, limit: 7, offset: 2 },
          { task_id: "tiny/hard/seed-3", limit: 6, offset: 1 },
        ];
        for (const query of queries) {
          const got: StoredEpisode[] = [];
          for await (const s of paged.streamEpisodes(query)) got.push(s);
          const want = await paged.episodes(query);
          expect(want.length, JSON.stringify(query)).toBeGreaterThan(3);
          expect(ids(got), JSON.stringify(query)).toEqual(ids(want));
          for (const s of got) expect(exact(s.steps)).toBe(exact(await paged.getSteps(s.episode.episode_id)));
        }
        for (const [limit, offset] of [[7, 3], [5, 0], [10, 20], [3, 23], [1, 0], [0, 0]] as const) {
          const part: string[] = [];
          for await (const s of paged.streamEpisodes({ limit, offset })) part.push(s.episode.episode_id);
          expect(part, `${limit}/${offset}`).toEqual(sorted.slice(offset, offset + limit).map((s) => s.episode.episode_id));
        }
        // an episode written mid-stream after the cursor shows up once; nothing is repeated
        const seen: string[] = [];
        let wrote = false;
        for await (const s of paged.streamEpisodes({ run_id: "run-b" })) {
          seen.push(s.episode.episode_id);
          if (!wrote) {
            await paged.writeEpisodes([episode("run-b", "zz/easy/seed-9", 0)]);
            wrote = true;
          }
        }
        expect(seen).toEqual([...matching((e) => e.run_id === "run-b"), "run-b/zz/easy/seed-9/g0"]);
        // leaving early is fine
        for await (const s of paged.streamEpisodes()) {
          expect(s.steps.length).toBe(s.episode.steps);
          break;
        }
      });

      it("orders ids by their UTF-8 bytes (not a locale) and group indexes as numbers, in every read", async () => {
        const paged = await open({ pageSize: 2 });
        // quotes, backslashes, braces and commas too: ids also travel inside array parameters
        const runs = ["Run", "run", "RUN-2", "rün", "r_1", "r-1", "r 1", "~r", "日本", 'q"u\\o{t,e}\'s'];
        const tasks = ["b/easy/seed-1", "B/easy/seed-1", "a/easy/seed-1", "Z/easy/seed-1", "é/easy/seed-1", "aa/easy/seed-1", "a-b/easy/seed-1", "a_b/easy/seed-1", "a b/easy/seed-1"];
        const written: StoredEpisode[] = [];
        for (const [i, r] of runs.entries()) {
          for (const [j, t] of tasks.entries()) {
            if ((i + j) % 2 === 0) for (const g of [10, 2, 0, 9]) written.push(episode(r, t, g, { steps: 1 }));
          }
        }
        await paged.writeEpisodes(written);
        const want = [...written].sort(
          (x, y) => byteCompare(x.episode.run_id, y.episode.run_id) || byteCompare(x.episode.task_id, y.episode.task_id) || x.episode.group_index - y.episode.group_index,
        );
        expect(ids(await paged.episodes())).toEqual(ids(want));
        const streamed: StoredEpisode[] = [];
        for await (const s of paged.streamEpisodes()) streamed.push(s);
        expect(ids(streamed)).toEqual(ids(want));
        for (const query of [{ run_id: "rün" }, { task_id: "é/easy/seed-1" }, { difficulty: "easy", limit: 30, offset: 7 }] as EpisodeQuery[]) {
          const got: StoredEpisode[] = [];
          for await (const s of paged.streamEpisodes(query)) got.push(s);
          expect(ids(got), JSON.stringify(query)).toEqual(ids(await paged.episodes(query)));
          expect(got.length, JSON.stringify(query)).toBeGreaterThan(2);
        }
        // setAdvantages and heartbeatRuns find every one of these ids
        const advantages = { grpo: 0.5, dr_grpo: 0.25, rloo: -1 };
        await paged.setAdvantages(written.map((e) => ({ episode_id: e.episode.episode_id, advantages })));
        expect((await paged.episodes()).every((e) => exact(e.advantages) === exact(advantages))).toBe(true);
        for (const r of runs) await paged.createRun(run(r));
        expect(await paged.heartbeatRuns(runs)).toBe(runs.length);
        expect((await paged.getRun(runs[runs.length - 1] as string))?.run_id).toBe(runs[runs.length - 1]);
        // listRuns breaks ties of created_at by insertion, newest first, whatever the ids
        for (const r of ["b", "A", "a"]) await paged.createRun(run(r, "2025-05-05T00:00:00.000Z"));
        await paged.createRun(run("Z", "2025-05-05T00:00:00.001Z"));
        expect((await paged.listRuns({ limit: 4 })).map((r) => r.run_id)).toEqual(["Z", "a", "A", "b"]);
      });

      it("refuses bad query values with invalid_argument", async () => {
        const bad: unknown[] = [
          { limit: -1 },
          { limit: 1.5 },
          { limit: Number.POSITIVE_INFINITY },
          { offset: -3 },
          { offset: "2" },
          { status: "crashed" },
          { min_reward: Number.NaN },
          { max_reward: "1" },
          { passed: "yes" },
          { run_id: 5 },
          { runId: "run-a" },
          "run-a",
          [1],
        ];
        for (const query of bad) {
          const q = query as EpisodeQuery;
          expect((await rejection(store.episodes(q))).code, JSON.stringify(query)).toBe("invalid_argument");
          expect((await rejection(store.countEpisodes(q))).code, JSON.stringify(query)).toBe("invalid_argument");
          expect((await rejection(store.streamEpisodes(q)[Symbol.asyncIterator]().next())).code, JSON.stringify(query)).toBe("invalid_argument");
        }
        expect((await rejection(store.getEpisode(undefined as unknown as string))).code).toBe("invalid_argument");
        expect((await rejection(store.getSteps(3 as unknown as string))).code).toBe("invalid_argument");
        const zero = await factory.open({ pageSize: 0 }).then(
          (s) => {
            opened.push(s);
            return undefined;
          },
          (e: unknown) => e,
        );
        expect(zero).toBeInstanceOf(LlmixError);
        expect((zero as LlmixError).message).toMatch(/pageSize/);
      });
    });

    describe("data boundaries", () => {
      it("keeps runs and episodes apart by tenant", async () => {
        await store.createRun(run("r-a", "2025-01-01T00:00:00.000Z", { tenant: "acme", status: "finished" }));
        await store.createRun(run("r-b", "2025-01-02T00:00:00.000Z", { tenant: "globex", status: "finished" }));
        await store.createRun(run("r-none", "2025-01-03T00:00:00.000Z"));
        await store.writeEpisodes([episode("r-a", "tiny/easy/seed-1", 0), episode("r-b", "tiny/easy/seed-1", 0), episode("r-b", "tiny/easy/seed-2", 0), episode("r-none", "tiny/easy/seed-1", 0)]);
        expect((await store.listRuns({ tenant: "acme" })).map((r) => r.run_id)).toEqual(["r-a"]);
        expect((await store.listRuns({ tenant: null })).map((r) => r.run_id)).toEqual(["r-none"]);
        expect((await store.listRuns()).map((r) => r.run_id)).toEqual(["r-none", "r-b", "r-a"]);
        expect((await store.getRun("r-b"))?.tenant).toBe("globex");
        expect((await store.episodes({ tenant: "globex" })).map((e) => e.run_id)).toEqual(["r-b", "r-b"]);
        expect(await store.countEpisodes({ tenant: "acme" })).toBe(1);
        expect(await store.countEpisodes({ tenant: null })).toBe(1);
        const streamed: string[] = [];
        for await (const e of store.streamEpisodes({ tenant: "globex" })) streamed.push(e.episode.episode_id);
        expect(streamed).toHaveLength(2);
        expect((await rejection(store.listRuns({ tenant: "a b" }))).code).toBe("invalid_argument");
        expect((await rejection(store.episodes({ tenant: "../x" }))).code).toBe("invalid_argument");
        expect((await rejection(store.createRun(run("r-bad", undefined, { tenant: "" })))).code).toBe("invalid_argument");
      });

      it("purges episodes with their steps and the runs left empty, and reports what it removed", async () => {
        await store.createRun(run("r-old", "2025-01-01T00:00:00.000Z", { tenant: "acme", status: "finished" }));
        await store.createRun(run("r-live", "2025-01-01T00:00:00.000Z", { tenant: "acme" }));
        await store.writeEpisodes([
          episode("r-old", "tiny/easy/seed-1", 0, { finishedAt: "2025-01-01T00:00:00.000Z" }),
          episode("r-old", "tiny/easy/seed-1", 1, { finishedAt: "2025-02-01T00:00:00.000Z" }),
          episode("r-live", "tiny/easy/seed-1", 0, { finishedAt: "2025-01-01T00:00:00.000Z" }),
        ]);
        const dry = await store.purge({ finished_before: "2025-01-15T00:00:00Z", dry_run: true });
        expect(dry).toEqual({ episodes: [episodeIdOf("r-live", "tiny/easy/seed-1", 0), episodeIdOf("r-old", "tiny/easy/seed-1", 0)], steps: 6, runs: [] });
        expect(await store.countEpisodes()).toBe(3);
        const first = await store.purge({ finished_before: "2025-01-15T00:00:00Z" });
        expect(first.episodes).toHaveLength(2);
        expect(first.runs).toEqual([]);
        expect(await store.getSteps(episodeIdOf("r-old", "tiny/easy/seed-1", 0))).toEqual([]);
        // the running run keeps its (now empty) row; the finished one loses its last episode and goes
        const second = await store.purge({ tenant: "acme" });
        expect(second).toEqual({ episodes: [episodeIdOf("r-old", "tiny/easy/seed-1", 1)], steps: 3, runs: ["r-old"] });
        expect(await store.getRun("r-old")).toBeUndefined();
        expect((await store.getRun("r-live"))?.run_id).toBe("r-live");
        expect(await store.countEpisodes()).toBe(0);
        expect((await rejection(store.purge({}))).code).toBe("invalid_argument");
        expect((await rejection(store.purge({ finished_before: "yesterday" }))).code).toBe("invalid_argument");
        expect((await rejection(store.purge({ everything: true } as never))).code).toBe("invalid_argument");
      });

      it("purges in batches: limit takes the lowest ids first, and the run goes with its last episode", async () => {
        await store.createRun(run("r1", undefined, { status: "finished" }));
        await store.writeEpisodes([0, 1, 2].map((g) => episode("r1", "tiny/easy/seed-1", g)));
        const first = await store.purge({ run_id: "r1", limit: 2 });
        expect(first).toEqual({ episodes: [0, 1].map((g) => episodeIdOf("r1", "tiny/easy/seed-1", g)), steps: 6, runs: [] });
        const second = await store.purge({ run_id: "r1", limit: 2 });
        expect(second).toEqual({ episodes: [episodeIdOf("r1", "tiny/easy/seed-1", 2)], steps: 3, runs: ["r1"] });
        expect((await rejection(store.purge({ run_id: "r1", limit: 0 }))).code).toBe("invalid_argument");
      });

      it("a purge and its audit event commit together: a failing event removes nothing, a dry run records nothing", async () => {
        await store.createRun(run("r1", undefined, { status: "finished" }));
        await store.writeEpisodes([0, 1].map((g) => episode("r1", "tiny/easy/seed-1", g)));
        const event = (r: { episodes: string[] }) => ({ at: new Date(0).toISOString(), token: "ops", token_id: null, tenant: null, action: "purge" as const, target_kind: "run", target_id: "r1", via: "cli", detail: { episodes: r.episodes.length } });
        expect((await rejection(store.purge({ run_id: "r1" }, (r) => ({ ...event(r), action: "steal" }) as never))).code).toBe("invalid_argument");
        expect(await store.countEpisodes({ run_id: "r1" })).toBe(2);
        expect(await store.auditLog()).toEqual([]);
        await store.purge({ run_id: "r1", dry_run: true }, event);
        expect(await store.auditLog()).toEqual([]);
        const removed = await store.purge({ run_id: "r1" }, event);
        expect(removed.runs).toEqual(["r1"]);
        expect((await store.auditLog()).map((e) => e.detail)).toEqual([{ episodes: 2 }]);
      });

      it("keeps an append-only audit log, newest first, filtered", async () => {
        const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
        await store.appendAudit([
          { at: at(1), token: "acme-trainer", token_id: "t1", tenant: "acme", action: "read", target_kind: "episode", target_id: "r/e/g0", via: "http", detail: { route: "GET /v1/episodes/:id" } },
          { at: at(2), token: "ops", token_id: null, tenant: null, action: "purge", target_kind: "episodes", target_id: "retention", via: "schedule", detail: { episodes: 3 } },
        ]);
        await store.appendAudit([{ at: at(3), token: "acme-trainer", token_id: "t1", tenant: "acme", action: "export", target_kind: "run", target_id: "r", via: "cli", detail: null }]);
        const all = await store.auditLog();
        expect(all.map((e) => e.action)).toEqual(["export", "purge", "read"]);
        expect(all[2]).toMatchObject({ token: "acme-trainer", token_id: "t1", tenant: "acme", target_id: "r/e/g0", via: "http", detail: { route: "GET /v1/episodes/:id" } });
        expect((await store.auditLog({ tenant: "acme" })).map((e) => e.action)).toEqual(["export", "read"]);
        expect((await store.auditLog({ action: "purge" })).map((e) => e.token)).toEqual(["ops"]);
        expect((await store.auditLog({ since: at(2), limit: 1 })).map((e) => e.action)).toEqual(["export"]);
        expect((await rejection(store.appendAudit([{ ...(all[0] as object), action: "steal" } as never]))).code).toBe("invalid_argument");
        expect((await rejection(store.auditLog({ action: "steal" } as never))).code).toBe("invalid_argument");
      });
    });

    describe("lifecycle", () => {
      it("close is idempotent and every call after it fails with store_error", async () => {
        const s = await factory.open();
        await s.writeEpisodes([episode("r1", "tiny/easy/seed-1", 0)]);
        const stream = s.streamEpisodes()[Symbol.asyncIterator]();
        await s.close();
        await s.close();
        await Promise.all([s.close(), s.close()]);
        const calls: Array<() => Promise<unknown>> = [
          () => s.createRun(run("r1")),
          () => s.claimRun("r1"),
          () => s.heartbeatRuns(["r1"]),
          () => s.finishRun("r1", "finished"),
          () => s.getRun("r1"),
          () => s.listRuns(),
          () => s.writeEpisodes([episode("r1", "tiny/easy/seed-1", 1)]),
          () => s.setAdvantages([]),
          () => s.episodes(),
          () => s.countEpisodes(),
          () => s.getEpisode("r1/tiny/easy/seed-1/g0"),
          () => s.getSteps("r1/tiny/easy/seed-1/g0"),
          () => stream.next(),
          () => s.streamEpisodes()[Symbol.asyncIterator]().next(),
        ];
        for (const call of calls) expect((await rejection(call())).code).toBe("store_error");
      });

      it("a stream whose store closes mid-way fails with store_error at the next page", async () => {
        const s = await factory.open({ pageSize: 2 });
        await s.writeEpisodes([0, 1, 2, 3].map((g) => episode("r1", "tiny/easy/seed-1", g)));
        const it = s.streamEpisodes()[Symbol.asyncIterator]();
        expect((await it.next()).done).toBe(false);
        expect((await it.next()).done).toBe(false);
        await s.close();
        expect((await rejection(it.next())).code).toBe("store_error");
      });

      it("two instances share one store: each sees the other's writes and refuses the other's ids", async () => {
        const a = store;
        const b = await reopen(store);
        await a.createRun(run("r1"));
        await a.writeEpisodes([episode("r1", "tiny/easy/seed-1", 0)]);
        expect(await b.countEpisodes()).toBe(1);
        expect((await b.getRun("r1"))?.run_id).toBe("r1");
        expect((await rejection(b.createRun(run("r1")))).code).toBe("invalid_argument");
        await b.writeEpisodes([episode("r1", "tiny/easy/seed-1", 1)]);
        expect((await rejection(a.writeEpisodes([episode("r1", "tiny/easy/seed-1", 1)]))).code).toBe("invalid_argument");
        await b.setAdvantages([{ episode_id: episodeIdOf("r1", "tiny/easy/seed-1", 0), advantages: { grpo: 1, dr_grpo: 1, rloo: 1 } }]);
        expect((await a.getEpisode(episodeIdOf("r1", "tiny/easy/seed-1", 0)))?.advantages).toEqual({ grpo: 1, dr_grpo: 1, rloo: 1 });
        await b.close();
        // closing one instance leaves the other working
        expect(await a.countEpisodes()).toBe(2);
      });
    });
  });
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}
