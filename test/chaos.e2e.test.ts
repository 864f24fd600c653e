/**
 * Chaos, end to end (issue 12): `llmix serve` as a user runs it, 32 innocent recorded sessions played to
 * the end by their reference solvers over HTTP and WebSocket, while other tenants send steps that never
 * return, allocate without limit or end their thread, pathological terminal commands, runaway code, an
 * altered snapshot and a WebSocket flood they never read. Throughout, /healthz answers (p99 < 100 ms)
 * and the server's memory stays bounded; at the end every innocent session has the outcome it has when
 * run alone, and every one of them is in the store.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import type { Action } from "../src/core/contract.js";
import { runPolicy } from "../src/core/run-policy.js";
import { builtinRegistry } from "../src/envs/index.js";
import type { CreatedSession, StepResponse } from "../src/server/sessions.js";
import { api, playReference, WsClient } from "./server/service-helpers.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = join(root, "dist/cli/bin.js");
const dir = mkdtempSync(join(tmpdir(), "llmix-chaos-"));
let child: ChildProcess | null = null;

afterAll(() => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function serve(args: string[]): Promise<string> {
  child = spawn(process.execPath, [bin, "serve", "--port", "0", "--store", join(dir, "llmix.db"), ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr!.on("data", (c: Buffer) => (err += c.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start line: ${out} ${err}`)), 60_000);
    child!.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      const match = /API (http:\/\/[^\s]+)\/v1/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    child!.once("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
}

/** A worker that GETs /healthz every 25 ms until told to stop, then posts the latencies (ms) and failures. */
const HEALTH_PROBE = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const agent = new http.Agent({ keepAlive: true });
const latencies = [];
const failures = [];
let stop = false;
parentPort.on("message", () => (stop = true));
function probe() {
  if (stop) return parentPort.postMessage({ latencies, failures });
  const t = performance.now();
  http.get(workerData.url, { agent }, (res) => {
    res.resume();
    res.on("end", () => {
      latencies.push(performance.now() - t);
      if (res.statusCode !== 200) failures.push(String(res.statusCode));
      setTimeout(probe, 25);
    });
  }).on("error", (e) => {
    failures.push(e.message);
    setTimeout(probe, 25);
  });
}
probe();
`;

const ENVS = ["billing-dispute", "incident-response", "code-repair"] as const;
const DIFFICULTIES = ["easy", "medium", "hard"] as const;

interface Innocent {
  env: string;
  task_id: string;
  seed: number;
  ws: boolean;
}

const INNOCENTS: Innocent[] = Array.from({ length: 32 }, (_, i) => {
  const env = ENVS[i % 3] as string;
  return { env, task_id: `${env}/${DIFFICULTIES[Math.floor(i / 3) % 3]}/seed-${900 + i}`, seed: i, ws: i % 2 === 1 };
});

/** The outcome and step count of the reference episode run alone, in this process. */
async function alone(innocent: Innocent): Promise<{ outcome: number; steps: number }> {
  const env = builtinRegistry().get(innocent.env).create();
  try {
    const initial = await env.reset(innocent.task_id, innocent.seed);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    return { outcome: run.final?.rewardComponents.task ?? -1, steps: run.transitions.length };
  } finally {
    await env.close();
  }
}

/** Play one innocent session with its reference solver, over HTTP or a WebSocket. */
async function playInnocent(base: string, innocent: Innocent): Promise<{ id: string; outcome: number; steps: number }> {
  const body = { env: innocent.env, task_id: innocent.task_id, seed: innocent.seed, record: true };
  if (!innocent.ws) {
    const created = (await api<CreatedSession>(base, "POST", "/v1/sessions", body)).body;
    const responses = await playReference(created, async (action) => {
      const res = await api<StepResponse>(base, "POST", `/v1/sessions/${created.session_id}/step`, { action });
      if (res.status !== 200) throw new Error(`innocent ${innocent.task_id}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    });
    return { id: created.session_id, outcome: responses.at(-1)?.reward_components.task ?? -1, steps: responses.length };
  }
  const ws = await WsClient.connect(`${base.replace("http", "ws")}/v1/ws`);
  try {
    const created = (await ws.request<CreatedSession>("create", body)).result as CreatedSession;
    const responses = await playReference(created, async (action) => {
      const reply = await ws.request<StepResponse>("step", { session_id: created.session_id, action });
      if (!reply.ok) throw new Error(`innocent ${innocent.task_id}: ${JSON.stringify(reply.error)}`);
      return reply.result as StepResponse;
    });
    return { id: created.session_id, outcome: responses.at(-1)?.reward_components.task ?? -1, steps: responses.length };
  } finally {
    await ws.close();
  }
}

/** One step of a hostile session; the error code it ended with, or "ok". */
async function hostileStep(base: string, env: string, task: string, actions: Action[]): Promise<string[]> {
  const created = await api<CreatedSession>(base, "POST", "/v1/sessions", { env, task_id: task, seed: 1 });
  const codes: string[] = [];
  for (const action of actions) {
    const res = await api(base, "POST", `/v1/sessions/${created.body.session_id}/step`, { action });
    codes.push(res.status === 200 ? `ok:${(res.body as StepResponse).tool_result?.status ?? "-"}` : (res.body as { error: { code: string } }).error.code);
    if (res.status !== 200) break;
  }
  return codes;
}

const tool = (name: string, args: Record<string, unknown>): Action => ({ type: "tool_call", tool: name, args });

describe("chaos", () => {
  it("innocent sessions finish as when run alone while hostile tenants attack; /healthz stays fast; RSS bounded; nothing recorded is lost", async () => {
    const expected = await Promise.all(INNOCENTS.map(alone));
    const base = await serve(["--module", "test/fixtures/hostile-env.ts", "--step-timeout", "3", "--hosts", "2", "--host-memory", "256"]);
    const pid = child!.pid as number;

    // Watchers: /healthz every 25 ms from a thread of its own (this one is busy playing 32 reference
    // solvers, which would delay reading the answers and flatter nothing), RSS every 200 ms.
    const prober = new Worker(HEALTH_PROBE, { eval: true, workerData: { url: `${base}/healthz` } });
    const probed = new Promise<{ latencies: number[]; failures: string[] }>((resolve) => prober.once("message", resolve));
    const rss: number[] = [rssMb(pid)];
    const rssTimer = setInterval(() => rss.push(rssMb(pid)), 200);

    const attacks = Promise.all([
      hostileStep(base, "hostile", "hostile/easy/seed-1", [tool("count", { by: 1 }), tool("hang", {})]),
      hostileStep(base, "hostile", "hostile/easy/seed-2", [tool("allocate", {})]),
      hostileStep(base, "hostile", "hostile/easy/seed-3", [tool("exit_thread", {})]),
      hostileStep(base, "hostile", "hostile/easy/seed-4", [tool("stall", {})]),
      hostileStep(base, "incident-response", "incident-response/hard/seed-5", [
        tool("terminal", { command: "grep -E -c '(.{0,255}){0,97}[~]' /var/log/*/*" }),
        tool("terminal", { command: "printf '%400000000s' x | wc -c" }),
        tool("terminal", { command: `x=abcdefgh; ${"x=$x$x; ".repeat(28)}echo $x | grep -E -o 'a|a.*c' | wc -l` }),
      ]),
      // Four tenants whose tests loop inside a native built-in (they once held the shared runner 60 s).
      ...[6, 7, 8, 9].map((seed) =>
        hostileStep(base, "code-repair", `code-repair/easy/seed-${seed}`, [
          tool("write_file", { path: "test/zz_runaway.test.js", content: 'test("runaway", () => { const a = []; a[4e9] = 1; a.indexOf(2); });\n' }),
          tool("run_tests", { file: "test/zz_runaway.test.js" }),
        ]),
      ),
      (async () => {
        // An altered snapshot: refused, whatever the edit.
        const created = await api<CreatedSession>(base, "POST", "/v1/sessions", { env: "billing-dispute", task_id: "billing-dispute/easy/seed-7", seed: 7 });
        const { snapshot } = (await api(base, "GET", `/v1/sessions/${created.body.session_id}/snapshot`)).body;
        const fork = await api(base, "POST", "/v1/sessions", { snapshot: { ...snapshot, tokens: snapshot.tokens + 1 } });
        return [fork.body?.error?.code ?? String(fork.status)];
      })(),
      (async () => {
        // A WebSocket flood that never reads its replies.
        const flood = await WsClient.connect(`${base.replace("http", "ws")}/v1/ws`);
        (flood.socket as unknown as { _socket: { pause(): void } })._socket.pause();
        const message = JSON.stringify({ id: 1, op: "env", env: "incident-response" });
        for (let i = 0; i < 50; i++) {
          for (let j = 0; j < 400; j++) flood.socket.send(message);
          await new Promise((r) => setTimeout(r, 20));
        }
        return ["flooded"];
      })(),
    ]);
    const played = await Promise.all(INNOCENTS.map((innocent) => playInnocent(base, innocent)));
    const attackCodes = await attacks;
    prober.postMessage("stop");
    const { latencies: health, failures: healthFailures } = await probed;
    await prober.terminate();
    clearInterval(rssTimer);

    // Every innocent session ends as it does alone, and its recorded episode is in the store, whole.
    for (const [i, result] of played.entries()) {
      expect({ task: INNOCENTS[i]?.task_id, outcome: result.outcome, steps: result.steps }).toEqual({ task: INNOCENTS[i]?.task_id, ...expected[i] });
      const stored = await api(base, "GET", `/v1/episodes/${encodeURIComponent(result.id)}`);
      expect(stored.status, result.id).toBe(200);
      expect(stored.body.episode).toMatchObject({ status: "ok", outcome: expected[i]?.outcome, steps: expected[i]?.steps });
    }
    // The attacks ended in typed errors, never in a dead server.
    expect(attackCodes[0]).toEqual(["ok:ok", "step_timeout"]);
    // Near its heap cap V8 collects again and again: the step deadline may come first.
    expect([["resource_exhausted"], ["step_timeout"]]).toContainEqual(attackCodes[1]);
    expect(attackCodes[2]).toEqual(["host_failed"]);
    expect(attackCodes[3]).toEqual(["step_timeout"]);
    expect(attackCodes[4]).toEqual(["ok:error", "ok:error", "ok:error"]);
    for (const runaway of attackCodes.slice(5, 9)) expect(runaway).toEqual(["ok:ok", "ok:ok"]);
    expect(attackCodes[9]).toEqual(["invalid_snapshot"]);
    console.log("attacks:", JSON.stringify(attackCodes));
    const metrics = (await api(base, "GET", "/metrics")).body as string;
    expect(metrics).toMatch(/llmix_hosts_stopped_total\{reason="step_timeout"\} [1-9]/);

    health.sort((a: number, b: number) => a - b);
    const p99 = health[Math.floor(health.length * 0.99)] as number;
    console.log(`healthz: ${health.length} probes, p50 ${health[Math.floor(health.length / 2)]?.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; RSS ${rss[0]?.toFixed(0)} -> max ${Math.max(...rss).toFixed(0)} MB`);
    expect(healthFailures).toEqual([]);
    expect(health.length).toBeGreaterThan(50);
    expect(p99, `healthz p99 ${p99.toFixed(1)} ms over ${health.length} probes`).toBeLessThan(100);
    // Bounded: three host heaps of 256 MiB plus the serving thread, whatever the tenants did.
    expect(Math.max(...rss), `RSS samples ${rss.map((r) => r.toFixed(0)).join(" ")}`).toBeLessThan(1600);
  }, 300_000);
});
