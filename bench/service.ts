/**
 * The service under load: step round-trip latency (p50/p99) and throughput over HTTP and WebSocket at
 * concurrency 1 and 64, for the trivial echo environment and for billing-dispute, against a bare
 * `node:http` JSON echo server measured in the same run (the ratio is what to compare); then the memory
 * of 10,000 live billing-dispute sessions in one server process. The servers run as child processes of
 * the built CLI (`npm run bench` builds first), so their RSS is their own.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { Agent, request } from "node:http";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { percentile } from "./harness.js";

const root = fileURLToPath(new URL("..", import.meta.url));

export interface TransportRate {
  env: string;
  transport: "http" | "ws" | "echo-http";
  concurrency: number;
  steps: number;
  steps_per_s: number;
  p50_us: number;
  p99_us: number;
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

interface Server {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** Start a child process and resolve with the first http://127.0.0.1:PORT it prints. */
function startChild(args: string[]): Promise<Server> {
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
          proc,
          stop: () => new Promise<void>((done) => {
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

// node:http with keep-alive: the lightest client Node has, so the servers, not the client, are measured.
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

function send(method: string, url: string, body?: unknown): Promise<unknown> {
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


/**
 * `concurrency` loops, each `steps` times awaiting `one(loopIndex)`; latencies in µs. `before(loop, i)`
 * runs untimed ahead of each call (sessions are replaced there before their step budget runs out).
 */
async function drive(concurrency: number, steps: number, one: (loop: number) => Promise<unknown>, before?: (loop: number, i: number) => Promise<void>) {
  const latencies: number[] = [];
  let untimed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, loop) => {
      for (let i = 0; i < steps; i++) {
        if (before) {
          const u = performance.now();
          await before(loop, i);
          untimed += performance.now() - u;
        }
        const t = performance.now();
        await one(loop);
        latencies.push((performance.now() - t) * 1000);
      }
    }),
  );
  // Untimed work of the loops overlaps; subtracting its share per loop keeps the rate about steps only.
  const seconds = (performance.now() - started - untimed / concurrency) / 1000;
  latencies.sort((a, b) => a - b);
  return { steps: latencies.length, steps_per_s: latencies.length / seconds, p50_us: percentile(latencies, 0.5), p99_us: percentile(latencies, 0.99) };
}

const ENVS = {
  "bench-echo": { task: "bench-echo/easy/seed-1", action: { type: "tool_call", tool: "echo", args: { text: "hello world", n: 42 } } },
  "billing-dispute": { task: "billing-dispute/medium/seed-7", action: { type: "tool_call", tool: "get_agent_profile", args: {} } },
} as const;

/** Steps a session takes before the bench replaces it: within billing-dispute's 36-step budget. */
const STEPS_PER_SESSION = 30;

async function httpRate(server: Server, env: keyof typeof ENVS, concurrency: number, steps: number) {
  const spec = ENVS[env];
  const sessions: string[] = [];
  const rotate = async (loop: number, i: number) => {
    if (i % STEPS_PER_SESSION !== 0) return;
    if (sessions[loop]) await send("DELETE", `${server.url}/v1/sessions/${sessions[loop]}`);
    sessions[loop] = ((await post(`${server.url}/v1/sessions`, { env, task_id: spec.task, seed: 1 })) as { session_id: string }).session_id;
  };
  const r = await drive(concurrency, steps, (loop) => post(`${server.url}/v1/sessions/${sessions[loop]}/step`, { action: spec.action }), rotate);
  await Promise.all(sessions.map((id) => send("DELETE", `${server.url}/v1/sessions/${id}`)));
  return r;
}

async function wsRate(server: Server, env: keyof typeof ENVS, concurrency: number, steps: number) {
  const spec = ENVS[env];
  const sockets = await Promise.all(
    Array.from({ length: concurrency }, () =>
      new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(`${server.url.replace("http", "ws")}/v1/ws`);
        ws.once("open", () => resolve(ws));
        ws.once("error", reject);
      }),
    ),
  );
  const calls = sockets.map((ws) => {
    let next = 0;
    const waiting = new Map<number, (v: unknown) => void>();
    ws.on("message", (data: Buffer) => {
      const msg = JSON.parse(data.toString()) as { id: number; ok: boolean; result?: unknown; error?: unknown };
      waiting.get(msg.id)?.(msg.ok ? msg.result : Promise.reject(new Error(JSON.stringify(msg.error))));
      waiting.delete(msg.id);
    });
    return (op: string, params: Record<string, unknown>) =>
      new Promise<unknown>((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        ws.send(JSON.stringify({ id, op, ...params }));
      });
  });
  type Call = (op: string, p: Record<string, unknown>) => Promise<unknown>;
  const sessions: string[] = [];
  const rotate = async (loop: number, i: number) => {
    if (i % STEPS_PER_SESSION !== 0) return;
    const call = calls[loop] as Call;
    if (sessions[loop]) await call("close", { session_id: sessions[loop] });
    sessions[loop] = ((await call("create", { env, task_id: spec.task, seed: 1 })) as { session_id: string }).session_id;
  };
  const r = await drive(concurrency, steps, (loop) => (calls[loop] as Call)("step", { session_id: sessions[loop], action: spec.action }), rotate);
  await Promise.all(calls.map((call, i) => call("close", { session_id: sessions[i] })));
  for (const ws of sockets) ws.close();
  return r;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** Step rates over HTTP and WebSocket, with the echo server as the same-run baseline. */
export async function serviceRates(options: { steps?: number } = {}): Promise<TransportRate[]> {
  // Per loop: enough samples at concurrency 1; within billing-dispute's 36-step budget at 64.
  const stepsAt = (concurrency: number) => options.steps ?? (concurrency === 1 ? 600 : 60);
  const dir = mkdtempSync(join(tmpdir(), "llmix-bench-service-"));
  const server = await startChild(["dist/cli/bin.js", "serve", "--port", "0", "--store", join(dir, "db"), "--module", "bench/echo-env.ts", "--capacity", "20000"]);
  const echo = await startChild(["-e", ECHO_SERVER]);
  const out: TransportRate[] = [];
  try {
    // Warm both servers up.
    await httpRate(server, "bench-echo", 4, 30);
    await drive(4, 50, () => post(echo.url, ENVS["bench-echo"].action));
    for (const concurrency of [1, 64]) {
      const steps = stepsAt(concurrency);
      const echoRate = await drive(concurrency, steps, () => post(echo.url, { action: ENVS["bench-echo"].action }));
      out.push({ env: "-", transport: "echo-http", concurrency, ...round(echoRate), ratio_to_echo: 1 });
      for (const env of ["bench-echo", "billing-dispute"] as const) {
        for (const [transport, rate] of [["http", httpRate], ["ws", wsRate]] as const) {
          const r = await rate(server, env, concurrency, steps);
          out.push({ env, transport, concurrency, ...round(r), ratio_to_echo: Math.round((r.steps_per_s / echoRate.steps_per_s) * 100) / 100 });
        }
      }
    }
  } finally {
    await server.stop();
    await echo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

/** RSS of one server process holding `sessions` live billing-dispute sessions. */
export async function sessionMemory(options: { sessions?: number; env?: keyof typeof ENVS } = {}): Promise<SessionMemory> {
  const count = options.sessions ?? 10_000;
  const env = options.env ?? "billing-dispute";
  const dir = mkdtempSync(join(tmpdir(), "llmix-bench-memory-"));
  const server = await startChild(["dist/cli/bin.js", "serve", "--port", "0", "--store", join(dir, "db"), "--module", "bench/echo-env.ts", "--capacity", String(count + 10)]);
  try {
    // One session first, so the RSS before counts the loaded code and the caches, not only the sessions.
    await post(`${server.url}/v1/sessions`, { env, task_id: ENVS[env].task, seed: 0 });
    const before = rssMb(server.proc.pid as number);
    const started = performance.now();
    let created = 1;
    await Promise.all(
      Array.from({ length: 16 }, async (_, lane) => {
        for (let i = lane; i < count - 1; i += 16) {
          // Distinct tasks: every session holds its own world, as in training.
          await post(`${server.url}/v1/sessions`, { env, task_id: `${env}/medium/seed-${i + 1}`, seed: i });
          created++;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const after = rssMb(server.proc.pid as number);
    return {
      env,
      sessions: created,
      rss_before_mb: Math.round(before),
      rss_after_mb: Math.round(after),
      kb_per_session: Math.round(((after - before) * 1024) / Math.max(1, created - 1)),
      create_per_s: Math.round((created - 1) / seconds),
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function round(r: { steps: number; steps_per_s: number; p50_us: number; p99_us: number }) {
  return { steps: r.steps, steps_per_s: Math.round(r.steps_per_s), p50_us: Math.round(r.p50_us), p99_us: Math.round(r.p99_us) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await serviceRates());
  console.log(await sessionMemory({ sessions: Number(process.argv[2] ?? 10_000) }));
}
