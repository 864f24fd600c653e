/**
 * The service as a hostile tenant finds it (issue 12): sessions owned by tokens, signed snapshots,
 * cross-site and DNS-rebinding requests without auth, readable 413s, stored free-text limits, a
 * recorded session whose step stops its host, a WebSocket client that never reads, and heavy jobs that
 * must not hold up /healthz.
 */
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registryWith } from "../../src/cli/options.js";
import { TokenAuth } from "../../src/server/auth.js";
import { WS_LIMITS } from "../../src/server/ws.js";
import { api, HOSTILE_MODULE, startTestServer, TASK, WsClient, type TestServer } from "./service-helpers.js";

const TOKENS = {
  tokens: [
    { token: "alice-token-0123456789", scopes: ["env:run"], name: "alice" },
    { token: "bob-token-0123456789", scopes: ["env:run"], name: "bob" },
    { token: "admin-token-0123456789", scopes: ["admin"], name: "ops" },
  ],
};
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const ALICE = bearer("alice-token-0123456789");
const BOB = bearer("bob-token-0123456789");
const ADMIN = bearer("admin-token-0123456789");

/** A raw HTTP request, so Host and Origin can be anything (fetch guards them). */
function raw(base: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: any }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers: { ...(body ? { "content-type": "application/json" } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("with --auth", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ auth: TokenAuth.fromConfig(TOKENS) });
  });
  afterAll(async () => {
    await server.close();
  });

  it("a session belongs to the token that created it: another token gets unknown_session (404), admin does not", async () => {
    const created = await api(server.base, "POST", "/v1/sessions", TASK, ALICE);
    expect(created.status).toBe(201);
    const id = created.body.session_id as string;
    const action = { action: { type: "tool_call", tool: "get_agent_profile", args: {} } };
    for (const [method, path, body] of [
      ["GET", `/v1/sessions/${id}`, undefined],
      ["POST", `/v1/sessions/${id}/step`, action],
      ["GET", `/v1/sessions/${id}/snapshot`, undefined],
      ["DELETE", `/v1/sessions/${id}`, undefined],
    ] as const) {
      const res = await api(server.base, method, path, body, BOB);
      expect([res.status, res.body.error.code], `${method} ${path}`).toEqual([404, "unknown_session"]);
    }
    // Bob's attempts changed nothing: Alice's session is there, at step 0.
    expect((await api(server.base, "GET", `/v1/sessions/${id}`, undefined, ALICE)).body.steps).toBe(0);
    expect((await api(server.base, "POST", `/v1/sessions/${id}/step`, action, ADMIN)).status).toBe(200);

    const bob = await WsClient.connect(`${server.base.replace("http", "ws")}/v1/ws`, BOB);
    try {
      const reply = await bob.request("step", { session_id: id, ...action });
      expect(reply.error?.code).toBe("unknown_session");
      expect((await bob.request("close", { session_id: id })).error?.code).toBe("unknown_session");
    } finally {
      await bob.close();
    }
    expect((await api(server.base, "DELETE", `/v1/sessions/${id}`, undefined, ALICE)).status).toBe(200);
  });

  it("only snapshots this service signed can be restored or forked, unless the token is admin", async () => {
    const id = (await api(server.base, "POST", "/v1/sessions", TASK, ALICE)).body.session_id as string;
    const { snapshot } = (await api(server.base, "GET", `/v1/sessions/${id}/snapshot`, undefined, ALICE)).body;
    expect(snapshot.signature).toMatch(/^hmac-sha256:/);
    // Re-serialized with other key order and spacing (as another language's JSON library would): still valid.
    const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(snapshot).reverse()), null, 2));
    expect((await api(server.base, "POST", `/v1/sessions/${id}/restore`, { snapshot: reordered }, ALICE)).status).toBe(200);
    const altered = [
      { ...snapshot, step: snapshot.step + 3 },
      { ...snapshot, world: { ...snapshot.world, extra: 1 } },
      { ...snapshot, signature: undefined },
      { ...snapshot, signature: "hmac-sha256:AAAA" },
    ];
    for (const bad of altered) {
      const restore = await api(server.base, "POST", `/v1/sessions/${id}/restore`, { snapshot: bad }, ALICE);
      expect([restore.status, restore.body.error.code]).toEqual([400, "invalid_snapshot"]);
      const fork = await api(server.base, "POST", "/v1/sessions", { snapshot: bad }, ALICE);
      expect([fork.status, fork.body.error.code]).toEqual([400, "invalid_snapshot"]);
    }
    // Admin may restore an unsigned snapshot, but it is still checked against the environment's schema.
    const { signature: _s, ...unsigned } = snapshot;
    expect((await api(server.base, "POST", "/v1/sessions", { snapshot: unsigned }, ADMIN)).status).toBe(201);
    const broken = await api(server.base, "POST", "/v1/sessions", { snapshot: { ...unsigned, calls: [{ step: "x" }] } }, ADMIN);
    expect([broken.status, broken.body.error.code]).toEqual([400, "invalid_snapshot"]);
    // A mistyped field of billing-dispute's own world: refused at the fork, never a 500 on a later step.
    const mistyped = { ...(unsigned.world.session as Record<string, unknown>), verified: 42 };
    const retyped = await api(server.base, "POST", "/v1/sessions", { snapshot: { ...unsigned, world: { ...unsigned.world, session: mistyped } } }, ADMIN);
    expect([retyped.status, retyped.body.error.code]).toEqual([400, "invalid_snapshot"]);
    expect(retyped.body.error.message).toContain("snapshot.world");
  });
});

describe("without --auth", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ bodyLimit: 64 * 1024 });
  });
  afterAll(async () => {
    await server.close();
  });

  it("refuses cross-site Origins and non-loopback Host headers (DNS rebinding), over HTTP and the WebSocket upgrade", async () => {
    const port = new URL(server.base).port;
    const refused: Array<Record<string, string>> = [{ host: "attacker.example" }, { host: `attacker.example:${port}` }, { origin: "https://evil.example" }, { origin: "null" }];
    for (const headers of refused) {
      const res = await raw(server.base, "GET", "/v1/envs", headers);
      expect([res.status, res.body.error.code], JSON.stringify(headers)).toEqual([403, "forbidden"]);
      const post = await raw(server.base, "POST", "/v1/sessions", headers, JSON.stringify(TASK));
      expect(post.status).toBe(403);
    }
    const allowed: Array<Record<string, string>> = [{ host: `localhost:${port}` }, { host: `127.0.0.1:${port}` }, { host: `[::1]:${port}` }, { origin: "http://localhost:5173" }, {}];
    for (const headers of allowed) {
      expect((await raw(server.base, "GET", "/healthz", headers)).status, JSON.stringify(headers)).toBe(200);
    }
    const ws = `${server.base.replace("http", "ws")}/v1/ws`;
    await expect(WsClient.connect(ws, { origin: "https://evil.example" })).rejects.toMatchObject({ status: 403 });
    const ok = await WsClient.connect(ws, { origin: `http://127.0.0.1:${port}` });
    expect((await ok.request("envs")).ok).toBe(true);
    await ok.close();
  });

  it("an over-limit body gets a 413 the client can read, with limit_bytes; the connection is then closed", async () => {
    const id = (await api(server.base, "POST", "/v1/sessions", TASK)).body.session_id as string;
    const big = JSON.stringify({ action: { type: "message", content: "x".repeat(2_000_000) } });
    const res = await raw(server.base, "POST", `/v1/sessions/${id}/step`, {}, big);
    expect([res.status, res.body.error.code, res.body.error.details.limit_bytes]).toEqual([413, "payload_too_large", 64 * 1024]);
    expect(res.body.error.message).toContain("--body-limit");
    expect((await api(server.base, "GET", `/v1/sessions/${id}`)).body.steps).toBe(0);
  });

  it("stored free text is bounded: a 900 KB policy_checkpoint or a 1000-character task id is refused", async () => {
    const checkpoint = await api(server.base, "POST", "/v1/sessions", { ...TASK, policy_checkpoint: "c".repeat(60_000) });
    expect([checkpoint.status, checkpoint.body.error.code]).toEqual([400, "invalid_argument"]);
    expect(checkpoint.body.error.message).toContain("policy_checkpoint");
    const task = await api(server.base, "POST", "/v1/sessions", { ...TASK, task_id: `billing-dispute/easy/seed-${"1".repeat(1000)}` });
    expect([task.status, task.body.error.code]).toEqual([400, "invalid_argument"]);
    expect((await api(server.base, "POST", "/v1/sessions", { ...TASK, policy_checkpoint: "step_01800" })).status).toBe(201);
  });

  it("a WebSocket client that never reads its replies is paused, then closed with 1008; the server keeps serving", async () => {
    const grace = WS_LIMITS.graceMs;
    WS_LIMITS.graceMs = 500;
    const client = await WsClient.connect(`${server.base.replace("http", "ws")}/v1/ws`);
    const closed = new Promise<number>((resolve) => client.socket.on("close", ((code: number) => resolve(code)) as () => void));
    // Stop reading: replies pile up in the server's send buffer until the backpressure rules trip.
    (client.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const rssBefore = process.memoryUsage().rss;
    const message = JSON.stringify({ id: 1, op: "env", env: "billing-dispute" });
    let sent = 0;
    const flood = setInterval(() => {
      for (let i = 0; i < 200 && sent < 200_000; i++, sent++) client.socket.send(message);
    }, 1);
    const code = await closed;
    clearInterval(flood);
    WS_LIMITS.graceMs = grace;
    // 1008 is sent, but behind the unread replies: a client that does not read sees the cut (1006).
    expect([1006, 1008]).toContain(code);
    expect((await api(server.base, "GET", "/metrics")).body).toMatch(/llmix_errors_total\{code="ws_backpressure"\} 1/);
    // Bounded: each reply is ~4 KB, so answering every message would hold ~800 MB; the rules hold a few MB.
    expect(sent).toBeGreaterThan(1000);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(300 * 1024 * 1024);
    expect(WS_LIMITS.maxBufferedBytes).toBeLessThanOrEqual(16 * 1024 * 1024);
    expect((await api(server.base, "GET", "/healthz")).status).toBe(200);
  }, 60_000);

  it("task listing and replay run on the jobs host: /healthz answers while they run", async () => {
    const listing = api(server.base, "GET", "/v1/envs/billing-dispute/tasks?n=100000");
    let listingDone = false;
    void listing.then(() => (listingDone = true));
    const health = await api(server.base, "GET", "/healthz");
    expect(health.status).toBe(200);
    expect(listingDone).toBe(false);
    expect((await listing).body.task_ids).toHaveLength(100_000);
  });
});

describe("a recorded session whose step stops its host", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ registry: await registryWith([HOSTILE_MODULE]), stepTimeoutMs: 400 });
  });
  afterAll(async () => {
    await server.close();
  });

  it("is stored with the reason as its end (truncated, outcome 0), keeping the steps before it", async () => {
    const created = await api(server.base, "POST", "/v1/sessions", { env: "hostile", task_id: "hostile/easy/seed-2", seed: 2, record: true, policy_checkpoint: "ckpt-7" });
    const id = created.body.session_id as string;
    for (let i = 0; i < 2; i++) expect((await api(server.base, "POST", `/v1/sessions/${id}/step`, { action: { type: "tool_call", tool: "count", args: { by: 1 } } })).status).toBe(200);
    const res = await api(server.base, "POST", `/v1/sessions/${id}/step`, { action: { type: "tool_call", tool: "hang", args: {} } });
    expect([res.status, res.body.error.code, res.body.error.details.stored]).toEqual([504, "step_timeout", true]);
    const stored = await api(server.base, "GET", `/v1/episodes/${encodeURIComponent(id)}`);
    expect(stored.status).toBe(200);
    expect(stored.body.episode).toMatchObject({ status: "ok", end_reason: "step_timeout", truncated: true, outcome: 0, steps: 3, policy_checkpoint: "ckpt-7" });
    const last = stored.body.steps[2];
    expect(last.action).toMatchObject({ tool: "hang" });
    expect(last.observation.rendered).toContain("counter");
    expect(last.info.error.code).toBe("step_timeout");

    // Its replay re-runs the step that never returned: on the jobs host, whose deadline stops it; the
    // serving thread and the sessions' hosts never wait for it.
    const replay = api(server.base, "POST", `/v1/episodes/${encodeURIComponent(id)}/replay`);
    let replayed = false;
    void replay.then(() => (replayed = true));
    const other = await api(server.base, "POST", "/v1/sessions", { env: "hostile", task_id: "hostile/easy/seed-3", seed: 3 });
    expect((await api(server.base, "POST", `/v1/sessions/${other.body.session_id}/step`, { action: { type: "tool_call", tool: "count", args: { by: 1 } } })).status).toBe(200);
    expect((await api(server.base, "GET", "/healthz")).status).toBe(200);
    expect(replayed).toBe(false);
    const answer = await replay;
    expect([answer.status, answer.body.error.code]).toEqual([504, "step_timeout"]);
  });
});
