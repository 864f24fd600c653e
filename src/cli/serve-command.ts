/**
 * `llmix serve`: the environment service (HTTP, WebSocket and MCP, src/server) with every built-in environment,
 * those of `--module` files, and the embedded trajectory store. It prints one line with the API and
 * OpenAPI URLs, runs until SIGTERM/SIGINT, then stops cleanly (in-flight steps finish, the store is
 * flushed and closed) and exits 0.
 */
import { Option, type Command } from "commander";
import { ValidationError } from "../core/errors.js";
import { DEFAULT_BODY_LIMIT } from "../server/app.js";
import { DEFAULT_RESIDENT_SESSIONS } from "../hosts/protocol.js";
import { DEFAULT_THREAD_HEAP_MB } from "../hosts/thread.js";
import { FLEET_DEFAULTS } from "../server/fleet.js";
import { registerInspector } from "../server/inspector.js";
import { mountMcp } from "../server/mcp.js";
import { displayRedisUrl, redisUrl } from "../rollout/queue/queue-names.js";
import { SERVE_DEFAULTS, startServer, stopOnSignals } from "../server/serve.js";
import { displayStore } from "../store/open.js";
import { integer, moduleOption, print, registryWith } from "./options.js";

/** A parser of a duration in seconds (fractions allowed) in [0, max], returned in milliseconds. */
function seconds(name: string, max: number) {
  return (value: string): number => {
    const s = Number(value);
    if (value.trim() === "" || !Number.isFinite(s) || s < 0 || s > max) {
      throw new ValidationError("invalid_argument", `${name} must be a number of seconds in [0, ${max}], got "${value}"`);
    }
    return Math.round(s * 1000);
  };
}

interface ServeFlags {
  host: string;
  port: number;
  store: string;
  auth?: string;
  dataPolicy?: string;
  capacity: number;
  idleTtl: number;
  stepTimeout: number;
  bodyLimit: number;
  hosts?: number;
  hostMemory: number;
  residentSessions: number;
  snapshotKey?: string;
  fleet?: string;
  fleetPrefix: string;
  fleetCapacity: number;
  envOptions?: string;
  module?: string[];
}

/** Add `llmix serve` to the program. */
export function registerServeCommand(program: Command): void {
  program
    .command("serve")
    .description("serve the environments over HTTP, WebSocket and MCP (OpenAPI at /openapi.json)")
    .option("--host <host>", "interface to bind; anything but loopback needs --auth", SERVE_DEFAULTS.host)
    .option("--port <port>", "TCP port (0 picks a free one)", integer("--port", 0, 65_535), SERVE_DEFAULTS.port)
    .addOption(new Option("--store <path>", "trajectory store for recorded sessions: a SQLite file or a postgres:// URL").default(SERVE_DEFAULTS.storePath))
    .option("--auth <file>", 'bearer tokens: {"tokens":[{"token":"...","scopes":["env:run","trajectories:read","admin"],"name":"..."}]}')
    .option("--data-policy <file>", "the deployment's data policy: tenants and their tokens and scopes, allowed environments and task sets, retention, redaction (docs/data-policy.md); replaces --auth")
    .option("--capacity <n>", "live sessions at most (more get capacity_reached, HTTP 503)", integer("--capacity", 1, 10_000_000), 10_000)
    .addOption(new Option("--idle-ttl <seconds>", "close sessions idle this long (0 = never)").argParser(seconds("--idle-ttl", 30 * 86_400)).default(900_000, "900"))
    .addOption(
      new Option("--step-timeout <seconds>", "a step running longer fails with step_timeout and closes its session (0 = no limit)")
        .argParser(seconds("--step-timeout", 86_400))
        .default(60_000, "60"),
    )
    .option("--body-limit <bytes>", "largest request body or WebSocket message (larger ones get 413 payload_too_large)", integer("--body-limit", 64, 1024 * 1024 * 1024), DEFAULT_BODY_LIMIT)
    .option("--hosts <n>", "environment host threads that run the sessions (default: the core count)", integer("--hosts", 1, 256))
    .option("--host-memory <MiB>", "heap cap of each host thread; a step that exceeds it ends its session with resource_exhausted", integer("--host-memory", 64, 65_536), DEFAULT_THREAD_HEAP_MB)
    .option("--resident-sessions <n>", "sessions each host keeps live; the least recently used beyond it are parked as snapshots and restored on their next request", integer("--resident-sessions", 1, 10_000_000), DEFAULT_RESIDENT_SESSIONS)
    .option("--snapshot-key <file>", "key that signs snapshots given to clients (share it across a fleet); default: a random key per start")
    .option("--fleet <url>", "join a fleet of replicas that share their sessions through this Redis (redis://HOST:PORT[/DB]): any replica can step any session, and a replica's death loses none", (v: string) => redisUrl(v, "--fleet"))
    .option("--fleet-prefix <prefix>", "with --fleet: the fleet's key prefix in Redis (one per fleet sharing a Redis)", FLEET_DEFAULTS.prefix)
    .option("--fleet-capacity <n>", "with --fleet: live sessions in the whole fleet at most (--capacity bounds the copies one replica holds)", integer("--fleet-capacity", 1, 1_000_000_000), FLEET_DEFAULTS.capacity)
    .option("--env-options <json>", 'options of each environment\'s sessions, by id: {"billing-dispute": {"communicationJudge": {"baseURL": "...", "model": "..."}}}')
    .addOption(moduleOption())
    .action(async (flags: ServeFlags) => {
      const registry = await registryWith(flags.module);
      const server = await startServer({
        registry, host: flags.host, port: flags.port, storePath: flags.store, authPath: flags.auth, policyPath: flags.dataPolicy, capacity: flags.capacity,
        idleTtlMs: flags.idleTtl, stepTimeoutMs: flags.stepTimeout, bodyLimit: flags.bodyLimit, logger: true,
        hosts: flags.hosts, hostMemoryMb: flags.hostMemory, residentSessions: flags.residentSessions, snapshotKeyPath: flags.snapshotKey,
        fleetUrl: flags.fleet, fleetPrefix: flags.fleetPrefix, fleetCapacity: flags.fleetCapacity, envOptions: envOptionsByEnv(flags.envOptions, registry.ids()),
        // Each session's tools over MCP (streamable HTTP at /v1/sessions/:id/mcp), with the same auth and limits.
        // and the trajectory inspector at /ui/ (its assets are public; the data it shows comes through the routes' auth).
        extraRoutes: async (app, { manager }) => {
          mountMcp(app, manager);
          await registerInspector(app);
        },
      });
      const stopped = stopOnSignals(server);
      const policy = server.service.policy;
      if (policy) for (const line of policy.describe()) process.stderr.write(`llmix serve: ${line}\n`);
      if (!server.authenticated) process.stderr.write(`llmix serve: no --auth: unauthenticated, so bound to loopback only (${server.host})\n`);
      const envs = registry.ids().length;
      const fleet = server.service.fleet;
      const fleetNote = fleet ? ` · fleet ${displayRedisUrl(flags.fleet as string)} as ${fleet.replica}` : "";
      print(`llmix serve: API ${server.url}/v1 · OpenAPI ${server.url}/openapi.json · inspector ${server.url}/ui/ · ${envs} environment${envs === 1 ? "" : "s"} · store ${displayStore(flags.store)}${fleetNote}`);
      await stopped;
    });
}

/** --env-options: a JSON object of environment id -> options object, each id one the service runs. */
function envOptionsByEnv(text: string | undefined, ids: readonly string[]): Record<string, Record<string, unknown>> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationError("invalid_argument", `--env-options must be JSON: ${(error as Error).message}`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new ValidationError("invalid_argument", '--env-options must be an object of environment id -> options, e.g. {"billing-dispute": {"maxSteps": 20}}');
  for (const [id, options] of Object.entries(value as Record<string, unknown>)) {
    if (!ids.includes(id)) throw new ValidationError("invalid_argument", `--env-options names "${id}", not an environment of this service (${ids.join(", ")})`);
    if (!options || typeof options !== "object" || Array.isArray(options)) throw new ValidationError("invalid_argument", `--env-options.${id} must be an options object`);
  }
  return value as Record<string, Record<string, unknown>>;
}
