/**
 * Running the service: open the store, load auth, build the app, listen, and stop cleanly. Stopping
 * (SIGTERM, SIGINT or `stop()`) refuses new work, lets in-flight steps finish, stores the recorded
 * sessions still open, closes every environment and then the store.
 */
import { ValidationError } from "../core/errors.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import { readSnapshotKey } from "../hosts/signing.js";
import { openStoreAt } from "../store/open.js";
import { DEFAULT_STORE_PATH } from "../store/sqlite-store.js";
import type { TrajectoryStore } from "../store/types.js";
import { applyRetention, buildApp, type AppOptions, type LlmixService } from "./app.js";
import { isLoopback, TokenAuth } from "./auth.js";
import { DataPolicy } from "./data-policy.js";
import { Fleet } from "./fleet.js";

/** What `llmix serve` takes. */
export interface ServeOptions {
  registry: EnvironmentRegistry;
  host?: string;
  /** 0 picks a free port (the real one is in `RunningServer.port`). */
  port?: number;
  /** SQLite trajectory store path (default ./llmix-data/llmix.db). */
  storePath?: string;
  /** Auth file path; without it only loopback hosts are allowed. */
  authPath?: string;
  /** Data policy file path (tenants, tokens, retention, redaction; see data-policy.ts); replaces authPath. */
  policyPath?: string;
  /** A data policy already loaded (tests); replaces policyPath. */
  policy?: DataPolicy;
  capacity?: number;
  idleTtlMs?: number;
  stepTimeoutMs?: number;
  /** Environment host threads (default: the core count). */
  hosts?: number;
  /** Heap cap of each host thread, MiB. */
  hostMemoryMb?: number;
  /** A file holding the snapshot signing key (shared by a fleet); default: a random key per start. */
  snapshotKeyPath?: string;
  /** Sessions each host keeps live before parking the least recently used. */
  residentSessions?: number;
  /** Join a fleet of replicas sharing sessions through this Redis (redis://...); see fleet.ts. */
  fleetUrl?: string;
  /** Key prefix of the fleet in Redis (several fleets may share one Redis). */
  fleetPrefix?: string;
  /** Sessions in the whole fleet at most. */
  fleetCapacity?: number;
  /** Options each environment's session instances are created with, by environment id. */
  envOptions?: Record<string, Record<string, unknown>>;
  bodyLimit?: number;
  logger?: boolean;
  extraRoutes?: AppOptions["extraRoutes"];
}

/** A listening service. */
export interface RunningServer {
  service: LlmixService;
  store: TrajectoryStore;
  host: string;
  port: number;
  /** e.g. http://127.0.0.1:8377 */
  url: string;
  authenticated: boolean;
  /** Stop: the steps of `stop()` above. Idempotent. */
  stop(): Promise<void>;
}

/** Defaults of `llmix serve`. */
export const SERVE_DEFAULTS = { host: "127.0.0.1", port: 8377, storePath: DEFAULT_STORE_PATH } as const;

/** Open the store and auth, build the app and listen. Without auth a non-loopback host is refused (invalid_config). */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? SERVE_DEFAULTS.host;
  const port = options.port ?? SERVE_DEFAULTS.port;
  if ((options.policy || options.policyPath !== undefined) && options.authPath !== undefined) {
    throw new ValidationError("invalid_config", "give --data-policy or --auth, not both: a data policy holds the deployment's tokens");
  }
  const policy = options.policy ?? (options.policyPath !== undefined ? DataPolicy.fromFile(options.policyPath) : undefined);
  if (policy) {
    const unknown = policy.unknownEnvironments(options.registry.ids());
    if (unknown.length > 0) throw new ValidationError("invalid_config", `${policy.source}: names environments this service does not run: ${unknown.join(", ")} (it runs ${options.registry.ids().join(", ")})`);
  }
  const auth = policy ? policy.auth : options.authPath !== undefined ? TokenAuth.fromFile(options.authPath) : null;
  if (!auth && !isLoopback(host)) {
    throw new ValidationError(
      "invalid_config",
      `refusing to serve on ${host} without --auth: an unauthenticated service may only bind to loopback (127.0.0.1, ::1, localhost); give --auth FILE to serve on other interfaces`,
    );
  }
  const store = await openStoreAt(options.storePath ?? SERVE_DEFAULTS.storePath);
  let service: LlmixService;
  let fleet: Fleet | undefined;
  try {
    let snapshotKey = options.snapshotKeyPath !== undefined ? readSnapshotKey(options.snapshotKeyPath) : undefined;
    if (options.fleetUrl !== undefined) {
      const stepTimeoutMs = options.stepTimeoutMs ?? 60_000;
      // A lock outlives the longest operation of a live replica (a rebuild replays up to ~64 actions);
      // a dead replica's locks are taken over after its heartbeat TTL, not this.
      fleet = new Fleet({ redisUrl: options.fleetUrl, prefix: options.fleetPrefix, capacity: options.fleetCapacity, lockMs: stepTimeoutMs === 0 ? 86_400_000 : stepTimeoutMs * 70 + 10_000 });
      await fleet.join();
      // Every replica must verify the snapshots any other one signed.
      snapshotKey ??= await fleet.sharedSnapshotKey();
    }
    service = await buildApp({
      registry: options.registry, store, ...(policy ? { policy } : { auth }), capacity: options.capacity, idleTtlMs: options.idleTtlMs, stepTimeoutMs: options.stepTimeoutMs,
      hosts: options.hosts, hostMemoryMb: options.hostMemoryMb, residentSessions: options.residentSessions, snapshotKey, fleet, envOptions: options.envOptions,
      bodyLimit: options.bodyLimit, logger: options.logger, extraRoutes: options.extraRoutes,
    });
  } catch (error) {
    await fleet?.leave();
    await store.close();
    throw error;
  }
  try {
    await service.app.listen({ host, port });
  } catch (error) {
    await service.app.close().catch(() => undefined);
    await store.close();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL" || code === "ENOTFOUND") {
      throw new ValidationError("invalid_config", `cannot listen on ${host}:${port}: ${code}${code === "EADDRINUSE" ? " (the port is in use; pick another with --port, or --port 0 for a free one)" : ""}`);
    }
    throw error;
  }
  const address = service.app.server.address();
  const realPort = typeof address === "object" && address ? address.port : port;
  const urlHost = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const retention = policy ? scheduleRetention(service, policy) : undefined;
  let stopping: Promise<void> | undefined;
  return {
    service, store, host, port: realPort, url: `http://${urlHost}:${realPort}`, authenticated: auth !== null,
    stop: () =>
      (stopping ??= (async () => {
        // Nothing else may keep the process alive while it stops (idle hosts and sockets are unref'd):
        // this timer does, until the store is closed.
        const alive = setInterval(() => undefined, 1000);
        await retention?.stop();
        try {
          // The server stops accepting connections while the manager refuses new work and waits for in-flight steps.
          const closed = service.app.close();
          await service.manager.shutdown();
          // Keep-alive connections that went idle after their last answer would otherwise hold close() open
          // for the keep-alive timeout; anything still open after a grace period is cut.
          service.app.server.closeIdleConnections();
          const grace = setTimeout(() => service.app.server.closeAllConnections(), 5000);
          grace.unref();
          try {
            await closed;
          } finally {
            clearTimeout(grace);
          }
          await store.close();
        } finally {
          clearInterval(alive);
        }
      })()),
  };
}

/** The server's own identity in the audit log, for the purges it runs on schedule. */
const SERVER_CALLER = { name: "server", admin: true, tenant: null } as const;

/**
 * Purge what the policy's retention periods have expired: once at start, then every `sweepMinutes`.
 * A sweep that fails (the store is down) is retried at the next one; sweeps never overlap.
 */
function scheduleRetention(service: LlmixService, policy: DataPolicy): { stop(): Promise<void> } | undefined {
  if (policy.retentionPurges(new Date()).length === 0) return undefined;
  let running: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    running = running.then(() => applyRetention(service.trajectories, policy, SERVER_CALLER, "schedule")).catch((error: unknown) => {
      service.app.log.warn({ error: (error as Error).message }, "retention sweep failed; retrying at the next one");
    });
  };
  sweep();
  const timer = setInterval(sweep, policy.sweepMinutes * 60_000);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * Stop the server on SIGTERM or SIGINT; resolves once it has stopped. A second signal while stopping
 * exits at once with code 1.
 */
export function stopOnSignals(server: RunningServer, log: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<void> {
  return new Promise((resolve, reject) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        log(`llmix serve: ${signal} again; exiting without waiting`);
        process.exit(1);
      }
      stopping = true;
      log(`llmix serve: ${signal}; finishing in-flight steps and closing the store`);
      server.stop().then(
        () => {
          process.off("SIGTERM", onSignal);
          process.off("SIGINT", onSignal);
          resolve();
        },
        reject,
      );
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}
