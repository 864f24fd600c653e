import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from "hyparquet";
import { afterAll, describe, expect, it } from "vitest";
import type { Action, ToolResult, ToolSpec, TrajectoryStepRecord } from "../../core/contract.js";
import { LlmixError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { runPolicy } from "../../core/run-policy.js";
import { toStepRecord } from "../../core/trajectory.js";
import { builtinRegistry } from "../../envs/index.js";
import { episodeIdOf, type EpisodeRecord, type RunRecord, type StoredEpisode } from "../types.js";
import { EXPORT_FORMATS, exportEpisodes, whyEmpty, type ExportOptions } from "./index.js";
import { renderResult, toMessages } from "./trl.js";

// ---- fixtures -------------------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), "llmix-export-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let fileCounter = 0;
const outPath = (ext: string) => join(dir, `out-${++fileCounter}.${ext}`);

const TOOLS: ToolSpec[] = [
  {
    name: "lookup_customer",
    description: "Find customers by email, customer id, phone, or part of the name.",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"], additionalProperties: false },
    effect: "read",
  },
  {
    name: "issue_refund",
    description: "Refund a charge to the original payment method.",
    parameters: {
      type: "object",
      properties: { customer_id: { type: "string" }, charge_id: { type: "string" }, amount_cents: { type: "integer" } },
      required: ["customer_id", "charge_id", "amount_cents"],
      additionalProperties: false,
    },
    effect: "write",
  },
];

const RUN: RunRecord = {
  run_id: "run-1",
  env: "billing-dispute",
  env_version: "1.0.0",
  policy: "noisy-oracle:0.3",
  policy_checkpoint: "step_01800",
  config: { n: 4 },
  tools: TOOLS,
  status: "finished",
  planned_episodes: 4,
  created_at: "2026-04-28T10:00:00.000Z",
  finished_at: "2026-04-28T10:05:00.000Z",
};

const TASK_TEXT =
  "You are Riley (agent AG-240), a tier 3 billing support agent at Northwind Cloud. Your refund/credit cap is $400.00.\n" +
  "A customer has opened a chat about a charge.\n\nCustomer: Hi, I was charged twice for my subscription.";
const CUSTOMER_REPLY = "Customer: Email: oscar.kowalski@proton.me The card ends in 4836. It's the $6.99 charge from April 17, 2026.";
const LOOKUP_RENDERED = "matches:\ncustomer_id | name\ncus_505085 | Oscar Kowalski";
const REFUND_RENDERED = '{"refund_id":"RF-200002","amount":"$6.99","status":"submitted"}';
const FINAL_MESSAGE = "I have refunded $6.99 for charge ch_11874710 (reference RF-200002). It arrives in 5-10 business days.";

const ZERO = { task: 0, invalid_call: 0, denied_call: 0, tool_cost: 0, step_cost: -0.01, policy_violation: 0 };
const ok = (output: JsonValue, cost = 0.0005): ToolResult => ({ status: "ok", latency_ms: 44, cost, output });

interface StepSpec {
  observation: string;
  action: TrajectoryStepRecord["action"];
  tool_result?: ToolResult | null;
  info?: Record<string, unknown>;
  task?: number;
}

/** Step records as toStepRecord writes them, numbered from 1; the last one ends the episode. */
function steps(episodeId: string, taskId: string, specs: StepSpec[]): TrajectoryStepRecord[] {
  return specs.map((s, i) => {
    const last = i === specs.length - 1;
    const components = { ...ZERO, task: s.task ?? 0, tool_cost: -(s.tool_result?.cost ?? 0) };
    const info: Record<string, unknown> = { ...(s.tool_result ? { tool_result: s.tool_result } : {}), ...s.info };
    return {
      episode_id: episodeId,
      task_id: taskId,
      env_version: "1.0.0",
      policy_checkpoint: "step_01800",
      step: i + 1,
      observation: { rendered: s.observation, tokens: Math.ceil(s.observation.length / 4) },
      action: s.action,
      tool_result: s.tool_result ?? null,
      reward_components: components,
      terminated: last,
      truncated: false,
      reward: Object.values(components).reduce((a, b) => a + b, 0),
      info,
    };
  });
}

const verdict = (passed: boolean) => ({ passed, score: passed ? 1 : 0, details: { gate: "compliance" }, parts: {} });

/** The canonical episode: ask, look up, refund, tell the customer. */
function refundSteps(episodeId: string, taskId: string, passed = true): TrajectoryStepRecord[] {
  return steps(episodeId, taskId, [
    { observation: TASK_TEXT, action: { type: "message", content: "Hello! What is the email on the account and the last 4 digits of your card?" } },
    { observation: CUSTOMER_REPLY, action: { type: "tool_call", tool: "lookup_customer", args: { query: "oscar.kowalski@proton.me" }, call_id: "call_1" }, tool_result: ok({ matches: [{ customer_id: "cus_505085" }] }) },
    { observation: LOOKUP_RENDERED, action: { type: "tool_call", tool: "issue_refund", args: { customer_id: "cus_505085", charge_id: "ch_11874710", amount_cents: 699 } }, tool_result: ok({ refund_id: "RF-200002", amount: "$6.99", status: "submitted" }, 0.01) },
    { observation: REFUND_RENDERED, action: { type: "message", content: FINAL_MESSAGE }, info: { end_reason: "customer_satisfied", verdict: verdict(passed) }, task: passed ? 1 : 0 },
  ]);
}

interface EpisodeSpec {
  taskId?: string;
  seed?: number;
  groupIndex?: number;
  status?: "ok" | "error";
  passed?: boolean;
  env?: string;
  steps?: (episodeId: string, taskId: string) => TrajectoryStepRecord[];
}

/** A stored episode whose row agrees with its steps (totals, verdict, difficulty from the task id). */
function stored(spec: EpisodeSpec = {}): StoredEpisode {
  const taskId = spec.taskId ?? "billing-dispute/medium/seed-11";
  const groupIndex = spec.groupIndex ?? 0;
  const episodeId = episodeIdOf(RUN.run_id, taskId, groupIndex);
  const passed = spec.passed ?? true;
  const records = (spec.steps ?? ((id, t) => refundSteps(id, t, passed)))(episodeId, taskId);
  const final = records.at(-1);
  const episode: EpisodeRecord = {
    episode_id: episodeId,
    run_id: RUN.run_id,
    env: spec.env ?? "billing-dispute",
    env_version: "1.0.0",
    task_id: taskId,
    difficulty: taskId.split("/")[1] as string,
    seed: spec.seed ?? 3,
    group_id: `${RUN.run_id}/${taskId}`,
    group_index: groupIndex,
    policy: RUN.policy,
    policy_checkpoint: RUN.policy_checkpoint,
    status: spec.status ?? "ok",
    error: spec.status === "error" ? { code: "policy_failed", message: "model server unreachable" } : null,
    steps: records.length,
    tokens: records.reduce((a, s) => a + s.observation.tokens, 0),
    total_reward: records.reduce((a, s) => a + (s.reward ?? 0), 0),
    outcome: final?.reward_components.task ?? null,
    reward_components: {},
    verdict: (final?.info?.verdict as JsonValue | undefined) ?? null,
    end_reason: (final?.info?.end_reason as string | undefined) ?? null,
    terminated: final?.terminated ?? false,
    truncated: final?.truncated ?? false,
    cost: 0.0105,
    tool_calls: { ok: 2 },
    advantages: null,
    started_at: "2026-04-28T10:00:01.000Z",
    finished_at: "2026-04-28T10:00:02.000Z",
    duration_ms: 1000,
  };
  return { episode, steps: records };
}

async function* iterate(episodes: Iterable<StoredEpisode>): AsyncGenerator<StoredEpisode> {
  for (const e of episodes) yield e;
}

const exportTo = (episodes: StoredEpisode[], options: Omit<ExportOptions, "out"> & { out?: string }, run = RUN) =>
  exportEpisodes({ run, episodes: iterate(episodes) }, { out: outPath(options.format === "verl" ? "parquet" : "jsonl"), ...options });

const readJsonl = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

async function readParquet(path: string) {
  const file = await asyncBufferFromFile(path);
  const metadata = await parquetMetadataAsync(file);
  const columns = parquetSchema(metadata).children.map((c) => c.element.name);
  const rows = (await parquetReadObjects({ file })) as Array<Record<string, any>>;
  return { metadata, columns, rows };
}

/** The code of the LlmixError a promise rejects with (failing on anything else). */
async function rejection(promise: Promise<unknown>): Promise<LlmixError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LlmixError);
  return error as LlmixError;
}

const leftovers = () => readdirSync(dir).filter((f) => f.endsWith(".tmp"));

/** Real episodes: the billing-dispute reference solver, `group` rollouts of each task, as the runner stores them. */
async function referenceEpisodes(taskIds: string[], group: number): Promise<{ run: RunRecord; episodes: StoredEpisode[] }> {
  const entry = builtinRegistry().get("billing-dispute");
  const env = entry.create();
  const episodes: StoredEpisode[] = [];
  let tools: ToolSpec[] = [];
  for (const taskId of taskIds) {
    for (let g = 0; g < group; g++) {
      const seed = 5;
      const initial = await env.reset(taskId, seed);
      tools = env.tools();
      const result = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
      const episodeId = episodeIdOf("ref-run", taskId, g);
      const records = result.transitions.map((t, i) =>
        toStepRecord({ episodeId, taskId, envVersion: entry.version, step: i + 1, observation: t.observation, action: t.action, result: t.result }),
      );
      const base = stored({ taskId, seed, groupIndex: g, steps: () => records });
      episodes.push({ episode: { ...base.episode, episode_id: episodeId, run_id: "ref-run", total_reward: result.totalReward }, steps: records });
    }
  }
  await env.close();
  return { run: { ...RUN, run_id: "ref-run", env: entry.id, env_version: entry.version, tools }, episodes };
}

// ---- the API --------------------------------------------------------------------------------------

describe("exportEpisodes: formats and arguments", () => {
  it("names its formats", () => {
    expect(EXPORT_FORMATS).toEqual(["jsonl", "trl-sft", "trl-grpo", "verl", "verl-sft"]);
  });

  it("rejects an unknown format with unknown_format, listing the valid ones, before touching the disk", async () => {
    const out = outPath("csv");
    const error = await rejection(exportEpisodes({ run: RUN, episodes: iterate([stored()]) }, { format: "csv", out }));
    expect(error.code).toBe("unknown_format");
    for (const f of EXPORT_FORMATS) expect(error.message).toContain(f);
    expect(error.details.valid).toEqual([...EXPORT_FORMATS]);
    expect(existsSync(out)).toBe(false);
  });

  it("rejects malformed filters and paths with invalid_argument", async () => {
    const bad: Array<Partial<ExportOptions>> = [
      { filter: { minReward: Number.NaN } },
      { filter: { minReward: "0.5" as unknown as number } },
      { filter: { successesOnly: "yes" as unknown as boolean } },
      { filter: { difficulty: "" } },
      { out: "" },
    ];
    for (const options of bad) {
      const error = await rejection(exportEpisodes({ run: RUN, episodes: iterate([]) }, { format: "jsonl", out: outPath("jsonl"), ...options }));
      expect(error.code, JSON.stringify(options)).toBe("invalid_argument");
    }
  });

  it("reports an unwritable path as store_error without reading any episode", async () => {
    const aFile = join(dir, "plain-file");
    writeFileSync(aFile, "x");
    const paths = [join(aFile, "under-a-file.jsonl"), join(dir, "no-such-dir", "out.jsonl"), dir];
    for (const out of paths) {
      let pulled = 0;
      const episodes = (async function* () {
        pulled++;
        yield stored();
      })();
      for (const format of EXPORT_FORMATS) {
        const error = await rejection(exportEpisodes({ run: RUN, episodes }, { format, out }));
        expect(error.code, out).toBe("store_error");
        expect(error.details.path).toBe(out);
        expect(error.message).toContain(out);
      }
      expect(pulled).toBe(0);
    }
    expect(leftovers()).toEqual([]);
  });

  it("writes a valid empty file with 0 rows for empty input, in every format", async () => {
    for (const format of EXPORT_FORMATS) {
      const result = await exportTo([], { format });
      expect(result.rows).toBe(0);
      expect(statSync(result.path).size).toBe(result.bytes);
      if (format === "verl" || format === "verl-sft") {
        const { metadata, columns, rows } = await readParquet(result.path);
        expect(metadata.num_rows).toBe(0n);
        expect(columns).toEqual(format === "verl" ? ["data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"] : ["messages", "tools", "extra_info"]);
        expect(rows).toEqual([]);
      } else {
        expect(result.bytes).toBe(0);
      }
    }
  });

  it("leaves neither the output nor a temporary file when the episode stream fails midway", async () => {
    for (const format of EXPORT_FORMATS) {
      const out = outPath("x");
      const episodes = (async function* () {
        yield stored({ taskId: "billing-dispute/easy/seed-1" });
        yield stored({ taskId: "billing-dispute/easy/seed-2" });
        throw new LlmixError("store_error", "database is locked");
      })();
      const error = await rejection(exportEpisodes({ run: RUN, episodes }, { format, out }));
      expect(error.message).toBe("database is locked");
      expect(existsSync(out)).toBe(false);
    }
    expect(leftovers()).toEqual([]);
  });

  it("keeps the previous file when an export over it fails, and replaces it when one succeeds", async () => {
    const out = outPath("jsonl");
    writeFileSync(out, "previous\n");
    const failing = (async function* () {
      yield stored();
      throw new Error("boom");
    })();
    await expect(exportEpisodes({ run: RUN, episodes: failing }, { format: "jsonl", out })).rejects.toThrow("boom");
    expect(readFileSync(out, "utf8")).toBe("previous\n");
    const result = await exportEpisodes({ run: RUN, episodes: iterate([stored()]) }, { format: "jsonl", out });
    expect(result.rows).toBe(4);
    expect(readJsonl(out)).toHaveLength(4);
  });
});

describe("filters and error episodes", () => {
  const episodes = [
    stored({ taskId: "billing-dispute/medium/seed-1", passed: true }),
    stored({ taskId: "billing-dispute/hard/seed-2", passed: false }),
    stored({ taskId: "billing-dispute/medium/seed-3", status: "error", passed: true }),
    stored({ taskId: "billing-dispute/easy/seed-4", passed: true, env: "other-env" }),
  ];
  const taskIds = async (filter: ExportOptions["filter"]) => {
    const result = await exportTo(episodes, { format: "trl-grpo", filter });
    return readJsonl(result.path).map((r) => r.task_id);
  };

  it("never exports error episodes, in any format", async () => {
    for (const format of EXPORT_FORMATS) {
      const result = await exportTo([episodes[2] as StoredEpisode], { format });
      expect(result.rows, format).toBe(0);
    }
    expect(await taskIds(undefined)).toEqual(["billing-dispute/medium/seed-1", "billing-dispute/hard/seed-2", "billing-dispute/easy/seed-4"]);
  });

  it("filters on reward, success, difficulty and env, combined with AND", async () => {
    expect(await taskIds({ successesOnly: true })).toEqual(["billing-dispute/medium/seed-1", "billing-dispute/easy/seed-4"]);
    expect(await taskIds({ minReward: 0.5 })).toEqual(["billing-dispute/medium/seed-1", "billing-dispute/easy/seed-4"]);
    expect(await taskIds({ minReward: -1 })).toHaveLength(3);
    expect(await taskIds({ difficulty: "hard" })).toEqual(["billing-dispute/hard/seed-2"]);
    expect(await taskIds({ env: "billing-dispute" })).toEqual(["billing-dispute/medium/seed-1", "billing-dispute/hard/seed-2"]);
    expect(await taskIds({ successesOnly: true, env: "billing-dispute", difficulty: "medium" })).toEqual(["billing-dispute/medium/seed-1"]);
    expect(await taskIds({ successesOnly: false })).toHaveLength(3);
  });
});

// ---- jsonl ----------------------------------------------------------------------------------------

describe("jsonl", () => {
  it("writes every step record exactly as stored, one per line, episode by episode in step order", async () => {
    const a = stored({ taskId: "billing-dispute/medium/seed-1" });
    const b = stored({ taskId: "billing-dispute/hard/seed-2", passed: false });
    const shuffled: StoredEpisode = { episode: b.episode, steps: [...b.steps].reverse() };
    const result = await exportTo([a, shuffled, stored({ status: "error" })], { format: "jsonl" });
    expect(result.rows).toBe(8);
    const lines = readJsonl(result.path);
    expect(lines).toEqual(JSON.parse(JSON.stringify([...a.steps, ...b.steps])));
    expect(readFileSync(result.path, "utf8").endsWith("}\n")).toBe(true);
    expect(result.bytes).toBe(statSync(result.path).size);
  });

  it("streams: bytes reach the disk while the episodes are still being read", async () => {
    const out = outPath("jsonl");
    const big = "x".repeat(100_000);
    let onDiskWhileReading = 0;
    const episodes = (async function* () {
      for (let i = 0; i < 40; i++) {
        if (i === 30) {
          const tmp = readdirSync(dir).filter((f) => f.startsWith(".out-") && f.endsWith(".tmp"));
          onDiskWhileReading = tmp.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
        }
        yield stored({
          taskId: `billing-dispute/easy/seed-${i}`,
          steps: (id, t) => steps(id, t, [{ observation: big, action: { type: "message", content: "done" }, info: { verdict: verdict(true) }, task: 1 }]),
        });
      }
    })();
    const result = await exportEpisodes({ run: RUN, episodes }, { format: "jsonl", out });
    expect(result.rows).toBe(40);
    expect(onDiskWhileReading).toBeGreaterThan(1_000_000);
    expect(result.bytes).toBeGreaterThan(4_000_000);
    expect(leftovers()).toEqual([]);
  });
});

// ---- trl ------------------------------------------------------------------------------------------

describe("trl-sft", () => {
  it("turns an episode into TRL's conversational format with tool calls and tool results", async () => {
    const result = await exportTo([stored()], { format: "trl-sft" });
    expect(result.rows).toBe(1);
    const [row] = readJsonl(result.path);
    expect(Object.keys(row as object)).toEqual(["messages", "tools"]);
    expect(row!.messages).toEqual([
      { role: "user", content: TASK_TEXT },
      { role: "assistant", content: "Hello! What is the email on the account and the last 4 digits of your card?" },
      { role: "user", content: CUSTOMER_REPLY },
      {
        role: "assistant",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup_customer", arguments: { query: "oscar.kowalski@proton.me" } } }],
      },
      { role: "tool", name: "lookup_customer", content: LOOKUP_RENDERED, tool_call_id: "call_1" },
      {
        role: "assistant",
        tool_calls: [{ type: "function", function: { name: "issue_refund", arguments: { customer_id: "cus_505085", charge_id: "ch_11874710", amount_cents: 699 } } }],
      },
      { role: "tool", name: "issue_refund", content: REFUND_RENDERED },
      { role: "assistant", content: FINAL_MESSAGE },
    ]);
    expect(row!.tools).toEqual([
      { type: "function", function: { name: "lookup_customer", description: TOOLS[0]!.description, parameters: TOOLS[0]!.parameters } },
      { type: "function", function: { name: "issue_refund", description: TOOLS[1]!.description, parameters: TOOLS[1]!.parameters } },
    ]);
  });

  it("takes a final tool call's result from its tool_result", () => {
    const records = steps("e", "billing-dispute/easy/seed-1", [
      { observation: TASK_TEXT, action: { type: "tool_call", tool: "lookup_customer", args: { query: "Oscar" } }, tool_result: ok("no customers match") },
      { observation: "no customers match", action: { type: "tool_call", tool: "issue_refund", args: { customer_id: "c", charge_id: "ch", amount_cents: 5 } }, tool_result: ok({ refund_id: "RF-9" }) },
    ]);
    expect(toMessages(records)!.slice(-2)).toEqual([
      { role: "assistant", tool_calls: [{ type: "function", function: { name: "issue_refund", arguments: { customer_id: "c", charge_id: "ch", amount_cents: 5 } } }] },
      { role: "tool", name: "issue_refund", content: '{"refund_id":"RF-9"}' },
    ]);
    expect(toMessages(records)![2]).toEqual({ role: "tool", name: "lookup_customer", content: "no customers match" });
  });

  it("renders failed final tool calls as the base environment does", () => {
    const denied: ToolResult = { status: "denied", latency_ms: 3, cost: 0, output: null, error: { code: "permission_denied", message: "above your refund cap" } };
    expect(renderResult("issue_refund", denied)).toBe("[issue_refund denied] above your refund cap");
    expect(renderResult("t", { status: "ok", latency_ms: 1, cost: 0, output: "plain" })).toBe("plain");
    expect(renderResult("t", { status: "error", latency_ms: 1, cost: 0, output: { reason: "x" } })).toBe('[t error] {"reason":"x"}');
  });

  it("skips episodes with an invalid action or unparsed arguments, and episodes without steps", async () => {
    const invalid = stored({
      taskId: "billing-dispute/easy/seed-2",
      steps: (id, t) =>
        steps(id, t, [
          { observation: TASK_TEXT, action: { type: "invalid", raw: "lookup_customer(oscar)" } },
          { observation: "Invalid action: ...", action: { type: "message", content: "Sorry." }, info: { verdict: verdict(false) } },
        ]),
    });
    const empty = stored({ taskId: "billing-dispute/easy/seed-3", steps: () => [] });
    const rawArgs = stored({
      taskId: "billing-dispute/easy/seed-4",
      steps: (id, t) =>
        steps(id, t, [
          { observation: TASK_TEXT, action: { type: "tool_call", tool: "lookup_customer", args: '{"query": "osc' as unknown as Record<string, unknown>, call_id: "c00000001" } },
          { observation: "Invalid action: ...", action: { type: "message", content: "Sorry." }, info: { verdict: verdict(false) } },
        ]),
    });
    const result = await exportTo([invalid, stored(), empty, rawArgs], { format: "trl-sft" });
    expect(result.rows).toBe(1);
    // The prompt-only formats keep the invalid episode's task: only its first observation is used.
    expect((await exportTo([invalid, empty], { format: "trl-grpo" })).rows).toBe(1);
    expect((await exportTo([invalid, empty], { format: "jsonl" })).rows).toBe(2);
  });
});

describe("trl-grpo", () => {
  it("writes one prompt row per distinct task and seed, with the task columns", async () => {
    const group = (taskId: string, seed: number) => [0, 1, 2, 3].map((g) => stored({ taskId, seed, groupIndex: g, passed: g % 2 === 0 }));
    const episodes = [...group("billing-dispute/medium/seed-11", 3), ...group("billing-dispute/hard/seed-7", 9), ...group("billing-dispute/hard/seed-7", 10)];
    const result = await exportTo(episodes, { format: "trl-grpo" });
    expect(result.rows).toBe(3);
    const rows = readJsonl(result.path);
    expect(rows[0]).toEqual({
      prompt: [{ role: "user", content: TASK_TEXT }],
      env: "billing-dispute",
      task_id: "billing-dispute/medium/seed-11",
      seed: 3,
      difficulty: "medium",
      env_version: "1.0.0",
    });
    expect(rows.map((r) => [r.task_id, r.seed])).toEqual([
      ["billing-dispute/medium/seed-11", 3],
      ["billing-dispute/hard/seed-7", 9],
      ["billing-dispute/hard/seed-7", 10],
    ]);
  });

  it("exports a task when any of its episodes passes the filter", async () => {
    const episodes = [0, 1, 2].map((g) => stored({ groupIndex: g, passed: g === 2 }));
    expect((await exportTo(episodes, { format: "trl-grpo", filter: { successesOnly: true } })).rows).toBe(1);
  });
});

// verl's columns, its tools_kwargs and its SFT file: src/store/export/verl.test.ts.

// ---- real episodes --------------------------------------------------------------------------------

describe("episodes of the billing-dispute environment (reference solver)", () => {
  it("export to every format consistently", async () => {
    const { run, episodes } = await referenceEpisodes(["billing-dispute/easy/seed-3", "billing-dispute/hard/seed-8"], 2);
    const totalSteps = episodes.reduce((n, e) => n + e.steps.length, 0);

    const jsonl = await exportTo(episodes, { format: "jsonl" }, run);
    expect(jsonl.rows).toBe(totalSteps);
    expect(readJsonl(jsonl.path)).toEqual(JSON.parse(JSON.stringify(episodes.flatMap((e) => e.steps))));

    const sft = await exportTo(episodes, { format: "trl-sft", filter: { successesOnly: true } }, run);
    expect(sft.rows).toBe(4);
    for (const [i, row] of readJsonl(sft.path).entries()) {
      const records = (episodes[i] as StoredEpisode).steps;
      const messages = row.messages as Array<Record<string, any>>;
      expect(messages[0]).toEqual({ role: "user", content: records[0]!.observation.rendered });
      expect((row.tools as unknown[]).length).toBe(run.tools.length);
      // One assistant turn per step, each followed by the next observation (tool or user turn).
      const assistant = messages.filter((m) => m.role === "assistant");
      expect(assistant).toHaveLength(records.length);
      for (const [k, step] of records.entries()) {
        const at = messages.indexOf(assistant[k]!);
        const action = step.action as Action;
        if (action.type === "tool_call") {
          expect(assistant[k]!.tool_calls[0].function).toEqual({ name: action.tool, arguments: action.args });
          expect(messages[at + 1]).toMatchObject({ role: "tool", name: action.tool });
        } else {
          expect(assistant[k]!.content).toBe(action.content);
        }
        if (k + 1 < records.length) expect(messages[at + 1]!.content).toBe(records[k + 1]!.observation.rendered);
      }
      expect(messages.at(-1)!.role).toBe(records.at(-1)!.action.type === "message" ? "assistant" : "tool");
    }

    const grpo = await exportTo(episodes, { format: "trl-grpo" }, run);
    expect(grpo.rows).toBe(2);
    const verl = await exportTo(episodes, { format: "verl" }, run);
    expect(verl.rows).toBe(2);
    const { rows } = await readParquet(verl.path);
    expect(rows.map((r) => r.prompt[0].content)).toEqual(readJsonl(grpo.path).map((r) => (r.prompt as Array<{ content: string }>)[0]!.content));
    // One tools_kwargs shape for every environment (verl.test.ts reads three environments in one query).
    expect(Object.keys(rows[0]!.extra_info.tools_kwargs)).toEqual(["llmix"]);
  });
});

describe("whyEmpty", () => {
  const ep = (over: Partial<EpisodeRecord>) => ({ status: "ok", total_reward: 0.5, verdict: { passed: false }, difficulty: "easy", env: "billing-dispute", ...over }) as EpisodeRecord;

  it("names the first condition that leaves no episode, with the counts", () => {
    expect(whyEmpty([])).toBe("the run has no episodes");
    expect(whyEmpty([ep({ status: "error" }), ep({ status: "error" })])).toBe("none of the run's 2 episode(s) passed: not ended with an error (error episodes are never exported)");
    expect(whyEmpty([ep({ status: "error" }), ep({}), ep({})], { successesOnly: true })).toBe("none of the 2 episode(s) left of the run's 3 passed: --successes-only");
    expect(whyEmpty([ep({ verdict: { passed: true } })], { successesOnly: true, minReward: 0.9 })).toBe("none of the run's 1 episode(s) passed: --min-reward 0.9");
    expect(whyEmpty([ep({})], { difficulty: "hard" })).toBe("none of the run's 1 episode(s) passed: --difficulty hard");
  });

  it("is null when some episode would be exported", () => {
    expect(whyEmpty([ep({ status: "error" }), ep({})], { env: "billing-dispute" })).toBeNull();
  });
});
