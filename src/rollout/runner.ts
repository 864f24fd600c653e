/**
 * The rollout runner (DESIGN §6): runs a plan's episode jobs with `concurrency` episodes in flight per
 * thread on worker threads (a WorkerPool; the main thread only plans, stores and watches), writes each
 * finished episode to the trajectory store as it comes, sets a group's advantages once the whole group
 * is stored, and computes the run's metrics at the end. The run row carries this process as its owner
 * and a heartbeat while it runs, so a run whose process died reads as interrupted. The unit of work is
 * an `EpisodeJob` (plain JSON), so jobs can later come from a queue on other machines.
 *
 * Environments registered only in code (neither built-in nor loaded from a module file) cannot be
 * loaded by a worker thread: their episodes run on the main thread, under the cooperative timeout only.
 * An `executor` runs the episodes elsewhere instead (rollout/queue sends them to workers on other
 * machines); planning, storing, advantages and metrics stay here either way.
 */
import { randomBytes } from "node:crypto";
import { NotFoundError, ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import type { AnyEnvironment, EnvironmentEntry, EnvironmentRegistry } from "../core/registry.js";
import { BUILTIN_ENVIRONMENTS } from "../envs/index.js";
import { startHeartbeat } from "../store/liveness.js";
import { Redactor } from "../store/redaction.js";
import { episodeIdOf, type Advantages, type EpisodeRecord, type RunRecord, type StoredEpisode, type TrajectoryStore } from "../store/types.js";
import { groupAdvantages } from "./advantages.js";
import type { EpisodeJob } from "./episode.js";
import { runMetrics, type SliceMetrics } from "./metrics.js";
import { planWaves, validateConfig, type AdvantageOn, type PlanWaves, type RolloutConfig } from "./plan.js";
import type { SamplerState } from "../tasks/sampler.js";
import { parsePolicySpec, type PolicySource, type PolicySpecOptions } from "./policies/index.js";
import { sentAction } from "./replay.js";
import { runJobsInProcess, type JobRunnerOptions } from "./pool.js";
import { WorkerPool, workerHeapMb } from "./worker-pool.js";

/** Progress after each stored episode. */
export interface RolloutProgress {
  done: number;
  total: number;
  errors: number;
  /** Mean outcome of the episodes finished in this invocation (null before the first). */
  meanOutcome: number | null;
}

/**
 * Where a run's missing episodes execute instead of this process's worker threads (a queue's workers:
 * rollout/queue). It must hand each job's result to `onResult` exactly once.
 */
export interface EpisodeExecutor {
  /** Run `jobs` (the run's episodes not in the store yet); resolves once each has been handed to `onResult`. */
  run(jobs: readonly EpisodeJob[], options: ExecutorOptions): Promise<void>;
}

/** What an executor gets: the runner's options, a result handler that says when a result is stored, and what is stored already. */
export interface ExecutorOptions extends JobRunnerOptions {
  /** Store a result; resolves true once it is in the store (with its group's advantages), false if the write failed (the run then stops with that error). */
  onResult: (result: StoredEpisode) => Promise<boolean>;
  /** Ids of the run's episodes already in the store (an executor may hold leftovers of them to drop). */
  storedIds: readonly string[];
}

/** How to run: either a new run (`config`) or `resume` of a stored one. */
export interface RolloutOptions {
  config?: RolloutConfig;
  /** Resume this run: its config comes from the store; only its missing episodes run. */
  resume?: string;
  /** Id of a new run (default: run-<UTC time>-<random>). */
  runId?: string;
  concurrency?: number;
  /** Worker threads for this run (started and stopped by it; default 1). */
  workers?: number;
  /** Heap cap of each worker thread this run starts, in MiB (default DEFAULT_THREAD_HEAP_MB of hosts/thread.ts). */
  workerMemoryMb?: number;
  /** Run on this pool's threads instead (they stay up after the run, warm for the next); `workers` and `workerMemoryMb` are ignored. */
  pool?: WorkerPool;
  store: TrajectoryStore;
  registry: EnvironmentRegistry;
  /** Run the episodes with this executor instead of worker threads (`workers`, `workerMemoryMb` and `pool` are then unused). */
  executor?: EpisodeExecutor;
  /** Options for the policy spec (openai flags); passed to workers as JSON. */
  policyOptions?: PolicySpecOptions["openai"];
  onProgress?: (progress: RolloutProgress) => void;
}

/** What a finished rollout reports. */
export interface RolloutResult {
  run: RunRecord;
  /** Episodes of the run in the store now. */
  episodes: number;
  /** Episodes run by this invocation. */
  ran: number;
  errors: number;
  steps: number;
  seconds: number;
  episodes_per_s: number;
  steps_per_s: number;
  metrics: SliceMetrics[];
  /** Every episode of the run in the store at the end (what the metrics were computed from). */
  records: EpisodeRecord[];
  /** A curriculum run: its sampler after the last wave (pass rates per cell, weights); null otherwise. */
  sampler: SamplerState | null;
}

/** A new run id: sortable by time, unique by a random suffix. */
export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `run-${stamp}-${randomBytes(3).toString("hex")}`;
}

/**
 * Run (or resume) a rollout; returns when every planned episode is in the store. Episodes of built-in
 * environments and of environments loaded from a module file (`EnvironmentEntry.module`) run on worker
 * threads, where a watchdog enforces the time limit from outside and a thread that dies is replaced
 * (see pool-run.ts). Episodes of an environment registered only in code run on the calling thread:
 * there the time limit is cooperative only (a step that never returns blocks the run) and nothing caps
 * their memory; load such an environment from a module file to get the threads' protection.
 */
export async function rollout(options: RolloutOptions): Promise<RolloutResult> {
  const concurrency = options.concurrency ?? 1;
  const workers = options.workers ?? 1;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > 1024) {
    throw new ValidationError("invalid_argument", `concurrency must be an integer in [1, 1024], got ${concurrency}`);
  }
  if (!Number.isSafeInteger(workers) || workers < 1 || workers > 64) {
    throw new ValidationError("invalid_argument", `workers must be an integer in [1, 64], got ${workers}`);
  }
  if (options.pool?.closed) throw new ValidationError("invalid_argument", "this worker pool is closed");
  workerHeapMb(options.workerMemoryMb);
  const { store, registry } = options;
  const resolved = await resolveRun(options);
  const { runId, resumed } = resolved;
  const entry = registry.get(resolved.config.env);
  const config = withEntryModule(resolved.config, entry);
  // Parsed before anything is stored, so a bad spec leaves no run behind.
  const source = parsePolicySpec(config.policy, { openai: options.policyOptions });
  const planner = entry.create(config.env_options);
  let waves: PlanWaves;
  let first: EpisodeJob[];
  let run: RunRecord;
  try {
    waves = planWaves(runId, config, planner);
    first = waves.next(() => null) as EpisodeJob[];
    run = resumed ? await store.claimRun(runId) : await createRun(store, entry, runId, config, planner, first[0] as EpisodeJob);
  } finally {
    await planner.close();
  }
  const heartbeat = startHeartbeat(store, () => [run.run_id]);
  try {
    return await execute(options, { run, entry, config, waves, first, source, concurrency });
  } catch (error) {
    // Stopped before every episode was stored: a resume finishes it. A second store failure must not hide the first.
    await store.finishRun(run.run_id, "interrupted").catch(() => undefined);
    throw error;
  } finally {
    heartbeat.stop();
  }
}

/** A stored run, ready to execute. */
interface PlannedRun {
  run: RunRecord;
  entry: EnvironmentEntry;
  config: RolloutConfig;
  waves: PlanWaves;
  /** The first wave (drawn when the run was planned). */
  first: EpisodeJob[];
  source: PolicySource;
  concurrency: number;
}

/**
 * Run the jobs of a stored run that are not in the store yet, wave by wave (a curriculum's next wave is
 * drawn once the last one is stored), then finish the run and measure it.
 */
async function execute(options: RolloutOptions, { run, entry, config, waves, first, source, concurrency }: PlannedRun): Promise<RolloutResult> {
  const { store, registry } = options;

  const stored = new Map<string, EpisodeRecord>();
  for (const e of await store.episodes({ run_id: run.run_id })) stored.set(e.episode_id, e);
  const groups = new Map<string, EpisodeJob[]>();
  const writer = new EpisodeWriter(store, groups, stored, config.advantage_on ?? "reward");

  const started = process.hrtime.bigint();
  const before = stored.size;
  let ran = 0;
  let errors = 0;
  let steps = 0;
  let outcomeSum = 0;
  let outcomes = 0;
  const onResult = (result: StoredEpisode): Promise<boolean> => {
    ran++;
    steps += result.steps.length;
    if (result.episode.status === "error") errors++;
    else if (result.episode.outcome !== null) {
      outcomeSum += result.episode.outcome;
      outcomes++;
    }
    const written = writer.add(result);
    options.onProgress?.({ done: before + ran, total: waves.total, errors, meanOutcome: outcomes ? outcomeSum / outcomes : null });
    return written;
  };
  options.onProgress?.({ done: before, total: waves.total, errors: 0, meanOutcome: null });
  const runnerOptions = { config, concurrency, registry, source, policyOptions: options.policyOptions, onResult };
  if (options.executor && !loadableByWorkers(entry)) {
    throw new ValidationError("invalid_argument", `environment ${entry.id} is registered only in code, so other processes cannot load it; put it in a module file (--module) to run it on queue workers`);
  }
  const pool = options.executor || !loadableByWorkers(entry) ? null : (options.pool ?? new WorkerPool(options.workers ?? 1, { heapMb: options.workerMemoryMb }));
  try {
    for (let wave: EpisodeJob[] | null = first; wave !== null; wave = waves.next((job) => stored.get(job.episode_id)?.outcome ?? null)) {
      for (const job of wave) {
        const members = groups.get(job.group_id);
        if (members) members.push(job);
        else groups.set(job.group_id, [job]);
      }
      const todo = wave.filter((j) => !stored.has(j.episode_id));
      // A run stopped between storing a group's last episode and setting its advantages: set them now.
      await writer.settleStoredGroups(wave);
      if (source.replayRun) await attachReplayActions(store, source.replayRun, todo);
      // An executor also runs with nothing to do: a queue collects results finished while no enqueuer was alive.
      if (options.executor) await options.executor.run(todo, { ...runnerOptions, storedIds: [...stored.keys()] });
      else if (todo.length > 0) await (pool ? pool.run(todo, runnerOptions) : runJobsInProcess(todo, runnerOptions));
      // The next wave is drawn from these outcomes: every one must be stored first.
      await writer.flush();
    }
  } finally {
    if (pool && pool !== options.pool) await pool.close();
    // Whatever finished is stored, also when the run stops on an error: a resume will not redo it.
    await writer.flush();
  }
  await store.finishRun(run.run_id, "finished");

  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const all = await store.episodes({ run_id: run.run_id });
  return {
    run: (await store.getRun(run.run_id)) as RunRecord,
    episodes: all.length,
    ran,
    errors,
    steps,
    seconds,
    episodes_per_s: ran / Math.max(seconds, 1e-9),
    steps_per_s: steps / Math.max(seconds, 1e-9),
    metrics: runMetrics(all, config.group),
    records: all,
    sampler: waves.sampler?.state() ?? null,
  };
}

/** True when a worker thread can load the entry again: a built-in, or an entry loaded from a module file. */
function loadableByWorkers(entry: EnvironmentEntry): boolean {
  return entry.module !== undefined || BUILTIN_ENVIRONMENTS.includes(entry);
}

/** The config with the module the entry came from among its modules, so worker threads and resumes load it too. */
function withEntryModule(config: RolloutConfig, entry: EnvironmentEntry): RolloutConfig {
  if (entry.module === undefined || config.modules.includes(entry.module)) return config;
  return { ...config, modules: [...config.modules, entry.module] };
}

/** The run id and config: a stored run's to resume (validated again), or a new run's. */
async function resolveRun(options: RolloutOptions): Promise<{ runId: string; config: RolloutConfig; resumed?: RunRecord }> {
  if (options.resume) {
    const run = await options.store.getRun(options.resume);
    if (!run) throw new NotFoundError("unknown_run", `no run "${options.resume}" in the store`);
    return { runId: run.run_id, config: validateConfig(run.config as unknown as RolloutConfig), resumed: run };
  }
  if (!options.config) throw new ValidationError("invalid_argument", "a rollout needs a config or a run to resume");
  return { runId: options.runId ?? newRunId(), config: validateConfig(options.config) };
}

/** Store a new run. Its tool set is read from the planner reset to the first planned task (tools are per episode). */
async function createRun(store: TrajectoryStore, entry: EnvironmentEntry, runId: string, config: RolloutConfig, planner: AnyEnvironment, first: EpisodeJob): Promise<RunRecord> {
  await planner.reset(first.task_id, first.seed);
  const run: RunRecord = {
    run_id: runId,
    env: entry.id,
    env_version: entry.version,
    policy: config.policy,
    policy_checkpoint: config.policy_checkpoint,
    config: config as unknown as JsonValue,
    // The tools of an episode can hold its world's data (an enum of its customers, say).
    tools: config.redaction ? Redactor.forEpisode(config.redaction, planner).redactJson(planner.tools()).value : planner.tools(),
    status: "running",
    planned_episodes: Math.ceil(config.n / config.group) * config.group,
    created_at: new Date().toISOString(),
    finished_at: null,
    tenant: config.tenant ?? null,
  };
  await store.createRun(run);
  return run;
}

async function attachReplayActions(store: TrajectoryStore, runId: string, jobs: EpisodeJob[]): Promise<void> {
  if (!(await store.getRun(runId))) throw new NotFoundError("unknown_run", `replay: no run "${runId}" in the store`);
  for (const job of jobs) {
    const steps = await store.getSteps(episodeIdOf(runId, job.task_id, job.group_index));
    if (steps.length > 0) job.replay_actions = steps.map(sentAction);
  }
}

/** How long a finished episode may wait for others to share its transaction. */
const BATCH_WINDOW_MS = 20;

/**
 * Writes finished episodes in batches (whatever finished while the last write ran goes in the next
 * transaction) and sets advantages when a group is complete.
 */
class EpisodeWriter {
  private pending: Array<{ episode: StoredEpisode; written: (ok: boolean) => void }> = [];
  private writing: Promise<void> = Promise.resolve();
  /** The first failed write: kept and thrown by `flush`, never left as an unhandled rejection. */
  private failure: unknown = null;

  constructor(
    private readonly store: TrajectoryStore,
    private readonly groups: ReadonlyMap<string, EpisodeJob[]>,
    private readonly stored: Map<string, EpisodeRecord>,
    private readonly advantageOn: AdvantageOn,
  ) {}

  /** Queue an episode for the next batch; resolves true once it is stored, false if its batch failed (`flush` throws why). */
  add(episode: StoredEpisode): Promise<boolean> {
    if (this.failure !== null) throw this.failure;
    let written!: (ok: boolean) => void;
    const done = new Promise<boolean>((resolve) => (written = resolve));
    this.pending.push({ episode, written });
    if (this.pending.length === 1) {
      this.writing = this.writing.then(() => this.writeBatch()).catch((error: unknown) => {
        this.failure ??= error;
      });
    }
    return done;
  }

  /** Set the advantages of the complete, already stored groups of `jobs` that have none (a resume's leftovers). */
  async settleStoredGroups(jobs: readonly EpisodeJob[]): Promise<void> {
    const values: Array<{ episode_id: string; advantages: Advantages }> = [];
    for (const groupId of new Set(jobs.map((j) => j.group_id))) {
      const members = (this.groups.get(groupId) ?? []).map((j) => this.stored.get(j.episode_id));
      const settled = members.every((m) => m !== undefined && (m.status !== "ok" || (m.advantages !== null && m.advantages !== undefined)));
      if (settled) continue;
      values.push(...this.groupAdvantages(groupId));
    }
    if (values.length > 0) await this.store.setAdvantages(values);
  }

  async flush(): Promise<void> {
    await this.writing;
    if (this.failure === null && this.pending.length > 0) await this.writeBatch();
    if (this.failure !== null) {
      for (const { written } of this.pending.splice(0)) written(false);
      throw this.failure;
    }
  }

  private async writeBatch(): Promise<void> {
    // Let the episodes of the next few milliseconds join this batch: one transaction for several
    // episodes costs the writing thread far less than one each (a crash loses at most those).
    await new Promise((resolve) => setTimeout(resolve, BATCH_WINDOW_MS));
    const entries = this.pending;
    this.pending = [];
    if (entries.length === 0) return;
    const batch = entries.map((e) => e.episode);
    try {
      await this.store.writeEpisodes(batch);
      const touched = new Set<string>();
      for (const { episode } of batch) {
        this.stored.set(episode.episode_id, episode);
        touched.add(episode.group_id);
      }
      const values: Array<{ episode_id: string; advantages: Advantages }> = [];
      for (const groupId of touched) values.push(...this.groupAdvantages(groupId));
      if (values.length > 0) await this.store.setAdvantages(values);
    } catch (error) {
      for (const { written } of entries) written(false);
      throw error;
    }
    for (const { written } of entries) written(true);
  }

  /** Advantages of a complete group over its ok episodes' total rewards or outcomes (error episodes get none). */
  private groupAdvantages(groupId: string): Array<{ episode_id: string; advantages: Advantages }> {
    const jobs = this.groups.get(groupId) ?? [];
    const members = jobs.map((j) => this.stored.get(j.episode_id));
    if (members.some((m) => m === undefined)) return [];
    const ok = (members as EpisodeRecord[]).filter((m) => m.status === "ok");
    const advantages = groupAdvantages(ok.map((m) => (this.advantageOn === "outcome" ? (m.outcome ?? 0) : m.total_reward)));
    return ok.map((m, i) => ({ episode_id: m.episode_id, advantages: advantages[i] as Advantages }));
  }
}
