/**
 * The rollout commands of `llmix`: `rollout`, `runs`, `episodes`, `show`, `export`, `replay` and
 * `reverify`. They share `--store PATH` (default ./llmix-data/llmix.db).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Option, type Command } from "commander";
import { NotFoundError, ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import { parseSplit } from "../tasks/splits.js";
import type { SliceMetrics } from "../rollout/metrics.js";
import { ADVANTAGE_ON, type AdvantageOn, type RolloutConfig, type RolloutSampler } from "../rollout/plan.js";
import { restoreSampler, type SamplerSpec } from "../tasks/sampler.js";
import { mineHardNegatives, parseTaskSet, type TaskSet } from "../tasks/mine.js";
import type { OpenAIPolicyConfig } from "../rollout/policies/openai.js";
import { formatReplayReport, replayEpisode, type ReplayReport } from "../rollout/replay.js";
import { rollout, type RolloutResult } from "../rollout/runner.js";
import { QueueExecutor } from "../rollout/queue/enqueue.js";
import { DEFAULT_QUEUE_NAME, redisUrl } from "../rollout/queue/queue-names.js";
import { MIN_WORKER_HEAP_MB } from "../rollout/worker-pool.js";
import { DEFAULT_THREAD_HEAP_MB } from "../hosts/thread.js";
import { EXPORT_FORMATS, exportEpisodes, exportRedactor, exportVerlTools, whyEmpty } from "../store/export/index.js";
import { redactionOf } from "../server/trajectories.js";
import { displayStore, openStoreAt } from "../store/open.js";
import type { EpisodeQuery, EpisodeRecord, StoredEpisode, TrajectoryStore } from "../store/types.js";
import { renderTable } from "../qa/table.js";
import { DataPolicy } from "../server/data-policy.js";
import { checkTenant } from "../store/records.js";
import { cliAccess, withAccessOptions, type AccessFlags } from "./access.js";
import { actorOf } from "../server/audit.js";
import { collect, integer, moduleOption, print, progressBar, registryWith, storeOption } from "./options.js";
import { formatTree } from "./tree.js";


function number(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n)) throw new ValidationError("invalid_argument", `${name} must be a number, got "${value}"`);
    return n;
  };
}

/** Open the store, run `fn`, close the store whatever happens. */
/** Run `fn` on the store at `path`, closed after; only a writer (`create`) makes a store that is missing. */
async function withStore<T>(path: string, fn: (store: TrajectoryStore) => Promise<T>, { create = false } = {}): Promise<T> {
  const store = await openStoreAt(path, { create });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function requireRun(store: TrajectoryStore, id: string) {
  const run = await store.getRun(id);
  if (!run) throw new NotFoundError("unknown_run", `no run "${id}" in the store; list them with llmix runs`);
  return run;
}

const fmt = (v: number | null | undefined, digits = 3) => (v === null || v === undefined ? "-" : v.toFixed(digits));
const pct = (v: number | null) => (v === null ? "-" : `${(v * 100).toFixed(1)}%`);

/** A horizontal bar for a rate in [0, 1]. */
function bar(rate: number | null, width = 24): string {
  if (rate === null) return "";
  const full = Math.round(Math.max(0, Math.min(1, rate)) * width);
  return `${"█".repeat(full)}${"░".repeat(width - full)}`;
}

/** The metrics table and a success-by-difficulty chart. */
function formatMetrics(metrics: readonly SliceMetrics[]): string {
  const table = renderTable(
    ["env", "difficulty", "episodes", "errors", "outcome", "success", "pass@k", "pass^k", "avg@k", "k", "steps", "tokens", "tool err"],
    metrics.map((m) => [
      m.env, m.difficulty, String(m.episodes), String(m.errors), fmt(m.mean_outcome), pct(m.success_rate), fmt(m.pass_at_k), fmt(m.pass_hat_k),
      fmt(m.avg_at_k), `${m.k}${m.tasks_with_k ? "" : "*"}`, fmt(m.mean_steps, 1), fmt(m.mean_tokens, 0), pct(m.tool_error_rate),
    ]),
  );
  const chart = metrics.map((m) => `  ${`${m.env}/${m.difficulty}`.padEnd(28)} ${bar(m.success_rate)} ${pct(m.success_rate)}`);
  const components = metrics
    .filter((m) => m.difficulty === "all")
    .map((m) => `${m.env} mean reward components: ${Object.entries(m.mean_components).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(", ")}`);
  const note = metrics.some((m) => !m.tasks_with_k)
    ? ["* no task of the row has k scored episodes (k is the group size; --group k runs k per task), so pass@k, pass^k and avg@k are not defined"]
    : [];
  return [table, ...note, "", "success by difficulty", ...chart, "", ...components].join("\n");
}

function formatRollout(result: RolloutResult, groups: ReadonlyArray<{ group_id: string; rewards: number[]; outcomes: Array<number | null>; grpo: Array<number | null> }>): string {
  const r = result.run;
  const on = ((r.config as { advantage_on?: AdvantageOn } | null)?.advantage_on ?? "reward") satisfies AdvantageOn;
  const head = `run ${r.run_id}: ${r.env}@${r.env_version}, policy ${r.policy}, ${result.episodes}/${r.planned_episodes} episodes stored (${result.ran} ran now, ${result.errors} errors) in ${result.seconds.toFixed(1)} s — ${result.episodes_per_s.toFixed(1)} episodes/s, ${result.steps_per_s.toFixed(0)} steps/s`;
  const row = (xs: Array<number | null>) => xs.map((x) => (x === null ? "  - " : x.toFixed(2))).join(" ");
  const shown = groups.slice(0, 8).map((g) => `  ${g.group_id}\n    reward  ${row(g.rewards)}\n    outcome ${row(g.outcomes)}\n    grpo    ${row(g.grpo)}`);
  const more = groups.length > 8 ? [`  ... ${groups.length - 8} more groups (llmix episodes --run ${r.run_id})`] : [];
  const basis = on === "outcome" ? "on the outcome" : "on the total reward, costs included; --advantage-on outcome for success alone";
  return [head, "", formatMetrics(result.metrics), "", ...curriculumLines(result), `advantages (GRPO, ${basis}) per group`, ...shown, ...more].join("\n");
}

/** A curriculum run's end state: each cell's recent pass rate and the weight the next draw would give it. */
function curriculumLines(result: RolloutResult): string[] {
  if (!result.sampler) return [];
  const sampler = restoreSampler(result.sampler);
  const rates = sampler.passRates();
  const weights = sampler.weights();
  const rows = sampler.cellKeys.map((cell) => [cell, rates[cell] === null ? "-" : (rates[cell] as number).toFixed(2), (weights[cell] as number).toFixed(3)]);
  return ["curriculum after the last wave", renderTable(["cell", "pass rate", "next weight"], rows), ""];
}

/** What went wrong in a run's error episodes: their count, and each distinct cause with how often it occurred. */
export function errorSummary(records: readonly EpisodeRecord[], runId: string): string {
  const causes = new Map<string, number>();
  for (const r of records) {
    if (r.status !== "error") continue;
    const cause = r.error ? `${r.error.code}: ${r.error.message}` : "unknown error";
    causes.set(cause, (causes.get(cause) ?? 0) + 1);
  }
  const errors = [...causes.values()].reduce((a, b) => a + b, 0);
  const lines = [...causes.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([cause, n]) => `  ${n} × ${cause}`);
  const more = causes.size > 3 ? [`  … ${causes.size - 3} other causes`] : [];
  return [`llmix: ${errors} of ${records.length} episode(s) ended with an error (not scored); see llmix episodes --run ${runId} --status error`, ...lines, ...more].join("\n");
}

/** Groups of a run with their episodes' rewards and GRPO advantages, by group index. */
function groupsOf(episodes: readonly EpisodeRecord[]) {
  const groups = new Map<string, EpisodeRecord[]>();
  for (const e of episodes) groups.set(e.group_id, [...(groups.get(e.group_id) ?? []), e]);
  return [...groups.entries()].map(([group_id, list]) => {
    const sorted = [...list].sort((a, b) => a.group_index - b.group_index);
    return {
      group_id,
      task_id: sorted[0]?.task_id ?? "",
      rewards: sorted.map((e) => e.total_reward),
      outcomes: sorted.map((e) => e.outcome),
      grpo: sorted.map((e) => e.advantages?.grpo ?? null),
      episodes: sorted.map((e) => ({ episode_id: e.episode_id, status: e.status, total_reward: e.total_reward, outcome: e.outcome, advantages: e.advantages })),
    };
  });
}

/** Task ids of a file: one per line (# comments), or a task set that `llmix mine` wrote (JSON, of `env`). */
function readTaskFile(path: string, env: string | undefined): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ValidationError("invalid_argument", `--tasks-file ${path}: ${(error as Error).message}`);
  }
  if (text.trimStart().startsWith("{")) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new ValidationError("invalid_argument", `--tasks-file ${path}: not valid JSON (${(error as Error).message})`);
    }
    const set = parseTaskSet(json, `--tasks-file ${path}`);
    if (env !== undefined && set.env !== env) throw new ValidationError("invalid_argument", `--tasks-file ${path}: the task set is of ${set.env}, not ${env}`);
    return set.task_ids;
  }
  return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
}

interface RolloutFlags {
  env?: string;
  policy?: string;
  n?: number;
  group: number;
  concurrency: number;
  workers: number;
  workerMemory: number;
  difficulty?: string[];
  split?: string;
  task?: string[];
  tasksFile?: string;
  seed: number;
  timeout: number;
  maxSteps?: number;
  envOptions?: string;
  checkpoint?: string;
  runId?: string;
  tenant?: string;
  dataPolicy?: string;
  resume?: string;
  store: string;
  json?: boolean;
  module?: string[];
  baseUrl?: string;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  systemPrompt?: string;
  advantageOn: string;
  queue?: string;
  queueName: string;
  mix?: string;
  curriculum?: string;
  trainStep?: number;
  batchGroups?: number;
}

function configOf(flags: RolloutFlags): RolloutConfig {
  const missing = (["env", "policy", "n"] as const).filter((k) => flags[k] === undefined);
  if (missing.length > 0) {
    throw new ValidationError("invalid_argument", `rollout needs ${missing.map((k) => (k === "n" ? "-n" : `--${k}`)).join(", ")} (or --resume RUN)`);
  }
  const taskIds = [...(flags.task ?? []), ...(flags.tasksFile ? readTaskFile(flags.tasksFile, flags.env) : [])];
  const sampler = samplerOf(flags);
  const envOptions: Record<string, JsonValue> = {};
  if (flags.envOptions !== undefined) Object.assign(envOptions, parseEnvOptions(flags.envOptions));
  if (flags.maxSteps !== undefined) envOptions.maxSteps = flags.maxSteps;
  return {
    env: flags.env as string,
    policy: flags.policy as string,
    policy_checkpoint: flags.checkpoint ?? null,
    n: flags.n as number,
    group: flags.group,
    difficulties: (flags.difficulty ?? []).flatMap((d) => d.split(",")).filter(Boolean),
    split: flags.split === undefined ? null : parseSplit(flags.split),
    task_ids: taskIds.length > 0 ? taskIds : null,
    seed: flags.seed,
    timeout_ms: flags.timeout * 1000,
    env_options: envOptions,
    modules: (flags.module ?? []).map((m) => resolve(m)),
    advantage_on: flags.advantageOn as AdvantageOn,
    ...(sampler ? { sampler } : {}),
    ...dataPolicyOf(flags),
  };
}

/** --tenant and --data-policy: the run's tenant and the policy's redaction rules, checked against the policy. */
function dataPolicyOf(flags: RolloutFlags): Pick<RolloutConfig, "tenant" | "redaction"> {
  const out: Pick<RolloutConfig, "tenant" | "redaction"> = {};
  if (flags.tenant !== undefined) {
    checkTenant(flags.tenant, "--tenant");
    out.tenant = flags.tenant;
  }
  if (flags.dataPolicy === undefined) return out;
  const policy = DataPolicy.fromFile(flags.dataPolicy);
  const tenant = flags.tenant === undefined ? null : policy.tenants.get(flags.tenant);
  if (tenant === undefined) throw new ValidationError("invalid_argument", `--tenant ${flags.tenant}: the data policy names no such tenant (it has ${[...policy.tenants.keys()].join(", ") || "none"})`);
  policy.checkRun(tenant ? { name: `tenant ${tenant.name}`, environments: tenant.environments } : null, flags.env as string);
  if (policy.redaction) out.redaction = policy.redaction;
  return out;
}

/** --env-options: a JSON object (kept in the run's config, so a resume, a replay and a reverify use the same). */
function parseEnvOptions(text: string): Record<string, JsonValue> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationError("invalid_argument", `--env-options must be a JSON object: ${(error as Error).message}`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new ValidationError("invalid_argument", "--env-options must be a JSON object, e.g. {\"maxSteps\": 20}");
  return value as Record<string, JsonValue>;
}

/** The run's sampler from --mix FILE (a mix or schedule) or --curriculum FILE (a curriculum), as JSON specs (docs/tasks.md). */
function samplerOf(flags: RolloutFlags): RolloutSampler | undefined {
  if (flags.mix !== undefined && flags.curriculum !== undefined) throw new ValidationError("invalid_argument", "--mix and --curriculum exclude each other");
  const path = flags.mix ?? flags.curriculum;
  if (path === undefined) {
    if (flags.trainStep !== undefined || flags.batchGroups !== undefined) throw new ValidationError("invalid_argument", "--train-step and --batch-groups need --mix or --curriculum");
    return undefined;
  }
  const flag = flags.mix !== undefined ? "--mix" : "--curriculum";
  let file: SamplerSpec & { sets?: unknown };
  try {
    file = JSON.parse(readFileSync(path, "utf8")) as SamplerSpec & { sets?: unknown };
  } catch (error) {
    throw new ValidationError("invalid_argument", `${flag} ${path}: ${(error as Error).message}`);
  }
  if (!file || typeof file !== "object" || Array.isArray(file)) throw new ValidationError("invalid_argument", `${flag} ${path}: must be a JSON object {"kind": ...}`);
  // "sets": {"NAME": "FILE"} names task set files (llmix mine) the weights may use as "set:NAME"; paths are relative to the spec file.
  const { sets: setFiles, ...spec } = file;
  let sets: Record<string, string[]> | undefined;
  if (setFiles !== undefined) {
    if (!setFiles || typeof setFiles !== "object" || Array.isArray(setFiles)) throw new ValidationError("invalid_argument", `${flag} ${path}: "sets" must be {"NAME": "task-set.json", ...}`);
    sets = Object.fromEntries(Object.entries(setFiles as Record<string, unknown>).map(([name, file]) => {
      if (typeof file !== "string") throw new ValidationError("invalid_argument", `${flag} ${path}: sets.${name} must be the path of a task set file`);
      return [name, readTaskFile(resolve(dirname(path), file), flags.env)];
    }));
  }
  const kind = (file as { kind?: unknown } | null)?.kind;
  const allowed = flag === "--mix" ? ["mix", "schedule"] : ["curriculum"];
  if (typeof kind !== "string" || !allowed.includes(kind)) {
    throw new ValidationError("invalid_argument", `${flag} ${path}: "kind" must be ${allowed.map((k) => `"${k}"`).join(" or ")}, got ${JSON.stringify(kind ?? null)}`);
  }
  if (flag === "--mix" && flags.batchGroups !== undefined) throw new ValidationError("invalid_argument", "--batch-groups is for --curriculum (a mix draws its tasks up front)");
  if (flag === "--curriculum" && flags.trainStep !== undefined) throw new ValidationError("invalid_argument", "--train-step is for --mix schedules (a curriculum follows its outcomes)");
  return {
    spec: spec as SamplerSpec,
    ...(flags.trainStep !== undefined ? { train_step: flags.trainStep } : {}),
    ...(flags.batchGroups !== undefined ? { batch_groups: flags.batchGroups } : {}),
    ...(sets ? { sets } : {}),
  };
}

/** Add the rollout commands to the program. */
export function registerRolloutCommands(program: Command): void {
  program
    .command("rollout")
    .description("run episodes of an environment with a policy and store their trajectories")
    .option("--env <id>", "environment id")
    .option("--policy <spec>", "oracle | noisy-oracle:P | random | replay:RUN | openai")
    .option("-n <n>", "episodes (rounded up to whole groups)", integer("-n", 1, 10_000_000))
    .option("--group <k>", "rollouts per task with the same seed (GRPO group size)", integer("--group", 1, 1024), 1)
    .addOption(
      new Option("--advantage-on <what>", "group advantages on the total reward (costs included) or on the outcome alone").choices([...ADVANTAGE_ON]).default("reward"),
    )
    .option("--concurrency <c>", "episodes in flight per thread", integer("--concurrency", 1, 1024), 4)
    .option("--workers <w>", "worker threads that run the episodes", integer("--workers", 1, 64), 1)
    .option("--worker-memory <MiB>", "heap cap of each worker thread; an episode over it ends as resource_exhausted", integer("--worker-memory", MIN_WORKER_HEAP_MB, 1_048_576), DEFAULT_THREAD_HEAP_MB)
    .option("--difficulty <d>", "difficulty to sample (repeatable or comma-separated; default all)", collect)
    .option("--split <split>", "train or eval")
    .option("--task <id>", "an explicit task id (repeatable)", collect)
    .option("--tasks-file <path>", "a file of task ids, one per line")
    .option("--mix <file>", 'draw the tasks with a mix or schedule over difficulties (JSON: {"kind":"mix","weights":{"easy":1,"hard":3}}; docs/tasks.md)')
    .option("--train-step <n>", "with a --mix schedule: the training step whose weights apply", integer("--train-step", 0, Number.MAX_SAFE_INTEGER))
    .option("--curriculum <file>", 'draw the tasks with an adaptive curriculum that keeps each cell\'s pass rate in a band (JSON: {"kind":"curriculum","cells":["easy","medium","hard"]}); runs in waves')
    .option("--batch-groups <n>", "with --curriculum: groups per wave (the next wave is drawn from this one's outcomes; default 8)", integer("--batch-groups", 1, 1_000_000))
    .option("--seed <s>", "seed of task sampling and episode seeds", integer("--seed", 0, 0x7fffffff), 0)
    .option("--timeout <seconds>", "per-episode wall-clock limit (a worker thread an episode keeps past it is stopped)", number("--timeout"), 600)
    .option("--max-steps <n>", "override the environment's step budget", integer("--max-steps", 1, 100_000))
    .option("--env-options <json>", 'options every environment instance is created with, a JSON object (e.g. billing-dispute: {"communicationJudge": {"baseURL": "http://127.0.0.1:8000/v1", "model": "..."}})')
    .option("--checkpoint <name>", "policy checkpoint recorded with every step")
    .option("--run-id <id>", "id of the new run (default run-<time>-<random>)")
    .option("--tenant <name>", "the tenant whose data the run is (docs/data-policy.md): only its tokens and admins see it")
    .option("--data-policy <file>", "apply this data policy: its redaction rules mask personal data before anything is stored, and it must allow the environment (and --tenant)")
    .option("--resume <run>", "finish an interrupted run: only its missing episodes run (its --module files are loaded again)")
    .option("--base-url <url>", "openai policy: the server's /v1 URL (or LLMIX_OPENAI_BASE_URL)")
    .option("--model <name>", "openai policy: the model (or LLMIX_MODEL)")
    .option("--temperature <t>", "openai policy: sampling temperature", number("--temperature"))
    .option("--max-tokens <n>", "openai policy: completion tokens per turn", integer("--max-tokens", 1, 1_000_000))
    .option("--system-prompt <text>", "openai policy: a system message")
    .option("--queue <url>", "run the episodes on `llmix worker` processes through this Redis (redis://HOST:PORT[/DB]) instead of local threads", (v: string) => redisUrl(v, "--queue"))
    .option("--queue-name <name>", "with --queue: the BullMQ queue's name (to --resume a queued run, the one it used)", DEFAULT_QUEUE_NAME)
    .addOption(storeOption())
    .option("--json", "print JSON")
    .addOption(moduleOption())
    .action(async (flags: RolloutFlags) => {
      const openai: Partial<OpenAIPolicyConfig> = {};
      if (flags.baseUrl !== undefined) openai.baseURL = flags.baseUrl;
      if (flags.model !== undefined) openai.model = flags.model;
      if (flags.temperature !== undefined) openai.temperature = flags.temperature;
      if (flags.maxTokens !== undefined) openai.maxTokens = flags.maxTokens;
      if (flags.systemPrompt !== undefined) openai.systemPrompt = flags.systemPrompt;
      const config = flags.resume ? undefined : configOf(flags);
      const progress = progressBar("rollout [{bar}] {value}/{total} episodes · {rate}/s · ETA {eta_formatted} · mean outcome {mean} · errors {errors}");
      const started = Date.now();
      await withStore(flags.store, async (store) => {
        const registry = await registryWith([...(flags.module ?? []), ...(flags.resume ? await modulesOf(store, flags.resume) : [])]);
        const result = await rollout({
          config,
          resume: flags.resume,
          runId: flags.runId,
          concurrency: flags.concurrency,
          workers: flags.workers,
          workerMemoryMb: flags.workerMemory,
          executor: flags.queue ? new QueueExecutor({ redisUrl: flags.queue, queueName: flags.queueName }) : undefined,
          store,
          registry,
          policyOptions: openai,
          onProgress: (p) => {
            if (!progress) return;
            const payload = { mean: fmt(p.meanOutcome), errors: p.errors, rate: ((p.done / Math.max(0.001, (Date.now() - started) / 1000))).toFixed(1) };
            if (p.done === 0 || !progress.getTotal()) progress.start(p.total, p.done, payload);
            else progress.update(p.done, payload);
          },
        });
        progress?.stop();
        const groups = groupsOf(result.records);
        if (flags.json) {
          const { tools: _tools, ...run } = result.run;
          const { records: _records, ...summary } = result;
          print(JSON.stringify({ ...summary, run, groups }, null, 2));
        } else print(formatRollout(result, groups));
        if (result.errors > 0) {
          process.stderr.write(`${errorSummary(result.records, result.run.run_id)}\n`);
          // Nothing was learnt from a run whose every episode failed: that is the command failing.
          if (result.records.every((r) => r.status === "error")) process.exitCode = 1;
        }
      }, { create: true });
    });

  program
    .command("mine")
    .description("mine hard negatives: new training tasks of the scenarios a run's episodes failed (a task set file for --tasks-file)")
    .requiredOption("--run <id>", "the run whose failures to mine")
    .option("-n <n>", "tasks to mine", integer("-n", 1, 100_000), 64)
    .option("--name <name>", "the set's name (default hard-negatives-RUN)")
    .option("--out <file>", "where to write the set (default task-sets/NAME.json beside a SQLite store, else ./llmix-data/task-sets/)")
    .option("--seed <s>", "seed of the draw", integer("--seed", 0, 0x7fffffff), 0)
    .addOption(storeOption())
    .option("--json", "print the set as JSON")
    .addOption(moduleOption())
    .action(async (opts: { run: string; n: number; name?: string; out?: string; seed: number; store: string; json?: boolean; module?: string[] }) => {
      await withStore(opts.store, async (store) => {
        const run = await requireRun(store, opts.run);
        const registry = await registryWith([...(opts.module ?? []), ...(await modulesOf(store, run.run_id))]);
        const env = registry.get(run.env).create();
        let mined;
        try {
          mined = mineHardNegatives(env.tasks, await store.episodes({ run_id: run.run_id }), { n: opts.n, seed: opts.seed });
        } finally {
          await env.close();
        }
        const name = opts.name ?? `hard-negatives-${run.run_id}`;
        const set: TaskSet = {
          kind: "llmix-task-set", version: 1, name, env: run.env, created_at: new Date().toISOString(),
          source: { run_id: run.run_id, policy: run.policy, episodes: await store.countEpisodes({ run_id: run.run_id }), failures: mined.failures, seed: opts.seed, scenarios: mined.scenarios },
          task_ids: mined.task_ids,
        };
        if (set.task_ids.length === 0) throw new ValidationError("invalid_argument", `run ${run.run_id} has no failed episode to mine (${set.source.episodes} episodes)`);
        const out = opts.out ?? join(opts.store.startsWith("postgres") ? "./llmix-data" : dirname(opts.store), "task-sets", `${name.replace(/[^\w.-]/g, "_")}.json`);
        mkdirSync(dirname(out), { recursive: true });
        writeFileSync(out, `${JSON.stringify(set, null, 2)}\n`);
        if (opts.json) return print(JSON.stringify(set, null, 2));
        const rate = set.source.episodes > 0 ? ` (failure rate ${(set.source.failures / set.source.episodes).toFixed(2)})` : "";
        print(`mined ${set.task_ids.length} new tasks of ${mined.scenarios.length} failing scenarios from ${set.source.failures} failures in ${set.source.episodes} episodes of ${run.run_id}${rate} -> ${out}`);
        print(renderTable(
          ["difficulty", "scenario", "failed", "mined", "perturbed"],
          mined.scenarios.map((sc) => [sc.difficulty, Object.entries(sc.features).map(([k, v]) => `${k}=${v}`).join(" "), `${sc.failures}/${sc.episodes}`, String(sc.mined), String(sc.perturbed)]),
        ));
        print(`run them: llmix rollout --env ${run.env} --policy ... --tasks-file ${out} -n ${set.task_ids.length}`);
      });
    });

  withAccessOptions(
    program
      .command("runs")
      .description("list the runs in the trajectory store (under --policy: the token's tenant's only)")
      .option("--limit <n>", "at most this many, newest first", integer("--limit", 1, 1000), 50)
      .addOption(storeOption())
      .option("--json", "print JSON"),
  ).action(async (opts: AccessFlags & { limit: number; store: string; json?: boolean }) => {
    const registry = await registryWith(undefined);
    await withStore(opts.store, async (store) => {
      const { caller, ops } = cliAccess(opts, "trajectories:read", registry, store);
      const { runs: rows } = await ops.runs(caller, { limit: opts.limit }, "cli");
      if (opts.json) return print(JSON.stringify(rows.map(({ tools: _t, episodes, ...r }) => ({ ...r, stored_episodes: episodes })), null, 2));
      if (rows.length === 0) return print(`No runs in ${displayStore(opts.store)}. Start one with llmix rollout.`);
      print(renderTable(
        ["run", "env", "policy", "status", "episodes", "created"],
        rows.map((r) => [r.run_id, `${r.env}@${r.env_version}`, r.policy, r.status, `${r.episodes}/${r.planned_episodes}`, r.created_at]),
      ));
    });
  });

  withAccessOptions(program
    .command("episodes")
    .description("list the episodes of a run (filters combine)")
    .requiredOption("--run <id>", "run id")
    .option("--difficulty <d>", "only this difficulty")
    .option("--task <id>", "only this task id")
    .option("--status <s>", "ok or error")
    .option("--min-reward <r>", "total reward at least", number("--min-reward"))
    .option("--max-reward <r>", "total reward at most", number("--max-reward"))
    .option("--passed", "only episodes whose verdict passed")
    .option("--failed", "only episodes whose verdict did not pass")
    .option("--limit <n>", "at most this many", integer("--limit", 1, 10_000_000), 200)
    .addOption(storeOption())
    .option("--json", "print JSON"))
    .action(async (opts: AccessFlags & { run: string; difficulty?: string; task?: string; status?: string; minReward?: number; maxReward?: number; passed?: boolean; failed?: boolean; limit: number; store: string; json?: boolean }) => {
      if (opts.status !== undefined && opts.status !== "ok" && opts.status !== "error") {
        throw new ValidationError("invalid_argument", `--status must be ok or error, got "${opts.status}"`);
      }
      if (opts.passed && opts.failed) throw new ValidationError("invalid_argument", "--passed and --failed exclude each other");
      const registry = await registryWith(undefined);
      await withStore(opts.store, async (store) => {
        const { caller, ops } = cliAccess(opts, "trajectories:read", registry, store);
        await ops.visibleRun(caller, opts.run, "cli");
        const query: EpisodeQuery = { run_id: opts.run, limit: opts.limit };
        if (opts.difficulty !== undefined) query.difficulty = opts.difficulty;
        if (opts.task !== undefined) query.task_id = opts.task;
        if (opts.status !== undefined) query.status = opts.status as "ok" | "error";
        if (opts.minReward !== undefined) query.min_reward = opts.minReward;
        if (opts.maxReward !== undefined) query.max_reward = opts.maxReward;
        if (opts.passed) query.passed = true;
        if (opts.failed) query.passed = false;
        const episodes = await store.episodes(query);
        await ops.audit.record(actorOf(caller), "read", { kind: "run", id: opts.run }, "cli", { episodes: episodes.length });
        if (opts.json) return print(JSON.stringify(episodes, null, 2));
        print(renderTable(
          ["episode", "status", "steps", "reward", "outcome", "grpo", "end", "error"],
          episodes.map((e) => [e.episode_id, e.status, String(e.steps), fmt(e.total_reward), fmt(e.outcome), fmt(e.advantages?.grpo), e.end_reason ?? "-", e.error?.code ?? ""]),
        ));
      });
    });

  withAccessOptions(program
    .command("show")
    .description("show one stored episode step by step, with its reward components")
    .requiredOption("--episode <id>", "episode id")
    .addOption(storeOption())
    .option("--json", "print JSON")
    .option("--full", "print observations whole (by default long ones are cut)"))
    .action(async (opts: AccessFlags & { episode: string; store: string; json?: boolean; full?: boolean }) => {
      const registry = await registryWith(undefined);
      await withStore(opts.store, async (store) => {
        const { caller, ops } = cliAccess(opts, "trajectories:read", registry, store);
        const stored = await ops.episode(caller, opts.episode, "cli");
        if (opts.json) return print(JSON.stringify(stored, null, 2));
        print(formatEpisode(stored, { full: opts.full === true }));
      });
    });

  withAccessOptions(program
    .command("export")
    .description(`export a run's episodes as a dataset (${EXPORT_FORMATS.join(", ")}), or its verl tool config (verl-tools)`)
    .requiredOption("--run <id>", "run id")
    .requiredOption("--format <f>", [...EXPORT_FORMATS, "verl-tools"].join(" | "))
    .requiredOption("--out <path>", "output file")
    .option("--min-reward <r>", "only episodes with total reward at least", number("--min-reward"))
    .option("--successes-only", "only episodes whose verdict passed")
    .option("--difficulty <d>", "only this difficulty")
    .option("--env <id>", "only this environment")
    .option("--json-strings", "trl-sft, trl-grpo: write `tools` and tool-call `arguments` as JSON strings (for `datasets` without Json())")
    .addOption(storeOption())
    .option("--json", "print JSON"))
    .action(async (opts: AccessFlags & { run: string; format: string; out: string; minReward?: number; successesOnly?: boolean; difficulty?: string; env?: string; jsonStrings?: boolean; store: string; json?: boolean }) => {
      const registry = await registryWith(undefined);
      if (opts.format === "verl-tools") {
        // A run-level config (the run's tools), not an episode dataset: no filter applies.
        if ([opts.minReward, opts.successesOnly, opts.difficulty, opts.env, opts.jsonStrings].some((o) => o !== undefined)) {
          throw new ValidationError("invalid_argument", "verl-tools writes the run's tool config: episode filters and --json-strings do not apply");
        }
        return withStore(opts.store, async (store) => {
          const { caller, policy, ops } = cliAccess(opts, "trajectories:export", registry, store);
          const run = await ops.visibleRun(caller, opts.run, "cli");
          const result = await exportVerlTools(run, opts.out, exportRedactor(policy?.redaction ?? redactionOf(run)));
          await ops.audit.record(actorOf(caller), "export", { kind: "run", id: opts.run }, "cli", { format: "verl-tools", rows: result.rows });
          if (opts.json) return print(JSON.stringify(result, null, 2));
          print(`wrote ${result.rows} verl tool entries (${result.bytes} bytes) to ${result.path}`);
        });
      }
      if (!(EXPORT_FORMATS as readonly string[]).includes(opts.format)) {
        throw new NotFoundError("unknown_format", `unknown format "${opts.format}"; valid: ${[...EXPORT_FORMATS, "verl-tools"].join(", ")}`);
      }
      await withStore(opts.store, async (store) => {
        const { caller, policy, ops } = cliAccess(opts, "trajectories:export", registry, store);
        const run = await ops.visibleRun(caller, opts.run, "cli");
        // The second gate: the policy's rules, else those the run was recorded under.
        const redactor = exportRedactor(policy?.redaction ?? redactionOf(run));
        const result = await exportEpisodes(
          { run, episodes: store.streamEpisodes({ run_id: opts.run }) },
          { format: opts.format, out: opts.out, filter: { minReward: opts.minReward, successesOnly: opts.successesOnly, difficulty: opts.difficulty, env: opts.env }, jsonStrings: opts.jsonStrings, ...(redactor ? { redactor } : {}) },
        );
        await ops.audit.record(actorOf(caller), "export", { kind: "run", id: opts.run }, "cli", { format: result.format, rows: result.rows, bytes: result.bytes });
        const why = result.rows === 0 ? whyEmpty(await store.episodes({ run_id: opts.run }), { minReward: opts.minReward, successesOnly: opts.successesOnly, difficulty: opts.difficulty, env: opts.env }) : null;
        if (opts.json) return print(JSON.stringify(why === null ? result : { ...result, empty_because: why }, null, 2));
        print(`wrote ${result.rows} ${result.format} rows (${result.bytes} bytes) to ${result.path}${why === null ? "" : `: ${why}`}`);
      });
    });

  withAccessOptions(program
    .command("replay")
    .description("re-run a stored episode's actions on a fresh environment and compare with the record; exits 1 on any difference")
    .requiredOption("--episode <id>", "episode id")
    .addOption(storeOption())
    .option("--json", "print JSON")
    .addOption(moduleOption()))
    .action(async (opts: AccessFlags & { episode: string; store: string; json?: boolean; module?: string[] }) => {
      const registry = await registryWith(opts.module);
      await withStore(opts.store, async (store) => {
        const { caller, policy, ops } = cliAccess(opts, "trajectories:read", registry, store);
        const { stored, run } = await ops.readEpisode(caller, opts.episode, "cli");
        await ops.audit.record(actorOf(caller), "replay", { kind: "episode", id: opts.episode }, "cli");
        const env = registry.get(stored.episode.env).create(envOptionsOf(run));
        try {
          // Markers of the rules the episode was stored under are restored before its actions are resent.
          const redaction = redactionOf(run) ?? policy?.redaction;
          const report = await replayEpisode(env, stored, redaction ? { redaction } : {});
          print(opts.json ? JSON.stringify(report, null, 2) : formatReplayReport(report));
          if (!report.matched) process.exitCode = 1;
        } finally {
          await env.close();
        }
      });
    });

  program
    .command("reverify")
    .description("recompute a run's rewards from its stored actions with the current environment and verifiers; report what changed")
    .requiredOption("--run <id>", "run id")
    .addOption(storeOption())
    .option("--json", "print JSON")
    .addOption(moduleOption())
    .action(async (opts: { run: string; store: string; json?: boolean; module?: string[] }) => {
      const registry = await registryWith(opts.module);
      await withStore(opts.store, async (store) => {
        const run = await requireRun(store, opts.run);
        const env = registry.get(run.env).create(envOptionsOf(run));
        const changed: ReplayReport[] = [];
        let checked = 0;
        try {
          const redaction = redactionOf(run);
          for await (const stored of store.streamEpisodes({ run_id: opts.run, status: "ok" })) {
            const report = await replayEpisode(env, stored, redaction ? { redaction } : {});
            checked++;
            const same = Math.abs(report.recorded.total_reward - report.replayed.total_reward) < 1e-9 && report.recorded.outcome === report.replayed.outcome;
            if (!same || !report.matched) changed.push(report);
          }
        } finally {
          await env.close();
        }
        const summary = {
          run_id: run.run_id,
          recorded_env_version: run.env_version,
          env_version: env.info.version,
          checked,
          changed: changed.length,
          reward_changes: changed.map((r) => ({ episode_id: r.episode_id, recorded: r.recorded, replayed: r.replayed, differences: r.diffs.length })),
        };
        if (opts.json) return print(JSON.stringify(summary, null, 2));
        print(`reverified ${checked} episodes of ${run.run_id} (${run.env}@${run.env_version} -> ${env.info.version}): ${changed.length} changed`);
        if (changed.length > 0) {
          print(renderTable(
            ["episode", "reward", "outcome", "differences"],
            changed.map((r) => [r.episode_id, `${fmt(r.recorded.total_reward)} -> ${fmt(r.replayed.total_reward)}`, `${fmt(r.recorded.outcome)} -> ${fmt(r.replayed.outcome)}`, String(r.diffs.length)]),
          ));
        }
      });
    });
}

/** The `--module` files a stored run was started with (none for an unknown run: the runner reports it). */
async function modulesOf(store: TrajectoryStore, runId: string): Promise<string[]> {
  const config = (await store.getRun(runId))?.config as { modules?: unknown } | undefined;
  return Array.isArray(config?.modules) ? config.modules.filter((m): m is string => typeof m === "string") : [];
}

/** The environment options a run used (so a replay has the same step budget). */
function envOptionsOf(run: { config: JsonValue } | undefined): Record<string, unknown> {
  const config = run?.config as { env_options?: Record<string, unknown> } | undefined;
  return { ...(config?.env_options ?? {}) };
}

/** One episode as readable text: the row, then each step with its action, result and reward components. */
/** A reward or component for a person: 3 decimals, or 2 significant digits when smaller (a cost of 0.0005). */
function amount(v: number): string {
  return v !== 0 && Math.abs(v) < 0.01 ? v.toPrecision(2) : v.toFixed(3);
}

/** An action for a person: `tool` then its arguments as a tree (a patch keeps its lines), or the message. */
function describeAction(action: StoredEpisode["steps"][number]["action"]): string {
  if (action.type === "message") return `message: ${action.content}`;
  if (action.type !== "tool_call") return `invalid: ${JSON.stringify((action as { raw: unknown }).raw)}`;
  const args = action.args as unknown;
  const flat = JSON.stringify(args) ?? "";
  if (flat.length <= 100 && !flat.includes("\\n")) return `${action.tool}(${flat})`;
  return `${action.tool}\n${formatTree(args, 4)}`;
}

/** One stored episode for a person: its summary, every step, and the verdict as a tree. */
export function formatEpisode({ episode: e, steps }: StoredEpisode, options: { full?: boolean } = {}): string {
  const head = [
    `${e.episode_id}`,
    `  task ${e.task_id} seed ${e.seed} · ${e.env}@${e.env_version} · policy ${e.policy}${e.policy_checkpoint ? ` (${e.policy_checkpoint})` : ""}`,
    `  ${e.status}${e.error ? ` (${e.error.code}: ${e.error.message})` : ""} · ${e.steps} steps · ${e.tokens} tokens · end ${e.end_reason ?? "-"}`,
    `  total reward ${fmt(e.total_reward)} · outcome ${fmt(e.outcome)} · advantages ${e.advantages ? `grpo ${fmt(e.advantages.grpo)} dr_grpo ${fmt(e.advantages.dr_grpo)} rloo ${fmt(e.advantages.rloo)}` : "-"}`,
  ];
  const cut = (text: string, width: number) => (options.full || text.length <= width ? text : `${text.slice(0, width)}… (${text.length - width} more characters: --full)`);
  const indent = (text: string, width = 1200) => cut(text, width).split("\n").map((l) => `    ${l}`).join("\n");
  const body = steps.map((s) => {
    const action = describeAction(s.action);
    const nonZero = Object.entries(s.reward_components).filter(([, v]) => v !== 0).map(([k, v]) => `${k} ${amount(v)}`);
    const tool = s.tool_result ? ` → ${s.tool_result.status}${s.tool_result.error ? ` (${s.tool_result.error.message})` : ""}` : "";
    return [`── step ${s.step} ──`, s.step === 1 ? `  observation:\n${indent(s.observation.rendered, 600)}` : `  observation:\n${indent(s.observation.rendered)}`, `  action: ${action}${tool}`, `  reward ${amount(s.reward ?? 0)}${nonZero.length ? ` (${nonZero.join(", ")})` : ""}${s.terminated ? " · terminated" : ""}${s.truncated ? " · truncated" : ""}`].join("\n");
  });
  const verdict = e.verdict ? `verdict:\n${formatTree(e.verdict, 2)}` : "";
  return [...head, "", ...body, "", verdict].join("\n");
}
