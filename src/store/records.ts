/**
 * Validation and JSON (de)serialisation of trajectory store records, shared by every store (SQLite,
 * PostgreSQL) so both accept, refuse and return exactly the same things. Every row keeps its full record
 * as JSON text: what a runner wrote is what an export reads back, field for field.
 *
 * Strings that also land in a filter, order or join column (ids, env, task id, difficulty, run times,
 * owner host) must not contain NUL: PostgreSQL text cannot hold it, and an id with NUL is a bug anywhere.
 * Inside the JSON records NUL is fine: JSON.stringify writes it as the escape \u0000, never as a raw byte.
 */
import { ValidationError } from "../core/errors.js";
import type { RunLivenessRow } from "./liveness.js";
import type { Advantages, AuditAction, AuditEvent, AuditQuery, EpisodeQuery, EpisodeRecord, PurgeCriteria, RunOwner, RunRecord, RunStatus } from "./types.js";

/** An episode row as stores read it: the order columns, the advantages column and the record text. */
export interface EpisodeRow {
  episode_id: string;
  run_id: string;
  task_id: string;
  group_index: number;
  advantages: string | null;
  record: string;
}

/** A run row as stores read it. */
export interface RunRow extends RunLivenessRow {
  finished_at: string | null;
  record: string;
}

/** An episode validated and serialised before its transaction opens, so the write lock is held briefly. */
export interface PreparedEpisode {
  episode: EpisodeRecord;
  record: string;
  advantages: string | null;
  passed: boolean;
  steps: Array<{ step: number; record: string }>;
}

/** A validated query: only the fields that were given, each of the right type. */
export type CleanQuery = EpisodeQuery;

// ---- rows -> records --------------------------------------------------------------------------------

/** The episode a row holds; the advantages column wins over the record's (setAdvantages updates only it). */
export function toEpisode(row: Pick<EpisodeRow, "advantages" | "record">): EpisodeRecord {
  const episode = JSON.parse(row.record) as EpisodeRecord;
  // The column is the truth: setAdvantages updates it without rewriting the record.
  episode.advantages = row.advantages === null ? null : (JSON.parse(row.advantages) as Advantages);
  return episode;
}

/** The run a row holds, its status as read (see liveness.ts), its owner and times from their columns. */
export function toRun(row: RunRow, status: RunStatus): RunRecord {
  const run = JSON.parse(row.record) as RunRecord;
  run.status = status;
  run.finished_at = row.finished_at;
  run.owner = row.owner_host === null || row.owner_pid === null ? null : { host: row.owner_host, pid: Number(row.owner_pid) };
  run.heartbeat_at = row.heartbeat_at;
  return run;
}

/** The record text createRun stores: the owner and heartbeat live in their columns only, so they change without rewriting it. */
export function runRecordText(run: RunRecord): string {
  const { owner: _owner, heartbeat_at: _heartbeat, ...rest } = run;
  return serialise(rest, "run");
}

// ---- validation -------------------------------------------------------------------------------------

const QUERY_KEYS = new Set(["run_id", "env", "task_id", "difficulty", "status", "min_reward", "max_reward", "passed", "tenant", "limit", "offset"]);

/** The query, validated: an unknown field, a wrong type or a NUL in a filter string is invalid_argument. */
export function checkQuery(query: unknown): CleanQuery {
  if (query === undefined || query === null) return {};
  if (!isPlainObject(query)) throw new ValidationError("invalid_argument", "an episode query must be an object");
  const q: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    if (!QUERY_KEYS.has(key)) {
      // A misspelt filter would otherwise silently match every episode.
      throw new ValidationError("invalid_argument", `unknown episode query field ${JSON.stringify(key)} (known: ${[...QUERY_KEYS].join(", ")})`, { field: key });
    }
    if (value === undefined) continue;
    switch (key) {
      case "status":
        if (value !== "ok" && value !== "error") throw badField(`query.status must be "ok" or "error", not ${show(value)}`, key);
        break;
      case "min_reward":
      case "max_reward":
        if (typeof value !== "number" || !Number.isFinite(value)) throw badField(`query.${key} must be a finite number, not ${show(value)}`, key);
        break;
      case "passed":
        if (typeof value !== "boolean") throw badField(`query.passed must be a boolean, not ${show(value)}`, key);
        break;
      case "limit":
      case "offset":
        nonNegativeInteger(value, `query.${key}`);
        break;
      case "tenant":
        if (value !== null) checkTenant(value, "query.tenant");
        break;
      default:
        if (typeof value !== "string") throw badField(`query.${key} must be a string, not ${show(value)}`, key);
        // No stored key holds NUL; refusing it here keeps every store's answer the same.
        if (value.includes("\0")) throw badField(`query.${key} must not contain NUL characters (\\u0000), got ${show(value)}`, key);
    }
    q[key] = value;
  }
  return q as CleanQuery;
}

const RUN_STATUSES: readonly RunStatus[] = ["running", "interrupted", "finished", "failed"];

/** A run owner: a non-empty host name and a positive integer pid. */
export function checkOwner(owner: unknown, where: string): void {
  if (!isPlainObject(owner) || typeof owner.host !== "string" || owner.host === "" || typeof owner.pid !== "number" || !Number.isSafeInteger(owner.pid) || owner.pid < 1) {
    throw new ValidationError("invalid_argument", `${where} must be { host: a non-empty string, pid: a positive integer }`);
  }
  checkNoNul(owner.host, `${where}.host`);
}

/** A run record as createRun takes it; throws invalid_argument naming the first problem. */
export function checkRun(run: unknown): asserts run is RunRecord {
  if (!isPlainObject(run)) throw new ValidationError("invalid_argument", "a run must be an object");
  checkId(run.run_id, "run.run_id");
  for (const key of ["env", "env_version", "policy", "created_at"] as const) checkString(run[key], `run.${key}`);
  checkNullableString(run.policy_checkpoint, "run.policy_checkpoint");
  checkNullableString(run.finished_at, "run.finished_at");
  if (!RUN_STATUSES.includes(run.status as RunStatus)) {
    throw new ValidationError("invalid_argument", `run.status must be one of ${RUN_STATUSES.map((s) => `"${s}"`).join(", ")}, not ${show(run.status)}`);
  }
  for (const key of ["env", "created_at", "finished_at"] as const) if (typeof run[key] === "string") checkNoNul(run[key], `run.${key}`);
  if (run.owner !== undefined && run.owner !== null) checkOwner(run.owner, "run.owner");
  if (run.tenant !== undefined && run.tenant !== null) checkTenant(run.tenant, "run.tenant");
  nonNegativeInteger(run.planned_episodes, "run.planned_episodes");
  if (!Array.isArray(run.tools)) throw new ValidationError("invalid_argument", "run.tools must be an array of tool specs");
  if (run.config === undefined) throw new ValidationError("invalid_argument", "run.config is missing (use null for none)");
  checkJson(run, "run");
}

/** Validate and serialise a batch; throws invalid_argument naming the first problem (in item order, each episode before its steps). */
export function prepareBatch(batch: unknown): PreparedEpisode[] {
  return prepareItems(batch, (step, value, at, id) => ({ step, record: serialise(value, at, id) }));
}

/** A batch item validated except for the JSON of its steps, which `stepRecord` checks and writes later. */
export type PreparedHead = Omit<PreparedEpisode, "steps"> & { steps: Array<{ step: number; value: Record<string, unknown>; at: string }> };

/**
 * Validate a batch and serialise its episode records, leaving the step records (most of the work) to
 * `stepRecord`, so a store can write them while it serialises the next ones. Its first error may not be
 * prepareBatch's: on any error, `batchError` gives the one prepareBatch reports.
 */
export function prepareHeads(batch: unknown): PreparedHead[] {
  return prepareItems(batch, (step, value, at) => ({ step, value, at }));
}

/** The JSON text of one step of a prepared head (invalid_argument if it is not JSON). */
export function stepRecord(head: PreparedHead, step: PreparedHead["steps"][number]): string {
  return serialise(step.value, step.at, head.episode.episode_id);
}

/** The error prepareBatch reports for `batch`, so every store names the same first problem; `fallback` if it finds none. */
export function batchError(batch: unknown, fallback: unknown): unknown {
  try {
    prepareBatch(batch);
  } catch (error) {
    return error;
  }
  return fallback;
}

/** The checks of prepareBatch, item by item; `makeStep` makes each step's entry once its number is checked. */
function prepareItems<S>(batch: unknown, makeStep: (step: number, value: Record<string, unknown>, at: string, id: string) => S): Array<Omit<PreparedEpisode, "steps"> & { steps: S[] }> {
  if (!Array.isArray(batch)) throw new ValidationError("invalid_argument", "writeEpisodes takes an array of { episode, steps }");
  const seen = new Set<string>();
  return batch.map((item: unknown, i) => {
    const where = `episodes[${i}]`;
    if (!isPlainObject(item)) throw new ValidationError("invalid_argument", `${where} must be an object { episode, steps }`);
    const episode = item.episode;
    checkEpisode(episode, `${where}.episode`);
    const id = episode.episode_id;
    if (seen.has(id)) throw new ValidationError("invalid_argument", `episode ${id} appears twice in the batch`, { episode_id: id });
    seen.add(id);
    if (!Array.isArray(item.steps)) throw new ValidationError("invalid_argument", `${where}.steps (episode ${id}) must be an array`, { episode_id: id });
    const stepNumbers = new Set<number>();
    const steps = item.steps.map((step: unknown, j) => {
      const at = `${where}.steps[${j}]`;
      if (!isPlainObject(step)) throw new ValidationError("invalid_argument", `${at} (episode ${id}) must be an object`, { episode_id: id });
      if (step.episode_id !== id) {
        throw new ValidationError("invalid_argument", `${at} belongs to episode ${show(step.episode_id)}, not ${id}`, { episode_id: id });
      }
      const n = step.step;
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
        throw new ValidationError("invalid_argument", `${at}.step (episode ${id}) must be a non-negative integer, not ${show(n)}`, { episode_id: id });
      }
      if (stepNumbers.has(n)) throw new ValidationError("invalid_argument", `episode ${id} has step ${n} twice`, { episode_id: id, step: n });
      stepNumbers.add(n);
      return makeStep(n, step, at, id);
    });
    const verdict = episode.verdict as { passed?: unknown } | null;
    return {
      episode,
      record: serialise(episode, `${where}.episode`, id),
      advantages: episode.advantages === null ? null : JSON.stringify(episode.advantages),
      passed: isPlainObject(verdict) && verdict.passed === true,
      steps,
    };
  });
}

type Kind = "string" | "string?" | "integer" | "count" | "number" | "number?" | "boolean" | "object" | "object?" | "json";

const EPISODE_FIELDS: ReadonlyArray<readonly [keyof EpisodeRecord, Kind]> = [
  ["run_id", "string"],
  ["env", "string"],
  ["env_version", "string"],
  ["task_id", "string"],
  ["difficulty", "string"],
  ["seed", "integer"],
  ["group_id", "string"],
  ["group_index", "count"],
  ["policy", "string"],
  ["policy_checkpoint", "string?"],
  ["error", "object?"],
  ["steps", "count"],
  ["tokens", "count"],
  ["total_reward", "number"],
  ["outcome", "number?"],
  ["reward_components", "object"],
  ["verdict", "json"],
  ["end_reason", "string?"],
  ["terminated", "boolean"],
  ["truncated", "boolean"],
  ["cost", "number"],
  ["tool_calls", "object"],
  ["started_at", "string"],
  ["finished_at", "string"],
  ["duration_ms", "number"],
];

function checkEpisode(episode: unknown, where: string): asserts episode is EpisodeRecord {
  if (!isPlainObject(episode)) throw new ValidationError("invalid_argument", `${where} must be an episode record object`);
  checkId(episode.episode_id, `${where}.episode_id`);
  const id = episode.episode_id as string;
  const fail = (message: string) => new ValidationError("invalid_argument", `${where}.${message} (episode ${id})`, { episode_id: id });
  for (const [key, kind] of EPISODE_FIELDS) {
    const v = episode[key];
    const ok =
      kind === "string" ? typeof v === "string"
      : kind === "string?" ? v === null || typeof v === "string"
      : kind === "integer" ? typeof v === "number" && Number.isSafeInteger(v)
      : kind === "count" ? typeof v === "number" && Number.isSafeInteger(v) && v >= 0
      : kind === "number" ? typeof v === "number" && Number.isFinite(v)
      : kind === "number?" ? v === null || (typeof v === "number" && Number.isFinite(v))
      : kind === "boolean" ? typeof v === "boolean"
      : kind === "object" ? isPlainObject(v)
      : kind === "object?" ? v === null || isPlainObject(v)
      : v !== undefined;
    if (!ok) throw fail(`${key} must be ${KIND_TEXT[kind]}, not ${show(v)}`);
  }
  if (episode.status !== "ok" && episode.status !== "error") throw fail(`status must be "ok" or "error", not ${show(episode.status)}`);
  for (const key of ["run_id", "env", "task_id", "difficulty"] as const) checkNoNul(episode[key] as string, `${where}.${key}`, { episode_id: id });
  checkAdvantages(episode.advantages, `${where}.advantages`, true, id);
}

const KIND_TEXT: Record<Kind, string> = {
  string: "a string",
  "string?": "a string or null",
  integer: "an integer",
  count: "a non-negative integer",
  number: "a finite number",
  "number?": "a finite number or null",
  boolean: "a boolean",
  object: "an object",
  "object?": "an object or null",
  json: "a JSON value or null",
};

/** Advantages: { grpo, dr_grpo, rloo }, each a finite number (or null when `nullable`). */
export function checkAdvantages(value: unknown, where: string, nullable: boolean, episodeId?: string): void {
  const details = episodeId === undefined ? {} : { episode_id: episodeId };
  const suffix = episodeId === undefined ? "" : ` (episode ${episodeId})`;
  if (value === null && nullable) return;
  if (!isPlainObject(value)) {
    throw new ValidationError("invalid_argument", `${where} must be { grpo, dr_grpo, rloo }${nullable ? " or null" : ""}, not ${show(value)}${suffix}`, details);
  }
  for (const key of ["grpo", "dr_grpo", "rloo"] as const) {
    const v = value[key];
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new ValidationError("invalid_argument", `${where}.${key} must be a finite number, not ${show(v)}${suffix}`, details);
    }
  }
}

/** JSON text of a record, refusing what JSON would silently change (NaN becomes null, functions vanish). */
export function serialise(value: unknown, where: string, episodeId?: string): string {
  checkJson(value, where, episodeId);
  try {
    return JSON.stringify(value);
  } catch (error) {
    throw new ValidationError("invalid_argument", `${where} cannot be stored as JSON: ${error instanceof Error ? error.message : String(error)}`, episodeId ? { episode_id: episodeId } : {});
  }
}

const MAX_DEPTH = 64;

function checkJson(value: unknown, where: string, episodeId?: string): void {
  const problem = findNonJson(value, 0);
  if (!problem) return;
  const [reason, ...path] = problem;
  const at = where + path.reverse().join("");
  throw new ValidationError("invalid_argument", `${at} ${reason}${episodeId ? ` (episode ${episodeId})` : ""}`, {
    path: at,
    ...(episodeId ? { episode_id: episodeId } : {}),
  });
}

/** The first value JSON cannot carry faithfully: [reason, ...path segments innermost first], or undefined. */
function findNonJson(value: unknown, depth: number): string[] | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "undefined":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : [`is ${value}: JSON has no non-finite numbers`];
    case "bigint":
      return ["is a bigint: JSON has no bigints"];
    case "function":
    case "symbol":
      return [`is a ${typeof value}: not JSON`];
  }
  if (value === null) return undefined;
  // Past this depth the value is almost surely circular; JSON.stringify would throw anyway.
  if (depth > MAX_DEPTH) return [`is nested more than ${MAX_DEPTH} levels deep (circular?)`];
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = findNonJson(value[i], depth + 1);
      if (p) return (p.push(`[${i}]`), p);
    }
    return undefined;
  }
  const obj = value as Record<string, unknown>;
  for (const key in obj) {
    if (!Object.prototype.hasOwnProperty.call(obj, key)) continue;
    const p = findNonJson(obj[key], depth + 1);
    if (p) return (p.push(/^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`), p);
  }
  return undefined;
}

/** An id: a non-empty string without NUL. */
export function checkId(value: unknown, name: string): asserts value is string {
  if (typeof value !== "string" || value.length === 0) throw new ValidationError("invalid_argument", `${name} must be a non-empty string, not ${show(value)}`);
  checkNoNul(value, name);
}

/** Refuse NUL in a string stored in a column (see the module comment). */
function checkNoNul(value: string, name: string, details: Record<string, unknown> = {}): void {
  if (value.includes("\0")) throw new ValidationError("invalid_argument", `${name} must not contain NUL characters (\\u0000), got ${show(value)}`, details);
}

function checkString(value: unknown, name: string): void {
  if (typeof value !== "string") throw new ValidationError("invalid_argument", `${name} must be a string, not ${show(value)}`);
}

function checkNullableString(value: unknown, name: string): void {
  if (value !== null && typeof value !== "string") throw new ValidationError("invalid_argument", `${name} must be a string or null, not ${show(value)}`);
}

/** `value` if it is a non-negative safe integer, else invalid_argument naming `name`. */
export function nonNegativeInteger(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError("invalid_argument", `${name} must be a non-negative integer, not ${show(value)}`, { [name]: show(value) });
  }
  return value;
}

/** `value` if it is a positive safe integer, else invalid_argument naming `name`. */
export function positiveInteger(value: unknown, name: string): number {
  if (nonNegativeInteger(value, name) === 0) throw new ValidationError("invalid_argument", `${name} must be at least 1`);
  return value as number;
}

function badField(message: string, field: string): ValidationError {
  return new ValidationError("invalid_argument", message, { field });
}

/** True for `{...}` objects (no arrays, class instances or null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A short, safe rendering of a bad value for an error message. */
export function show(value: unknown): string {
  if (value === undefined) return "undefined (missing)";
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

// ---- arguments of the other store calls -------------------------------------------------------------

/** listRuns options: the row limit (null: every run) and the tenant filter (undefined: every tenant); unknown options are invalid_argument. */
export function checkListRunsOptions(options: unknown): { limit: number | null; tenant: string | null | undefined } {
  if (!isPlainObject(options)) throw new ValidationError("invalid_argument", "listRuns options must be an object");
  for (const key of Object.keys(options)) {
    if (key !== "limit" && key !== "tenant") throw new ValidationError("invalid_argument", `unknown listRuns option ${JSON.stringify(key)}`, { option: key });
  }
  if (options.tenant !== undefined && options.tenant !== null) checkTenant(options.tenant, "tenant");
  return { limit: options.limit === undefined ? null : nonNegativeInteger(options.limit, "limit"), tenant: options.tenant as string | null | undefined };
}

/** A tenant name: 1-64 characters of letters, digits, ".", "_" and "-" (it lands in columns, logs and URLs). */
export function checkTenant(value: unknown, name: string): asserts value is string {
  if (typeof value !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(value)) {
    throw new ValidationError("invalid_argument", `${name} must be a tenant name (1-64 letters, digits, ".", "_" or "-", starting with a letter or digit), not ${show(value)}`);
  }
}

const PURGE_KEYS = new Set(["finished_before", "tenant", "env", "run_id", "episode_ids", "dry_run", "limit"]);

/** Purge criteria, validated: at least one filter, so a purge never removes everything by omission. */
export function checkPurgeCriteria(criteria: unknown): PurgeCriteria {
  if (!isPlainObject(criteria)) throw new ValidationError("invalid_argument", "purge criteria must be an object");
  for (const key of Object.keys(criteria)) {
    if (!PURGE_KEYS.has(key)) throw new ValidationError("invalid_argument", `unknown purge criterion ${JSON.stringify(key)} (known: ${[...PURGE_KEYS].join(", ")})`);
  }
  const c = criteria as PurgeCriteria;
  if (c.finished_before !== undefined && (typeof c.finished_before !== "string" || Number.isNaN(Date.parse(c.finished_before)))) {
    throw new ValidationError("invalid_argument", `purge.finished_before must be an ISO time, not ${show(c.finished_before)}`);
  }
  if (c.tenant !== undefined && c.tenant !== null) checkTenant(c.tenant, "purge.tenant");
  if (c.env !== undefined) checkId(c.env, "purge.env");
  if (c.run_id !== undefined) checkId(c.run_id, "purge.run_id");
  if (c.episode_ids !== undefined) {
    if (!Array.isArray(c.episode_ids)) throw new ValidationError("invalid_argument", "purge.episode_ids must be an array of episode ids");
    c.episode_ids.forEach((id, i) => checkId(id, `purge.episode_ids[${i}]`));
  }
  if (c.dry_run !== undefined && typeof c.dry_run !== "boolean") throw new ValidationError("invalid_argument", "purge.dry_run must be a boolean");
  if (c.limit !== undefined) positiveInteger(c.limit, "purge.limit");
  if (c.finished_before === undefined && c.tenant === undefined && c.env === undefined && c.run_id === undefined && c.episode_ids === undefined) {
    throw new ValidationError("invalid_argument", "a purge needs at least one of finished_before, tenant, env, run_id or episode_ids");
  }
  return c;
}

export const AUDIT_ACTIONS: readonly AuditAction[] = ["create", "read", "export", "replay", "delete", "purge", "denied"];

/** Audit events, validated, each with its detail as JSON text. */
export function prepareAuditEvents(events: unknown): Array<{ event: AuditEvent; detail: string }> {
  if (!Array.isArray(events)) throw new ValidationError("invalid_argument", "appendAudit takes an array of audit events");
  return events.map((e: unknown, i) => {
    const where = `events[${i}]`;
    if (!isPlainObject(e)) throw new ValidationError("invalid_argument", `${where} must be an object`);
    for (const key of ["at", "token", "target_kind", "target_id", "via"] as const) checkId(e[key], `${where}.${key}`);
    if (e.token_id !== null) checkId(e.token_id, `${where}.token_id`);
    if (e.tenant !== null) checkTenant(e.tenant, `${where}.tenant`);
    if (!AUDIT_ACTIONS.includes(e.action as AuditAction)) throw new ValidationError("invalid_argument", `${where}.action must be one of ${AUDIT_ACTIONS.join(", ")}, not ${show(e.action)}`);
    return { event: e as unknown as AuditEvent, detail: serialise(e.detail ?? null, `${where}.detail`) };
  });
}

const AUDIT_QUERY_KEYS = new Set(["token", "tenant", "action", "target_id", "since", "until", "limit"]);

/** An audit query, validated (limit defaults to 100). */
export function checkAuditQuery(query: unknown): AuditQuery & { limit: number } {
  if (query === undefined) return { limit: 100 };
  if (!isPlainObject(query)) throw new ValidationError("invalid_argument", "an audit query must be an object");
  for (const [key, value] of Object.entries(query)) {
    if (!AUDIT_QUERY_KEYS.has(key)) throw new ValidationError("invalid_argument", `unknown audit query field ${JSON.stringify(key)} (known: ${[...AUDIT_QUERY_KEYS].join(", ")})`);
    if (value === undefined || key === "limit") continue;
    if (key === "action" && !AUDIT_ACTIONS.includes(value as AuditAction)) throw new ValidationError("invalid_argument", `audit action must be one of ${AUDIT_ACTIONS.join(", ")}, not ${show(value)}`);
    if ((key === "since" || key === "until") && (typeof value !== "string" || Number.isNaN(Date.parse(value)))) throw new ValidationError("invalid_argument", `audit ${key} must be an ISO time, not ${show(value)}`);
    checkId(value, `audit query ${key}`);
  }
  const limit = query.limit === undefined ? 100 : positiveInteger(query.limit, "audit query limit");
  return { ...(query as AuditQuery), limit };
}

/** The status finishRun takes: a run is left finished, failed or interrupted. */
export function checkFinishStatus(status: unknown): asserts status is Exclude<RunStatus, "running"> {
  if (status !== "finished" && status !== "failed" && status !== "interrupted") {
    throw new ValidationError("invalid_argument", `a run can only be left "finished", "failed" or "interrupted", not ${JSON.stringify(status)}`, { status: String(status) });
  }
}

/** The run ids heartbeatRuns takes. */
export function checkRunIds(runIds: unknown): asserts runIds is readonly string[] {
  if (!Array.isArray(runIds)) throw new ValidationError("invalid_argument", "heartbeatRuns takes an array of run ids");
  runIds.forEach((id, i) => checkId(id, `runIds[${i}]`));
}

/** setAdvantages' values, validated, each with its advantages as JSON text. */
export function prepareAdvantages(values: unknown): Array<{ episode_id: string; advantages: string }> {
  if (!Array.isArray(values)) throw new ValidationError("invalid_argument", "setAdvantages takes an array of { episode_id, advantages }");
  return values.map((v: unknown, i) => {
    const where = `values[${i}]`;
    if (!isPlainObject(v)) throw new ValidationError("invalid_argument", `${where} must be an object`);
    checkId(v.episode_id, `${where}.episode_id`);
    checkAdvantages(v.advantages, `${where}.advantages`, false);
    return { episode_id: v.episode_id, advantages: JSON.stringify(v.advantages as Advantages) };
  });
}

/** The store's owner option, checked (default: this process). */
export function ownerOption(owner: RunOwner | undefined, fallback: () => RunOwner): RunOwner {
  const value = owner ?? fallback();
  checkOwner(value, "options.owner");
  return value;
}

/** The message of a thrown value. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
