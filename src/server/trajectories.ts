/**
 * The service's trajectory operations (DESIGN §6, §9): runs, their metrics and episodes, one episode,
 * replay, export and deletion, each for one caller. A caller sees the runs of its own tenant only (and
 * only of the environments its token may use); admins and callers of a service without tenants see
 * every run. What a caller may not see answers exactly as what does not exist (unknown_run,
 * unknown_episode), so ids of other tenants cannot be probed; the refusal is audited as `denied`.
 * Every read, export, replay and deletion is audited before it is answered.
 */
import { createReadStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { LlmixError, NotFoundError, ValidationError } from "../core/errors.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import type { TaskDescription } from "../hosts/host-jobs.js";
import { runMetrics, type SliceMetrics } from "../rollout/metrics.js";
import type { ReplayReport } from "../rollout/replay.js";
import { EXPORT_FORMATS, exportEpisodes, exportRedactor, type ExportResult } from "../store/export/index.js";
import type { RedactionRules } from "../store/redaction.js";
import type { AuditEvent, AuditQuery, EpisodeQuery, EpisodeRecord, PurgeCriteria, PurgeResult, RunRecord, StoredEpisode, TrajectoryStore } from "../store/types.js";
import { actorOf, AuditLog } from "./audit.js";
import type { Caller, SessionManager } from "./sessions.js";

/** A run as the service lists it: its record (tenant included) and how many episodes it holds. */
export type RunSummary = RunRecord & { tenant: string | null; episodes: number };

/** Most episodes a run's metrics are computed over (a larger run is summarised from its first ones). */
export const MAX_METRIC_EPISODES = 100_000;
/** Most episodes one page lists. */
export const MAX_PAGE = 1000;

/** How a request reached the operation, for the audit log. */
export type Via = "http" | "ws" | "mcp" | "cli";

/** Trajectory reads and writes for one caller at a time; see the module comment. */
export class TrajectoryOperations {
  readonly audit: AuditLog;

  constructor(
    private readonly registry: EnvironmentRegistry,
    /** Runs the jobs that need environment code (task features, replay); the CLI runs none of them here. */
    private readonly manager: SessionManager | undefined,
    private readonly store: TrajectoryStore | undefined,
    /** The redaction applied to exports (the second gate, after the one before storage), if any. */
    private readonly redaction?: RedactionRules,
  ) {
    this.audit = new AuditLog(store);
  }

  /** GET /v1/runs: the caller's runs, newest first. */
  async runs(caller: Caller, query: Record<string, unknown>, via: Via): Promise<{ runs: RunSummary[] }> {
    const store = this.requireStore();
    const limit = optionalInteger(query.limit, "limit", 1, 1000) ?? 100;
    const tenantFilter = restrictedTenant(caller);
    const runs = (await store.listRuns({ limit, ...(tenantFilter !== undefined ? { tenant: tenantFilter } : {}) })).filter((r) => visible(caller, r));
    // One count per run, yielding between them: each is a synchronous index scan in SQLite, and a tenant
    // with many large runs must not hold the serving thread for the sum of them.
    const summaries: RunSummary[] = [];
    for (const r of runs) {
      summaries.push({ ...r, tenant: r.tenant ?? null, episodes: await store.countEpisodes({ run_id: r.run_id }) });
      await yieldToOthers();
    }
    await this.audit.record(actorOf(caller), "read", { kind: "runs", id: "*" }, via, { count: summaries.length });
    return { runs: summaries };
  }

  /** GET /v1/runs/:id: the run and its metrics per environment and difficulty. */
  async run(caller: Caller, runId: string, via: Via): Promise<{ run: RunSummary; metrics: SliceMetrics[] }> {
    const run = await this.visibleRun(caller, runId, via);
    const store = this.requireStore();
    const episodes = await episodesOf(store, runId);
    await this.audit.record(actorOf(caller), "read", { kind: "run", id: runId }, via);
    return { run: { ...run, tenant: run.tenant ?? null, episodes: episodes.length }, metrics: runMetrics(episodes) };
  }

  /** GET /v1/runs/:id/episodes: one page of the run's episodes with the total matching the filters. */
  async runEpisodes(caller: Caller, runId: string, query: Record<string, unknown>, via: Via): Promise<{ episodes: EpisodeRecord[]; total: number }> {
    await this.visibleRun(caller, runId, via);
    const store = this.requireStore();
    const filter: EpisodeQuery = { run_id: runId };
    if (query.difficulty !== undefined) filter.difficulty = stringParam(query.difficulty, "difficulty");
    if (query.status !== undefined) filter.status = stringParam(query.status, "status") as EpisodeQuery["status"];
    if (query.passed !== undefined) filter.passed = booleanParam(query.passed, "passed");
    const limit = optionalInteger(query.limit, "limit", 1, MAX_PAGE) ?? 100;
    const offset = optionalInteger(query.offset, "offset", 0, Number.MAX_SAFE_INTEGER) ?? 0;
    const [episodes, total] = await Promise.all([store.episodes({ ...filter, limit, offset }), store.countEpisodes(filter)]);
    await this.audit.record(actorOf(caller), "read", { kind: "run", id: runId }, via, { episodes: episodes.length, offset });
    return { episodes, total };
  }

  /** GET /v1/runs/:id/tasks: each task of the run with its scenario family and features (computed on a host). */
  async runTasks(caller: Caller, runId: string, via: Via): Promise<{ tasks: Record<string, TaskDescription> }> {
    const run = await this.visibleRun(caller, runId, via);
    const store = this.requireStore();
    this.registry.get(run.env);
    const ids = new Set<string>();
    for (const e of await episodesOf(store, runId)) ids.add(e.task_id);
    return (await this.requireManager().job({ kind: "task_features", env: run.env, task_ids: [...ids].slice(0, 10_000) })) as { tasks: Record<string, TaskDescription> };
  }

  /** GET /v1/episodes/:id: the stored episode and its steps. */
  async episode(caller: Caller, episodeId: string, via: Via): Promise<StoredEpisode> {
    const { stored } = await this.readEpisode(caller, episodeId, via);
    await this.audit.record(actorOf(caller), "read", { kind: "episode", id: episodeId }, via);
    return stored;
  }

  /** POST /v1/episodes/:id/replay: the stored actions re-run on a fresh environment, on a host. */
  async replay(caller: Caller, episodeId: string, via: Via): Promise<ReplayReport> {
    const { stored, run } = await this.readEpisode(caller, episodeId, via);
    this.registry.get(stored.episode.env);
    // The run's environment options (e.g. a step budget) shape the episode; the replay needs the same.
    const envOptions = (run.config as { env_options?: Record<string, unknown> } | null)?.env_options ?? {};
    await this.audit.record(actorOf(caller), "replay", { kind: "episode", id: episodeId }, via);
    return (await this.requireManager().job({ kind: "replay", stored, env_options: envOptions })) as ReplayReport;
  }

  /**
   * GET /v1/runs/:id/export?format=: the run's episodes as a dataset file, written to a private
   * temporary file first (exports are files: Parquet needs its footer) and streamed from there.
   */
  async export(caller: Caller, runId: string, query: Record<string, unknown>, via: Via): Promise<{ result: ExportResult; stream: Readable; contentType: string }> {
    const run = await this.visibleRun(caller, runId, via);
    const store = this.requireStore();
    const format = stringParam(query.format ?? "jsonl", "format");
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
      throw new NotFoundError("unknown_format", `unknown export format "${format}"; valid: ${EXPORT_FORMATS.join(", ")}`);
    }
    const dir = await mkdtemp(join(tmpdir(), "llmix-export-"));
    const out = join(dir, `export.${format === "verl" || format === "verl-sft" ? "parquet" : "jsonl"}`);
    try {
      const redactor = exportRedactor(this.redaction ?? redactionOf(run));
      const result = await exportEpisodes({ run, episodes: store.streamEpisodes({ run_id: runId }) }, { format, out, ...(redactor ? { redactor } : {}) });
      await this.audit.record(actorOf(caller), "export", { kind: "run", id: runId }, via, { format, rows: result.rows, bytes: result.bytes });
      const stream = createReadStream(out);
      stream.once("close", () => void rm(dir, { recursive: true, force: true }));
      return { result, stream, contentType: out.endsWith(".parquet") ? "application/vnd.apache.parquet" : "application/x-ndjson" };
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** DELETE /v1/episodes/:id: remove one episode with its steps (and its run, if it was the last). */
  async deleteEpisode(caller: Caller, episodeId: string, via: Via): Promise<PurgeResult> {
    await this.visibleEpisode(caller, episodeId, via);
    return this.requireStore().purge({ episode_ids: [episodeId] }, (r) => this.audit.event(actorOf(caller), "delete", { kind: "episode", id: episodeId }, via, { steps: r.steps, runs: r.runs }));
  }

  /** DELETE /v1/runs/:id: remove a run's episodes, their steps and the run (refused while it is running). */
  async deleteRun(caller: Caller, runId: string, via: Via): Promise<PurgeResult> {
    const run = await this.visibleRun(caller, runId, via);
    if (run.status === "running") throw new ValidationError("invalid_argument", `run ${runId} is running; delete it once it has finished or been interrupted`);
    return this.requireStore().purge({ run_id: runId }, (r) => this.audit.event(actorOf(caller), "delete", { kind: "run", id: runId }, via, { episodes: r.episodes.length, steps: r.steps }));
  }

  /** POST /v1/purge (admin): remove what the criteria match; the audit event goes in the purge's own transaction. */
  async purge(caller: Caller, criteria: PurgeCriteria, via: Via | "schedule", rule?: string): Promise<PurgeResult> {
    return this.requireStore().purge(criteria, (r) =>
      this.audit.event(actorOf(caller), "purge", { kind: "episodes", id: rule ?? "request" }, via, {
        criteria: criteria as unknown as Record<string, string>, episodes: r.episodes.length, steps: r.steps, runs: r.runs,
      }),
    );
  }

  /** GET /v1/audit (admin): audit events, newest first. */
  async auditLog(query: Record<string, unknown>): Promise<{ events: AuditEvent[] }> {
    const q: AuditQuery = {};
    for (const key of ["token", "tenant", "action", "target_id", "since", "until"] as const) if (query[key] !== undefined) (q as Record<string, unknown>)[key] = stringParam(query[key], key);
    const limit = optionalInteger(query.limit, "limit", 1, 10_000);
    if (limit !== undefined) q.limit = limit;
    return { events: await this.requireStore().auditLog(q) };
  }

  /** A run the caller may see (not audited as a read: the caller's operation is); any other is unknown_run, and the attempt is audited. */
  async visibleRun(caller: Caller, runId: string, via: Via): Promise<RunRecord> {
    const run = await this.requireStore().getRun(runId);
    if (run && visible(caller, run)) return run;
    if (run) await this.audit.record(actorOf(caller), "denied", { kind: "run", id: runId }, via, { owner: run.tenant ?? null });
    throw new NotFoundError("unknown_run", `no run "${runId}" in the trajectory store (llmix runs or GET /v1/runs lists them; over HTTP send ids URL-encoded)`);
  }

  /** An episode with its steps and its run, if the caller may see them (see visibleEpisode). */
  async readEpisode(caller: Caller, episodeId: string, via: Via): Promise<{ stored: StoredEpisode; run: RunRecord }> {
    const { episode, run } = await this.visibleEpisode(caller, episodeId, via);
    return { stored: { episode, steps: await this.requireStore().getSteps(episodeId) }, run };
  }

  /** An episode row (without its steps) and its run, if the caller may see them; any other is unknown_episode, and the attempt is audited. */
  private async visibleEpisode(caller: Caller, episodeId: string, via: Via): Promise<{ episode: EpisodeRecord; run: RunRecord }> {
    const store = this.requireStore();
    const episode = await store.getEpisode(episodeId);
    const run = episode && (await store.getRun(episode.run_id));
    if (episode && run && visible(caller, run)) return { episode, run };
    if (episode) await this.audit.record(actorOf(caller), "denied", { kind: "episode", id: episodeId }, via, { owner: run?.tenant ?? null });
    throw new NotFoundError("unknown_episode", `no episode "${episodeId}" in the trajectory store (llmix episodes --run RUN lists them; over HTTP send ids URL-encoded: "/" as %2F)`);
  }

  private requireManager(): SessionManager {
    if (!this.manager) throw new LlmixError("internal", "this operation runs environment code and needs environment hosts");
    return this.manager;
  }

  private requireStore(): TrajectoryStore {
    if (!this.store) throw new LlmixError("store_error", "this service runs without a trajectory store");
    return this.store;
  }
}

/**
 * A run's episode rows (at most MAX_METRIC_EPISODES), read in pages with a yield between them: a large
 * run never holds the serving thread (SQLite reads are synchronous) for more than one page.
 */
async function episodesOf(store: TrajectoryStore, runId: string): Promise<EpisodeRecord[]> {
  const out: EpisodeRecord[] = [];
  for (;;) {
    const page = await store.episodes({ run_id: runId, limit: Math.min(METRIC_PAGE, MAX_METRIC_EPISODES - out.length), offset: out.length });
    out.push(...page);
    if (page.length < METRIC_PAGE || out.length >= MAX_METRIC_EPISODES) return out;
    await yieldToOthers();
  }
}

/** Let the requests that arrived meanwhile run (a resolved await alone does not: I/O waits for the next turn). */
export function yieldToOthers(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Episode rows per read when a whole run is summarised. */
const METRIC_PAGE = 2000;

/** The redaction rules a run was recorded under (a rollout keeps them in its config), if any. */
export function redactionOf(run: Pick<RunRecord, "config">): RedactionRules | undefined {
  const config = run.config as { redaction?: RedactionRules } | null;
  return config && typeof config === "object" && !Array.isArray(config) ? config.redaction : undefined;
}

/** The tenant a caller is confined to (undefined: none — no auth, admin, or a service without tenants). */
function restrictedTenant(caller: Caller): string | undefined {
  if (caller === null || caller.admin || !caller.tenant) return undefined;
  return caller.tenant;
}

/** Whether `caller` may see `run`: its tenant's, of an environment its token may use (admins and tenantless callers see all). */
export function visible(caller: Caller, run: Pick<RunRecord, "tenant" | "env">): boolean {
  const tenant = restrictedTenant(caller);
  if (tenant === undefined) return true;
  if ((run.tenant ?? null) !== tenant) return false;
  return !caller?.environments || caller.environments.includes(run.env);
}

function stringParam(value: unknown, name: string): string {
  if (typeof value !== "string" || value === "" || value.length > 512) throw new ValidationError("invalid_argument", `${name} must be a non-empty string of at most 512 characters`);
  return value;
}

function booleanParam(value: unknown, name: string): boolean {
  if (value === true || value === "true") return true;
  if (value === false || value === "false") return false;
  throw new ValidationError("invalid_argument", `${name} must be true or false, got ${JSON.stringify(value)}`);
}

function optionalInteger(value: unknown, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === "string" && /^\d{1,16}$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < min || n > max) throw new ValidationError("invalid_argument", `${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return n;
}
