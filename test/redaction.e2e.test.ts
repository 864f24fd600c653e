/**
 * Redaction end to end (issue 20): the built-in environments' worlds hold known personal data (the
 * customers, employees and reviewers each task draws), and an agent types more of its own. With the
 * data policy's redaction rules on, none of it may reach a stored step or episode row (the SQLite
 * file's bytes included), an export in any format, a replay report or a log line; with the rules off
 * the same runs do hold it, so the checks are not vacuous.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { asyncBufferFromFile, parquetReadObjects } from "hyparquet";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Action, TrajectoryStepRecord } from "../src/core/contract.js";
import type { AnyEnvironment } from "../src/core/registry.js";
import { runPolicy } from "../src/core/run-policy.js";
import { builtinRegistry } from "../src/envs/index.js";
import { runJob } from "../src/hosts/host-jobs.js";
import { HostedSessions } from "../src/hosts/hosted-sessions.js";
import { randomSnapshotKey, SnapshotSigner } from "../src/hosts/signing.js";
import { episodeRecord, runEpisode } from "../src/rollout/episode.js";
import { replayEpisode, type ReplayReport } from "../src/rollout/replay.js";
import { rollout } from "../src/rollout/runner.js";
import { WorkerPool } from "../src/rollout/worker-pool.js";
import { EXPORT_FORMATS, exportEpisodes, exportRedactor, exportVerlTools } from "../src/store/export/index.js";
import type { RedactionRules } from "../src/store/redaction.js";
import { openStore } from "../src/store/sqlite-store.js";
import { run as runRecord } from "../src/store/test-support.js";
import type { StoredEpisode, TrajectoryStore } from "../src/store/types.js";
import { rolloutConfig } from "./helpers.js";

const RULES: RedactionRules = { patterns: [{ name: "ticket", regex: "TKT-[0-9]{5}" }] };
/** What the agent of the service session types itself: no environment lists these. */
const TYPED = ["agent.typed@example.org", "+44 20 7946 0958", "4111 1111 1111 1111", "TKT-48213"];
const TYPED_MESSAGE = `Before we start: my backup email is ${TYPED[0]}, call me on ${TYPED[1]}, my other card is ${TYPED[2]}, ticket ${TYPED[3]}.`;
/** Each environment's runs: a few medium episodes, the oracle's and a noisy oracle's (its mistakes type other things). */
const RUNS = [
  { env: "billing-dispute", policy: "noisy-oracle:0.3", n: 4, group: 2 },
  { env: "web-shop", policy: "oracle", n: 2, group: 1 },
  { env: "incident-response", policy: "oracle", n: 2, group: 1 },
];
const SERVICE_TASK = "billing-dispute/medium/seed-12";

const registry = builtinRegistry();
const dir = mkdtempSync(join(tmpdir(), "llmix-redaction-"));
const stores: Record<"on" | "off", TrajectoryStore> = { on: openStore(join(dir, "on.db")), off: openStore(join(dir, "off.db")) };
/** Everything written to the console or stderr while episodes ran. */
const logged: string[] = [];
/** The service session's live answers (not redacted: the agent needs them). */
const liveBodies: string[] = [];

afterAll(async () => {
  vi.restoreAllMocks();
  await stores.on.close();
  await stores.off.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeAll(async () => {
  for (const method of ["log", "info", "warn", "error", "debug"] as const) vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
  const stderr = process.stderr.write.bind(process.stderr);
  vi.spyOn(process.stderr, "write").mockImplementation(((chunk: unknown, ...rest: unknown[]) => {
    logged.push(String(chunk));
    return (stderr as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write);
  const pool = new WorkerPool(1);
  try {
    for (const side of ["on", "off"] as const) {
      for (const r of RUNS) {
        const config = rolloutConfig({ ...r, difficulties: ["medium"], seed: 11, ...(side === "on" ? { redaction: RULES } : {}) });
        const result = await rollout({ store: stores[side], registry, pool, runId: `${side}-${r.env}`, config });
        expect(result.errors).toBe(0);
      }
      await serviceEpisode(stores[side], side === "on" ? RULES : undefined, `svc-${side}`);
    }
  } finally {
    await pool.close();
  }
}, 120_000);

/**
 * A recorded service session as the host runs it: the agent types its own personal data, then acts as
 * the reference solver would; the records the host hands back are stored as the serving thread does.
 */
async function serviceEpisode(store: TrajectoryStore, redaction: RedactionRules | undefined, runId: string): Promise<void> {
  const hosted = new HostedSessions(registry, new SnapshotSigner(randomSnapshotKey()), undefined, undefined, {}, redaction);
  const actions: Action[] = [{ type: "message", content: TYPED_MESSAGE }, ...(await referenceActions("billing-dispute", SERVICE_TASK, 5))];
  await hosted.open({ sid: `${runId}-s1`, env: "billing-dispute", task_id: SERVICE_TASK, seed: 5, record: true, policy_checkpoint: null });
  const records: TrajectoryStepRecord[] = [];
  for (const action of actions) {
    const reply = await hosted.step(`${runId}-s1`, action, false);
    liveBodies.push(reply.body);
    if (reply.record) records.push(reply.record);
    if (reply.ended) break;
  }
  const { summary } = await hosted.close(`${runId}-s1`, new Date(0), new Date(1));
  await store.createRun(runRecord(runId, undefined, { env: "billing-dispute", env_version: summary.env_version, policy: "service", config: {} }));
  const job = { run_id: runId, episode_id: summary.episode_id, env: summary.env, task_id: summary.task_id, seed: summary.seed, group_id: summary.group_id, group_index: 0, policy: "service", policy_checkpoint: null };
  await store.writeEpisodes([{ episode: { ...episodeRecord(job, records, null, new Date(0), new Date(1)), verdict: summary.verdict }, steps: records }]);
}

/** The reference solver's actions on a task (the environment is deterministic: a copy of them replays it). */
async function referenceActions(envId: string, taskId: string, seed: number): Promise<Action[]> {
  const env = registry.get(envId).create();
  try {
    const initial = await env.reset(taskId, seed);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    return run.transitions.map((t) => t.action);
  } finally {
    await env.close();
  }
}

// ---- what must not leak --------------------------------------------------------------------------------

/** The personal values of an episode's world, from its environment reset to the same task and seed. */
async function worldValues(stored: StoredEpisode): Promise<string[]> {
  const env: AnyEnvironment = registry.get(stored.episode.env).create();
  try {
    await env.reset(stored.episode.task_id, stored.episode.seed);
    return env.sensitiveValues().map((v) => v.value.trim()).filter((v) => v.length >= 2);
  } finally {
    await env.close();
  }
}

const isWord = (v: string) => /^[\p{L}\p{N}_]+$/u.test(v);
const escape = (v: string) => v.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** A value of one word counts only as a whole word ("Ava" is not in "Java"); any other anywhere. */
const finds = (v: string) => (isWord(v) ? new RegExp(`(?<![\\p{L}\\p{N}_])${escape(v)}(?![\\p{L}\\p{N}_])`, "iu") : new RegExp(escape(v), "iu"));
/**
 * Values distinctive enough to look for in raw bytes (a card's last four digits or a postal code also
 * occur as timestamps, counts and ids outside any record: those are checked in the records' text).
 */
const distinctive = (v: string) => /\p{L}/u.test(v) || v.replace(/\D/g, "").length >= 6;

/** The values found in `text`. */
function leaks(text: string, values: readonly string[]): string[] {
  return values.filter((v) => finds(v).test(text));
}

/** Every string of a JSON value (keys too), except the ids a runner makes (task ids hold seed numbers). */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      if (!/(^|_)(id|task_id|episode_id|run_id|group_id|data_source|index)$/.test(k)) strings(v, out);
    }
  }
  return out;
}

/** Values found in the strings of `value` (all values; see `strings`). */
const leaksIn = (value: unknown, values: readonly string[]) => leaks(strings(value).join("\n"), values);

async function storedEpisodes(store: TrajectoryStore, runId: string): Promise<StoredEpisode[]> {
  const out: StoredEpisode[] = [];
  for await (const stored of store.streamEpisodes({ run_id: runId })) out.push(stored);
  return out;
}

const RUN_IDS = [...RUNS.map((r) => r.env), "svc"];
const runIdOf = (side: "on" | "off", name: string) => (name === "svc" ? `svc-${side}` : `${side}-${name}`);

/** Every value of every episode of a side's runs, plus what the agent typed. */
async function allValues(side: "on" | "off"): Promise<string[]> {
  const values = new Set(TYPED);
  for (const name of RUN_IDS) for (const stored of await storedEpisodes(stores[side], runIdOf(side, name))) for (const v of await worldValues(stored)) values.add(v);
  return [...values];
}

/** The text of an exported file: JSON lines as they are, Parquet decoded row by row. */
async function exportedText(path: string): Promise<string> {
  if (!path.endsWith(".parquet")) return readFileSync(path, "utf8");
  const rows = await parquetReadObjects({ file: await asyncBufferFromFile(path) });
  return JSON.stringify(rows, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v));
}

/** Export a side's run in every format (verl-tools included); the files' texts by format. */
async function exportAll(side: "on" | "off", name: string, rules?: RedactionRules): Promise<Record<string, string>> {
  const store = stores[side];
  const runId = runIdOf(side, name);
  const run = await store.getRun(runId);
  if (!run) throw new Error(`no run ${runId}`);
  const redactor = exportRedactor(rules);
  const out: Record<string, string> = {};
  for (const format of EXPORT_FORMATS) {
    const path = join(dir, `${runId}-${rules ? "gate" : "plain"}.${format}.${format.startsWith("verl") ? "parquet" : "jsonl"}`);
    await exportEpisodes({ run, episodes: store.streamEpisodes({ run_id: runId }) }, { format, out: path, ...(redactor ? { redactor } : {}) });
    out[format] = await exportedText(path);
  }
  const tools = join(dir, `${runId}-${rules ? "gate" : "plain"}.verl-tools.yaml`);
  await exportVerlTools(run, tools, redactor);
  out["verl-tools"] = readFileSync(tools, "utf8");
  return out;
}

describe("redaction before storage, export and replay", () => {
  it("stores no personal value in any step or episode row, nor anywhere in the SQLite file", async () => {
    const values = await allValues("on");
    let episodes = 0;
    for (const name of RUN_IDS) {
      for (const stored of await storedEpisodes(stores.on, runIdOf("on", name))) {
        episodes++;
        const own = [...(await worldValues(stored)), ...TYPED];
        const content = stored.steps.map((s) => ({ observation: s.observation, action: s.action, tool_result: s.tool_result, info: s.info }));
        expect(leaksIn({ content, verdict: stored.episode.verdict, error: stored.episode.error }, own), stored.episode.episode_id).toEqual([]);
        expect(JSON.stringify(stored)).toContain("[redacted:");
      }
    }
    expect(episodes).toBe(RUNS.reduce((n, r) => n + r.n, 0) + 1);
    const bytes = ["on.db", "on.db-wal"].filter((f) => existsSync(join(dir, f))).map((f) => readFileSync(join(dir, f)).toString("utf8")).join("\n");
    expect(leaks(bytes, values.filter(distinctive))).toEqual([]);
  });

  it("stores them all without rules: the same runs, so the checks above are not vacuous", async () => {
    const bytes = ["off.db", "off.db-wal"].filter((f) => existsSync(join(dir, f))).map((f) => readFileSync(join(dir, f)).toString("utf8")).join("\n");
    for (const name of RUN_IDS) {
      const [stored] = await storedEpisodes(stores.off, runIdOf("off", name));
      const found = leaks(bytes, (await worldValues(stored as StoredEpisode)).filter(distinctive));
      expect(found.length, name).toBeGreaterThan(0);
      expect(JSON.stringify(stored)).not.toContain("[redacted:");
    }
    expect(leaks(bytes, TYPED)).toEqual(TYPED);
  });

  it("answers the live agent unredacted: only what is kept is redacted", async () => {
    const [stored] = await storedEpisodes(stores.on, "svc-on");
    const live = liveBodies.slice(0, liveBodies.length / 2).join("\n");
    expect(leaks(live, (await worldValues(stored as StoredEpisode)).filter(distinctive)).length).toBeGreaterThan(2);
    expect(live).not.toContain("[redacted:");
  });

  it("exports no personal value in any format, and every format holds them without rules", async () => {
    const values = await allValues("on");
    for (const name of RUN_IDS) {
      const files = await exportAll("on", name);
      expect(Object.keys(files).sort()).toEqual([...EXPORT_FORMATS, "verl-tools"].sort());
      for (const [format, text] of Object.entries(files)) expect(leaks(text, values.filter(distinctive)), `${name} ${format}`).toEqual([]);
    }
    const control = await exportAll("off", "billing-dispute");
    const [first] = await storedEpisodes(stores.off, "off-billing-dispute");
    const names = (await worldValues(first as StoredEpisode)).filter((v) => v.includes(" "));
    for (const format of EXPORT_FORMATS) expect(leaks(control[format] as string, names).length, format).toBeGreaterThan(0);
  });

  it("gates exports of a store written without rules: what the rules detect never leaves", async () => {
    const files = await exportAll("off", "svc", RULES);
    const [stored] = await storedEpisodes(stores.off, "svc-off");
    const env = registry.get("billing-dispute").create();
    await env.reset(SERVICE_TASK, 5);
    // Without the environment's values an export redacts what the rules detect: emails, phone and card numbers, tickets (not masked forms).
    const detectable = [...TYPED, ...env.sensitiveValues().filter((v) => (v.rule === "email" || v.rule === "phone") && !v.value.includes("***")).map((v) => v.value)];
    await env.close();
    expect(leaks(JSON.stringify(stored), detectable).length).toBeGreaterThan(0);
    for (const [format, text] of Object.entries(files)) expect(leaks(text, detectable), format).toEqual([]);
  });

  it("replays redacted episodes as matched, with reports that hold no personal value (library and host job)", async () => {
    const values = await allValues("on");
    const reports: ReplayReport[] = [];
    for (const name of RUNS.map((r) => r.env)) {
      for (const stored of await storedEpisodes(stores.on, runIdOf("on", name))) {
        const env = registry.get(stored.episode.env).create();
        try {
          reports.push(await replayEpisode(env, stored, { redaction: RULES }));
        } finally {
          await env.close();
        }
        reports.push((await runJob(registry, { kind: "replay", stored, env_options: {} }, { redaction: RULES })) as ReplayReport);
      }
    }
    for (const report of reports) {
      expect(report.matched, `${report.episode_id}: ${JSON.stringify(report.diffs[0] ?? null)}`).toBe(true);
      expect(leaks(JSON.stringify(report), values.filter(distinctive))).toEqual([]);
    }
    // The service episode's first message carried values no environment lists: the replay sends their
    // markers instead. The simulated customer's reply does not depend on them, so it still matches; where
    // an environment's answer does, the report lists the differing fields, redacted on both sides.
    const [svc] = await storedEpisodes(stores.on, "svc-on");
    expect((svc as StoredEpisode).steps[0]?.action).toEqual({
      type: "message",
      content: "Before we start: my backup email is [redacted:email], call me on [redacted:phone], my other card is [redacted:card], ticket [redacted:ticket].",
    });
    const report = (await runJob(registry, { kind: "replay", stored: svc as StoredEpisode, env_options: {} }, { redaction: RULES })) as ReplayReport;
    expect(report.steps).toBe((svc as StoredEpisode).steps.length);
    expect(report.matched).toBe(true);
    expect(leaks(JSON.stringify(report), values.filter(distinctive))).toEqual([]);
  });

  it("runs a replay:RUN rollout of a redacted run to the same episodes (the world's values go back in the actions)", async () => {
    const source = RUNS[0] as (typeof RUNS)[number];
    const config = rolloutConfig({ ...source, policy: `replay:on-${source.env}`, difficulties: ["medium"], seed: 11, redaction: RULES });
    await rollout({ store: stores.on, registry, runId: "replayed", config });
    const original = await storedEpisodes(stores.on, `on-${source.env}`);
    const replayed = await storedEpisodes(stores.on, "replayed");
    expect(replayed.map((e) => e.episode.total_reward)).toEqual(original.map((e) => e.episode.total_reward));
    expect(replayed.map((e) => e.steps.map((s) => s.action))).toEqual(original.map((e) => e.steps.map((s) => s.action)));
  });

  it("reports, redacted, the steps whose replay differs because the value the agent typed mattered", async () => {
    // verify_identity takes a postal code of at most 12 characters: the typed email fits, its marker does not.
    const action: Action = { type: "tool_call", tool: "verify_identity", args: { customer_id: "cus_1", email: "zz@typed.io", card_last4: null, postal_code: "ab@typed.io" } };
    const source = { spec: "typing", create: () => ({ name: "typing", act: () => action }) };
    const job = { run_id: "t", episode_id: "t/1", env: "billing-dispute", task_id: SERVICE_TASK, seed: 5, group_id: "t", group_index: 0, policy: "typing", policy_checkpoint: null };
    const env = registry.get("billing-dispute").create({ maxSteps: 1 });
    try {
      const { stored } = await runEpisode(env, job, source, { redaction: RULES });
      expect(stored.steps[0]?.action).toEqual({ ...action, args: { ...action.args, email: "[redacted:email]", postal_code: "[redacted:email]" } });
      const report = await replayEpisode(env, stored, { redaction: RULES });
      expect(report.matched).toBe(false);
      expect(report.diffs.map((d) => [d.step, d.field])).toContainEqual([1, "tool_result"]);
      const diff = report.diffs.find((d) => d.field === "tool_result") as ReplayReport["diffs"][number];
      expect((diff.recorded as { status: string }).status).toBe("error");
      expect((diff.replayed as { status: string }).status).toBe("invalid");
      expect(JSON.stringify(report)).not.toContain("typed.io");
    } finally {
      await env.close();
    }
  });

  it("logs no personal value while episodes run", async () => {
    const values = await allValues("on");
    expect(leaks(logged.join("\n"), values.filter(distinctive))).toEqual([]);
  });
});
