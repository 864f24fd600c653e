/**
 * What a fleet costs per step (issue 16): `llmix serve` alone against `llmix serve --fleet` (Redis at
 * LLMIX_BENCH_REDIS_URL, default redis://127.0.0.1:6379), stepping billing-dispute sessions over HTTP
 * with wrk at concurrency 1 and 16:
 *
 * - one fleet replica that every step goes to (a sticky load balancer): the bookkeeping alone, a lock
 *   and a commit in Redis per step; the ratio to the single server is the cost;
 * - two fleet replicas, each stepping the sessions created on it (two wrk processes at once, rates
 *   summed): how the fleet shares this 2-core machine (it cannot scale here; on two machines it would);
 * - ping-pong: one session whose every step goes to the other replica (each step replays the one action
 *   the replica missed), timed per step by one sequential client, against the same client on the single
 *   server: the worst case of a load balancer without affinity.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { closeSessions, createSessions, ensureWrk, rate, runWrk, send, sessionsFor, startChild, WRK_SCRIPT, type Server } from "./service.js";

const execFileAsync = promisify(execFile);

/** One case of the fleet bench. */
export interface FleetCost {
  case: "single" | "fleet-1-replica" | "fleet-2-replicas" | "single-sequential" | "fleet-ping-pong";
  concurrency: number;
  steps_per_s: number;
  p50_us: number;
  p99_us: number;
  errors: number;
  /** steps_per_s / the single server's at the same concurrency (for ping-pong: per-step time ratio, inverted). */
  ratio_to_single: number;
}

const ACTION = { type: "tool_call", tool: "get_agent_profile", args: {} } as const;
const BODY = JSON.stringify({ action: ACTION });

/** Steps of one session at a time, `steps` in all, alternating between `servers`; per-step times (µs). */
async function sequentialSteps(servers: Server[], steps: number): Promise<number[]> {
  const times: number[] = [];
  let id = "";
  let taken = 30;
  for (let i = 0; i < steps; i++) {
    if (taken === 30) {
      if (id) await send("DELETE", `${servers[0]!.url}/v1/sessions/${id}`);
      id = ((await send("POST", `${servers[0]!.url}/v1/sessions`, { env: "billing-dispute", task_id: `billing-dispute/medium/seed-${i + 1}`, seed: i })) as { session_id: string }).session_id;
      taken = 0;
    }
    const started = performance.now();
    await send("POST", `${servers[i % servers.length]!.url}/v1/sessions/${id}/step`, { action: ACTION });
    times.push((performance.now() - started) * 1000);
    taken++;
  }
  if (id) await send("DELETE", `${servers[0]!.url}/v1/sessions/${id}`);
  return times;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)] as number;

/** The fleet's per-step cost against a single server, measured in the same run. */
export async function fleetCost(options: { seconds?: number; redisUrl?: string } = {}): Promise<FleetCost[]> {
  const seconds = options.seconds ?? 5;
  const redisUrl = options.redisUrl ?? process.env.LLMIX_BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
  const wrk = ensureWrk();
  const dir = mkdtempSync(join(tmpdir(), "llmix-bench-fleet-"));
  const script = join(dir, "step.lua");
  writeFileSync(script, WRK_SCRIPT);
  const prefix = `llmix:bench:fleet:${process.pid}:${Date.now()}:`;
  const serve = (name: string, fleet: boolean) =>
    startChild(["dist/cli/bin.js", "serve", "--port", "0", "--store", join(dir, `${name}.db`), "--capacity", "50000", "--idle-ttl", "0", ...(fleet ? ["--fleet", redisUrl, "--fleet-prefix", prefix] : [])]);
  const single = await serve("single", false);
  const a = await serve("a", true);
  const b = await serve("b", true);
  const out: FleetCost[] = [];
  const wrkOn = (server: Server, sessions: string[], connections: number) =>
    rate(runWrk(wrk, script, server.url, connections, seconds, { sessions, prefix: "/v1/sessions/", suffix: "/step", body: BODY }));
  try {
    // Warm-up (JIT, host threads) on every server.
    for (const server of [single, a, b]) {
      const warm = await createSessions(server, "billing-dispute", 8);
      wrkOn(server, warm, 4);
      await closeSessions(server, warm);
    }
    for (const connections of [1, 16]) {
      const count = sessionsFor(connections, seconds);
      const base = await createSessions(single, "billing-dispute", count);
      const s = wrkOn(single, base, connections);
      await closeSessions(single, base);
      out.push({ case: "single", concurrency: connections, ...s, ratio_to_single: 1 });
      const ratio = (x: number) => Math.round((x / s.steps_per_s) * 100) / 100;

      const sticky = await createSessions(a, "billing-dispute", count);
      const f1 = wrkOn(a, sticky, connections);
      await closeSessions(a, sticky);
      out.push({ case: "fleet-1-replica", concurrency: connections, ...f1, ratio_to_single: ratio(f1.steps_per_s) });

      // Two replicas at once, each with its own sessions and half the connections (at least one each).
      const half = Math.max(1, Math.floor(connections / 2));
      const [onA, onB] = await Promise.all([createSessions(a, "billing-dispute", count), createSessions(b, "billing-dispute", count)]);
      const both = await Promise.all(
        [
          [a, onA],
          [b, onB],
        ].map(async ([server, sessions]) => {
          const env = { ...process.env, SESSIONS: (sessions as string[]).join(","), THREADS: "1", PATH_PREFIX: "/v1/sessions/", PATH_SUFFIX: "/step", BODY };
          const { stdout } = await execFileAsync(wrk, ["-t", "1", "-c", String(half), "-d", `${seconds}s`, "-s", script, (server as Server).url], { env, maxBuffer: 16 << 20 });
          return JSON.parse(stdout.split("\n").find((l) => l.startsWith('{"requests"')) as string) as { requests: number; seconds: number; p50_us: number; p99_us: number; errors: number };
        }),
      );
      await Promise.all([closeSessions(a, onA), closeSessions(b, onB)]);
      const total = both.reduce((sum, r) => sum + r.requests / r.seconds, 0);
      out.push({
        case: "fleet-2-replicas", concurrency: half * 2, steps_per_s: Math.round(total), p50_us: Math.round(Math.max(...both.map((r) => r.p50_us))),
        p99_us: Math.round(Math.max(...both.map((r) => r.p99_us))), errors: both.reduce((sum, r) => sum + r.errors, 0), ratio_to_single: ratio(total),
      });
    }
    // Ping-pong against the same sequential client on the single server (so the client's own cost cancels).
    const steps = 600;
    const plain = await sequentialSteps([single], steps);
    const pingPong = await sequentialSteps([a, b], steps);
    const perSecond = (times: number[]) => Math.round(1e6 / median(times));
    out.push({ case: "single-sequential", concurrency: 1, steps_per_s: perSecond(plain), p50_us: Math.round(median(plain)), p99_us: Math.round(p99(plain)), errors: 0, ratio_to_single: 1 });
    out.push({
      case: "fleet-ping-pong", concurrency: 1, steps_per_s: perSecond(pingPong), p50_us: Math.round(median(pingPong)), p99_us: Math.round(p99(pingPong)), errors: 0,
      ratio_to_single: Math.round((median(plain) / median(pingPong)) * 100) / 100,
    });
  } finally {
    await Promise.all([single.stop(), a.stop(), b.stop()]);
    rmSync(dir, { recursive: true, force: true });
    // The fleet's keys (its shared snapshot key, the replica set) outlive the replicas: remove them.
    const redis = new Redis(redisUrl);
    const keys = await redis.keys(`${prefix}*`).catch(() => [] as string[]);
    if (keys.length > 0) await redis.del(...keys).catch(() => undefined);
    redis.disconnect();
  }
  return out;
}
