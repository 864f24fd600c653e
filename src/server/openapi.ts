/**
 * The request body schemas of the service (zod: the same objects validate requests and, through
 * `z.toJSONSchema`, document them) and its OpenAPI 3.1 document. Responses are described by hand; the
 * wire shapes are those of src/server/sessions.ts, src/store/types.ts and src/rollout/replay.ts.
 */
import { z } from "zod";
import { ERROR_CODES } from "../core/errors.js";
import { HTTP_STATUS } from "./http-errors.js";

const seed = z.number().int().min(0).max(0xffffffff).describe("Episode seed: an integer in [0, 2^32 - 1].");
/** Longest policy_checkpoint: it is stored with every step record, so it is a name, not a payload. */
export const MAX_CHECKPOINT_CHARS = 256;
/** Longest environment or task id a request may name. */
export const MAX_ID_CHARS = 256;
const options = {
  policy_checkpoint: z.string().max(MAX_CHECKPOINT_CHARS).nullable().optional().describe(`Recorded with every step of a recorded session (at most ${MAX_CHECKPOINT_CHARS} characters).`),
  record: z.boolean().optional().describe("Write every step to the trajectory store (the episode id is the session id)."),
};
const snapshot = z.record(z.string(), z.unknown()).describe("An environment snapshot, as GET /v1/sessions/{id}/snapshot returns it.");

/** POST /v1/sessions: a new episode. */
export const NewSessionBody = z.object({
  env: z.string().min(1).max(MAX_ID_CHARS).describe("Environment id, e.g. billing-dispute."),
  task_id: z.string().min(1).max(MAX_ID_CHARS).describe("Task id, e.g. billing-dispute/easy/seed-1."),
  seed,
  ...options,
});

/** POST /v1/sessions: a fork of a snapshot. */
export const ForkSessionBody = z.object({ snapshot, ...options });

/** POST /v1/sessions: either form. */
export const CreateSessionBody = z.union([NewSessionBody, ForkSessionBody]);

/**
 * POST /v1/sessions/{id}/step. `action` must be a JSON object; its contents are the environment's to
 * judge (a malformed action is answered with an error observation and the `invalid_call` component).
 */
export const StepBody = z.object({
  action: z
    .record(z.string(), z.unknown())
    .describe('{"type":"tool_call","tool":NAME,"args":{...},"call_id"?:ID} or {"type":"message","content":TEXT}'),
  expect_steps: z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe(
      "The steps the session has taken before this action, as the client counted. A retry whose first try was applied but whose answer was lost gets that answer again (the action is not applied twice); any other mismatch is step_conflict (409).",
    ),
});

/** POST /v1/tasks/sample: a new sampler (spec) or the state of the last answer, results, and how many to draw. */
export const SampleTasksBody = z
  .object({
    env: z.string().min(1).max(MAX_ID_CHARS).describe("Environment id, e.g. billing-dispute."),
    spec: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('A new sampler: {"kind":"mix","weights":{...}}, {"kind":"schedule","stages":[...]} or {"kind":"curriculum","cells":[...]} (docs/tasks.md).'),
    state: z.record(z.string(), z.unknown()).optional().describe("The `state` of the last answer: continue that sampler."),
    split: z.enum(["train", "eval"]).optional().describe("A new sampler's split (default train)."),
    seed: z.number().int().min(0).max(0xffffffff).optional().describe("A new sampler's seed (default 0)."),
    n: z.number().int().min(0).max(100_000).optional().describe("Task ids to draw (default 10)."),
    step: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe("The training step (schedules ramp over it; default 0)."),
    results: z
      .array(z.object({ task_id: z.string().min(1).max(MAX_ID_CHARS), outcome: z.number().min(0).max(1) }))
      .max(100_000)
      .optional()
      .describe("Outcomes of tasks drawn before, for an adaptive curriculum."),
  })
  .refine((b) => (b.spec === undefined) !== (b.state === undefined), { message: "give either spec (a new sampler) or state (continue one), not both or neither" });

/** POST /v1/sessions/{id}/restore. */
export const RestoreBody = z.object({ snapshot });

/** A route as fastify registered it. */
export interface RouteInfo {
  method: string;
  url: string;
  /** An operation object a route may bring along (routes added through `extraRoutes`). */
  openapi?: Record<string, unknown>;
}

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json) => ({ "application/json": { schema } });
const ok = (description: string, schema: Json, status = "200") => ({ [status]: { description, content: json(schema) } });
const body = (schema: z.ZodType, description: string) => ({ required: true, description, content: json(z.toJSONSchema(schema, { io: "input" }) as Json) });
const errors = (...codes: Array<keyof typeof HTTP_STATUS>) => {
  const byStatus = new Map<number, string[]>();
  for (const code of codes) byStatus.set(HTTP_STATUS[code] as number, [...(byStatus.get(HTTP_STATUS[code] as number) ?? []), code]);
  const out: Json = {};
  for (const [status, list] of byStatus) {
    out[String(status)] = { description: `Error: ${list.join(", ")}`, content: json(ref("Error")) };
  }
  return out;
};
const sessionId = { name: "id", in: "path", required: true, schema: { type: "string" }, description: "Session id (ses_...)." };
const episodeId = {
  name: "id",
  in: "path",
  required: true,
  schema: { type: "string" },
  description: "Episode id, URL-encoded (ids may contain '/', sent as %2F).",
};
const envId = { name: "env", in: "path", required: true, schema: { type: "string" }, description: "Environment id." };
const runId = { name: "id", in: "path", required: true, schema: { type: "string" }, description: "Run id, URL-encoded." };
const queryParam = (name: string, description: string, schema: Json = { type: "string" }) => ({ name, in: "query", required: false, schema, description });
const PURGE_RESULT = {
  type: "object",
  required: ["episodes", "steps", "runs"],
  properties: { episodes: { type: "array", items: { type: "string" } }, steps: { type: "integer" }, runs: { type: "array", items: { type: "string" } } },
};
const RUN_SUMMARY = { allOf: [ref("RunRecord"), { type: "object", properties: { tenant: { type: ["string", "null"] }, episodes: { type: "integer" } } }] };
const AUTH = errors("unauthorized", "forbidden");
const SESSION_CODES = ["unknown_session", "session_busy", "step_timeout", "resource_exhausted", "capacity_reached", "fleet_unavailable"] as const;
const SESSION = errors(...SESSION_CODES);

/** The body of GET /readyz. */
const readiness = {
  type: "object",
  required: ["status", "checks"],
  properties: {
    status: { enum: ["ready", "unready"] },
    checks: {
      type: "object",
      description: "hosts, store and (in a fleet) fleet: each {ok, error?, ...figures}.",
      additionalProperties: { type: "object", required: ["ok"], properties: { ok: { type: "boolean" }, error: { type: "string" } } },
    },
  },
} as const;

/** Hand-written operations of the core routes, by "METHOD path" (OpenAPI path syntax). */
const OPERATIONS: Record<string, Json> = {
  "GET /healthz": {
    operationId: "health",
    summary: "Liveness: ok and the number of live sessions. Needs no token.",
    security: [],
    responses: ok("Healthy.", { type: "object", required: ["status", "sessions"], properties: { status: { const: "ok" }, sessions: { type: "integer" } } }),
  },
  "GET /readyz": {
    operationId: "ready",
    summary:
      "Readiness, for a load balancer: 200 when the environment hosts are up and every dependency answers now (the trajectory store; in a fleet, its Redis, with the fleet's live sessions and replicas), 503 otherwise. Needs no token.",
    security: [],
    responses: {
      ...ok("Ready.", readiness),
      "503": { description: "Not ready: the failing check says why.", content: { "application/json": { schema: readiness } } },
    },
  },
  "GET /metrics": {
    operationId: "metrics",
    summary: "Prometheus text exposition: sessions, steps, step latency histogram, errors by code, HTTP requests. Scope admin.",
    responses: { "200": { description: "Metrics.", content: { "text/plain": { schema: { type: "string" } } } }, ...AUTH },
  },
  "GET /openapi.json": {
    operationId: "openapi",
    summary: "This document. Needs no token.",
    security: [],
    responses: ok("The OpenAPI 3.1 document.", { type: "object" }),
  },
  "GET /v1/envs": {
    operationId: "listEnvs",
    summary: "The registered environments.",
    responses: { ...ok("Environments.", { type: "object", required: ["envs"], properties: { envs: { type: "array", items: ref("EnvSummary") } } }), ...AUTH },
  },
  "GET /v1/envs/{env}": {
    operationId: "getEnv",
    summary: "One environment: version, difficulties, step budget, tools (of a sampled task) with JSON Schemas, reward components with bounds.",
    parameters: [envId],
    responses: { ...ok("The environment.", ref("EnvDetail")), ...errors("unknown_env"), ...AUTH },
  },
  "GET /v1/envs/{env}/tasks": {
    operationId: "sampleTasks",
    summary: "Sample task ids (as `llmix tasks`): n ids spread over the difficulties, from one split, by a sampling seed.",
    parameters: [
      envId,
      { name: "difficulty", in: "query", schema: { type: "string" }, description: "Only this difficulty (default: all)." },
      { name: "split", in: "query", schema: { enum: ["train", "eval"], default: "train" } },
      { name: "n", in: "query", schema: { type: "integer", minimum: 0, maximum: 100000, default: 10 } },
      { name: "seed", in: "query", schema: { type: "integer", minimum: 0, maximum: 4294967295, default: 0 } },
    ],
    responses: {
      ...ok("Task ids.", { type: "object", required: ["task_ids"], properties: { task_ids: { type: "array", items: { type: "string" } } } }),
      ...errors("invalid_argument", "unknown_env"),
      ...AUTH,
    },
  },
  "POST /v1/tasks/sample": {
    operationId: "sampleTasksAdaptively",
    summary: "Draw task ids from a sampler (a mix, a schedule or an adaptive curriculum), feeding it the outcomes of earlier ones; send the answer's state back to continue it.",
    requestBody: body(SampleTasksBody, "A new sampler (spec) or the last state, with results and n."),
    responses: {
      ...ok("Task ids and the sampler's state.", {
        type: "object",
        required: ["task_ids", "state", "weights", "pass_rates"],
        properties: {
          task_ids: { type: "array", items: { type: "string" } },
          state: { type: "object", description: "Send back as `state` to continue this sampler." },
          weights: { type: "object", additionalProperties: { type: "number" } },
          pass_rates: { type: "object", additionalProperties: { type: ["number", "null"] } },
        },
      }),
      ...errors("invalid_argument", "invalid_json", "unknown_env"),
      ...AUTH,
    },
  },
  "POST /v1/sessions": {
    operationId: "createSession",
    summary: "Start a session: a new episode {env, task_id, seed} or a fork of a snapshot {snapshot}.",
    requestBody: body(CreateSessionBody, "A new episode or a fork."),
    responses: {
      ...ok("The session and its first observation (empty for a fork).", ref("CreatedSession"), "201"),
      ...errors("invalid_argument", "invalid_json", "invalid_task_id", "invalid_snapshot", "unknown_env", "payload_too_large", "capacity_reached", "step_timeout"),
      ...AUTH,
    },
  },
  "GET /v1/sessions/{id}": {
    operationId: "getSession",
    summary: "A live session's state.",
    parameters: [sessionId],
    responses: { ...ok("The session.", ref("SessionInfo")), ...errors("unknown_session"), ...AUTH },
  },
  "DELETE /v1/sessions/{id}": {
    operationId: "closeSession",
    summary: "End a session; returns the episode summary (stored first when recording).",
    parameters: [sessionId],
    responses: { ...ok("The episode summary.", { type: "object", required: ["episode"], properties: { episode: ref("EpisodeRecord") } }), ...SESSION, ...AUTH },
  },
  "POST /v1/sessions/{id}/step": {
    operationId: "step",
    summary: "Apply one action. A malformed action object is answered by the environment (error observation, invalid_call component).",
    parameters: [sessionId],
    requestBody: body(StepBody, "The action."),
    responses: { ...ok("The step result.", ref("StepResponse")), ...errors("invalid_argument", "invalid_action", "invalid_json", "payload_too_large", "step_conflict", ...SESSION_CODES), ...AUTH },
  },
  "GET /v1/sessions/{id}/snapshot": {
    operationId: "snapshot",
    summary: "The session's full world state (restore it, or fork a new session from it).",
    parameters: [sessionId],
    responses: { ...ok("The snapshot.", { type: "object", required: ["snapshot"], properties: { snapshot: ref("Snapshot") } }), ...SESSION, ...AUTH },
  },
  "POST /v1/sessions/{id}/restore": {
    operationId: "restore",
    summary: "Continue the session from a snapshot of the same environment.",
    parameters: [sessionId],
    requestBody: body(RestoreBody, "The snapshot."),
    responses: {
      ...ok("Restored.", { type: "object", required: ["ok"], properties: { ok: { const: true } } }),
      ...errors("invalid_argument", "invalid_snapshot", "invalid_json", "payload_too_large"),
      ...SESSION,
      ...AUTH,
    },
  },
  "GET /v1/episodes/{id}": {
    operationId: "getEpisode",
    summary: "A recorded episode with its step records, from the trajectory store. Scope trajectories:read.",
    parameters: [episodeId],
    responses: {
      ...ok("The episode.", { type: "object", required: ["episode", "steps"], properties: { episode: ref("EpisodeRecord"), steps: { type: "array", items: ref("StepRecord") } } }),
      ...errors("unknown_episode"),
      ...AUTH,
    },
  },
  "DELETE /v1/episodes/{id}": {
    operationId: "deleteEpisode",
    summary: "Remove a recorded episode with every step (and its run, if it was the run's last). Audited. Scope trajectories:delete.",
    parameters: [episodeId],
    responses: { ...ok("What was removed.", PURGE_RESULT), ...errors("unknown_episode"), ...AUTH },
  },
  "GET /v1/runs": {
    operationId: "listRuns",
    summary: "The caller's runs (its tenant's; every run for admins), newest first, each with its episode count. Audited. Scope trajectories:read.",
    parameters: [queryParam("limit", "At most this many (1-1000, default 100).", { type: "integer" })],
    responses: { ...ok("The runs.", { type: "object", required: ["runs"], properties: { runs: { type: "array", items: RUN_SUMMARY } } }), ...errors("invalid_argument"), ...AUTH },
  },
  "GET /v1/runs/{id}": {
    operationId: "getRun",
    summary: "A run and its metrics per environment and difficulty (success, reward components, pass@k, steps). Audited. Scope trajectories:read.",
    parameters: [runId],
    responses: { ...ok("The run.", { type: "object", required: ["run", "metrics"], properties: { run: RUN_SUMMARY, metrics: { type: "array", items: { type: "object" } } } }), ...errors("unknown_run"), ...AUTH },
  },
  "DELETE /v1/runs/{id}": {
    operationId: "deleteRun",
    summary: "Remove a finished or interrupted run with every episode and step. Audited. Scope trajectories:delete.",
    parameters: [runId],
    responses: { ...ok("What was removed.", PURGE_RESULT), ...errors("unknown_run", "invalid_argument"), ...AUTH },
  },
  "GET /v1/runs/{id}/episodes": {
    operationId: "listRunEpisodes",
    summary: "One page of a run's episodes, filtered, with the total that match. Audited. Scope trajectories:read.",
    parameters: [
      runId,
      queryParam("difficulty", "Only this difficulty."),
      queryParam("status", "ok or error."),
      queryParam("passed", "true or false: the verdict passed or not.", { type: "boolean" }),
      queryParam("limit", "Page size (1-1000, default 100).", { type: "integer" }),
      queryParam("offset", "Episodes to skip.", { type: "integer" }),
    ],
    responses: {
      ...ok("The page.", { type: "object", required: ["episodes", "total"], properties: { episodes: { type: "array", items: ref("EpisodeRecord") }, total: { type: "integer" } } }),
      ...errors("unknown_run", "invalid_argument"),
      ...AUTH,
    },
  },
  "GET /v1/runs/{id}/tasks": {
    operationId: "runTasks",
    summary: "Each task of a run with its scenario family and features (name=value), computed by the environment on a host. Scope trajectories:read.",
    parameters: [runId],
    responses: { ...ok("The tasks.", { type: "object", required: ["tasks"], properties: { tasks: { type: "object" } } }), ...errors("unknown_run", "unknown_env"), ...AUTH },
  },
  "GET /v1/runs/{id}/export": {
    operationId: "exportRun",
    summary: "A run's episodes as a dataset file (jsonl, trl-sft, trl-grpo: JSON lines; verl, verl-sft: Parquet), redacted by the data policy. Audited. Scope trajectories:export.",
    parameters: [runId, queryParam("format", "jsonl (default), trl-sft, trl-grpo, verl or verl-sft.")],
    responses: {
      "200": { description: "The file.", content: { "application/x-ndjson": { schema: { type: "string" } }, "application/vnd.apache.parquet": { schema: { type: "string", format: "binary" } } } },
      ...errors("unknown_run", "unknown_format"),
      ...AUTH,
    },
  },
  "GET /v1/audit": {
    operationId: "auditLog",
    summary: "The audit log, newest first: who created, read, exported, replayed, deleted or purged what, and refused attempts. Scope admin.",
    parameters: ["token", "tenant", "action", "target_id", "since", "until"].map((n) => queryParam(n, `Only events with this ${n}${n === "since" || n === "until" ? " (ISO time)" : ""}.`)).concat([queryParam("limit", "At most this many (default 100).", { type: "integer" })]),
    responses: { ...ok("The events.", { type: "object", required: ["events"], properties: { events: { type: "array", items: { type: "object" } } } }), ...errors("invalid_argument"), ...AUTH },
  },
  "POST /v1/purge": {
    operationId: "purge",
    summary: "Apply the data policy's retention now (no body), or remove what {finished_before?, tenant?, env?, run_id?, dry_run?} matches. Audited. Scope admin.",
    responses: { ...ok("What was removed, per rule.", { type: "object", required: ["purges"], properties: { purges: { type: "array", items: { type: "object" } } } }), ...errors("invalid_argument"), ...AUTH },
  },
  "POST /v1/episodes/{id}/replay": {
    operationId: "replayEpisode",
    summary: "Re-run a recorded episode's actions on a fresh environment and compare every step with the record. Scope trajectories:read.",
    parameters: [episodeId],
    responses: { ...ok("The replay report.", ref("ReplayReport")), ...errors("unknown_episode", "unknown_env"), ...AUTH },
  },
  // Mounted by `llmix serve` (src/server/mcp.ts); documented here so the document stays hand-written.
  "POST /v1/sessions/{id}/mcp": {
    operationId: "mcp",
    summary:
      "MCP over streamable HTTP (stateless): JSON-RPC tools/list and tools/call on the session's tools. A tools/call is a step of the session " +
      "(its structuredContent carries reward, reward_components, terminated, truncated, tool_result).",
    parameters: [sessionId],
    requestBody: { required: true, description: "A JSON-RPC message of the Model Context Protocol.", content: json({ type: "object" }) },
    responses: { ...ok("The JSON-RPC response.", { type: "object" }), ...errors("unknown_session"), ...AUTH },
  },
  "GET /v1/sessions/{id}/mcp": {
    operationId: "mcpStream",
    summary: "Not supported (the MCP endpoint is stateless): 405.",
    parameters: [sessionId],
    responses: { "405": { description: "Method not allowed." }, ...errors("unknown_session"), ...AUTH },
  },
  "DELETE /v1/sessions/{id}/mcp": {
    operationId: "mcpClose",
    summary: "Not supported (the MCP endpoint is stateless; end the session with DELETE /v1/sessions/{id}): 405.",
    parameters: [sessionId],
    responses: { "405": { description: "Method not allowed." }, ...errors("unknown_session"), ...AUTH },
  },
  "GET /v1/ws": {
    operationId: "websocket",
    summary:
      "WebSocket (upgrade this GET). Messages {id, op, ...params} are answered {id, ok: true, result} or {id, ok: false, error}. " +
      "Ops: create (params as POST /v1/sessions), step {session_id, action}, snapshot {session_id}, restore {session_id, snapshot}, " +
      "close {session_id}, info {session_id}, envs, env {env}, tasks {env, difficulty?, split?, n?, seed?}. Replies may come out of order; " +
      "match them by id. Sessions outlive the connection (the idle reaper closes them). The token may also be sent as ?token=.",
    parameters: [{ name: "token", in: "query", schema: { type: "string" }, description: "Bearer token, for clients that cannot set headers." }],
    responses: { "101": { description: "Switching protocols." }, ...errors("invalid_argument"), ...AUTH },
  },
};

const SCHEMAS: Record<string, Json> = {
  Error: {
    type: "object",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "message", "details"],
        properties: { code: { enum: Object.keys(ERROR_CODES) }, message: { type: "string" }, details: { type: "object" } },
      },
    },
  },
  Observation: {
    type: "object",
    required: ["rendered", "tokens"],
    properties: { rendered: { type: "string" }, tokens: { type: "integer" } },
    additionalProperties: true,
  },
  ToolSpec: {
    type: "object",
    required: ["name", "description", "parameters", "effect"],
    properties: { name: { type: "string" }, description: { type: "string" }, parameters: { type: "object", description: "JSON Schema of the arguments." }, effect: { enum: ["read", "write"] } },
  },
  ToolResult: {
    type: "object",
    required: ["status", "latency_ms", "cost", "output"],
    properties: {
      status: { enum: ["ok", "error", "denied", "invalid", "timeout"] },
      latency_ms: { type: "number" },
      cost: { type: "number" },
      output: {},
      error: { type: "object", properties: { code: { type: "string" }, message: { type: "string" } } },
      partial: { type: "boolean" },
    },
  },
  EnvSummary: {
    type: "object",
    required: ["id", "version", "description", "difficulties", "max_steps"],
    properties: {
      id: { type: "string" },
      version: { type: "string" },
      description: { type: "string" },
      difficulties: { type: "array", items: { type: "string" } },
      max_steps: { type: "integer" },
    },
  },
  EnvDetail: {
    allOf: [
      ref("EnvSummary"),
      {
        type: "object",
        required: ["tools", "reward_components"],
        properties: {
          tools: { type: "array", items: ref("ToolSpec") },
          reward_components: {
            type: "object",
            additionalProperties: { type: "object", required: ["min", "max", "description"], properties: { min: { type: "number" }, max: { type: "number" }, description: { type: "string" } } },
          },
        },
      },
    ],
  },
  CreatedSession: {
    type: "object",
    required: ["session_id", "env", "env_version", "task_id", "seed", "observation", "tools"],
    properties: {
      session_id: { type: "string" },
      env: { type: "string" },
      env_version: { type: "string" },
      task_id: { type: "string" },
      seed: { type: "integer" },
      observation: ref("Observation"),
      tools: { type: "array", items: ref("ToolSpec") },
    },
  },
  StepResponse: {
    type: "object",
    required: ["observation", "reward", "reward_components", "terminated", "truncated", "tool_result", "info"],
    properties: {
      observation: ref("Observation"),
      reward: { type: "number", description: "The sum of reward_components." },
      reward_components: { type: "object", additionalProperties: { type: "number" } },
      terminated: { type: "boolean" },
      truncated: { type: "boolean" },
      tool_result: { oneOf: [ref("ToolResult"), { type: "null" }] },
      info: { type: "object", description: "end_reason and verdict on the last step; error for an invalid action; tool_result; call_id." },
    },
  },
  SessionInfo: {
    type: "object",
    required: ["session_id", "env", "env_version", "task_id", "seed", "steps", "ended", "record", "created_at", "idle_ms"],
    properties: {
      session_id: { type: "string" },
      env: { type: "string" },
      env_version: { type: "string" },
      task_id: { type: "string" },
      seed: { type: "integer" },
      steps: { type: "integer" },
      ended: { type: "boolean" },
      record: { type: "boolean" },
      created_at: { type: "string", format: "date-time" },
      idle_ms: { type: "number" },
    },
  },
  Snapshot: {
    type: "object",
    required: ["format", "env", "version", "task_id", "seed", "step", "status", "world"],
    properties: {
      format: { const: "llmix.snapshot/1" },
      env: { type: "string" },
      version: { type: "string" },
      task_id: { type: "string" },
      seed: { type: "integer" },
      step: { type: "integer" },
      status: { enum: ["running", "terminated", "truncated"] },
      world: {},
    },
    additionalProperties: true,
  },
  RunRecord: {
    type: "object",
    description: "A run (src/store/types.ts RunRecord): one rollout, or one server's recorded sessions of an environment and tenant.",
    required: ["run_id", "env", "env_version", "policy", "status", "planned_episodes", "created_at"],
    properties: {
      run_id: { type: "string" },
      env: { type: "string" },
      env_version: { type: "string" },
      policy: { type: "string" },
      policy_checkpoint: { type: ["string", "null"] },
      config: {},
      status: { enum: ["running", "interrupted", "finished", "failed"] },
      planned_episodes: { type: "integer" },
      created_at: { type: "string" },
      finished_at: { type: ["string", "null"] },
      tenant: { type: ["string", "null"] },
    },
  },
  EpisodeRecord: {
    type: "object",
    description: "The episode row of DESIGN §1 (src/store/types.ts EpisodeRecord).",
    required: ["episode_id", "run_id", "env", "env_version", "task_id", "seed", "status", "steps", "total_reward", "outcome", "reward_components"],
    properties: {
      episode_id: { type: "string" },
      run_id: { type: "string" },
      env: { type: "string" },
      env_version: { type: "string" },
      task_id: { type: "string" },
      difficulty: { type: "string" },
      seed: { type: "integer" },
      group_id: { type: "string" },
      group_index: { type: "integer" },
      policy: { type: "string" },
      policy_checkpoint: { type: ["string", "null"] },
      status: { enum: ["ok", "error"] },
      error: { oneOf: [{ type: "object" }, { type: "null" }] },
      steps: { type: "integer" },
      tokens: { type: "integer" },
      total_reward: { type: "number" },
      outcome: { type: ["number", "null"] },
      reward_components: { type: "object", additionalProperties: { type: "number" } },
      verdict: {},
      end_reason: { type: ["string", "null"] },
      terminated: { type: "boolean" },
      truncated: { type: "boolean" },
      cost: { type: "number" },
      tool_calls: { type: "object", additionalProperties: { type: "integer" } },
      advantages: {},
      started_at: { type: "string" },
      finished_at: { type: "string" },
      duration_ms: { type: "number" },
    },
  },
  StepRecord: {
    type: "object",
    description: "One trajectory step record (DESIGN §1).",
    required: ["episode_id", "task_id", "env_version", "policy_checkpoint", "step", "observation", "action", "tool_result", "reward_components", "terminated", "truncated"],
    properties: {
      episode_id: { type: "string" },
      task_id: { type: "string" },
      env_version: { type: "string" },
      policy_checkpoint: { type: ["string", "null"] },
      step: { type: "integer" },
      observation: ref("Observation"),
      action: { type: "object" },
      tool_result: { oneOf: [ref("ToolResult"), { type: "null" }] },
      reward_components: { type: "object", additionalProperties: { type: "number" } },
      terminated: { type: "boolean" },
      truncated: { type: "boolean" },
      reward: { type: "number" },
      info: { type: "object" },
    },
  },
  ReplayReport: {
    type: "object",
    required: ["episode_id", "task_id", "seed", "recorded_env_version", "env_version", "steps", "matched", "diffs", "recorded", "replayed"],
    properties: {
      episode_id: { type: "string" },
      task_id: { type: "string" },
      seed: { type: "integer" },
      recorded_env_version: { type: "string" },
      env_version: { type: "string" },
      steps: { type: "integer" },
      matched: { type: "boolean" },
      diffs: { type: "array", items: { type: "object", properties: { step: { type: "integer" }, field: { type: "string" }, recorded: {}, replayed: {} } } },
      recorded: { type: "object" },
      replayed: { type: "object" },
    },
  },
};

/** Fastify's ":param" and "*" as OpenAPI's "{param}". */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, "{$1}").replace(/\*$/, "{wildcard}");
}

/**
 * The OpenAPI 3.1 document of the routes the app registered. Core routes use the operations above; a
 * route without one (one added by `extraRoutes`) gets its own `openapi` object, or a generic entry
 * marked `x-llmix-undocumented`.
 */
export function buildOpenApi(routes: readonly RouteInfo[], options: { version: string; auth: boolean; policy?: Json }): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    const path = openApiPath(route.url);
    const method = route.method.toLowerCase();
    const operation = OPERATIONS[`${route.method} ${path}`] ?? route.openapi ?? { summary: `${route.method} ${path}`, "x-llmix-undocumented": true, responses: { default: { description: "See the route's documentation." } } };
    (paths[path] ??= {})[method] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "LLMix environment service",
      version: options.version,
      description:
        "Stateful sessions of agentic RL environments (DESIGN §7). Every error is {error: {code, message, details}} with a stable code; " +
        "the HTTP status follows from the code. " +
        (options.auth ? "Send Authorization: Bearer <token>; scopes: env:run, trajectories:read, trajectories:export, trajectories:delete, admin." : "This server runs without --auth (loopback only)."),
      ...(options.policy ? { "x-llmix-data-policy": options.policy } : {}),
    },
    components: {
      schemas: SCHEMAS,
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    },
    security: options.auth ? [{ bearer: [] }] : [],
    paths,
  };
}
