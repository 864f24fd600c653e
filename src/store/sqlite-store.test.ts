import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError } from "../core/errors.js";
import { toStepRecord } from "../core/trajectory.js";
import { currentOwner } from "./liveness.js";
import { MIGRATIONS, SCHEMA_VERSION, migrate, schemaVersion } from "./migrations.js";
import { openStore, SqliteTrajectoryStore } from "./sqlite-store.js";
import { episodeIdOf, type EpisodeQuery, type EpisodeRecord, type RunRecord, type StoredEpisode } from "./types.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const storeModule = pathToFileURL(fileURLToPath(new URL("./sqlite-store.ts", import.meta.url))).href;

async function rejection(promise: Promise<unknown>): Promise<LlmixError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(LlmixError);
    return error as LlmixError;
  }
  throw new Error("expected the call to fail");
}

function run(runId: string, createdAt = "2025-01-01T00:00:00.000Z", extra: Partial<RunRecord> = {}): RunRecord {
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

interface EpisodeOptions {
  env?: string;
  difficulty?: string;
  status?: "ok" | "error";
  reward?: number;
  passed?: boolean | null;
  steps?: number;
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

function episode(runId: string, taskId: string, groupIndex: number, o: EpisodeOptions = {}): StoredEpisode {
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
    finished_at: "2025-01-01T00:00:01.500Z",
    duration_ms: 1500,
  };
  return { episode: record, steps: Array.from({ length: n }, (_, i) => step(id, taskId, i, i === n - 1)) };
}

/** JSON text with keys in insertion order: equal texts mean the record came back exactly, key order included. */
const exact = (value: unknown) => JSON.stringify(value);

/** A run as read back, without the owner and heartbeat the store adds. */
function stored(value: RunRecord | undefined): Omit<RunRecord, "owner" | "heartbeat_at"> | undefined {
  if (!value) return value;
  const { owner: _owner, heartbeat_at: _heartbeat, ...rest } = value;
  return rest;
}

let store: SqliteTrajectoryStore;
let dir: string;

beforeEach(() => {
  store = openStore(":memory:");
  dir = mkdtempSync(join(tmpdir(), "llmix-store-"));
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
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

  it("refuses a batch with a duplicate id, naming it, and writes nothing of it", async () => {
    const a = episode("r1", "tiny/easy/seed-1", 0);
    const b = episode("r1", "tiny/easy/seed-1", 1);
    const inBatch = await rejection(store.writeEpisodes([a, b, episode("r1", "tiny/easy/seed-1", 0)]));
    expect(inBatch.code).toBe("invalid_argument");
    expect(inBatch.message).toContain(a.episode.episode_id);
    expect(await store.countEpisodes()).toBe(0);

    await store.writeEpisodes([a]);
    const c = episode("r1", "tiny/easy/seed-1", 2);
    const stored = await rejection(store.writeEpisodes([b, c, episode("r1", "tiny/easy/seed-1", 0)]));
    expect(stored.code).toBe("invalid_argument");
    expect(stored.message).toContain(a.episode.episode_id);
    expect(stored.details.episode_id).toBe(a.episode.episode_id);
    // b and c were in the failed batch: neither they nor their steps are stored
    expect(await store.countEpisodes()).toBe(1);
    expect(await store.getEpisode(b.episode.episode_id)).toBeUndefined();
    expect(await store.getSteps(b.episode.episode_id)).toEqual([]);
    expect(await store.getSteps(c.episode.episode_id)).toEqual([]);
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
    return a.run_id.localeCompare(b.run_id) || a.task_id.localeCompare(b.task_id) || a.group_index - b.group_index;
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
    const paged = openStore(":memory:", { pageSize: 3 });
    try {
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
    } finally {
      await paged.close();
    }
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
    expect(() => openStore(":memory:", { pageSize: 0 })).toThrow(/pageSize/);
  });
});

describe("lifecycle", () => {
  it("close is idempotent and every call after it fails with store_error", async () => {
    const s = openStore(join(dir, "closed.db"));
    await s.writeEpisodes([episode("r1", "tiny/easy/seed-1", 0)]);
    const stream = s.streamEpisodes()[Symbol.asyncIterator]();
    await s.close();
    await s.close();
    const calls: Array<() => Promise<unknown>> = [
      () => s.createRun(run("r1")),
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
    const s = openStore(":memory:", { pageSize: 2 });
    await s.writeEpisodes([0, 1, 2, 3].map((g) => episode("r1", "tiny/easy/seed-1", g)));
    const it = s.streamEpisodes()[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    expect((await it.next()).done).toBe(false);
    await s.close();
    expect((await rejection(it.next())).code).toBe("store_error");
  });

  it("file stores use WAL, foreign keys and a busy timeout, and are shared between connections", async () => {
    const path = join(dir, "nested", "deeper", "llmix.db");
    const a = openStore(path);
    const b = openStore(path);
    try {
      await a.createRun(run("r1"));
      await a.writeEpisodes([episode("r1", "tiny/easy/seed-1", 0)]);
      expect(await b.countEpisodes()).toBe(1);
      expect((await b.getRun("r1"))?.run_id).toBe("r1");
      await b.writeEpisodes([episode("r1", "tiny/easy/seed-1", 1)]);
      expect((await rejection(a.writeEpisodes([episode("r1", "tiny/easy/seed-1", 1)]))).code).toBe("invalid_argument");
    } finally {
      await a.close();
      await b.close();
    }
    const raw = new Database(path);
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(raw.pragma("page_size", { simple: true })).toBe(16384);
      expect(schemaVersion(raw)).toBe(SCHEMA_VERSION);
      // steps reference their episode: an orphan step is refused by SQLite itself
      raw.pragma("foreign_keys = ON");
      expect(() => raw.prepare("INSERT INTO steps (episode_id, step, record) VALUES ('ghost', 0, '{}')").run()).toThrow(/FOREIGN KEY/);
    } finally {
      raw.close();
    }
  });

  it("openStore() defaults to ./llmix-data/llmix.db, creating the directory", async () => {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const s = openStore();
      await s.createRun(run("r1"));
      await s.close();
      expect(existsSync(join(dir, "llmix-data", "llmix.db"))).toBe(true);
    } finally {
      process.chdir(cwd);
    }
  });

  it("a file that is not a database, or a directory, fails with store_error", () => {
    const junk = join(dir, "junk.db");
    writeFileSync(junk, "this is not a sqlite database, just some text that is long enough to have a header ".repeat(20));
    const error = (() => {
      try {
        openStore(junk);
      } catch (e) {
        return e as LlmixError;
      }
      throw new Error("expected failure");
    })();
    expect(error).toBeInstanceOf(LlmixError);
    expect(error.code).toBe("store_error");
    expect(() => openStore(dir)).toThrow(LlmixError);
  });
});

describe("migrations", () => {
  it("a new file is created at the current schema version", () => {
    const db = new Database(":memory:");
    expect(migrate(db)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(schemaVersion(db)).toBe(SCHEMA_VERSION);
    expect(migrate(db)).toEqual([]);
    db.close();
  });

  it("opening a version-1 file migrates it, backfilling the passed column from the stored verdicts", async () => {
    const path = join(dir, "old.db");
    const old = new Database(path);
    migrate(old, MIGRATIONS.slice(0, 1));
    expect(schemaVersion(old)).toBe(1);
    const win = episode("r1", "tiny/easy/seed-1", 0, { reward: 1 });
    const loss = episode("r1", "tiny/easy/seed-1", 1, { reward: 0 });
    for (const e of [win, loss]) {
      const ep = e.episode;
      old
        .prepare("INSERT INTO episodes (episode_id, run_id, env, task_id, difficulty, group_index, status, total_reward, advantages, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)")
        .run(ep.episode_id, ep.run_id, ep.env, ep.task_id, ep.difficulty, ep.group_index, ep.status, ep.total_reward, JSON.stringify(ep));
      for (const s of e.steps) old.prepare("INSERT INTO steps (episode_id, step, record) VALUES (?, ?, ?)").run(ep.episode_id, s.step, JSON.stringify(s));
    }
    old.prepare("INSERT INTO runs (run_id, env, status, created_at, finished_at, record) VALUES (?, ?, ?, ?, ?, ?)").run("r1", "tiny", "running", run("r1").created_at, null, JSON.stringify(run("r1")));
    old.close();

    const s = openStore(path);
    try {
      expect(ids(await s.episodes({ passed: true }))).toEqual([win.episode.episode_id]);
      expect(ids(await s.episodes({ passed: false }))).toEqual([loss.episode.episode_id]);
      expect(exact(await s.getSteps(win.episode.episode_id))).toBe(exact(win.steps));
      // From before owners and heartbeats: nothing says its process is alive, and it was created long ago.
      expect(exact(await s.getRun("r1"))).toBe(exact({ ...run("r1"), status: "interrupted", owner: null, heartbeat_at: null }));
      await s.writeEpisodes([episode("r1", "tiny/easy/seed-1", 2, { reward: 1 })]);
      expect(await s.countEpisodes({ passed: true })).toBe(2);
    } finally {
      await s.close();
    }
    const check = new Database(path, { readonly: true });
    expect(schemaVersion(check)).toBe(SCHEMA_VERSION);
    expect(check.prepare("SELECT name FROM sqlite_schema WHERE name = 'episodes_by_passed'").pluck().get()).toBe("episodes_by_passed");
    check.close();
  });

  it("a file from a newer llmix is refused with store_error and left untouched", async () => {
    const path = join(dir, "future.db");
    const future = new Database(path);
    migrate(future);
    future.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    future.close();
    const before = readFileSync(path);
    let error: unknown;
    try {
      openStore(path);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LlmixError);
    expect((error as LlmixError).code).toBe("store_error");
    expect((error as LlmixError).message).toMatch(/newer/);
    expect((error as LlmixError).details).toMatchObject({ schema_version: SCHEMA_VERSION + 1, supported_version: SCHEMA_VERSION });
    const raw = new Database(path, { readonly: true });
    expect(schemaVersion(raw)).toBe(SCHEMA_VERSION + 1);
    raw.close();
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it("a failing migration rolls back every pending step and keeps the old version", () => {
    const db = new Database(":memory:");
    migrate(db, MIGRATIONS.slice(0, 1));
    const broken = [...MIGRATIONS, { version: MIGRATIONS.length + 1, description: "broken", up: "CREATE TABLE extra (x); SELECT * FROM no_such_table;" }];
    let error: unknown;
    try {
      migrate(db, broken);
    } catch (e) {
      error = e;
    }
    expect((error as LlmixError).code).toBe("store_error");
    expect((error as LlmixError).message).toContain("broken");
    expect(schemaVersion(db)).toBe(1);
    expect(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name IN ('extra', 'episodes_by_passed')").pluck().get()).toBe(0);
    expect(() => migrate(db, [MIGRATIONS[1] as (typeof MIGRATIONS)[number]])).toThrow(/versions must be 1, 2, 3/);
    db.close();
  });

  const ids = (list: EpisodeRecord[]) => list.map((e) => e.episode_id);
});

describe("crash safety", () => {
  it("a writer killed with SIGKILL mid-batch leaves a consistent store with every committed episode whole", async () => {
    const path = join(dir, "crash.db");
    const child = join(dir, "writer.mjs");
    // Big batches of big steps keep the writer inside a transaction most of the time, so the kill lands mid-write.
    writeFileSync(
      child,
      `import { openStore } from ${JSON.stringify(storeModule)};
const store = openStore(${JSON.stringify(path)});
await store.createRun({ run_id: "crash", env: "tiny", env_version: "1", policy: "p", policy_checkpoint: null, config: null, tools: [], status: "running", planned_episodes: 1e6, created_at: new Date().toISOString(), finished_at: null });
const text = "observation ".repeat(400);
for (let batch = 0; ; batch++) {
  const episodes = [];
  for (let e = 0; e < 25; e++) {
    const id = "crash/t/seed-" + batch + "/g" + e;
    const n = 5 + ((batch + e) % 20);
    const steps = Array.from({ length: n }, (_, i) => ({ episode_id: id, task_id: "t", env_version: "1", policy_checkpoint: null, step: i, observation: { rendered: text + i, tokens: 400 }, action: { type: "message", content: "hi" }, tool_result: null, reward_components: { task: 0 }, terminated: i === n - 1, truncated: false }));
    episodes.push({ episode: { episode_id: id, run_id: "crash", env: "tiny", env_version: "1", task_id: "t/easy/seed-" + batch, difficulty: "easy", seed: 1, group_id: "g", group_index: e, policy: "p", policy_checkpoint: null, status: "ok", error: null, steps: n, tokens: 0, total_reward: 0, outcome: 0, reward_components: {}, verdict: null, end_reason: null, terminated: true, truncated: false, cost: 0, tool_calls: {}, advantages: null, started_at: "s", finished_at: "f", duration_ms: 1 }, steps });
  }
  await store.writeEpisodes(episodes);
  process.stdout.write("committed " + (batch + 1) * 25 + "\\n");
}
`,
    );
    const proc = spawn(process.execPath, ["--import", "tsx", child], {
      cwd: root,
      env: { ...process.env, TSX_TSCONFIG_PATH: "tsconfig.test.json" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let committed = 0;
    let stderr = "";
    proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((done) => proc.on("exit", (_code, signal) => done(signal)));
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`writer made no progress: ${stderr}`)), 50_000);
      proc.stdout.on("data", (d: Buffer) => {
        const counts = d.toString().match(/committed (\d+)/g) ?? [];
        for (const c of counts) committed = Math.max(committed, Number(c.slice("committed ".length)));
        if (committed >= 150) {
          clearTimeout(timer);
          // a small random delay so the kill lands at an arbitrary point in the next batch
          setTimeout(() => {
            proc.kill("SIGKILL");
            done();
          }, Math.random() * 20);
        }
      });
      proc.on("exit", (code) => {
        if (committed < 150) fail(new Error(`writer exited early (${code}): ${stderr}`));
      });
    });
    expect(await exited).toBe("SIGKILL");
    expect(existsSync(`${path}-wal`)).toBe(true);

    const raw = new Database(path);
    try {
      expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
      expect(raw.pragma("foreign_key_check")).toEqual([]);
      // every episode has exactly its steps 0..n-1: none half-written
      const broken = raw
        .prepare(
          `SELECT e.episode_id FROM episodes e LEFT JOIN steps s ON s.episode_id = e.episode_id
           GROUP BY e.episode_id
           HAVING count(s.step) != json_extract(e.record, '$.steps') OR coalesce(max(s.step), -1) != count(s.step) - 1`,
        )
        .all();
      expect(broken).toEqual([]);
      // whole batches only: a batch is stored with all 25 episodes or not at all
      const count = raw.prepare("SELECT count(*) FROM episodes").pluck().get() as number;
      expect(count % 25).toBe(0);
      expect(count).toBeGreaterThanOrEqual(committed);
    } finally {
      raw.close();
    }

    const s = openStore(path);
    try {
      const count = await s.countEpisodes({ run_id: "crash" });
      expect(count).toBeGreaterThanOrEqual(committed);
      let streamed = 0;
      for await (const e of s.streamEpisodes({ run_id: "crash" })) {
        expect(e.steps.map((x) => x.step)).toEqual(Array.from({ length: e.episode.steps }, (_, i) => i));
        streamed++;
      }
      expect(streamed).toBe(count);
      // Its owner, the killed writer, is gone from this host.
      expect((await s.getRun("crash"))?.status).toBe("interrupted");
      await s.writeEpisodes([episode("crash", "after/easy/seed-1", 0)]);
      expect(await s.countEpisodes({ run_id: "crash" })).toBe(count + 1);
    } finally {
      await s.close();
    }
  });
});
