/**
 * Shared by the service tests: a real server on 127.0.0.1 (port 0), a JSON fetch helper, a small
 * WebSocket client (the `ws` package that @fastify/websocket depends on; it ships no types, so the
 * surface used here is typed by hand), and the reference solver of billing-dispute driven from the
 * server's observations.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Action, StepResult, ToolSpec } from "../../src/core/contract.js";
import { toDecision } from "../../src/core/policy.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { buildApp, type AppOptions, type LlmixService } from "../../src/server/app.js";
import type { CreatedSession, StepResponse } from "../../src/server/sessions.js";
import { openStore, type SqliteTrajectoryStore } from "../../src/store/sqlite-store.js";

/** The hostile test environment's module (steps that hang, allocate, exit their thread or stall). */
export const HOSTILE_MODULE = join(process.cwd(), "test/fixtures/hostile-env.ts");

/** A service listening on a free loopback port. */
export interface TestServer {
  service: LlmixService;
  base: string;
  port: number;
  store: SqliteTrajectoryStore | undefined;
  close(): Promise<void>;
}

/** Start a service (built-in registry and a temporary store unless given) on 127.0.0.1:0. */
export async function startTestServer(options: Partial<AppOptions> & { withStore?: boolean } = {}): Promise<TestServer> {
  const dir = options.withStore === false ? undefined : mkdtempSync(join(tmpdir(), "llmix-serve-"));
  const store = dir ? openStore(join(dir, "llmix.db")) : undefined;
  const { withStore: _w, ...rest } = options;
  // One host: tests do not need two, and each host thread takes a few seconds to start from source.
  const service = await buildApp({ registry: builtinRegistry(), store, hosts: 1, ...rest });
  await service.app.listen({ host: "127.0.0.1", port: 0 });
  const address = service.app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    service,
    base: `http://127.0.0.1:${port}`,
    port,
    store,
    close: async () => {
      await service.app.close();
      await store?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A JSON response. */
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** Send a request; `body` is JSON-encoded unless it is already a string or Buffer. */
export async function api<T = any>(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" || Buffer.isBuffer(body) ? (body as string) : JSON.stringify(body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (metrics): keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed as T };
}

interface RawSocket {
  readonly readyState: number;
  on(event: "open" | "close", listener: () => void): void;
  on(event: "message", listener: (data: Buffer) => void): void;
  on(event: "error", listener: (error: Error) => void): void;
  on(event: "unexpected-response", listener: (request: unknown, response: { statusCode: number }) => void): void;
  send(data: string | Buffer): void;
  close(): void;
}
const require = createRequire(import.meta.url);
const WebSocketClass = require("ws") as new (url: string, options?: { headers?: Record<string, string> }) => RawSocket;

/** A reply of the WebSocket protocol. */
export interface WsReply<T = any> {
  id: string | number | null;
  ok: boolean;
  result?: T;
  error?: { code: string; message: string; details: Record<string, unknown> };
}

/** A WebSocket client that matches replies to requests by id. */
export class WsClient {
  private next = 1;
  private readonly waiting = new Map<string | number, (reply: WsReply) => void>();
  /** Replies whose id matched no request (malformed messages get id null). */
  readonly unmatched: WsReply[] = [];
  private readonly unmatchedWaiters: Array<(reply: WsReply) => void> = [];
  closed = false;

  private constructor(readonly socket: RawSocket) {
    socket.on("message", (data) => {
      const reply = JSON.parse(data.toString("utf8")) as WsReply;
      const resolve = reply.id !== null ? this.waiting.get(reply.id) : undefined;
      if (resolve && reply.id !== null) {
        this.waiting.delete(reply.id);
        resolve(reply);
      } else {
        const waiter = this.unmatchedWaiters.shift();
        if (waiter) waiter(reply);
        else this.unmatched.push(reply);
      }
    });
    socket.on("close", () => {
      this.closed = true;
    });
  }

  /** Connect; rejects with the HTTP status when the upgrade is refused. */
  static connect(url: string, headers: Record<string, string> = {}): Promise<WsClient> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocketClass(url, { headers });
      socket.on("open", () => resolve(new WsClient(socket)));
      socket.on("unexpected-response", (_req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })));
      socket.on("error", reject);
    });
  }

  /** Send {id, op, ...params} and wait for its reply. */
  request<T = any>(op: string, params: Record<string, unknown> = {}): Promise<WsReply<T>> {
    const id = `m${this.next++}`;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve as (reply: WsReply) => void);
      this.socket.send(JSON.stringify({ id, op, ...params }));
    });
  }

  /** Send raw data; the reply is expected to match no request (id null or unknown). */
  sendRaw(data: string | Buffer): Promise<WsReply> {
    return new Promise((resolve) => {
      this.unmatchedWaiters.push(resolve);
      this.socket.send(data);
    });
  }

  /** Close the connection and wait until it is closed. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.on("close", () => resolve());
      this.socket.close();
    });
  }
}

/** The first task id and seed the episode tests use. */
export const TASK = { env: "billing-dispute", task_id: "billing-dispute/easy/seed-1", seed: 1 } as const;

/**
 * Play a billing-dispute episode through a transport with the reference solver: a local instance,
 * reset to the same task and seed, chooses each action from the observation the server returned.
 */
export async function playReference(
  created: CreatedSession,
  step: (action: unknown) => Promise<StepResponse>,
  maxSteps = 60,
): Promise<StepResponse[]> {
  const env = builtinRegistry().get(created.env).create();
  try {
    await env.reset(created.task_id, created.seed);
    const solver = env.referenceSolver();
    const tools: readonly ToolSpec[] = created.tools;
    const history: Array<{ action: Action; result: StepResult }> = [];
    const responses: StepResponse[] = [];
    let observation = created.observation;
    for (let i = 1; i <= maxSteps; i++) {
      const action = toDecision(await solver.act({ step: i, observation, tools, history })).action as Action;
      const response = await step(action);
      responses.push(response);
      history.push({
        action,
        result: { observation: response.observation, reward: response.reward, rewardComponents: response.reward_components, terminated: response.terminated, truncated: response.truncated, info: response.info },
      });
      observation = response.observation;
      if (response.terminated || response.truncated) break;
    }
    return responses;
  } finally {
    await env.close();
  }
}

/** A running `llmix serve` process. */
export interface ServeProcess {
  child: ChildProcess;
  url: string;
  line: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Start `node BIN serve ARGS` in `cwd` (added to `children` for cleanup) and wait for its one start line. */
export function spawnServe(bin: string, cwd: string, args: string[], children: ChildProcess[]): Promise<ServeProcess> {
  const child = spawn(process.execPath, [bin, "serve", ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start line; stdout: ${stdout} stderr: ${stderr}`)), 20_000);
    child.stdout!.on("data", (c: Buffer) => {
      stdout += c.toString();
      const match = /API (http:\/\/[^\s]+)\/v1 .*OpenAPI (http:\/\/[^\s]+)\/openapi\.json/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1] as string, line: stdout.split("\n")[0] as string, stderr: () => stderr, exited });
      }
    });
    void exited.then((code) => reject(new Error(`exited ${code} before starting: ${stderr}`)));
  });
}
