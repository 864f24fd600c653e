/**
 * The TRL exports' two forms: objects (default) and JSON strings (`jsonStrings`, CLI `--json-strings`), on
 * episodes of the real billing-dispute environment and on hand-made edge cases; the option's validation;
 * and the CLI flag through the built `llmix`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { Action, ToolSpec, TrajectoryStepRecord } from "../../core/contract.js";
import { LlmixError } from "../../core/errors.js";
import { runPolicy } from "../../core/run-policy.js";
import { toStepRecord } from "../../core/trajectory.js";
import { builtinRegistry } from "../../envs/index.js";
import { episodeIdOf, type EpisodeRecord, type RunRecord, type StoredEpisode } from "../types.js";
import { exportEpisodes, type ExportOptions } from "./index.js";
import { JSON_STRING_FORMATS, parseJsonStrings, toFunctionTools, toJsonStringRow, toSftRow, type TrlSftJsonRow, type TrlSftRow } from "./trl.js";

const dir = mkdtempSync(join(tmpdir(), "llmix-trl-export-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let fileCounter = 0;
const outPath = (ext = "jsonl") => join(dir, `out-${++fileCounter}.${ext}`);

/** A stored episode of `run` around step records (only the fields exports read need to be right). */
function storedOf(run: RunRecord, taskId: string, seed: number, groupIndex: number, records: TrajectoryStepRecord[]): StoredEpisode {
  const episodeId = episodeIdOf(run.run_id, taskId, groupIndex);
  const final = records.at(-1);
  const episode: EpisodeRecord = {
    episode_id: episodeId,
    run_id: run.run_id,
    env: run.env,
    env_version: run.env_version,
    task_id: taskId,
    difficulty: taskId.split("/")[1] as string,
    seed,
    group_id: `${run.run_id}/${taskId}`,
    group_index: groupIndex,
    policy: run.policy,
    policy_checkpoint: run.policy_checkpoint,
    status: "ok",
    error: null,
    steps: records.length,
    tokens: records.reduce((a, s) => a + s.observation.tokens, 0),
    total_reward: records.reduce((a, s) => a + (s.reward ?? 0), 0),
    outcome: final?.reward_components.task ?? null,
    reward_components: {},
    verdict: null,
    end_reason: null,
    terminated: final?.terminated ?? false,
    truncated: final?.truncated ?? false,
    cost: 0,
    tool_calls: {},
    advantages: null,
    started_at: "2026-04-28T10:00:01.000Z",
    finished_at: "2026-04-28T10:00:02.000Z",
    duration_ms: 1000,
  };
  return { episode, steps: records.map((r) => ({ ...r, episode_id: episodeId })) };
}

const BASE_RUN: RunRecord = {
  run_id: "trl-run",
  env: "billing-dispute",
  env_version: "1.0.0",
  policy: "oracle",
  policy_checkpoint: null,
  config: {},
  tools: [],
  status: "finished",
  planned_episodes: 0,
  created_at: "2026-04-28T10:00:00.000Z",
  finished_at: "2026-04-28T10:05:00.000Z",
};

/** Real episodes: the billing-dispute reference solver on a few tasks, two rollouts each. */
async function referenceEpisodes(): Promise<{ run: RunRecord; episodes: StoredEpisode[] }> {
  const entry = builtinRegistry().get("billing-dispute");
  const env = entry.create();
  const episodes: StoredEpisode[] = [];
  let tools: ToolSpec[] = [];
  const run = { ...BASE_RUN, env: entry.id, env_version: entry.version };
  try {
    for (const taskId of ["billing-dispute/easy/seed-3", "billing-dispute/medium/seed-5", "billing-dispute/hard/seed-8"]) {
      for (let g = 0; g < 2; g++) {
        const initial = await env.reset(taskId, 7);
        tools = env.tools();
        const result = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
        const records = result.transitions.map((t, i) =>
          toStepRecord({ episodeId: "e", taskId, envVersion: entry.version, step: i + 1, observation: t.observation, action: t.action, result: t.result }),
        );
        episodes.push(storedOf(run, taskId, 7, g, records));
      }
    }
  } finally {
    await env.close();
  }
  return { run: { ...run, tools }, episodes };
}

async function* iterate(episodes: Iterable<StoredEpisode>): AsyncGenerator<StoredEpisode> {
  for (const e of episodes) yield e;
}

const exportTo = (run: RunRecord, episodes: StoredEpisode[], options: Omit<ExportOptions, "out">, out = outPath()) =>
  exportEpisodes({ run, episodes: iterate(episodes) }, { out, ...options });

const readJsonl = (path: string): Array<Record<string, unknown>> =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** The object form back from a JSON-string row, checking that every string in it is JSON of the right shape. */
function parseBack(row: Record<string, unknown>): TrlSftRow {
  expect(Object.keys(row)).toEqual(["messages", "tools"]);
  expect(typeof row.tools).toBe("string");
  const tools = JSON.parse(row.tools as string) as unknown;
  expect(Array.isArray(tools)).toBe(true);
  const messages = (row.messages as Array<Record<string, any>>).map((m) => {
    if (!("tool_calls" in m)) return m;
    return {
      ...m,
      tool_calls: (m.tool_calls as Array<Record<string, any>>).map((c) => {
        expect(typeof c.function.arguments).toBe("string");
        const args = JSON.parse(c.function.arguments as string) as unknown;
        expect(typeof args === "object" && args !== null && !Array.isArray(args)).toBe(true);
        return { ...c, function: { ...c.function, arguments: args } };
      }),
    };
  });
  return { messages, tools } as TrlSftRow;
}

/** Every tool-call `arguments` of a row. */
const argumentsOf = (row: Record<string, unknown>): unknown[] =>
  (row.messages as Array<Record<string, any>>).flatMap((m) => (m.tool_calls ?? []).map((c: any) => c.function.arguments));

async function rejection(promise: Promise<unknown>): Promise<LlmixError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LlmixError);
  return error as LlmixError;
}

describe("trl-sft: object form and JSON-string form", () => {
  it("writes the same rows in both forms, every JSON string parsing back to the object form", async () => {
    const { run, episodes } = await referenceEpisodes();
    const objects = await exportTo(run, episodes, { format: "trl-sft" });
    const strings = await exportTo(run, episodes, { format: "trl-sft", jsonStrings: true });
    expect(strings.rows).toBe(objects.rows);
    expect(objects.rows).toBe(episodes.length);
    const objectRows = readJsonl(objects.path);
    const stringRows = readJsonl(strings.path);
    let calls = 0;
    for (const [i, row] of stringRows.entries()) {
      const object = objectRows[i]!;
      // Object form: tools a list of objects, arguments objects.
      expect(Array.isArray(object.tools)).toBe(true);
      expect((object.tools as unknown[]).length).toBe(run.tools.length);
      for (const args of argumentsOf(object)) expect(typeof args).toBe("object");
      // String form: the same row once the strings are parsed; nothing else differs.
      expect(parseBack(row)).toEqual(object);
      expect(argumentsOf(row).every((a) => typeof a === "string")).toBe(true);
      calls += argumentsOf(row).length;
      const roles = (r: Record<string, unknown>) => (r.messages as Array<{ role: string }>).map((m) => m.role);
      expect(roles(row)).toEqual(roles(object));
    }
    expect(calls).toBeGreaterThan(episodes.length); // the reference solver calls several tools per episode
    // The stored actions' arguments, exactly.
    const firstCall = episodes[0]!.steps.map((s) => s.action as Action).find((a) => a.type === "tool_call");
    expect(firstCall).toBeDefined();
    expect(JSON.parse(argumentsOf(stringRows[0]!)[0] as string)).toEqual((firstCall as Extract<Action, { type: "tool_call" }>).args);
  });

  it("encodes ids, nested values, unicode and empty argument objects, and leaves the input row alone", () => {
    const taskId = "billing-dispute/easy/seed-1";
    const args = { query: "Zoë \"Ω\" O'Brien\n", filters: { tags: ["a", "b"], limit: 3, exact: true, since: null } };
    const records: TrajectoryStepRecord[] = [
      { observation: "Task.", action: { type: "tool_call", tool: "lookup_customer", args, call_id: "call_9" }, tool_result: null },
      { observation: "found", action: { type: "tool_call", tool: "get_agent_profile", args: {} }, tool_result: { status: "ok", latency_ms: 1, cost: 0, output: "tier 3" } },
    ].map((s, i) =>
      ({
        episode_id: "e",
        task_id: taskId,
        env_version: "1.0.0",
        policy_checkpoint: null,
        step: i + 1,
        observation: { rendered: s.observation, tokens: 1 },
        action: s.action,
        tool_result: s.tool_result,
        reward_components: { task: 0 },
        terminated: i === 1,
        truncated: false,
        reward: 0,
        info: {},
      }) as TrajectoryStepRecord,
    );
    const tools = toFunctionTools([
      { name: "lookup_customer", description: "Find customers.", parameters: { type: "object", properties: { query: { type: "string" } } }, effect: "read" },
      { name: "get_agent_profile", description: "Your profile.", parameters: { type: "object", properties: {} }, effect: "read" },
    ]);
    const row = toSftRow(storedOf(BASE_RUN, taskId, 1, 0, records), tools)!;
    const before = structuredClone(row);
    const json: TrlSftJsonRow = toJsonStringRow(row);
    expect(row).toEqual(before);
    expect(json.tools).toBe(JSON.stringify(tools));
    expect(json.messages[1]).toEqual({
      role: "assistant",
      tool_calls: [{ id: "call_9", type: "function", function: { name: "lookup_customer", arguments: JSON.stringify(args) } }],
    });
    expect(json.messages[2]).toEqual({ role: "tool", name: "lookup_customer", content: "found", tool_call_id: "call_9" });
    expect(json.messages[3]).toEqual({ role: "assistant", tool_calls: [{ type: "function", function: { name: "get_agent_profile", arguments: "{}" } }] });
    expect(parseBack(JSON.parse(JSON.stringify(json)) as Record<string, unknown>)).toEqual(row);
  });

  it("writes an empty tool list as the string [] for a run without tools", async () => {
    const { episodes } = await referenceEpisodes();
    const result = await exportTo({ ...BASE_RUN, tools: [] }, episodes.slice(0, 1), { format: "trl-sft", jsonStrings: true });
    expect(readJsonl(result.path)[0]!.tools).toBe("[]");
  });
});

describe("trl-grpo with jsonStrings", () => {
  it("writes the very same bytes: prompt rows hold neither tools nor tool calls", async () => {
    const { run, episodes } = await referenceEpisodes();
    const plain = await exportTo(run, episodes, { format: "trl-grpo" });
    const strings = await exportTo(run, episodes, { format: "trl-grpo", jsonStrings: true });
    expect(plain.rows).toBe(3);
    expect(strings.rows).toBe(3);
    expect(readFileSync(strings.path, "utf8")).toBe(readFileSync(plain.path, "utf8"));
    expect(Object.keys(readJsonl(strings.path)[0]!)).toEqual(["prompt", "env", "task_id", "seed", "difficulty", "env_version"]);
  });
});

describe("the jsonStrings option", () => {
  it("is accepted by the TRL formats only", () => {
    expect(JSON_STRING_FORMATS).toEqual(["trl-sft", "trl-grpo"]);
    expect(parseJsonStrings(undefined, "verl")).toBe(false);
    expect(parseJsonStrings(false, "jsonl")).toBe(false);
    expect(parseJsonStrings(true, "trl-sft")).toBe(true);
  });

  it("rejects other formats and non-booleans with invalid_argument, writing nothing", async () => {
    const { run, episodes } = await referenceEpisodes();
    for (const [format, value, message] of [
      ["jsonl", true, "applies to trl-sft and trl-grpo only, not jsonl"],
      ["verl", true, "not verl"],
      ["trl-sft", "yes", 'must be a boolean, got "yes"'],
      ["trl-grpo", 1, "must be a boolean, got 1"],
    ] as const) {
      const out = outPath(format === "verl" ? "parquet" : "jsonl");
      const error = await rejection(exportTo(run, episodes, { format, jsonStrings: value as unknown as boolean }, out));
      expect(error.code).toBe("invalid_argument");
      expect(error.message).toContain(message);
      expect(existsSync(out)).toBe(false);
    }
  });
});

describe("llmix export --json-strings (built CLI)", () => {
  const root = fileURLToPath(new URL("../../..", import.meta.url));
  const bin = join(root, "dist/cli/bin.js");
  const llmix = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: "utf8", timeout: 120_000 });

  it("documents the flag and writes the JSON-string form; refuses it for verl", () => {
    expect(existsSync(bin), "run `npm run build` first (npm test does)").toBe(true);
    const help = llmix("export", "--help");
    expect(help.stdout).toContain("--json-strings");
    const store = join(dir, "cli-store");
    const rollout = llmix("rollout", "--env", "billing-dispute", "--policy", "oracle", "--task", "billing-dispute/easy/seed-3", "-n", "1", "--run-id", "cli-run", "--store", store);
    expect(rollout.status, rollout.stderr).toBe(0);
    const objects = join(dir, "cli-objects.jsonl");
    const strings = join(dir, "cli-strings.jsonl");
    expect(llmix("export", "--run", "cli-run", "--format", "trl-sft", "--out", objects, "--store", store).status).toBe(0);
    const exported = llmix("export", "--run", "cli-run", "--format", "trl-sft", "--out", strings, "--json-strings", "--store", store, "--json");
    expect(exported.status, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({ format: "trl-sft", rows: 1 });
    const [row] = readJsonl(strings);
    expect(typeof row!.tools).toBe("string");
    expect(parseBack(row!)).toEqual(readJsonl(objects)[0]);
    const refused = llmix("export", "--run", "cli-run", "--format", "verl", "--out", join(dir, "cli.parquet"), "--json-strings", "--store", store);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("jsonStrings applies to trl-sft and trl-grpo only");
  }, 180_000); // five runs of the CLI
});
