/**
 * Export throughput: each format over the same synthetic run (500 episodes of 20 steps, observations of
 * realistic size, tool calls and messages alternating), written to a temporary directory. Each episode is
 * its own task, so every format writes one row per episode (one per step for jsonl) and the rates compare.
 * An export takes long enough to time on its own: the figure is the median of a few runs after a warm-up.
 * Run directly with `tsx bench/export.ts`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { ToolSpec, TrajectoryStepRecord } from "../src/core/contract.js";
import { Rng } from "../src/core/rng.js";
import { EXPORT_FORMATS, exportEpisodes } from "../src/store/export/index.js";
import { episodeIdOf, type RunRecord, type StoredEpisode } from "../src/store/types.js";

/** Throughput of one format: rows written and bytes of the file per second. */
export interface ExportRate {
  format: string;
  rows_per_s: number;
  mb_per_s: number;
}

const TOOLS: ToolSpec[] = ["lookup_customer", "list_charges", "refund_lookup", "issue_refund", "add_note"].map((name) => ({
  name,
  description: `The ${name.replace("_", " ")} tool of the synthetic benchmark environment.`,
  parameters: { type: "object", properties: { customer_id: { type: "string" }, charge_id: { type: ["string", "null"] } }, required: ["customer_id", "charge_id"], additionalProperties: false },
  effect: name.startsWith("issue") || name.startsWith("add") ? "write" : "read",
}));

const WORDS = ["charge", "refund", "invoice", "customer", "duplicate", "annual", "credit", "policy", "cus_505085", "ch_11874710", "$6.99", "|", "\n"];

function text(rng: Rng, chars: number): string {
  let out = "";
  while (out.length < chars) out += `${rng.pick(WORDS)} `;
  return out;
}

/** A synthetic run: `n` episodes of `steps` steps, deterministic for a seed. */
export function syntheticRun(n = 500, steps = 20, seed = 1): { run: RunRecord; episodes: StoredEpisode[] } {
  const rng = Rng.fromSeed(seed);
  const run: RunRecord = {
    run_id: "bench",
    env: "bench-env",
    env_version: "1.0.0",
    policy: "oracle",
    policy_checkpoint: null,
    config: {},
    tools: TOOLS,
    status: "finished",
    planned_episodes: n,
    created_at: "2026-01-01T00:00:00.000Z",
    finished_at: "2026-01-01T00:01:00.000Z",
  };
  const episodes: StoredEpisode[] = [];
  for (let e = 0; e < n; e++) {
    const taskId = `bench-env/${["easy", "medium", "hard"][e % 3]}/seed-${e}`;
    const episodeId = episodeIdOf(run.run_id, taskId, 0);
    const records: TrajectoryStepRecord[] = [];
    let total = 0;
    for (let s = 1; s <= steps; s++) {
      const last = s === steps;
      const observation = text(rng, s === 1 ? 3000 : rng.int(100, 1200));
      const isCall = s % 3 !== 1 && !last;
      const toolResult = isCall ? { status: "ok" as const, latency_ms: rng.int(20, 300), cost: 0.0005, output: { rows: [text(rng, 200)] } } : null;
      const components = { task: last ? 1 : 0, invalid_call: 0, denied_call: 0, tool_cost: isCall ? -0.0005 : 0, step_cost: -0.01 };
      const reward = components.task + components.tool_cost + components.step_cost;
      total += reward;
      records.push({
        episode_id: episodeId,
        task_id: taskId,
        env_version: "1.0.0",
        policy_checkpoint: null,
        step: s,
        observation: { rendered: observation, tokens: Math.ceil(observation.length / 4) },
        action: isCall
          ? { type: "tool_call", tool: rng.pick(TOOLS).name, args: { customer_id: "cus_505085", charge_id: rng.bool() ? "ch_11874710" : null } }
          : { type: "message", content: text(rng, rng.int(80, 400)) },
        tool_result: toolResult,
        reward_components: components,
        terminated: last,
        truncated: false,
        reward,
        info: last ? { end_reason: "customer_satisfied", verdict: { passed: true, score: 1, details: {} } } : toolResult ? { tool_result: toolResult } : {},
      });
    }
    episodes.push({
      episode: {
        episode_id: episodeId,
        run_id: run.run_id,
        env: run.env,
        env_version: run.env_version,
        task_id: taskId,
        difficulty: taskId.split("/")[1] as string,
        seed: e,
        group_id: `${run.run_id}/${taskId}`,
        group_index: 0,
        policy: run.policy,
        policy_checkpoint: null,
        status: "ok",
        error: null,
        steps,
        tokens: records.reduce((a, r) => a + r.observation.tokens, 0),
        total_reward: total,
        outcome: 1,
        reward_components: {},
        verdict: { passed: true, score: 1, details: {} },
        end_reason: "customer_satisfied",
        terminated: true,
        truncated: false,
        cost: 0,
        tool_calls: {},
        advantages: null,
        started_at: run.created_at,
        finished_at: run.created_at,
        duration_ms: 0,
      },
      steps: records,
    });
  }
  return { run, episodes };
}

async function* iterate(episodes: readonly StoredEpisode[]): AsyncGenerator<StoredEpisode> {
  for (const e of episodes) yield e;
}

/** Rows and megabytes per second of each export format (median of `runs` runs after one warm-up). */
export async function exportRates(options: { episodes?: number; steps?: number; runs?: number } = {}): Promise<ExportRate[]> {
  const { run, episodes } = syntheticRun(options.episodes ?? 500, options.steps ?? 20);
  const runs = options.runs ?? 5;
  const dir = mkdtempSync(join(tmpdir(), "llmix-bench-export-"));
  try {
    const rates: ExportRate[] = [];
    for (const format of EXPORT_FORMATS) {
      const out = join(dir, `export.${format}`);
      await exportEpisodes({ run, episodes: iterate(episodes) }, { format, out });
      const samples: Array<{ seconds: number; rows: number; bytes: number }> = [];
      for (let i = 0; i < runs; i++) {
        const start = process.hrtime.bigint();
        const result = await exportEpisodes({ run, episodes: iterate(episodes) }, { format, out });
        samples.push({ seconds: Number(process.hrtime.bigint() - start) / 1e9, rows: result.rows, bytes: result.bytes });
      }
      samples.sort((a, b) => a.seconds - b.seconds);
      const median = samples[Math.floor(samples.length / 2)] as (typeof samples)[number];
      rates.push({
        format,
        rows_per_s: Math.round(median.rows / median.seconds),
        mb_per_s: Math.round((median.bytes / 1e6 / median.seconds) * 10) / 10,
      });
    }
    return rates;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const r of await exportRates()) console.log(`${r.format.padEnd(10)} ${String(r.rows_per_s).padStart(9)} rows/s ${String(r.mb_per_s).padStart(7)} MB/s`);
}
