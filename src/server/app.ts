/**
 * The HTTP + WebSocket service (DESIGN §7) as a fastify app: routes, body parsing, auth, metrics and
 * errors. `buildApp` only builds; `serve.ts` listens and handles signals. The operations behind the
 * routes live in `ServiceOperations`, which the WebSocket (and MCP) transports call too, so every
 * transport validates and answers the same way.
 *
 * Other transports mount their routes through `extraRoutes(app, context)`, called after the core routes
 * and before the app is ready. Such a route gets the same JSON body parsing, error bodies, metrics and
 * auth as the core ones; its scope is `config.scope` when given, otherwise `env:run` under /v1/
 * (`trajectories:read` under /v1/episodes) and `admin` elsewhere. `config.openapi` (an OpenAPI operation
 * object) documents it in /openapi.json.
 */
import websocket from "@fastify/websocket";
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { z } from "zod";
import { LlmixError, ServiceError, ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import type { EnvironmentRegistry, EnvironmentSummary } from "../core/registry.js";
import { formatIssues } from "../core/validation.js";
import type { EnvDetail, SampledTasks } from "../hosts/host-jobs.js";
import type { HostJob } from "../hosts/protocol.js";
import type { EpisodeRecord, TrajectoryStore } from "../store/types.js";
import { actorOf } from "./audit.js";
import { bearerToken, isLoopbackHostHeader, isLoopbackOrigin, type RouteScope, type TokenAuth } from "./auth.js";
import type { DataPolicy } from "./data-policy.js";
import type { Fleet } from "./fleet.js";
import { errorBody, parseRequestJson, sendError, statusOf, toServiceError } from "./http-errors.js";
import { JsonText } from "./json-text.js";
import { ServiceMetrics } from "./metrics.js";
import { buildOpenApi, ForkSessionBody, MAX_ID_CHARS, NewSessionBody, RestoreBody, SampleTasksBody, type RouteInfo } from "./openapi.js";
import { SessionManager, type Caller, type CreatedSession, type CreateSessionRequest, type SessionInfo, type StepResponse } from "./sessions.js";
import { TrajectoryOperations, yieldToOthers } from "./trajectories.js";
import { registerWebSocketRoute } from "./ws.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Who sent the request (null without auth). */
    caller: Caller;
  }
}

/** The service version reported by /openapi.json. */
export const SERVICE_VERSION = "0.1.0";
/** Default request body limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** What the app is built from. */
export interface AppOptions {
  registry: EnvironmentRegistry;
  /** The trajectory store: `record` sessions and /v1/episodes need it. The caller closes it. */
  store?: TrajectoryStore;
  /** Bearer tokens; without them every route is open (serve.ts then allows loopback only). */
  auth?: TokenAuth | null;
  /** The deployment's data policy: its tokens (with tenants) replace `auth`, and it decides what may run (data-policy.ts). */
  policy?: DataPolicy;
  /** An existing manager; otherwise one is made from the limits below (and shut down when the app closes). */
  manager?: SessionManager;
  capacity?: number;
  /** Environment host threads (default: the core count). */
  hosts?: number;
  /** Heap cap of each host thread, MiB (default 1024). */
  hostMemoryMb?: number;
  /** Key of snapshot signatures, hex (default: random per server). */
  snapshotKey?: string;
  /** Sessions each host keeps live before parking the least recently used (default 1000). */
  residentSessions?: number;
  /** Idle sessions are reaped after this long (default 15 minutes; 0 = never). */
  idleTtlMs?: number;
  stepTimeoutMs?: number;
  /** Largest request body and WebSocket message, in bytes (default 1 MiB). */
  bodyLimit?: number;
  /** Fastify's logger (pino) at warn level; off by default. Request URLs are logged without their query (tokens). */
  logger?: boolean;
  /** Share sessions with other replicas (joined already; left when the manager shuts down). */
  fleet?: Fleet;
  /** Options each environment's session instances are created with, by environment id. */
  envOptions?: Record<string, Record<string, unknown>>;
  /** Mount more routes (MCP) with the same parsing, errors, auth and metrics. */
  extraRoutes?: (app: FastifyInstance, context: ServiceContext) => void | Promise<void>;
}

/** What transports share: the manager, the operations, metrics, auth and the store. */
export interface ServiceContext {
  registry: EnvironmentRegistry;
  manager: SessionManager;
  operations: ServiceOperations;
  /** Runs, episodes, exports and deletions, per caller and audited. */
  trajectories: TrajectoryOperations;
  /** The data policy, if the deployment has one. */
  policy: DataPolicy | undefined;
  metrics: ServiceMetrics;
  auth: TokenAuth | null;
  store: TrajectoryStore | undefined;
  bodyLimit: number;
  /** The fleet this replica belongs to, if any. */
  fleet: Fleet | undefined;
}

/** A built (not yet listening) service. */
export interface LlmixService extends ServiceContext {
  app: FastifyInstance;
  /** The routes registered (HEAD twins excluded), as /openapi.json documents them. */
  routes: readonly RouteInfo[];
}

/** One environment as GET /v1/envs lists it. */
export type EnvSummary = EnvironmentSummary;

export type { EnvDetail };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** Validate `value` against a body schema; the error names each wrong field ("body.seed: ..."). */
function parseWith<T>(schema: z.ZodType<T>, value: unknown, code: "invalid_argument" | "invalid_snapshot" = "invalid_argument"): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
  throw new ValidationError(code, formatIssues(parsed.error, "body"), { issues });
}

function requireObjectBody(value: unknown, shape: string): Record<string, unknown> {
  if (!isObject(value)) throw new ValidationError("invalid_argument", `the request body must be a JSON object ${shape}`);
  return value;
}

function idParam(value: unknown, name: string): string {
  if (typeof value !== "string" || value === "") throw new ValidationError("invalid_argument", `${name} must be a non-empty string`);
  if (value.length > MAX_ID_CHARS) throw new ValidationError("invalid_argument", `${name} is longer than ${MAX_ID_CHARS} characters`);
  return value;
}

/**
 * The operations of the service, shared by every transport. Inputs are untrusted JSON; each is validated
 * here. `caller` is who asks (null without auth): sessions belong to the token that created them.
 * Environment code never runs here: sessions run on hosts, and so do the jobs (details, tasks, replay).
 */
export class ServiceOperations {
  private summaries: Promise<EnvSummary[]> | undefined;
  private readonly details = new Map<string, Promise<EnvDetail>>();

  constructor(
    private readonly registry: EnvironmentRegistry,
    private readonly manager: SessionManager,
    private readonly trajectories: TrajectoryOperations,
    private readonly policy?: DataPolicy,
  ) {}

  /** GET /v1/envs. */
  async envs(): Promise<{ envs: EnvSummary[] }> {
    this.summaries ??= this.cachedJob<EnvSummary[]>({ kind: "summaries" }, () => (this.summaries = undefined));
    return { envs: await this.summaries };
  }

  /** GET /v1/envs/:env: the summary plus the tools of a sampled task and the reward components with bounds. */
  async env(envId: unknown): Promise<EnvDetail> {
    const id = this.registry.get(idParam(envId, "env")).id;
    let detail = this.details.get(id);
    if (!detail) {
      detail = this.cachedJob<EnvDetail>({ kind: "env_detail", env: id }, () => this.details.delete(id));
      this.details.set(id, detail);
    }
    return detail;
  }

  /** GET /v1/envs/:env/tasks, validated as `llmix tasks` validates its flags. */
  async tasks(envId: unknown, query: Record<string, unknown>): Promise<{ task_ids: string[] }> {
    const id = this.registry.get(idParam(envId, "env")).id;
    const { difficulty, n, split, seed } = query;
    return (await this.manager.job({ kind: "tasks", env: id, query: { difficulty, n, split, seed } })) as { task_ids: string[] };
  }

  /** POST /v1/tasks/sample: draw task ids from a sampler the caller keeps the state of. */
  async sampleTasks(body: unknown): Promise<SampledTasks> {
    const value = parseWith(SampleTasksBody, requireObjectBody(body, "{env, spec | state, n?, step?, results?}"));
    const id = this.registry.get(value.env).id;
    const { env: _env, ...request } = value;
    return (await this.manager.job({ kind: "sample", env: id, request })) as SampledTasks;
  }

  /** POST /v1/sessions: {env, task_id, seed, policy_checkpoint?, record?} or {snapshot, policy_checkpoint?, record?}. */
  async createSession(body: unknown, caller: Caller, via: "http" | "ws" = "http"): Promise<JsonText<CreatedSession>> {
    const value = requireObjectBody(body, "{env, task_id, seed} or {snapshot}");
    let request: CreateSessionRequest;
    if ("snapshot" in value) {
      const mixed = ["env", "task_id", "seed"].filter((k) => k in value);
      if (mixed.length > 0) {
        throw new ValidationError("invalid_argument", `give either {env, task_id, seed} or {snapshot}, not both (got snapshot and ${mixed.join(", ")})`);
      }
      if (!isObject(value.snapshot)) throw new ValidationError("invalid_snapshot", "body.snapshot must be a snapshot object, as GET /v1/sessions/{id}/snapshot returns it");
      request = parseWith(ForkSessionBody, value) as unknown as CreateSessionRequest;
    } else {
      request = parseWith(NewSessionBody, value);
    }
    if (this.policy) {
      // A fork names its environment and task in the snapshot, whose signature the host checks before opening it.
      const target = "snapshot" in request ? (request.snapshot as { env?: unknown; task_id?: unknown }) : { env: request.env, task_id: request.task_id };
      if (typeof target.env !== "string" || typeof target.task_id !== "string") throw new ValidationError("invalid_snapshot", "body.snapshot must name its env and task_id");
      this.policy.checkRun(caller, this.registry.get(target.env).id, target.task_id);
    }
    const created = await this.manager.create(request, caller);
    if (this.policy) await this.trajectories.audit.record(actorOf(caller), "create", { kind: "session", id: created.value.session_id }, via, { env: created.value.env, task_id: created.value.task_id });
    return created;
  }

  /** POST /v1/sessions/:id/step with {action}. */
  step(sessionId: unknown, body: unknown, caller: Caller): Promise<JsonText<StepResponse>> {
    const id = idParam(sessionId, "session_id");
    const value = requireObjectBody(body, "{action}");
    if (!("action" in value)) throw new ValidationError("invalid_argument", "body.action: required (an action object)", { issues: [{ path: "action", message: "required" }] });
    if (!isObject(value.action)) {
      throw new LlmixError(
        "invalid_action",
        `body.action must be a JSON object {"type":"tool_call","tool":...,"args":{...}} or {"type":"message","content":...}, got ${value.action === null ? "null" : Array.isArray(value.action) ? "an array" : typeof value.action}`,
      );
    }
    const expect = value.expect_steps;
    if (expect !== undefined && !(Number.isSafeInteger(expect) && (expect as number) >= 0)) {
      throw new ValidationError("invalid_argument", `body.expect_steps must be an integer >= 0 (the steps taken before this action), got ${JSON.stringify(expect)}`, {
        issues: [{ path: "expect_steps", message: "must be an integer >= 0" }],
      });
    }
    return this.manager.step(id, value.action, caller, expect as number | undefined);
  }

  /** GET /v1/sessions/:id. */
  info(sessionId: unknown, caller: Caller): Promise<SessionInfo> {
    return this.manager.info(idParam(sessionId, "session_id"), caller);
  }

  /** GET /v1/sessions/:id/snapshot: the session's snapshot, signed by this service. */
  async snapshot(sessionId: unknown, caller: Caller): Promise<JsonText<{ snapshot: JsonValue }>> {
    return this.manager.snapshot(idParam(sessionId, "session_id"), caller);
  }

  /** POST /v1/sessions/:id/restore with {snapshot}. */
  async restore(sessionId: unknown, body: unknown, caller: Caller): Promise<{ ok: true }> {
    const id = idParam(sessionId, "session_id");
    const value = requireObjectBody(body, "{snapshot}");
    if (!("snapshot" in value)) throw new ValidationError("invalid_argument", "body.snapshot: required (a snapshot object)", { issues: [{ path: "snapshot", message: "required" }] });
    const { snapshot } = parseWith(RestoreBody, value, "invalid_snapshot");
    await this.manager.restore(id, snapshot, caller);
    return { ok: true };
  }

  /** DELETE /v1/sessions/:id: the episode summary. */
  async close(sessionId: unknown, caller: Caller): Promise<{ episode: EpisodeRecord }> {
    return { episode: await this.manager.close(idParam(sessionId, "session_id"), caller) };
  }

  /** A job whose answer never changes, kept once it succeeded (`forget` drops a failure, so it is retried). */
  private cachedJob<T>(job: HostJob, forget: () => void): Promise<T> {
    const result = this.manager.job(job) as Promise<T>;
    result.catch(forget);
    return result;
  }
}

/** Purge what the policy's retention periods have expired, one purge per period (see DataPolicy.retentionPurges). */
export async function applyRetention(
  trajectories: TrajectoryOperations,
  policy: DataPolicy,
  caller: Caller,
  via: "http" | "cli" | "schedule",
  options: { now?: Date; dryRun?: boolean } = {},
): Promise<Array<{ rule: string; episodes: string[]; steps: number; runs: string[] }>> {
  const out = [];
  for (const { rule, criteria } of policy.retentionPurges(options.now ?? new Date())) {
    // A dry run removes nothing, so it cannot go in batches: it reports everything at once.
    if (options.dryRun) {
      out.push({ rule, ...(await trajectories.purge(caller, { ...criteria, dry_run: true }, via, rule)) });
      continue;
    }
    const total = { rule, episodes: [] as string[], steps: 0, runs: [] as string[] };
    // In batches, yielding between them: a long purge never holds the store (or, for SQLite, this thread) for long.
    for (;;) {
      const batch = await trajectories.purge(caller, { ...criteria, limit: RETENTION_BATCH }, via, rule);
      total.episodes.push(...batch.episodes);
      total.steps += batch.steps;
      total.runs.push(...batch.runs);
      if (batch.episodes.length < RETENTION_BATCH) break;
      await yieldToOthers();
    }
    out.push(total);
  }
  return out;
}

/** Episodes a retention purge removes per transaction. */
export const RETENTION_BATCH = 500;

/** Bytes of an oversized body read (and thrown away) so its sender can read the 413: beyond them, the connection is cut. */
const MAX_DRAIN_BYTES = 64 * 1024 * 1024;
/** How long an oversized body may take to arrive before the connection is cut. */
const DRAIN_MS = 15_000;

/**
 * Answer an over-limit body with a 413 its sender can read. Closing at once would reset a connection
 * whose client is still sending (it sees EPIPE, not the answer), so the rest of the body is read and
 * dropped first, within MAX_DRAIN_BYTES and DRAIN_MS, and the connection closed after the answer.
 */
function refuseOversized(request: FastifyRequest, reply: FastifyReply, error: LlmixError, bodyLimit: number): void {
  const raw = request.raw;
  const res = reply.raw;
  reply.hijack();
  const body = JSON.stringify(errorBody(error));
  res.writeHead(413, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close" });
  res.write(body);
  let drained = 0;
  let done = false;
  const finish = (cut: boolean) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    raw.removeListener("data", onData);
    res.end();
    if (cut) raw.socket?.destroy();
  };
  const onData = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > Math.max(MAX_DRAIN_BYTES, bodyLimit)) finish(true);
  };
  const timer = setTimeout(() => finish(true), DRAIN_MS);
  if (raw.complete || raw.readableEnded) return finish(false);
  raw.on("data", onData);
  raw.once("end", () => finish(false));
  raw.once("error", () => finish(true));
  raw.resume();
}

/** Send JSON text a host already serialized, as it is. */
function sendJsonText(reply: FastifyReply, value: JsonText): FastifyReply {
  return reply.type("application/json; charset=utf-8").send(value.text);
}

/** The scope a route needs when it does not declare one. */
function defaultScope(url: string): RouteScope {
  if (url === "/healthz" || url === "/readyz" || url === "/openapi.json") return "open";
  if (url === "/v1/episodes" || url.startsWith("/v1/episodes/") || url === "/v1/runs" || url.startsWith("/v1/runs/")) return "trajectories:read";
  if (url.startsWith("/v1/")) return "env:run";
  return "admin";
}

interface RouteConfig {
  scope?: RouteScope;
  openapi?: Record<string, unknown>;
}

/** Build the service app (routes, hooks, WebSocket) without listening. */
export async function buildApp(options: AppOptions): Promise<LlmixService> {
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  if (!Number.isSafeInteger(bodyLimit) || bodyLimit < 1) throw new ValidationError("invalid_config", `bodyLimit must be an integer >= 1, got ${bodyLimit}`);
  const ownsManager = !options.manager;
  const manager =
    options.manager ??
    new SessionManager({
      registry: options.registry, store: options.store, capacity: options.capacity, idleTtlMs: options.idleTtlMs, stepTimeoutMs: options.stepTimeoutMs,
      hosts: options.hosts, hostMemoryMb: options.hostMemoryMb, snapshotKey: options.snapshotKey, residentSessions: options.residentSessions, fleet: options.fleet,
      envOptions: options.envOptions, ...(options.policy?.redaction ? { redaction: options.policy.redaction } : {}),
    });
  // The hosts start in the background (a few hundred ms each): requests wait for them, /healthz does not.
  if (ownsManager) manager.startReaper();
  const metrics = new ServiceMetrics(manager, options.fleet);
  if (options.policy && options.auth) throw new ValidationError("invalid_config", "give a data policy or an auth file, not both: the policy holds the tokens");
  const policy = options.policy;
  const trajectories = new TrajectoryOperations(options.registry, manager, options.store, policy?.redaction);
  const operations = new ServiceOperations(options.registry, manager, trajectories, policy);
  const auth = policy?.auth ?? options.auth ?? null;
  const context: ServiceContext = { registry: options.registry, manager, operations, trajectories, policy, metrics, auth, store: options.store, bodyLimit, fleet: options.fleet };

  const app = Fastify({
    bodyLimit,
    routerOptions: { maxParamLength: 2048 },
    // Requests arriving while closing reach the manager, which refuses them with capacity_reached (503 + Retry-After).
    return503OnClosing: false,
    forceCloseConnections: "idle",
    logger: options.logger
      ? { level: "warn", serializers: { req: (req: { method?: string; url?: string }) => ({ method: req.method, url: (req.url ?? "").split("?")[0] }) } }
      : false,
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors: (error, _request, reply) => {
      const e = toServiceError(error, bodyLimit);
      metrics.countError(e.code);
      void sendError(reply, e);
    },
    clientErrorHandler: (error, socket) => {
      // Not HTTP at all (garbage bytes, oversized headers): answer in the service's error shape if the socket still can.
      if ((error as NodeJS.ErrnoException).code === "ECONNRESET" || !socket.writable) {
        socket.destroy();
        return;
      }
      metrics.countError("invalid_argument");
      const body = JSON.stringify(errorBody(new LlmixError("invalid_argument", `malformed HTTP request: ${(error as NodeJS.ErrnoException).code ?? error.message}`)));
      socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    },
  });

  // First, so its onRequest hook marks upgrade requests before the auth hook can refuse one: the plugin
  // destroys the socket of a refused upgrade only when it knows the request was one.
  await app.register(websocket, { options: { maxPayload: bodyLimit } });

  const routes: RouteInfo[] = [];
  app.addHook("onRoute", (route) => {
    const config = (route.config ?? {}) as RouteConfig;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    // Resolved once per route, so the per-request auth check is a property read.
    route.config = { ...config, scope: config.scope ?? defaultScope(route.url) } as typeof route.config;
    for (const method of methods) {
      if (method !== "HEAD") routes.push({ method, url: route.url, ...(config.openapi ? { openapi: config.openapi } : {}) });
    }
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, text, done) => {
    try {
      done(null, parseRequestJson(text as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addContentTypeParser("*", (request, _payload, done) => {
    done(new LlmixError("invalid_argument", `unsupported Content-Type ${JSON.stringify(request.headers["content-type"] ?? "(none)")}: send JSON with Content-Type: application/json`), undefined);
  });

  app.setErrorHandler((error, request, reply) => {
    const e = toServiceError(error, bodyLimit);
    metrics.countError(e.code);
    if (e.code === "payload_too_large") return refuseOversized(request, reply, e, bodyLimit);
    if (statusOf(e.code) >= 500 && e.code !== "capacity_reached" && e.code !== "step_timeout" && e.code !== "resource_exhausted") {
      request.log.error({ code: e.code, message: e.message, route: request.routeOptions.url }, "request failed");
    }
    return sendError(reply, e);
  });
  app.setNotFoundHandler((request, reply) => {
    const e = new ServiceError("unknown_route", `no route ${request.method} ${request.url.split("?")[0]}; the API is described at /openapi.json`);
    metrics.countError(e.code);
    return sendError(reply, e);
  });

  app.decorateRequest("caller", null);
  if (auth) {
    // Callback-style hooks: these run on every request, and a step's round trip is what the service is measured by.
    app.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
      const scope = (request.routeOptions.config as RouteConfig).scope ?? "open";
      let token = bearerToken(request.headers.authorization);
      // Browsers cannot set headers on a WebSocket upgrade, hence ?token= there (and only there).
      if (token === undefined && request.ws) {
        const query = request.query as Record<string, unknown> | undefined;
        if (typeof query?.token === "string") token = query.token;
      }
      try {
        const identity = auth.check(token, scope);
        request.caller = identity
          ? { name: identity.name, id: identity.id, admin: identity.scopes.includes("admin"), tenant: identity.tenant, environments: identity.environments }
          : null;
        done();
      } catch (error) {
        done(error as Error);
      }
    });
  } else {
    // Unauthenticated means loopback only. A web page the user visits can still reach loopback: refuse
    // requests sent cross-site (a foreign Origin) and those addressed to another name that resolves
    // here (DNS rebinding: the Host header then names the attacker's domain).
    app.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
      const { host, origin } = request.headers;
      if (!isLoopbackHostHeader(host)) {
        return done(new ServiceError("forbidden", `Host ${JSON.stringify(host ?? "")} is not a loopback name: without --auth this service answers only requests addressed to localhost, 127.0.0.1 or [::1] (start it with --auth to serve other names)`));
      }
      if (origin !== undefined && !isLoopbackOrigin(origin)) {
        return done(new ServiceError("forbidden", `cross-site request from Origin ${JSON.stringify(origin)} refused: without --auth only pages served from loopback may call this service`));
      }
      done();
    });
  }
  app.addHook("onResponse", (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    metrics.countRequest(request.routeOptions.url ?? "unmatched", reply.statusCode);
    done();
  });
  // While closing, answers end their connection, so a keep-alive client cannot hold the server open.
  let draining = false;
  app.addHook("preClose", async () => {
    draining = true;
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (draining) reply.header("connection", "close");
    done(null, payload);
  });
  app.addHook("onClose", async () => {
    metrics.close();
    if (ownsManager) await manager.shutdown();
  });

  app.get("/healthz", async () => ({ status: "ok", sessions: manager.size }));
  // Readiness (for a load balancer): the hosts are up and every dependency answers now.
  let hostsUp = false;
  manager.ready().then(
    () => (hostsUp = true),
    () => undefined,
  );
  app.get("/readyz", async (_request, reply) => {
    const checks: Record<string, { ok: boolean; [detail: string]: unknown }> = { hosts: { ok: hostsUp } };
    if (options.store) {
      const store = options.store;
      checks.store = await store.getRun("readyz").then(
        () => ({ ok: true }),
        (error: unknown) => ({ ok: false, error: (error as Error).message }),
      );
    }
    if (options.fleet) {
      const health = await options.fleet.health();
      checks.fleet = health.ok ? { ok: true, ...(await options.fleet.stats().catch(() => ({}))) } : { ok: false, error: health.error };
    }
    const ready = Object.values(checks).every((c) => c.ok);
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ready" : "unready", checks });
  });
  app.get("/metrics", async (_request, reply) => reply.type("text/plain; version=0.0.4; charset=utf-8").send(await metrics.render()));
  let openapi: Record<string, unknown> | undefined;
  app.get("/openapi.json", async () => (openapi ??= buildOpenApi(routes, { version: SERVICE_VERSION, auth: auth !== null, ...(policy ? { policy: policy.summary() } : {}) })));

  app.get("/v1/envs", async () => operations.envs());
  app.get("/v1/envs/:env", async (request) => operations.env((request.params as { env: string }).env));
  app.post("/v1/tasks/sample", async (request) => operations.sampleTasks(request.body));
  app.get("/v1/envs/:env/tasks", async (request) => operations.tasks((request.params as { env: string }).env, (request.query ?? {}) as Record<string, unknown>));

  const id = (request: FastifyRequest) => (request.params as { id: string }).id;
  app.post("/v1/sessions", async (request, reply) => sendJsonText(reply.code(201), await operations.createSession(request.body, request.caller)));
  app.get("/v1/sessions/:id", async (request) => operations.info(id(request), request.caller));
  app.delete("/v1/sessions/:id", async (request) => operations.close(id(request), request.caller));
  app.post("/v1/sessions/:id/step", async (request, reply) => sendJsonText(reply, await operations.step(id(request), request.body, request.caller)));
  app.get("/v1/sessions/:id/snapshot", async (request, reply) => sendJsonText(reply, await operations.snapshot(id(request), request.caller)));
  app.post("/v1/sessions/:id/restore", async (request) => operations.restore(id(request), request.body, request.caller));

  const query = (request: FastifyRequest) => (request.query ?? {}) as Record<string, unknown>;
  app.get("/v1/runs", async (request) => trajectories.runs(request.caller, query(request), "http"));
  app.get("/v1/runs/:id", async (request) => trajectories.run(request.caller, id(request), "http"));
  app.delete("/v1/runs/:id", { config: { scope: "trajectories:delete" } }, async (request) => trajectories.deleteRun(request.caller, id(request), "http"));
  app.get("/v1/runs/:id/episodes", async (request) => trajectories.runEpisodes(request.caller, id(request), query(request), "http"));
  app.get("/v1/runs/:id/tasks", async (request) => trajectories.runTasks(request.caller, id(request), "http"));
  app.get("/v1/runs/:id/export", { config: { scope: "trajectories:export" } }, async (request, reply) => {
    const { result, stream, contentType } = await trajectories.export(request.caller, id(request), query(request), "http");
    const name = `${id(request).replace(/[^A-Za-z0-9._-]/g, "_")}.${result.format}${contentType.includes("parquet") ? ".parquet" : ".jsonl"}`;
    return reply.type(contentType).header("content-disposition", `attachment; filename="${name}"`).header("x-llmix-rows", String(result.rows)).send(stream);
  });
  app.get("/v1/episodes/:id", async (request) => trajectories.episode(request.caller, id(request), "http"));
  app.delete("/v1/episodes/:id", { config: { scope: "trajectories:delete" } }, async (request) => trajectories.deleteEpisode(request.caller, id(request), "http"));
  app.post("/v1/episodes/:id/replay", async (request) => trajectories.replay(request.caller, id(request), "http"));
  app.get("/v1/audit", { config: { scope: "admin" } }, async (request) => trajectories.auditLog(query(request)));
  app.post("/v1/purge", { config: { scope: "admin" } }, async (request) => {
    const body = request.body === undefined || request.body === null ? null : requireObjectBody(request.body, "{finished_before?, tenant?, env?, run_id?, dry_run?} or no body");
    if (body === null) {
      if (!policy) throw new ValidationError("invalid_argument", "this service has no data policy, so no retention to apply: send the purge criteria as the body");
      return { purges: await applyRetention(trajectories, policy, request.caller, "http") };
    }
    return { purges: [{ rule: "request", ...(await trajectories.purge(request.caller, body, "http")) }] };
  });

  registerWebSocketRoute(app, context);

  if (options.extraRoutes) await options.extraRoutes(app, context);
  return { ...context, app, routes };
}
