/**
 * The service under a burst of garbage: several hundred malformed requests (bad JSON, huge bodies,
 * wrong types, deep nesting, random bytes on raw sockets, unknown ids, concurrent steps on one session, garbage
 * WebSocket frames). Every HTTP answer must be a 4xx with an error code (never a 500), and afterwards the
 * server must still serve a full episode.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CreatedSession, StepResponse } from "../../src/server/sessions.js";
import { api, playReference, startTestServer, TASK, WsClient, type TestServer } from "./service-helpers.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ capacity: 64 });
});
afterAll(async () => {
  await server.close();
});

/** A small deterministic generator, so a failure reproduces. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Write raw bytes to the port and collect whatever comes back until the server closes or a timeout. */
function raw(port: number, bytes: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const done = () => resolve(Buffer.concat(chunks).toString("latin1"));
    socket.setTimeout(1500, () => socket.destroy());
    socket.on("data", (c) => chunks.push(c));
    socket.on("close", done);
    socket.on("error", () => undefined);
    socket.on("connect", () => {
      socket.write(bytes);
      socket.end();
    });
  });
}

describe("a burst of malformed requests", () => {
  it("gets 4xx codes for all of them and still serves a full episode", async () => {
    const base = server.base;
    const rand = prng(20240601);
    const live = (await api<CreatedSession>(base, "POST", "/v1/sessions", TASK)).body;
    const stepPath = `/v1/sessions/${live.session_id}/step`;
    const randomBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
    const garbageValues: unknown[] = [null, true, 0, -1, 1e308, "", "x", [], [null], {}, { a: { b: [1, { c: null }] } }, "💥".repeat(50)];
    const pick = <T>(list: readonly T[]) => list[Math.floor(rand() * list.length)] as T;

    type Req = { method: string; path: string; body?: unknown; headers?: Record<string, string> };
    const requests: Req[] = [];
    const paths = ["/v1/sessions", stepPath, `/v1/sessions/${live.session_id}/restore`, "/v1/sessions/ses_unknown/step", "/v1/envs/billing-dispute/tasks", "/v1/episodes/x%2Fy"];
    for (let i = 0; i < 120; i++) {
      const kind = i % 8;
      if (kind === 0) requests.push({ method: "POST", path: pick(paths), body: randomBytes(1 + Math.floor(rand() * 200)).toString("latin1") });
      else if (kind === 1) requests.push({ method: "POST", path: pick(paths), body: `{"action": ${"[".repeat(Math.floor(rand() * 50))}` });
      else if (kind === 2) requests.push({ method: "POST", path: "/v1/sessions", body: { env: pick(garbageValues), task_id: pick(garbageValues), seed: pick(garbageValues), record: pick(garbageValues) } });
      else if (kind === 3) requests.push({ method: "POST", path: stepPath, body: { action: pick([null, 5, "tool_call", [], true]) } });
      else if (kind === 4) requests.push({ method: "POST", path: `/v1/sessions/${pick(["ses_x", "%00", "..%2F..", "a".repeat(300), "ses_" + "f".repeat(24)])}/step`, body: { action: { type: "message", content: "hi" } } });
      else if (kind === 5) requests.push({ method: pick(["PUT", "PATCH", "OPTIONS", "DELETE", "GET"]), path: pick(["/v1", "/v1/sessions", "/v1/nothing", "/%", "/v1/envs/%ZZ", "/v1/sessions/ses_x/snapshot"]) });
      else if (kind === 6) requests.push({ method: "POST", path: pick(paths), body: JSON.stringify({ snapshot: pick(garbageValues), action: pick(garbageValues) }), headers: { "content-type": pick(["text/plain", "application/xml", "multipart/form-data; boundary=x", "application/json"]) } });
      else requests.push({ method: "POST", path: `/v1/sessions/${live.session_id}/restore`, body: { snapshot: { format: "llmix.snapshot/1", env: "billing-dispute", world: pick(garbageValues) } } });
    }
    // Deep nesting (recursive code further on would overflow its stack).
    for (const depth of [65, 1000, 200_000]) {
      requests.push({ method: "POST", path: stepPath, body: `{"action":{"type":"tool_call","tool":"lookup_customer","args":{"q":${"[".repeat(depth)}${"]".repeat(depth)}}}}` });
      requests.push({ method: "POST", path: "/v1/sessions", body: `{"snapshot":${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}}` });
    }
    // Huge bodies, over the 1 MiB default.
    for (let i = 0; i < 6; i++) requests.push({ method: "POST", path: pick(paths), body: JSON.stringify({ pad: "z".repeat(1_100_000 + i) }) });
    // Unknown ids everywhere.
    for (let i = 0; i < 40; i++) {
      const id = `ses_${randomBytes(6).toString("hex")}`;
      requests.push(pick([
        { method: "GET", path: `/v1/sessions/${id}` },
        { method: "DELETE", path: `/v1/sessions/${id}` },
        { method: "GET", path: `/v1/sessions/${id}/snapshot` },
        { method: "GET", path: `/v1/episodes/${encodeURIComponent(`run/${id}/g0`)}` },
        { method: "POST", path: `/v1/episodes/${id}/replay` },
        { method: "GET", path: `/v1/envs/${id}` },
      ]));
    }

    const results = await Promise.all(requests.map((r) => api(base, r.method, r.path, r.body, r.headers ?? {}).catch((error: Error) => ({ status: -1, body: { error: { code: String(error) } }, headers: new Headers() }))));
    for (const [i, res] of results.entries()) {
      const r = requests[i]!;
      const label = `${r.method} ${r.path} ${String(typeof r.body === "string" ? r.body : JSON.stringify(r.body)).slice(0, 60)}`;
      // A garbage body can be a valid call by luck (an action object the environment answers): 2xx is fine, 5xx never.
      expect(res.status, label).toBeGreaterThanOrEqual(200);
      expect(res.status, label).toBeLessThan(500);
      if (res.status >= 400) {
        expect(res.body?.error?.code, label).toMatch(/^[a-z_]+$/);
        expect(res.body.error.code, label).not.toBe("internal");
      }
    }

    // Concurrent steps on one session: never interleaved, refused with session_busy.
    const action = { type: "tool_call", tool: live.tools[0]!.name, args: {} };
    const concurrent = await Promise.all(Array.from({ length: 60 }, () => api(base, "POST", stepPath, { action })));
    for (const r of concurrent) expect([200, 409]).toContain(r.status);

    // Random bytes and broken HTTP on raw sockets.
    const rawPayloads = [
      randomBytes(64),
      randomBytes(2048),
      Buffer.from("GET / HTTP/9.9\r\n\r\n"),
      Buffer.from("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n{}"),
      Buffer.from("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nZZZ\r\n"),
      Buffer.from(`GET /${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n${"X-Pad: y\r\n".repeat(2000)}\r\n`),
      Buffer.from("\x00\x01\x02\r\n\r\n"),
    ];
    for (let i = 0; i < 30; i++) rawPayloads.push(randomBytes(1 + Math.floor(rand() * 512)));
    const answers = await Promise.all(rawPayloads.map((bytes) => raw(server.port, bytes)));
    for (const answer of answers) {
      if (answer === "") continue; // the server may just close a connection that never became HTTP
      expect(answer).toMatch(/^HTTP\/1\.1 4\d\d /);
      expect(answer).not.toMatch(/^HTTP\/1\.1 5/);
    }

    // Garbage over the WebSocket.
    const client = await WsClient.connect(`ws://127.0.0.1:${server.port}/v1/ws`);
    const wsReplies = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? client.sendRaw(randomBytes(1 + Math.floor(rand() * 300))) : client.sendRaw(JSON.stringify({ op: pick(["step", "create", "x"]), session_id: pick(garbageValues) })))),
    );
    for (const reply of wsReplies) expect(reply).toMatchObject({ id: null, ok: false, error: { code: expect.stringMatching(/^(invalid_json|invalid_argument)$/) } });
    const badOps = await Promise.all(Array.from({ length: 30 }, () => client.request(pick(["step", "create", "restore", "close", "snapshot", "info", "env", "nope"]), { session_id: pick(garbageValues), env: pick(garbageValues), snapshot: pick(garbageValues), action: pick(garbageValues) })));
    for (const reply of badOps) {
      expect(reply.ok).toBe(false);
      expect(reply.error!.code).not.toBe("internal");
    }
    expect(client.closed).toBe(false);

    // Still serving: a full episode over HTTP and one over the same WebSocket connection.
    const fresh = await api<CreatedSession>(base, "POST", "/v1/sessions", TASK);
    expect(fresh.status).toBe(201);
    const responses = await playReference(fresh.body, async (a) => (await api<StepResponse>(base, "POST", `/v1/sessions/${fresh.body.session_id}/step`, { action: a })).body);
    expect(responses.at(-1)!.reward_components.task).toBe(1);
    const overWs = (await client.request<CreatedSession>("create", { ...TASK, task_id: "billing-dispute/hard/seed-3", seed: 3 })).result!;
    const wsRun = await playReference(overWs, async (a) => (await client.request<StepResponse>("step", { session_id: overWs.session_id, action: a })).result!);
    expect(wsRun.at(-1)!.reward_components.task).toBe(1);
    await client.close();
    expect((await api(base, "GET", "/healthz")).body.status).toBe("ok");
    const metrics = (await api(base, "GET", "/metrics")).body as string;
    expect(metrics).not.toMatch(/llmix_errors_total\{code="internal"\}/);
    expect(metrics).not.toMatch(/status="5\d\d"/);
  });
});
