/**
 * `llmix rm train` and `llmix calibrate` (issue 18): fit the in-process reward model to stored,
 * verified episodes, and measure a reward model or a rubric judge against the verified outcomes of a
 * stored run — AUROC, Spearman, calibration with its reliability diagram, length and position bias,
 * and the episodes it scores high although they failed (the reward-hacking candidates).
 */
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { NotFoundError, ValidationError } from "../core/errors.js";
import { calibrationReport, type CalibrationItem, type CalibrationReport } from "../rewards/calibration.js";
import { judgeVerifier, type Rubric } from "../rewards/judge.js";
import { SqliteJudgeCache } from "../rewards/judge-cache.js";
import { reliabilityDiagramPng, reliabilityDiagramText } from "../rewards/reliability-diagram.js";
import { loadRewardModel, renderTrajectory, scoreEpisode, serializeRewardModel, trainRewardModel } from "../rewards/reward-model/index.js";
import { runVerifier } from "../rewards/verifier.js";
import { openStoreAt } from "../store/open.js";
import type { StoredEpisode, TrajectoryStore } from "../store/types.js";
import { featuresOf } from "../tasks/features.js";
import { integer, moduleOption, print, registryWith, storeOption } from "./options.js";


/** The stored episodes of a run with their steps, in store order (unknown_run when there is no such run). */
async function episodesOf(store: TrajectoryStore, runId: string): Promise<StoredEpisode[]> {
  if (!(await store.getRun(runId))) throw new NotFoundError("unknown_run", `no run "${runId}" in the store; list them with llmix runs`);
  const out: StoredEpisode[] = [];
  for await (const stored of store.streamEpisodes({ run_id: runId })) out.push(stored);
  return out;
}

/** Where a file goes by default: beside a SQLite store, else under ./llmix-data. */
function besideStore(store: string, name: string): string {
  return join(store.startsWith("postgres") ? "./llmix-data" : dirname(store), name);
}

/** Add `llmix rm train` and `llmix calibrate`. */
export function registerRewardCommands(program: Command): void {
  const rm = program.command("rm").description("the in-process reward model: a logistic model of hashed trajectory features, learned from verified outcomes");
  rm.command("train")
    .description("fit a reward model to the verified outcomes of stored runs and save it (a file the reward-model verifier and calibrate --verifier rm:FILE load)")
    .requiredOption("--run <id...>", "runs to learn from (one environment)")
    .option("--heldout <id>", "a run to measure the model on (its AUROC goes in the file)")
    .option("--out <file>", "where to save it (default reward-model-RUN.json beside the store)")
    .option("--epochs <n>", "passes over the episodes", integer("--epochs", 1, 500))
    .option("--seed <s>", "seed of the example order", integer("--seed", 0, 0x7fffffff), 0)
    .addOption(storeOption())
    .option("--json", "print the model's summary as JSON")
    .action(async (opts: { run: string[]; heldout?: string; out?: string; epochs?: number; seed: number; store: string; json?: boolean }) => {
      const store = await openStoreAt(opts.store);
      try {
        const train = (await Promise.all(opts.run.map((id) => episodesOf(store, id)))).flat();
        const heldout = opts.heldout ? await episodesOf(store, opts.heldout) : undefined;
        const model = trainRewardModel(train, { seed: opts.seed, ...(opts.epochs ? { epochs: opts.epochs } : {}), ...(heldout ? { holdout: heldout } : {}) });
        const out = opts.out ?? besideStore(opts.store, `reward-model-${opts.run[0]}.json`);
        mkdirSync(dirname(out), { recursive: true });
        const text = serializeRewardModel(model);
        writeFileSync(out, text);
        const { weights: _weights, ...summary } = model;
        if (opts.json) return print(JSON.stringify({ ...summary, file: out }, null, 2));
        const t = model.trained_on;
        const m = model.metrics;
        print(`trained on ${t.episodes} episodes (${t.positives} verified successes) of ${t.env}@${t.env_version} from ${t.runs.join(", ")}: train AUROC ${m.train_auroc}${m.heldout_auroc !== undefined ? `, held-out AUROC ${m.heldout_auroc} (${m.heldout_episodes} episodes of ${opts.heldout})` : ""}`);
        print(`-> ${out} (${Object.keys(model.weights).length} weights, ${Math.round(text.length / 1024)} KB); measure it: llmix calibrate --run RUN --verifier rm:${out}`);
      } finally {
        await store.close();
      }
    });

  program
    .command("calibrate")
    .description("score a stored run's episodes with a reward model or a rubric judge and compare with their verified outcomes: AUROC, calibration, biases, hacking candidates")
    .requiredOption("--run <id>", "the run whose episodes to score")
    .requiredOption("--verifier <spec>", "rm:FILE (a reward model from llmix rm train) or judge:RUBRIC.json (with --judge-base-url and --judge-model)")
    .option("--judge-base-url <url>", "judge: the OpenAI-compatible server's /v1 URL")
    .option("--judge-model <name>", "judge: the model")
    .option("--judge-cache <file>", "judge: the verdict cache (default judge-cache.db beside the store)")
    .option("--threshold <t>", "score at or above which the verifier predicts success", (v: string) => probability(v), 0.5)
    .option("--bins <n>", "bins of the reliability diagram", integer("--bins", 1, 1000), 10)
    .option("--png <file>", "where to draw the reliability diagram (default calibration-RUN.png beside the store)")
    .addOption(storeOption())
    .option("--json", "print the whole report as JSON")
    .addOption(moduleOption())
    .action(async (opts: { run: string; verifier: string; judgeBaseUrl?: string; judgeModel?: string; judgeCache?: string; threshold: number; bins: number; png?: string; store: string; json?: boolean; module?: string[] }) => {
      const store = await openStoreAt(opts.store);
      try {
        const episodes = await episodesOf(store, opts.run);
        const score = await scorer(opts);
        const run = await store.getRun(opts.run);
        const registry = await registryWith(opts.module);
        const env = run && registry.has(run.env) ? registry.get(run.env).create() : undefined;
        const items: CalibrationItem[] = [];
        try {
          for (const stored of episodes) {
            const e = stored.episode;
            const messages = stored.steps.map((s, i) => ((s.action as { type?: unknown }).type === "message" ? i : -1)).filter((i) => i >= 0);
            items.push({
              id: e.episode_id,
              score: await score(stored),
              outcome: e.status === "ok" ? (e.outcome ?? 0) : 0,
              length: stored.steps.length,
              // Where the agent first answered, as a share of the episode: a judge that rewards early (or late) answers shows it.
              ...(messages.length > 0 && stored.steps.length > 1 ? { answer_position: (messages[0] as number) / (stored.steps.length - 1) } : {}),
              group: groupOf(env?.tasks, e.task_id),
            });
          }
        } finally {
          await env?.close();
        }
        const report = calibrationReport(items, { threshold: opts.threshold, bins: opts.bins });
        const png = opts.png ?? besideStore(opts.store, `calibration-${opts.run}.png`);
        mkdirSync(dirname(png), { recursive: true });
        writeFileSync(png, reliabilityDiagramPng(report));
        if (opts.json) return print(JSON.stringify({ run: opts.run, verifier: opts.verifier, png, ...report }, null, 2));
        print(formatReport(opts.run, opts.verifier, report, png));
      } finally {
        await store.close();
      }
    });
}

function probability(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !(n >= 0 && n <= 1)) throw new ValidationError("invalid_argument", `--threshold must be a number in [0, 1], got "${value}"`);
  return n;
}

/** The task family a calibration groups by (its declared `family` feature), else its difficulty. */
function groupOf(tasks: Parameters<typeof featuresOf>[0] | undefined, taskId: string): string {
  try {
    if (tasks?.features) {
      const family = featuresOf(tasks, taskId).family;
      if (family !== undefined) return String(family);
    }
  } catch {
    // an id the current generator refuses: fall back to its difficulty
  }
  return taskId.split("/")[1] ?? "?";
}

/** How `--verifier` scores one stored episode. */
async function scorer(opts: { verifier: string; judgeBaseUrl?: string; judgeModel?: string; judgeCache?: string; store: string }): Promise<(stored: StoredEpisode) => Promise<number>> {
  const at = opts.verifier.indexOf(":");
  const kind = opts.verifier.slice(0, at);
  const file = opts.verifier.slice(at + 1);
  const read = (what: string) => {
    try {
      return JSON.parse(readFileSync(file, "utf8")) as unknown;
    } catch (error) {
      throw new ValidationError("invalid_argument", `--verifier ${opts.verifier}: cannot read the ${what}: ${(error as Error).message}`);
    }
  };
  if (at > 0 && kind === "rm") {
    const model = loadRewardModel(read("reward model"));
    return async (stored) => scoreEpisode(model, stored);
  }
  if (at > 0 && kind === "judge") {
    if (!opts.judgeBaseUrl || !opts.judgeModel) throw new ValidationError("invalid_argument", "--verifier judge:RUBRIC needs --judge-base-url and --judge-model");
    const cache = new SqliteJudgeCache(opts.judgeCache ?? besideStore(opts.store, "judge-cache.db"));
    const judge = judgeVerifier<StoredEpisode>("judge", read("rubric") as Rubric, (stored) => renderTrajectory(stored.steps), { server: { baseURL: opts.judgeBaseUrl, model: opts.judgeModel }, cache });
    return async (stored) => (await runVerifier(judge, stored)).score;
  }
  throw new ValidationError("invalid_argument", `--verifier must be rm:FILE or judge:RUBRIC.json, got "${opts.verifier}"`);
}

/** The report for a person: the figures, the diagram, and where the verifier is fooled. */
function formatReport(run: string, verifier: string, r: CalibrationReport, png: string): string {
  const f = (x: number | null | undefined) => (x === null || x === undefined ? "-" : x.toFixed(3));
  const c = r.confusion;
  const lines = [
    `${verifier} on ${r.n} episodes of ${run} (${r.positives} verified successes)`,
    `  AUROC ${f(r.auroc)} · Spearman ${f(r.spearman)} · ECE ${f(r.ece)} · Brier ${f(r.brier)}`,
    `  at threshold ${r.threshold}: ${c.tp} true and ${c.fp} false successes, ${c.tn} true and ${c.fn} false failures (precision ${f(c.precision)}, recall ${f(c.recall)}, accuracy ${f(c.accuracy)})`,
    `  length bias: Spearman(score, length) ${f(r.length_bias.overall)} overall, ${f(r.length_bias.failures)} among ${r.length_bias.n_failures} failures`,
    `  position bias: ${r.position_bias ? `Spearman(score, where the first answer is) ${f(r.position_bias.spearman)} over ${r.position_bias.n} episodes` : "no episode has an answer"}`,
    "",
    reliabilityDiagramText(r),
    `(the diagram as an image: ${png})`,
    "",
    r.hacking_candidates.total === 0
      ? "hacking candidates: none (no failed episode scored at or above the threshold)"
      : `hacking candidates: ${r.hacking_candidates.total} failed episodes scored at or above ${r.threshold}, by family:`,
    ...r.hacking_candidates.groups.map((g) => `  ${g.group ?? "(none)"}: ${g.count} — ${g.ids.slice(0, 3).join(", ")}${g.ids.length > 3 ? ", …" : ""}`),
  ];
  return lines.join("\n");
}
