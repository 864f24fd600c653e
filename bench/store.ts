/**
 * Trajectory store insert throughput: batches of realistic episodes (20 steps, ~1 KB of observation
 * text per step) written through `SqliteTrajectoryStore.writeEpisodes` into a temporary WAL file, and
 * as a same-run baseline the same step rows (serialised the same way) inserted with raw better-sqlite3
 * into one index-free table in one transaction, with the store's own file settings (WAL,
 * synchronous=NORMAL, 16 KiB pages), so the ratio is the cost of the store's layer and nothing else. Store and baseline batches alternate, so machine noise
 * hits both alike; the ratio is what to compare across machines, not the absolute rate.
 *
 * The PostgreSQL store is measured the same way in a fresh schema (dropped after) of the database at
 * LLMIX_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test): writeEpisodes batches
 * against two raw writes of the same step rows (serialised the same way), each into an index-free table
 * in one transaction on one connection: one COPY FROM STDIN in text format streamed in 64 KiB pieces as
 * the rows are serialised (the store's own way of writing steps; its ratio is the headline), and prepared
 * 512-row multi-row INSERTs (the fastest INSERT shape measured here: unprepared lists and unnest() arrays
 * took 1.5 to 4 times as long). Store and baseline batches alternate. Then the whole run is streamed
 * back. Its target is 50,000 steps/s.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import { setImmediate as nextTurn } from "node:timers/promises";
import Database from "better-sqlite3";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import type { TrajectoryStepRecord } from "../src/core/contract.js";
import { Rng } from "../src/core/rng.js";
import { median } from "./harness.js";
import { copyText, openPostgresStore } from "../src/store/postgres-store.js";
import { quoteIdent } from "../src/store/postgres-migrations.js";
import { openStore } from "../src/store/sqlite-store.js";
import { episodeIdOf, type EpisodeRecord, type StoredEpisode } from "../src/store/types.js";

export interface StoreInsertRate {
  /** Steps stored per second through writeEpisodes (median batch). */
  steps_per_s: number;
  /** Episodes stored per second through writeEpisodes (median batch). */
  episodes_per_s: number;
  /** Megabytes of step JSON stored per second (median batch). */
  mb_per_s: number;
  /** Baseline: the same step rows, raw better-sqlite3, one table without indexes, one transaction. */
  baseline_steps_per_s: number;
  /** Store batch time / baseline batch time (medians): the price of episodes, indexes, validation. */
  ratio_to_baseline: number;
  /** Steps per second over all measured batches (total steps / total time): includes checkpoint stalls the median hides. */
  sustained_steps_per_s: number;
  /** Steps read back per second by streamEpisodes over everything written. */
  stream_steps_per_s: number;
  median_batch_ms: number;
  min_batch_ms: number;
  max_batch_ms: number;
  batches: number;
  episodes_per_batch: number;
  steps_per_episode: number;
  /** Mean JSON size of one step record. */
  step_bytes: number;
  /** The same figures for the PostgreSQL store (baseline: raw prepared multi-row INSERTs), or why they could not be measured. */
  postgres: PostgresInsertRate | { error: string };
}

/** PostgreSQL store figures: StoreInsertRate's, its baseline the same rows by raw multi-row INSERTs, and a second baseline by raw COPY. */
export type PostgresInsertRate = Omit<StoreInsertRate, "postgres"> & {
  /** Baseline: the same step rows by one raw COPY FROM STDIN (text format, streamed), one table without indexes, one transaction (median batch). */
  copy_baseline_steps_per_s: number;
  /** Store batch time / raw COPY batch time (medians): what the store's layer costs over the fastest raw write of its steps. */
  ratio_to_copy: number;
  /** The rate the store aims at (steps/s, median batch). */
  target_steps_per_s: number;
};

/** Rows per statement of the raw multi-row INSERT baseline. */
const RAW_INSERT_ROWS = 512;
/** Characters of COPY text per write of the raw COPY baseline (as the store writes them). */
const RAW_COPY_PIECE_CHARS = 64 * 1024;

/** The PostgreSQL store's write target, steps/s. */
export const POSTGRES_TARGET_STEPS_PER_S = 50_000;

const WORDS = ["invoice", "customer", "refund", "status", "pending", "approved", "order", "shipment", "ticket", "account", "balance", "the", "a", "of", "to", "and"];

/** Batches of realistic episodes inserted through the store vs raw better-sqlite3 (medians over `batches`). */
export async function storeInsertRate(
  options: { batches?: number; episodesPerBatch?: number; stepsPerEpisode?: number; /** Parent of the temp directory (default: the OS temp dir). */ dir?: string } = {},
): Promise<StoreInsertRate> {
  const batches = options.batches ?? 15;
  const perBatch = options.episodesPerBatch ?? 50;
  const stepsPer = options.stepsPerEpisode ?? 20;
  const warmup = 3;
  const dir = mkdtempSync(join(options.dir ?? tmpdir(), "llmix-bench-store-"));
  const store = openStore(join(dir, "store.db"));
  const raw = new Database(join(dir, "raw.db"));
  try {
    raw.pragma("page_size = 16384");
    raw.pragma("journal_mode = WAL");
    raw.pragma("synchronous = NORMAL");
    raw.exec("CREATE TABLE steps (episode_id TEXT NOT NULL, step INTEGER NOT NULL, record TEXT NOT NULL)");
    const rawInsert = raw.prepare("INSERT INTO steps (episode_id, step, record) VALUES (?, ?, ?)");
    const rawBatch = raw.transaction((episodes: StoredEpisode[]) => {
      for (const e of episodes) for (const s of e.steps) rawInsert.run(s.episode_id, s.step, JSON.stringify(s));
    });

    const rng = Rng.fromSeed(2024);
    const storeMs: number[] = [];
    const rawMs: number[] = [];
    let bytes = 0;
    let steps = 0;
    for (let b = 0; b < warmup + batches; b++) {
      // Fresh episodes per batch (ids must be new), built before the clock starts.
      const episodes = Array.from({ length: perBatch }, (_, i) => makeEpisode(rng, b, i, stepsPer));
      if (b === warmup) for (const e of episodes) for (const s of e.steps) (bytes += JSON.stringify(s).length), steps++;
      let t = process.hrtime.bigint();
      await store.writeEpisodes(episodes);
      const storeNs = Number(process.hrtime.bigint() - t);
      t = process.hrtime.bigint();
      rawBatch(episodes);
      const rawNs = Number(process.hrtime.bigint() - t);
      if (b >= warmup) {
        storeMs.push(storeNs / 1e6);
        rawMs.push(rawNs / 1e6);
      }
    }

    let streamed = 0;
    const t = process.hrtime.bigint();
    for await (const e of store.streamEpisodes()) streamed += e.steps.length;
    const streamS = Number(process.hrtime.bigint() - t) / 1e9;

    const stepsPerBatch = perBatch * stepsPer;
    const storeMedian = median(storeMs);
    const rawMedian = median(rawMs);
    const stepBytes = bytes / steps;
    const postgres = await postgresInsertRate({ batches, episodesPerBatch: perBatch, stepsPerEpisode: stepsPer }).catch((error: unknown) => ({
      error: error instanceof Error ? error.message : String(error),
    }));
    return {
      postgres,
      steps_per_s: Math.round(stepsPerBatch / (storeMedian / 1e3)),
      episodes_per_s: Math.round(perBatch / (storeMedian / 1e3)),
      mb_per_s: round2((stepsPerBatch * stepBytes) / 1e6 / (storeMedian / 1e3)),
      baseline_steps_per_s: Math.round(stepsPerBatch / (rawMedian / 1e3)),
      ratio_to_baseline: round2(storeMedian / rawMedian),
      sustained_steps_per_s: Math.round((stepsPerBatch * batches) / (storeMs.reduce((a, x) => a + x, 0) / 1e3)),
      stream_steps_per_s: Math.round(streamed / streamS),
      median_batch_ms: round2(storeMedian),
      min_batch_ms: round2(Math.min(...storeMs)),
      max_batch_ms: round2(Math.max(...storeMs)),
      batches,
      episodes_per_batch: perBatch,
      steps_per_episode: stepsPer,
      step_bytes: Math.round(stepBytes),
    };
  } finally {
    await store.close();
    raw.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Batches of realistic episodes written through the PostgreSQL store vs raw multi-row INSERTs and a raw COPY of the same step rows (medians over `batches`). */
export async function postgresInsertRate(
  options: { batches?: number; episodesPerBatch?: number; stepsPerEpisode?: number; url?: string } = {},
): Promise<PostgresInsertRate> {
  const batches = options.batches ?? 15;
  const perBatch = options.episodesPerBatch ?? 50;
  const stepsPer = options.stepsPerEpisode ?? 20;
  const warmup = 3;
  const url = options.url ?? process.env.LLMIX_BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const schema = `llmix_bench_${process.pid}_${Date.now()}`;
  const store = await openPostgresStore(url, { schema, connectTimeoutMs: 5_000 });
  const raw = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  const rawTable = `${quoteIdent(schema)}.raw_steps`;
  const copyTable = `${quoteIdent(schema)}.copy_steps`;
  try {
    await raw.connect();
    await raw.query(`CREATE TABLE ${rawTable} (episode_id text NOT NULL, step bigint NOT NULL, record text NOT NULL)`);
    await raw.query(`CREATE TABLE ${copyTable} (episode_id text NOT NULL, step bigint NOT NULL, record text NOT NULL)`);
    const rawBatch = async (episodes: StoredEpisode[]) => {
      const rows = episodes.flatMap((e) => e.steps.map((s) => [s.episode_id, s.step, JSON.stringify(s)]));
      await raw.query("BEGIN");
      for (let i = 0; i < rows.length; ) {
        let size = RAW_INSERT_ROWS;
        while (size > rows.length - i) size >>= 1;
        const values = Array.from({ length: size }, (_, r) => `($${3 * r + 1}, $${3 * r + 2}, $${3 * r + 3})`).join(", ");
        await raw.query({ name: `raw_steps_${size}`, text: `INSERT INTO ${rawTable} (episode_id, step, record) VALUES ${values}`, values: rows.slice(i, i + size).flat() });
        i += size;
      }
      await raw.query("COMMIT");
    };
    // The same rows by one COPY, each piece written as soon as it is serialised (escaped as COPY's text format needs).
    const copyBatch = async (episodes: StoredEpisode[]) => {
      await raw.query("BEGIN");
      const copy = raw.query(copyFrom(`COPY ${copyTable} (episode_id, step, record) FROM STDIN`));
      const done = finished(copy);
      done.catch(() => undefined);
      let text = "";
      for (const e of episodes) {
        for (const s of e.steps) {
          text += `${copyText(s.episode_id)}\t${s.step}\t${copyText(JSON.stringify(s))}\n`;
          if (text.length < RAW_COPY_PIECE_CHARS) continue;
          // As the store does: each piece goes out while the next is serialised (the event loop sends it).
          if (!copy.write(text)) await once(copy, "drain");
          else await nextTurn();
          text = "";
        }
      }
      copy.end(text);
      await done;
      await raw.query("COMMIT");
    };

    const rng = Rng.fromSeed(2024);
    const storeMs: number[] = [];
    const rawMs: number[] = [];
    const copyMs: number[] = [];
    let bytes = 0;
    let steps = 0;
    for (let b = 0; b < warmup + batches; b++) {
      const episodes = Array.from({ length: perBatch }, (_, i) => makeEpisode(rng, b, i, stepsPer));
      if (b === warmup) for (const e of episodes) for (const s of e.steps) (bytes += JSON.stringify(s).length), steps++;
      let t = process.hrtime.bigint();
      await store.writeEpisodes(episodes);
      const storeNs = Number(process.hrtime.bigint() - t);
      t = process.hrtime.bigint();
      await rawBatch(episodes);
      const rawNs = Number(process.hrtime.bigint() - t);
      t = process.hrtime.bigint();
      await copyBatch(episodes);
      const copyNs = Number(process.hrtime.bigint() - t);
      if (b >= warmup) {
        storeMs.push(storeNs / 1e6);
        rawMs.push(rawNs / 1e6);
        copyMs.push(copyNs / 1e6);
      }
    }

    let streamed = 0;
    const t = process.hrtime.bigint();
    for await (const e of store.streamEpisodes()) streamed += e.steps.length;
    const streamS = Number(process.hrtime.bigint() - t) / 1e9;

    const stepsPerBatch = perBatch * stepsPer;
    const storeMedian = median(storeMs);
    const rawMedian = median(rawMs);
    const copyMedian = median(copyMs);
    const stepBytes = bytes / steps;
    return {
      steps_per_s: Math.round(stepsPerBatch / (storeMedian / 1e3)),
      episodes_per_s: Math.round(perBatch / (storeMedian / 1e3)),
      mb_per_s: round2((stepsPerBatch * stepBytes) / 1e6 / (storeMedian / 1e3)),
      baseline_steps_per_s: Math.round(stepsPerBatch / (rawMedian / 1e3)),
      ratio_to_baseline: round2(storeMedian / rawMedian),
      copy_baseline_steps_per_s: Math.round(stepsPerBatch / (copyMedian / 1e3)),
      ratio_to_copy: round2(storeMedian / copyMedian),
      sustained_steps_per_s: Math.round((stepsPerBatch * batches) / (storeMs.reduce((a, x) => a + x, 0) / 1e3)),
      stream_steps_per_s: Math.round(streamed / streamS),
      median_batch_ms: round2(storeMedian),
      min_batch_ms: round2(Math.min(...storeMs)),
      max_batch_ms: round2(Math.max(...storeMs)),
      batches,
      episodes_per_batch: perBatch,
      steps_per_episode: stepsPer,
      step_bytes: Math.round(stepBytes),
      target_steps_per_s: POSTGRES_TARGET_STEPS_PER_S,
    };
  } finally {
    await store.close();
    await raw.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`).catch(() => undefined);
    await raw.end().catch(() => undefined);
  }
}

/** One episode shaped like a runner's: tool calls with results, ~1 KB of varied observation text per step. */
function makeEpisode(rng: Rng, batch: number, index: number, stepsPer: number): StoredEpisode {
  const runId = "bench";
  const taskId = `billing-dispute/hard/seed-${batch}`;
  const id = episodeIdOf(runId, taskId, index);
  const steps: TrajectoryStepRecord[] = [];
  for (let n = 0; n < stepsPer; n++) {
    const last = n === stepsPer - 1;
    const words: string[] = [];
    for (let len = 0; len < 1000; ) {
      const w = WORDS[rng.int(0, WORDS.length - 1)] as string;
      words.push(w);
      len += w.length + 1;
    }
    const rendered = words.join(" ");
    steps.push({
      episode_id: id,
      task_id: taskId,
      env_version: "1.4.2",
      policy_checkpoint: "step_01800",
      step: n,
      observation: { rendered, tokens: Math.round(rendered.length / 4) },
      action: last
        ? { type: "message", content: "Your refund of $42.17 has been approved." }
        : { type: "tool_call", tool: "refund_lookup", args: { customer_id: rng.int(1, 9999), invoice: `INV-${rng.int(1000, 9999)}` }, call_id: `call_${n}` },
      tool_result: last ? null : { status: "ok", latency_ms: rng.int(5, 200), cost: 0.0004, output: { rows: rng.int(0, 5), found: true } },
      reward_components: { task: last ? 1 : 0, invalid_call: 0, step_cost: -0.01, tool_cost: -0.0004 },
      terminated: last,
      truncated: false,
      reward: last ? 0.9896 : -0.0104,
      info: { step: n, budget_left: stepsPer - n },
    });
  }
  const episode: EpisodeRecord = {
    episode_id: id,
    run_id: runId,
    env: "billing-dispute",
    env_version: "1.4.2",
    task_id: taskId,
    difficulty: "hard",
    seed: batch,
    group_id: `${runId}/${taskId}`,
    group_index: index,
    policy: "noisy-oracle:0.3",
    policy_checkpoint: "step_01800",
    status: "ok",
    error: null,
    steps: stepsPer,
    tokens: steps.reduce((a, s) => a + s.observation.tokens, 0),
    total_reward: 0.8,
    outcome: 1,
    reward_components: { task: 1, invalid_call: 0, step_cost: -0.2, tool_cost: -0.0076 },
    verdict: { passed: true, score: 1, parts: { refund: true, notified: true }, details: {} },
    end_reason: "terminated",
    terminated: true,
    truncated: false,
    cost: 0.0076,
    tool_calls: { ok: stepsPer - 1 },
    advantages: null,
    started_at: "2025-01-01T00:00:00.000Z",
    finished_at: "2025-01-01T00:00:04.000Z",
    duration_ms: 4000,
  };
  return { episode, steps };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
