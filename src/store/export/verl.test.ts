/**
 * The verl exports: the RL Parquet (`verl`), the multi-turn SFT Parquet (`verl-sft`) and the tool config
 * (`verl-tools`). The last test rolls out the built-in environments through the CLI and reads the three RL
 * files in one DuckDB query (an independent Parquet reader) without `union_by_name`.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from "hyparquet";
import { afterAll, describe, expect, it, vi } from "vitest";
import { buildProgram } from "../../cli/main.js";
import type { ToolSpec, TrajectoryStepRecord } from "../../core/contract.js";
import { LlmixError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { splitOf } from "../../tasks/splits.js";
import { openStore } from "../sqlite-store.js";
import { episodeIdOf, type EpisodeRecord, type RunRecord, type StoredEpisode } from "../types.js";
import { exportEpisodes, type ExportOptions } from "./index.js";
import { toMessages } from "./trl.js";
import { escapeInterpolation, exportVerlTools, renderVerlToolConfig, toVerlToolSchema, verlProperty, verlToolConfig, yamlSafeJson } from "./verl-tools.js";
import { VERL_COMMIT } from "./verl.js";

// ---- fixtures -------------------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), "llmix-verl-export-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const outPath = (ext: string) => join(dir, `out-${++counter}.${ext}`);

const TOOLS: ToolSpec[] = [
  {
    name: "lookup_customer",
    description: "Find customers by email, customer id, phone, or part of the name.",
    parameters: { type: "object", properties: { query: { type: "string", description: "An email or a name" } }, required: ["query"], additionalProperties: false },
    effect: "read",
  },
  {
    name: "issue_refund",
    description: "Refund a charge.",
    parameters: {
      type: "object",
      properties: {
        charge_id: { anyOf: [{ type: "string" }, { type: "null" }], description: "The charge, or null" },
        amount_cents: { type: "integer", minimum: 1 },
      },
      required: ["charge_id", "amount_cents"],
      additionalProperties: false,
    },
    effect: "write",
  },
];

const RUN: RunRecord = {
  run_id: "run-v",
  env: "billing-dispute",
  env_version: "1.2.0",
  policy: "oracle",
  policy_checkpoint: null,
  config: {},
  tools: TOOLS,
  status: "finished",
  planned_episodes: 2,
  created_at: "2026-04-28T10:00:00.000Z",
  finished_at: "2026-04-28T10:05:00.000Z",
};

const TASK_TEXT = "You are Riley, a billing agent.\n\nCustomer: I was charged twice.";
const ok = (output: JsonValue): TrajectoryStepRecord["tool_result"] => ({ status: "ok", latency_ms: 5, cost: 0, output });

/** Step records of an episode: a greeting, a lookup (with a call id), a refund, a closing message. */
function steps(episodeId: string, taskId: string, invalid = false): TrajectoryStepRecord[] {
  const actions: Array<Pick<TrajectoryStepRecord, "observation" | "action" | "tool_result">> = [
    { observation: { rendered: TASK_TEXT, tokens: 12 }, action: invalid ? { type: "invalid", raw: "lookup(x)" } : { type: "message", content: "Hello! Your email?" }, tool_result: null },
    { observation: { rendered: "Customer: a@b.c", tokens: 5 }, action: { type: "tool_call", tool: "lookup_customer", args: { query: "a@b.c" }, call_id: "call_1" }, tool_result: ok({ id: "cus_1" }) },
    { observation: { rendered: "cus_1 | Ada", tokens: 4 }, action: { type: "tool_call", tool: "issue_refund", args: { charge_id: null, amount_cents: 699 } }, tool_result: ok("RF-1") },
    { observation: { rendered: "RF-1", tokens: 2 }, action: { type: "message", content: "Refunded $6.99." }, tool_result: null },
  ];
  return actions.map((a, i) => ({
    episode_id: episodeId,
    task_id: taskId,
    env_version: "1.2.0",
    policy_checkpoint: null,
    step: i + 1,
    ...a,
    reward_components: { task: i === actions.length - 1 ? 1 : 0, step_cost: -0.01 },
    terminated: i === actions.length - 1,
    truncated: false,
    reward: (i === actions.length - 1 ? 1 : 0) - 0.01,
  })) as TrajectoryStepRecord[];
}

function stored(taskId: string, seed: number, groupIndex = 0, opts: { status?: "ok" | "error"; invalid?: boolean; steps?: boolean } = {}): StoredEpisode {
  const episodeId = episodeIdOf(RUN.run_id, taskId, groupIndex);
  const records = opts.steps === false ? [] : steps(episodeId, taskId, opts.invalid);
  const episode: EpisodeRecord = {
    episode_id: episodeId,
    run_id: RUN.run_id,
    env: "billing-dispute",
    env_version: "1.2.0",
    task_id: taskId,
    difficulty: taskId.split("/")[1] as string,
    seed,
    group_id: `${RUN.run_id}/${taskId}`,
    group_index: groupIndex,
    policy: "oracle",
    policy_checkpoint: null,
    status: opts.status ?? "ok",
    error: null,
    steps: records.length,
    tokens: 23,
    total_reward: 0.96,
    outcome: records.length > 0 ? 1 : null,
    reward_components: {},
    verdict: { passed: true },
    end_reason: "customer_satisfied",
    terminated: true,
    truncated: false,
    cost: 0,
    tool_calls: {},
    advantages: null,
    started_at: "2026-04-28T10:00:01.000Z",
    finished_at: "2026-04-28T10:00:02.000Z",
    duration_ms: 1000,
  };
  return { episode, steps: records };
}

async function* iterate(episodes: StoredEpisode[]): AsyncGenerator<StoredEpisode> {
  for (const e of episodes) yield e;
}

const exportTo = (episodes: StoredEpisode[], options: Omit<ExportOptions, "out">, run = RUN) =>
  exportEpisodes({ run, episodes: iterate(episodes) }, { out: outPath("parquet"), ...options });

async function readParquet(path: string) {
  const file = await asyncBufferFromFile(path);
  const metadata = await parquetMetadataAsync(file);
  const columns = parquetSchema(metadata).children.map((c) => c.element.name);
  const rows = (await parquetReadObjects({ file })) as Array<Record<string, any>>;
  return { metadata, columns, rows };
}

/** The tool config as OmegaConf reads it: `#` comment lines, then JSON (a YAML subset). */
function readToolConfig(path: string): { tools: Array<Record<string, any>> } {
  const text = readFileSync(path, "utf8");
  return JSON.parse(text.split("\n").filter((line) => !line.startsWith("#")).join("\n"));
}

/**
 * The checks of verl's pydantic `OpenAIFunctionToolSchema` (verl/tools/schemas.py at b178a3cd), plus "no
 * keyword verl would drop": the schema written is exactly the schema verl renders. Returns the problems.
 */
function verlSchemaProblems(schema: any): string[] {
  const problems: string[] = [];
  const str = (v: unknown, where: string) => typeof v === "string" || problems.push(`${where}: not a string`);
  const only = (o: Record<string, unknown>, keys: string[], where: string) =>
    Object.keys(o).forEach((k) => keys.includes(k) || problems.push(`${where}.${k}: dropped by verl`));
  str(schema?.type, "type");
  only(schema ?? {}, ["type", "function"], "tool");
  const f = schema?.function ?? {};
  str(f.name, "function.name");
  str(f.description, "function.description");
  only(f, ["name", "description", "parameters"], "function");
  const p = f.parameters ?? {};
  str(p.type, "parameters.type");
  only(p, ["type", "properties", "required"], "parameters");
  if (!Array.isArray(p.required) || !p.required.every((r: unknown) => typeof r === "string")) problems.push("parameters.required: not a list of strings");
  if (typeof p.properties !== "object" || p.properties === null) problems.push("parameters.properties: not a dict");
  for (const [name, prop] of Object.entries<any>(p.properties ?? {})) {
    str(prop?.type, `properties.${name}.type`);
    if (prop?.description !== undefined) str(prop.description, `properties.${name}.description`);
    if (prop?.enum !== undefined && !(Array.isArray(prop.enum) && prop.enum.every((e: unknown) => typeof e === "string"))) problems.push(`properties.${name}.enum: not a list of strings`);
    only(prop ?? {}, ["type", "description", "enum"], `properties.${name}`);
  }
  return problems;
}

// ---- verl (RL) --------------------------------------------------------------------------------------

describe("verl", () => {
  it("writes verl's columns, with the task under the fixed tools_kwargs key llmix, readable by hyparquet", async () => {
    const episodes = [0, 1].flatMap((g) => [stored("billing-dispute/medium/seed-11", 3, g), stored("billing-dispute/hard/seed-771", 4294967295, g)]);
    const result = await exportTo(episodes, { format: "verl" });
    expect(result.rows).toBe(2);
    const { metadata, columns, rows } = await readParquet(result.path);
    expect(metadata.num_rows).toBe(2n);
    expect(columns).toEqual(["data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"]);
    const kwargs = { env: "billing-dispute", task_id: "billing-dispute/medium/seed-11", seed: 3n };
    expect(rows[0]).toEqual({
      data_source: "billing-dispute",
      agent_name: "llmix_agent",
      prompt: [{ role: "user", content: TASK_TEXT }],
      ability: "agent",
      reward_model: { style: "rule", ground_truth: '{"env":"billing-dispute","task_id":"billing-dispute/medium/seed-11","seed":3}' },
      extra_info: {
        index: 0n,
        split: splitOf("billing-dispute/medium/seed-11"),
        env: "billing-dispute",
        env_version: "1.2.0",
        task_id: "billing-dispute/medium/seed-11",
        seed: 3n,
        difficulty: "medium",
        need_tools_kwargs: true,
        tools_kwargs: { llmix: { create_kwargs: kwargs } },
        interaction_kwargs: { name: "llmix", ...kwargs },
      },
    });
    expect(rows[1]!.extra_info.tools_kwargs.llmix.create_kwargs.seed).toBe(4294967295n);
    expect(rows[1]!.extra_info.index).toBe(1n);
    const provenance = metadata.key_value_metadata?.find((kv) => kv.key === "llmix.export");
    expect(JSON.parse(provenance?.value ?? "{}")).toMatchObject({ format: "verl", run_id: "run-v", env: "billing-dispute" });
  });

  it("writes one schema whatever the run's tools, so files of different environments are one dataset", async () => {
    const runs: RunRecord[] = [RUN, { ...RUN, env: "other", tools: [TOOLS[1] as ToolSpec, { ...(TOOLS[0] as ToolSpec), name: "terminal" }] }, { ...RUN, tools: [] }];
    const schemas: unknown[] = [];
    for (const run of runs) {
      const { path } = await exportTo([stored("billing-dispute/easy/seed-1", 1)], { format: "verl" }, run);
      const { metadata, rows } = await readParquet(path);
      schemas.push(metadata.schema);
      expect(rows[0]!.extra_info.need_tools_kwargs).toBe(run.tools.length > 0);
      expect(rows[0]!.extra_info.tools_kwargs).toEqual({ llmix: { create_kwargs: { env: "billing-dispute", task_id: "billing-dispute/easy/seed-1", seed: 1n } } });
    }
    expect(schemas[1]).toEqual(schemas[0]);
    expect(schemas[2]).toEqual(schemas[0]);
  });

  it("skips tasks without steps and error episodes, and splits many rows into row groups", async () => {
    const episodes = [
      stored("billing-dispute/easy/seed-0", 0, 0, { steps: false }),
      stored("billing-dispute/easy/seed-1", 1, 0, { status: "error" }),
      ...Array.from({ length: 2100 }, (_, i) => stored(`billing-dispute/easy/seed-${i + 2}`, i)),
    ];
    const result = await exportTo(episodes, { format: "verl" });
    expect(result.rows).toBe(2100);
    const { metadata, rows } = await readParquet(result.path);
    expect(metadata.row_groups.length).toBe(2);
    expect(rows[2099]!.extra_info).toMatchObject({ index: 2099n, task_id: "billing-dispute/easy/seed-2101" });
  });
});

// ---- verl-tools -------------------------------------------------------------------------------------

describe("verl-tools", () => {
  it("writes one entry per tool: our class, the environment, and the schema in verl's form", async () => {
    const out = outPath("yaml");
    const result = await exportVerlTools({ ...RUN, tools: [...TOOLS, TOOLS[0] as ToolSpec] }, out);
    expect(result).toMatchObject({ format: "verl-tools", path: out, rows: 2 });
    const text = readFileSync(out, "utf8");
    expect(result.bytes).toBe(Buffer.byteLength(text));
    expect(text.split("\n")[1]).toContain(VERL_COMMIT);
    const config = readToolConfig(out);
    expect(config.tools).toHaveLength(2);
    expect(config.tools[0]).toEqual({
      class_name: "llmix_client.verl.LlmixTool",
      config: { type: "native", env: "billing-dispute", env_version: "1.2.0" },
      tool_schema: {
        type: "function",
        function: {
          name: "lookup_customer",
          description: TOOLS[0]!.description,
          parameters: { type: "object", properties: { query: { type: "string", description: "An email or a name" } }, required: ["query"] },
        },
      },
    });
    // anyOf [string, null] -> type string (its description already says null); minimum is not kept.
    expect(config.tools[1]!.tool_schema.function.parameters.properties).toEqual({
      charge_id: { type: "string", description: "The charge, or null" },
      amount_cents: { type: "integer" },
    });
    for (const entry of config.tools) expect(verlSchemaProblems(entry.tool_schema)).toEqual([]);
    expect(verlToolConfig({ ...RUN, tools: [] })).toEqual({ tools: [] });
  });

  it("folds what verl's property form cannot hold into the description", () => {
    expect(verlProperty({ type: ["integer", "null"], description: "A count" })).toEqual({ type: "integer", description: "A count (or null)" });
    expect(verlProperty({ type: "array", items: { type: "string" }, description: "Hosts" })).toEqual({ type: "array", description: "Hosts (array of string)" });
    expect(verlProperty({ type: "string", enum: ["list", "block"] })).toEqual({ type: "string", enum: ["list", "block"] });
    expect(verlProperty({ enum: [1, 2, null] })).toEqual({ type: "integer", description: "(one of 1, 2; or null)" });
    expect(verlProperty({ anyOf: [{ type: "string" }, { type: "integer" }] })).toEqual({ type: "string", description: "(one of the types string, integer)" });
    expect(verlProperty({ anyOf: [{ type: "object", properties: { a: {}, b: {} } }, { type: "null" }], description: "Filter" })).toEqual({
      type: "object",
      description: "Filter (object with fields a, b; or null)",
    });
    expect(verlProperty({ anyOf: [{ type: "string", enum: ["x"], description: "Inner" }, { type: "null" }] })).toEqual({ type: "string", description: "Inner (or null)", enum: ["x"] });
    expect(verlProperty({})).toEqual({ type: "string", description: "(any JSON value)" });
    expect(verlProperty("not a schema")).toEqual({ type: "string", description: "(any JSON value)" });
    expect(verlProperty({ type: "null" })).toEqual({ type: "null" });
    const odd: ToolSpec = { name: "t", description: "d", parameters: { type: "object", properties: { a: { type: "weird" } }, required: ["a", 3] }, effect: "read" };
    expect(toVerlToolSchema(odd).function.parameters).toEqual({ type: "object", properties: { a: { type: "string", description: "(any JSON value)" } }, required: ["a"] });
    expect(toVerlToolSchema({ ...odd, parameters: {} }).function.parameters).toEqual({ type: "object", properties: {}, required: [] });
  });

  it("escapes OmegaConf interpolations and the characters PyYAML would change", () => {
    expect(escapeInterpolation("a ${x} b")).toBe("a \\${x} b");
    expect(escapeInterpolation("a \\${x}")).toBe("a \\\\\\${x}");
    expect(escapeInterpolation("$ {x} and $x and {x}")).toBe("$ {x} and $x and {x}");
    const json = yamlSafeJson({ s: "nel\u0085 ls\u2028 del\u007f c1\u0090 nc\ufffe ${y}" });
    expect(json).not.toMatch(/[\u007f-\u009f\u2028\u2029\ufffe\uffff]/);
    expect(JSON.parse(json)).toEqual({ s: "nel\u0085 ls\u2028 del\u007f c1\u0090 nc\ufffe \\${y}" });
    const text = renderVerlToolConfig({ ...RUN, run_id: "run\nwith a newline", tools: [{ ...(TOOLS[0] as ToolSpec), description: "Uses ${HOME}" }] });
    expect(text.split("\n").slice(0, 4).every((line) => line.startsWith("#"))).toBe(true);
    expect(JSON.parse(text.split("\n").filter((l) => !l.startsWith("#")).join("\n")).tools[0].tool_schema.function.description).toBe("Uses \\${HOME}");
  });

  it("fails with store_error on an unwritable path, leaving nothing behind", async () => {
    for (const out of [dir, join(dir, "missing", "tools.yaml")]) {
      const error = await exportVerlTools(RUN, out).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LlmixError);
      expect((error as LlmixError).code).toBe("store_error");
    }
    expect(readdirSync(dir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });
});

// ---- verl-sft ---------------------------------------------------------------------------------------

describe("verl-sft", () => {
  it("writes each episode as MultiTurnSFTDataset's messages and tools, in one schema", async () => {
    const result = await exportTo([stored("billing-dispute/medium/seed-11", 3)], { format: "verl-sft" });
    expect(result.rows).toBe(1);
    const { columns, rows, metadata } = await readParquet(result.path);
    expect(columns).toEqual(["messages", "tools", "extra_info"]);
    // hyparquet reads a null LIST as undefined (DuckDB reads it as NULL: see the end-to-end test).
    const none = { tool_calls: undefined, name: null, tool_call_id: null };
    expect(rows[0]!.messages).toEqual([
      { role: "user", content: TASK_TEXT, ...none },
      { role: "assistant", content: "Hello! Your email?", ...none },
      { role: "user", content: "Customer: a@b.c", ...none },
      { role: "assistant", content: "", ...none, tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup_customer", arguments: '{"query":"a@b.c"}' } }] },
      { role: "tool", content: "cus_1 | Ada", tool_calls: undefined, name: "lookup_customer", tool_call_id: "call_1" },
      { role: "assistant", content: "", ...none, tool_calls: [{ id: null, type: "function", function: { name: "issue_refund", arguments: '{"charge_id":null,"amount_cents":699}' } }] },
      { role: "tool", content: "RF-1", tool_calls: undefined, name: "issue_refund", tool_call_id: null },
      { role: "assistant", content: "Refunded $6.99.", ...none },
    ]);
    // The same conversation as trl-sft, message for message.
    expect(rows[0]!.messages.map((m: any) => m.role)).toEqual(toMessages(stored("billing-dispute/medium/seed-11", 3).steps)!.map((m) => m.role));
    // The tools are the verl-tools schemas (parameters as JSON): SFT and RL prompts show the same tools.
    const config = verlToolConfig(RUN);
    expect(rows[0]!.tools).toEqual(config.tools.map((t) => ({ type: "function", function: { ...t.tool_schema.function, parameters: JSON.stringify(t.tool_schema.function.parameters) } })));
    expect(rows[0]!.extra_info).toEqual({
      index: 0n,
      env: "billing-dispute",
      env_version: "1.2.0",
      task_id: "billing-dispute/medium/seed-11",
      seed: 3n,
      difficulty: "medium",
      episode_id: episodeIdOf("run-v", "billing-dispute/medium/seed-11", 0),
      total_reward: 0.96,
      outcome: 1,
    });
    expect(JSON.parse(metadata.key_value_metadata?.find((kv) => kv.key === "llmix.export")?.value ?? "{}")).toMatchObject({ format: "verl-sft" });
  });

  it("keeps every episode of a group, skips what trl-sft skips, and writes a valid file for no rows", async () => {
    const episodes = [
      stored("billing-dispute/easy/seed-1", 1, 0),
      stored("billing-dispute/easy/seed-1", 1, 1),
      stored("billing-dispute/easy/seed-2", 2, 0, { invalid: true }),
      stored("billing-dispute/easy/seed-3", 3, 0, { steps: false }),
      stored("billing-dispute/easy/seed-4", 4, 0, { status: "error" }),
    ];
    const result = await exportTo(episodes, { format: "verl-sft" });
    expect(result.rows).toBe(2);
    const { rows } = await readParquet(result.path);
    expect(rows.map((r) => r.extra_info.index)).toEqual([0n, 1n]);
    const empty = await exportTo([], { format: "verl-sft" }, { ...RUN, tools: [] });
    expect(empty.rows).toBe(0);
    const read = await readParquet(empty.path);
    expect(read.metadata.num_rows).toBe(0n);
    expect(read.columns).toEqual(["messages", "tools", "extra_info"]);
  });
});

// ---- the built-in environments, end to end ------------------------------------------------------------

/** Run the CLI in-process; its stdout. */
async function llmix(args: string[]): Promise<string> {
  const chunks: string[] = [];
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    await buildProgram().exitOverride().parseAsync(["node", "llmix", ...args]);
  } finally {
    spy.mockRestore();
  }
  return chunks.join("");
}

async function query(connection: DuckDBConnection, sql: string): Promise<Array<Record<string, any>>> {
  return (await connection.runAndReadAll(sql)).getRowObjectsJson() as Array<Record<string, any>>;
}

describe("the built-in environments through `llmix rollout` and `llmix export`", () => {
  const ENVS = ["billing-dispute", "incident-response", "code-repair"] as const;

  it("exports RL files that DuckDB reads together in one query without union_by_name, and SFT files and tool configs", async () => {
    const store = join(dir, "envs.db");
    const files: Record<string, Record<"verl" | "verl-sft" | "verl-tools", string>> = {};
    for (const env of ENVS) {
      await llmix(["rollout", "--env", env, "--policy", "oracle", "-n", "4", "--group", "2", "--run-id", `run-${env}`, "--store", store, "--json"]);
      files[env] = { verl: join(dir, `${env}.parquet`), "verl-sft": join(dir, `${env}.sft.parquet`), "verl-tools": join(dir, `${env}.tools.yaml`) };
      for (const format of ["verl", "verl-sft", "verl-tools"] as const) {
        const result = JSON.parse(await llmix(["export", "--run", `run-${env}`, "--format", format, "--out", files[env]![format], "--store", store, "--json"]));
        expect(result).toMatchObject({ format, path: files[env]![format] });
        expect(result.rows).toEqual(format === "verl" ? 2 : format === "verl-sft" ? 4 : expect.any(Number));
      }
    }
    await expect(llmix(["export", "--run", "run-code-repair", "--format", "verl-tools", "--out", join(dir, "x.yaml"), "--store", store, "--env", "code-repair"])).rejects.toThrow(
      "episode filters and --json-strings do not apply",
    );
    expect(existsSync(join(dir, "x.yaml"))).toBe(false);

    // What the store holds, to compare with.
    const expected: Array<{ env: string; task_id: string; seed: number; prompt: string; tools: string[] }> = [];
    const episodes: Record<string, StoredEpisode[]> = {};
    const trajectories = openStore(store);
    try {
      for (const env of ENVS) {
        const run = await trajectories.getRun(`run-${env}`);
        episodes[env] = [];
        for await (const e of trajectories.streamEpisodes({ run_id: `run-${env}` })) episodes[env]!.push(e);
        const seen = new Set<string>();
        for (const e of episodes[env]!) {
          const key = `${e.episode.task_id}/${e.episode.seed}`;
          if (seen.has(key)) continue;
          seen.add(key);
          expected.push({ env, task_id: e.episode.task_id, seed: e.episode.seed, prompt: e.steps[0]!.observation.rendered, tools: run!.tools.map((t) => t.name) });
        }
      }
    } finally {
      await trajectories.close();
    }
    expect(expected).toHaveLength(6);

    const instance = await DuckDBInstance.create(":memory:");
    const connection = await instance.connect();
    try {
      const list = (format: "verl" | "verl-sft") => `[${ENVS.map((env) => `'${files[env]![format]}'`).join(", ")}]`;
      // Every file has the same schema: no union_by_name needed, nothing dropped.
      const describe = await Promise.all(ENVS.map((env) => query(connection, `DESCRIBE SELECT * FROM read_parquet('${files[env]!.verl}')`)));
      expect(describe[0]!.map((c) => c.column_name)).toEqual(["data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"]);
      expect(describe[1]).toEqual(describe[0]);
      expect(describe[2]).toEqual(describe[0]);

      const rows = await query(
        connection,
        `SELECT data_source, agent_name, ability, len(prompt) AS turns, prompt[1].role AS role, prompt[1].content AS content,
                reward_model.style AS style, reward_model.ground_truth AS ground_truth,
                extra_info.env AS env, extra_info.task_id AS task_id, extra_info.seed AS seed, extra_info.need_tools_kwargs AS need_tools,
                extra_info.tools_kwargs.llmix.create_kwargs AS create_kwargs, extra_info.interaction_kwargs AS interaction_kwargs
         FROM read_parquet(${list("verl")}) ORDER BY data_source, extra_info.index`,
      );
      expect(rows).toHaveLength(6);
      const sorted = [...expected].sort((a, b) => a.env.localeCompare(b.env));
      for (const [i, row] of rows.entries()) {
        const want = sorted[i]!;
        const task = { env: want.env, task_id: want.task_id, seed: String(want.seed) };
        expect(row).toEqual({
          data_source: want.env,
          agent_name: "llmix_agent",
          ability: "agent",
          turns: "1",
          role: "user",
          content: want.prompt,
          style: "rule",
          ground_truth: JSON.stringify({ env: want.env, task_id: want.task_id, seed: want.seed }),
          env: want.env,
          task_id: want.task_id,
          seed: String(want.seed),
          need_tools: want.tools.length > 0,
          create_kwargs: task,
          interaction_kwargs: { name: "llmix", ...task },
        });
      }

      // The SFT files read together too; each row is one episode, its tools those of the tool config.
      const sft = await query(
        connection,
        `SELECT extra_info.env AS env, extra_info.episode_id AS episode_id, len(messages) AS messages, messages[1].content AS first,
                messages[1].tool_calls IS NULL AND messages[1].name IS NULL AS first_has_no_call,
                list_transform(tools, t -> t.function.name) AS tools, list_transform(tools, t -> t.function.parameters) AS parameters
         FROM read_parquet(${list("verl-sft")}) ORDER BY env, extra_info.index`,
      );
      expect(sft).toHaveLength(12);
      for (const env of ENVS) {
        const config = readToolConfig(files[env]!["verl-tools"]);
        for (const entry of config.tools) {
          expect(entry.config).toEqual({ type: "native", env, env_version: episodes[env]![0]!.episode.env_version });
          expect(verlSchemaProblems(entry.tool_schema), `${env} ${entry.tool_schema.function.name}`).toEqual([]);
        }
        const ofEnv = sft.filter((r) => r.env === env);
        expect(ofEnv.map((r) => r.episode_id).sort()).toEqual(episodes[env]!.map((e) => e.episode.episode_id).sort());
        for (const row of ofEnv) {
          const episode = episodes[env]!.find((e) => e.episode.episode_id === row.episode_id)!;
          expect(Number(row.messages)).toBe(toMessages(episode.steps)!.length);
          expect(row.first).toBe(episode.steps[0]!.observation.rendered);
          expect(row.first_has_no_call).toBe(true);
          expect(row.tools).toEqual(config.tools.map((t) => t.tool_schema.function.name));
          expect(row.parameters.map((p: string) => JSON.parse(p))).toEqual(config.tools.map((t) => t.tool_schema.function.parameters));
        }
      }
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  }, 120_000);
});
