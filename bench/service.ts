/**
 * The service under load: step throughput and latency (p50/p99) over HTTP and WebSocket at concurrency
 * 1 and 64, for the trivial echo environment and for billing-dispute, against a bare `node:http` JSON
 * echo server measured in the same run (the ratio is what to compare); the memory of 10,000 live
 * billing-dispute sessions in one server; and what rebuilding a stopped host's sessions costs.
 *
 * Load comes from native generators, never from Node: `wrk` (Debian's package, installed here when
 * missing) for HTTP, and bench/native/wsload.c (compiled here with cc) for WebSocket. A Node client
 * saturates before the server does and flatters the ratio. Every connection keeps one request in
 * flight, as a trainer stepping its sessions does. The servers run as child processes of the built CLI
 * (`npm run bench` builds first), so their RSS is their own.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

export interface TransportRate {
  env: string;
  transport: "http" | "ws" | "echo-http";
  concurrency: number;
  steps: number;
  steps_per_s: number;
  p50_us: number;
  p99_us: number;
  /** Answers that were not a success (HTTP status other than 2xx, WebSocket ok:false): must be 0. */
  errors: number;
  /** steps_per_s / the echo server's requests per second at the same concurrency. */
  ratio_to_echo: number | null;
}

export interface SessionMemory {
  env: string;
  sessions: number;
  rss_before_mb: number;
  rss_after_mb: number;
  kb_per_session: number;
  create_per_s: number;
}

/** What rebuilding the sessions of a stopped host cost. */
export interface RebuildCost {
  env: string;
  sessions: number;
  steps_per_session: number;
  rebuilt: number;
  lost: number;
  total_ms: number;
  ms_per_session: number;
}

export interface Server {
  url: string;
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** Start a child process and resolve with the first http://127.0.0.1:PORT it prints. */
export function startChild(args: string[]): Promise<Server> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const onData = (d: Buffer) => {
      out += d;
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        proc.stdout?.off("data", onData);
        resolve({
          url: `http://127.0.0.1:${m[1]}`,
          port: Number(m[1]),
          proc,
          stop: () =>
            new Promise<void>((done) => {
              proc.once("exit", () => done());
              proc.kill("SIGTERM");
            }),
        });
      }
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", (d: Buffer) => (err += d));
    proc.once("exit", (code) => reject(new Error(`server exited with ${code} before listening: ${err.slice(0, 500)}`)));
  });
}

const ECHO_SERVER = `
const http = require("node:http");
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = JSON.stringify({ echo: JSON.parse(Buffer.concat(chunks).toString() || "null") });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(0, "127.0.0.1", () => console.log("http://127.0.0.1:" + server.address().port));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
`;

// ---- the load generators ----------------------------------------------------------------------------

/** wrk on the PATH, installed from Debian's packages when missing (the bench runs as root in CI and here). */
export function ensureWrk(): string {
  if (spawnSync("wrk", ["--version"]).error === undefined) return "wrk";
  console.log("  installing wrk (apt-get install wrk) ...");
  const install = spawnSync("sh", ["-c", "apt-get install -y -qq wrk >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq wrk >/dev/null)"], { stdio: "inherit" });
  if (install.status !== 0 || spawnSync("wrk", ["--version"]).error !== undefined) {
    throw new Error("the service bench needs wrk (Debian package wrk); install it with apt-get install wrk");
  }
  return "wrk";
}

/** bench/native/wsload.c, compiled once into bench/.bin. */
function ensureWsload(): string {
  const source = join(root, "bench/native/wsload.c");
  const dir = join(root, "bench/.bin");
  const binary = join(dir, "wsload");
  mkdirSync(dir, { recursive: true });
  execFileSync("cc", ["-O2", "-o", binary, source]);
  return binary;
}

/**
 * The wrk script: each thread steps its own share of the sessions in turn (SESSIONS, split across
 * THREADS), and counts answers that are not 2xx. done() prints one JSON line.
 */
export const WRK_SCRIPT = `
local counter = 0
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
end
function init(args)
  local all = {}
  for id in string.gmatch(os.getenv("SESSIONS"), "[^,]+") do table.insert(all, id) end
  local n = tonumber(os.getenv("THREADS"))
  mine = {}
  for i, id in ipairs(all) do if (i - 1) % n == tid then table.insert(mine, id) end end
  if #mine == 0 then mine = all end
  idx = 0
  body = os.getenv("BODY")
  headers = { ["Content-Type"] = "application/json" }
  bad = 0
end
function request()
  idx = idx % #mine + 1
  local path = os.getenv("PATH_PREFIX") .. mine[idx] .. os.getenv("PATH_SUFFIX")
  return wrk.format("POST", path, headers, body)
end
function response(status, headers, body)
  if status < 200 or status > 299 then bad = bad + 1 end
end
function done(summary, latency, requests)
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format('{"requests":%d,"seconds":%f,"p50_us":%d,"p99_us":%d,"errors":%d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50), latency:percentile(99), errors))
end
`;

interface LoadResult {
  requests: number;
  seconds: number;
  p50_us: number;
  p99_us: number;
  errors: number;
}

/** wrk against `url`: `connections` connections over min(connections, 2) threads for `seconds`. */
export function runWrk(wrk: string, script: string, url: string, connections: number, seconds: number, env: { sessions: string[]; prefix: string; suffix: string; body: string }): LoadResult {
  const threads = Math.min(connections, 2);
  const out = execFileSync(wrk, ["-t", String(threads), "-c", String(connections), "-d", `${seconds}s`, "-s", script, url], {
    env: { ...process.env, SESSIONS: env.sessions.join(","), THREADS: String(threads), PATH_PREFIX: env.prefix, PATH_SUFFIX: env.suffix, BODY: env.body },
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024,
  });
  const line = out.split("\n").find((l) => l.startsWith("{\"requests\""));
  if (!line) throw new Error(`wrk printed no result: ${out}`);
  return JSON.parse(line) as LoadResult;
}

/** wsload: `connections` WebSocket connections sending `messages` (line j on connection j % connections). */
function runWsload(wsload: string, port: number, connections: number, seconds: number, messages: string[]): LoadResult {
  const file = join(mkdtempSync(join(tmpdir(), "llmix-wsload-")), "messages.txt");
  writeFileSync(file, `${messages.join("\n")}\n`);
  const out = execFileSync(wsload, ["127.0.0.1", String(port), String(connections), String(seconds), file], { encoding: "utf8" });
  rmSync(file, { force: true });
  return JSON.parse(out.trim()) as LoadResult;
}

// ---- a small Node client, for set-up only (never for measuring) --------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export function send(method: string, url: string, body?: unknown): Promise<unknown> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers: data === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(data) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        if ((res.statusCode ?? 500) >= 400) reject(new Error(`${method} ${url}: ${res.statusCode} ${text.slice(0, 300)}`));
        else resolve(text === "" ? null : JSON.parse(text));
      });
    });
    req.on("error", reject);
    req.end(data);
  });
}

const post = (url: string, body: unknown) => send("POST", url, body);

/** `count` new sessions of `env` on distinct tasks, 16 at a time; their ids. */
export async function createSessions(server: Server, env: keyof typeof ENVS, count: number): Promise<string[]> {
  const ids: string[] = new Array(count);
  await Promise.all(
    Array.from({ length: 16 }, async (_, lane) => {
      for (let i = lane; i < count; i += 16) {
        const created = (await post(`${server.url}/v1/sessions`, { env, task_id: `${env}/${ENVS[env].difficulty}/seed-${i + 1}`, seed: i })) as { session_id: string };
        ids[i] = created.session_id;
      }
    }),
  );
  return ids;
}

export async function closeSessions(server: Server, ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 64) await Promise.all(ids.slice(i, i + 64).map((id) => send("DELETE", `${server.url}/v1/sessions/${id}`).catch(() => undefined)));
}

const ENVS = {
  "bench-echo": { difficulty: "easy", action: { type: "tool_call", tool: "echo", args: { text: "hello world", n: 42 } } },
  "billing-dispute": { difficulty: "medium", action: { type: "tool_call", tool: "get_agent_profile", args: {} } },
} as const;

/**
 * Sessions a run needs so that each takes at most about 30 steps, as a training episode does
 * (billing-dispute ends after 36 steps, and later steps would be cheap "episode ended" answers; the echo
 * environment never ends, but a session's call log grows with every step): a generous guess of the
 * steps a run takes divided by 30, and four per connection at least, so no two connections of one wrk
 * thread ever step the same session at once.
 */
export function sessionsFor(connections: number, seconds: number): number {
  return Math.max(4 * connections, Math.ceil((15_000 * seconds) / 30));
}

export function rate(r: LoadResult) {
  return { steps: r.requests, steps_per_s: Math.round(r.requests / r.seconds), p50_us: Math.round(r.p50_us), p99_us: Math.round(r.p99_us), errors: r.errors };
}

/** Step rates over HTTP and WebSocket, with the echo server as the same-run baseline. */
export async function serviceRates(options: { seconds?: number } = {}): Promise<TransportRate[]> {
  const seconds = options.seconds ?? 5;
  const wrk = ensureWrk();
  const wsload = ensureWsload();
  const dir = mkdtempSync(join(tmpdir(), "llmix-bench-service-"));
  const script = join(dir, "step.lua");
  writeFileSync(script, WRK_SCRIPT);
  const server = await startChild(["dist/cli/bin.js", "serve", "--port", "0", "--store", join(dir, "db"), "--module", "bench/echo-env.ts", "--capacity", "50000"]);
  const echo = await startChild(["-e", ECHO_SERVER]);
  const out: TransportRate[] = [];
  try {
    const body = (env: keyof typeof ENVS) => JSON.stringify({ action: ENVS[env].action });
    // Warm both servers up (JIT), then measure.
    const warm = await createSessions(server, "bench-echo", 4);
    runWrk(wrk, script, server.url, 4, 2, { sessions: warm, prefix: "/v1/sessions/", suffix: "/step", body: body("bench-echo") });
    runWsload(wsload, server.port, 4, 2, warm.map((id) => JSON.stringify({ id: 0, op: "step", session_id: id, action: ENVS["bench-echo"].action }).replace('"id":0', '"id":@ID@')));
    runWrk(wrk, script, echo.url, 4, 2, { sessions: ["x"], prefix: "/", suffix: "", body: body("bench-echo") });
    await closeSessions(server, warm);
    for (const connections of [1, 64]) {
      const echoRate = rate(runWrk(wrk, script, echo.url, connections, seconds, { sessions: ["x"], prefix: "/", suffix: "", body: body("bench-echo") }));
      out.push({ env: "-", transport: "echo-http", concurrency: connections, ...echoRate, ratio_to_echo: 1 });
      const ratio = (steps: number) => Math.round((steps / echoRate.steps_per_s) * 100) / 100;
      for (const env of ["bench-echo", "billing-dispute"] as const) {
        const http = await createSessions(server, env, sessionsFor(connections, seconds));
        const h = rate(runWrk(wrk, script, server.url, connections, seconds, { sessions: http, prefix: "/v1/sessions/", suffix: "/step", body: body(env) }));
        out.push({ env, transport: "http", concurrency: connections, ...h, ratio_to_echo: ratio(h.steps_per_s) });
        await closeSessions(server, http);
        const ws = await createSessions(server, env, sessionsFor(connections, seconds));
        const messages = ws.map((id) => JSON.stringify({ id: 0, op: "step", session_id: id, action: ENVS[env].action }).replace('"id":0', '"id":@ID@'));
        const w = rate(runWsload(wsload, server.port, connections, seconds, messages));
        out.push({ env, transport: "ws", concurrency: connections, ...w, ratio_to_echo: ratio(w.steps_per_s) });
        await closeSessions(server, ws);
      }
    }
  } finally {
    await server.stop();
    await echo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** RSS of one server process (serving thread and hosts together) holding `sessions` live sessions. */
export async function sessionMemory(options: { sessions?: number; env?: keyof typeof ENVS } = {}): Promise<SessionMemory> {
  const count = options.sessions ?? 10_000;
  const env = options.env ?? "billing-dispute";
  const dir = mkdtempSync(join(tmpdir(), "llmix-bench-memory-"));
  const server = await startChild(["dist/cli/bin.js", "serve", "--port", "0", "--store", join(dir, "db"), "--capacity", String(count + 10)]);
  try {
    // One session first, so the RSS before counts the loaded code and the caches, not only the sessions.
    await post(`${server.url}/v1/sessions`, { env, task_id: `${env}/${ENVS[env].difficulty}/seed-1`, seed: 0 });
    const before = rssMb(server.proc.pid as number);
    const started = performance.now();
    // Distinct tasks: every session holds its own world, as in training.
    await createSessions(server, env, count - 1);
    const seconds = (performance.now() - started) / 1000;
    const after = rssMb(server.proc.pid as number);
    return {
      env,
      sessions: count,
      rss_before_mb: Math.round(before),
      rss_after_mb: Math.round(after),
      kb_per_session: Math.round(((after - before) * 1024) / Math.max(1, count - 1)),
      create_per_s: Math.round((count - 1) / seconds),
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Rebuild after a kill: one host holds `sessions` billing-dispute sessions, each `steps` steps in; a
 * hostile session's step never returns, the deadline stops the host, and the others are rebuilt on a
 * new one. Reports the rebuild's time in all and per session (from the server's own measure).
 */
export async function rebuildCost(options: { sessions?: number; steps?: number } = {}): Promise<RebuildCost> {
  const count = options.sessions ?? 200;
  const steps = options.steps ?? 10;
  const dir = mkdtempSync(join(tmpdir(), "llmix-bench-rebuild-"));
  const server = await startChild(["dist/cli/bin.js", "serve", "--port", "0", "--store", join(dir, "db"), "--module", "test/fixtures/hostile-env.ts", "--hosts", "1", "--step-timeout", "2"]);
  try {
    const ids = await createSessions(server, "billing-dispute", count);
    const action = { action: ENVS["billing-dispute"].action };
    for (let i = 0; i < steps; i++) await Promise.all(ids.map((id) => post(`${server.url}/v1/sessions/${id}/step`, action)));
    const hostile = (await post(`${server.url}/v1/sessions`, { env: "hostile", task_id: "hostile/easy/seed-1", seed: 1 })) as { session_id: string };
    await post(`${server.url}/v1/sessions/${hostile.session_id}/step`, { action: { type: "tool_call", tool: "hang", args: {} } }).catch(() => undefined);
    // Every session answers again once rebuilt; then the server's own figures say what it took.
    await Promise.all(ids.map((id) => post(`${server.url}/v1/sessions/${id}/step`, action)));
    const metrics = (await new Promise<string>((resolve, reject) => {
      request(`${server.url}/metrics`, { agent }, (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c));
        res.on("end", () => resolve(text));
      }).on("error", reject).end();
    })) as string;
    const gauge = (name: string) => Number(new RegExp(`^${name} ([0-9.e+-]+)$`, "m").exec(metrics)?.[1] ?? NaN);
    const ms = gauge("llmix_last_rebuild_seconds") * 1000;
    return {
      env: "billing-dispute",
      sessions: count,
      steps_per_session: steps,
      rebuilt: gauge("llmix_last_rebuild_sessions_rebuilt"),
      lost: gauge("llmix_last_rebuild_sessions_lost"),
      total_ms: Math.round(ms),
      ms_per_session: Math.round((ms / count) * 100) / 100,
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await serviceRates());
  console.log(await rebuildCost());
  console.log(await sessionMemory({ sessions: Number(process.argv[2] ?? 10_000) }));
}
