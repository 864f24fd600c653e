/**
 * The WebSocket transport: a full billing-dispute episode with the reference actions, several sessions
 * on one connection, every op, and malformed messages answered without closing the connection.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CreatedSession, StepResponse } from "../../src/server/sessions.js";
import { api, playReference, startTestServer, TASK, WsClient, type TestServer } from "./service-helpers.js";

let server: TestServer;
let wsUrl: string;

beforeAll(async () => {
  server = await startTestServer();
  wsUrl = `ws://127.0.0.1:${server.port}/v1/ws`;
});
afterAll(async () => {
  await server.close();
});

async function stepOver(client: WsClient, sessionId: string) {
  return async (action: unknown): Promise<StepResponse> => {
    const reply = await client.request<StepResponse>("step", { session_id: sessionId, action });
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    return reply.result as StepResponse;
  };
}

describe("WebSocket /v1/ws", () => {
  it("plays a full billing-dispute episode with the reference actions to outcome 1", async () => {
    const client = await WsClient.connect(wsUrl);
    const created = await client.request<CreatedSession>("create", { ...TASK, record: true });
    expect(created.ok).toBe(true);
    expect(created.id).toMatch(/^m\d+$/);
    const session = created.result as CreatedSession;
    expect(session).toMatchObject({ env: "billing-dispute", task_id: TASK.task_id, seed: TASK.seed });
    const responses = await playReference(session, await stepOver(client, session.session_id));
    const last = responses.at(-1) as StepResponse;
    expect(last.terminated).toBe(true);
    expect(last.reward_components.task).toBe(1);
    const info = await client.request("info", { session_id: session.session_id });
    expect(info.result).toMatchObject({ steps: responses.length, ended: true, record: true });
    const closed = await client.request("close", { session_id: session.session_id });
    expect(closed.result.episode).toMatchObject({ outcome: 1, steps: responses.length, status: "ok" });
    // The same episode is in the store, readable over HTTP.
    const stored = await api(server.base, "GET", `/v1/episodes/${encodeURIComponent(closed.result.episode.episode_id)}`);
    expect(stored.body.steps).toHaveLength(responses.length);
    await client.close();
  });

  it("drives several sessions on one connection, concurrently, with envs/env/tasks/snapshot/restore", async () => {
    const client = await WsClient.connect(wsUrl);
    const envs = await client.request("envs");
    expect(envs.result.envs.map((e: { id: string }) => e.id)).toContain("billing-dispute");
    const env = await client.request("env", { env: "billing-dispute" });
    expect(env.result.reward_components.task).toMatchObject({ min: 0, max: 1 });
    const tasks = await client.request("tasks", { env: "billing-dispute", difficulty: "medium", n: 3, seed: 2 });
    expect(tasks.result.task_ids).toHaveLength(3);
    const ids: string[] = tasks.result.task_ids;
    const sessions = await Promise.all(ids.map((task_id, i) => client.request<CreatedSession>("create", { env: "billing-dispute", task_id, seed: i })));
    expect(new Set(sessions.map((s) => s.result!.session_id)).size).toBe(3);
    const runs = await Promise.all(sessions.map(async (s) => playReference(s.result!, await stepOver(client, s.result!.session_id))));
    for (const run of runs) expect(run.at(-1)!.reward_components.task).toBe(1);

    const first = sessions[0]!.result!;
    const snap = await client.request("snapshot", { session_id: first.session_id });
    expect(snap.result.snapshot.format).toBe("llmix.snapshot/1");
    const restored = await client.request("restore", { session_id: first.session_id, snapshot: snap.result.snapshot });
    expect(restored).toMatchObject({ ok: true, result: { ok: true } });
    const fork = await client.request<CreatedSession>("create", { snapshot: snap.result.snapshot });
    expect(fork.ok).toBe(true);
    for (const s of [...sessions.map((x) => x.result!), fork.result!]) expect((await client.request("close", { session_id: s.session_id })).ok).toBe(true);
    await client.close();
  });

  it("answers malformed messages with errors and keeps the connection open", async () => {
    const client = await WsClient.connect(wsUrl);
    const notJson = await client.sendRaw("{nope");
    expect(notJson).toMatchObject({ id: null, ok: false, error: { code: "invalid_json" } });
    const bytes = await client.sendRaw(Buffer.from([0xff, 0x00, 0x13, 0x37]));
    expect(bytes).toMatchObject({ id: null, ok: false, error: { code: "invalid_json" } });
    expect(await client.sendRaw("[1,2]")).toMatchObject({ id: null, ok: false, error: { code: "invalid_argument" } });
    expect(await client.sendRaw('{"op":"envs"}')).toMatchObject({ id: null, ok: false, error: { code: "invalid_argument" } });
    expect(await client.sendRaw('{"id":{"x":1},"op":"envs"}')).toMatchObject({ id: null, ok: false, error: { code: "invalid_argument" } });
    expect(await client.request("dance")).toMatchObject({ ok: false, error: { code: "unknown_route", details: { valid: expect.arrayContaining(["step"]) } } });
    expect(await client.request("step", { session_id: "ses_nope", action: { type: "message", content: "hi" } })).toMatchObject({ ok: false, error: { code: "unknown_session" } });
    expect(await client.request("step", { action: { type: "message", content: "hi" } })).toMatchObject({ ok: false, error: { code: "invalid_argument" } });
    expect(await client.request("create", { env: "billing-dispute", task_id: "billing-dispute/easy/seed-1" })).toMatchObject({ ok: false, error: { code: "invalid_argument" } });
    expect(await client.request("create", { env: "nope", task_id: "x", seed: 1 })).toMatchObject({ ok: false, error: { code: "unknown_env" } });
    expect(await client.request("env", { env: 5 })).toMatchObject({ ok: false, error: { code: "invalid_argument" } });
    const created = (await client.request<CreatedSession>("create", { ...TASK })).result!;
    expect(await client.request("step", { session_id: created.session_id, action: "hi" })).toMatchObject({ ok: false, error: { code: "invalid_action" } });
    // Numeric ids are echoed as they were sent.
    const numeric = await client.sendRaw(JSON.stringify({ id: 7, op: "info", session_id: created.session_id }));
    expect(numeric).toMatchObject({ id: 7, ok: true, result: { session_id: created.session_id } });
    expect(client.closed).toBe(false);
    expect((await client.request("close", { session_id: created.session_id })).ok).toBe(true);
    await client.close();
  });

  it("concurrent steps on one session over one connection: session_busy, never interleaved", async () => {
    const client = await WsClient.connect(wsUrl);
    const created = (await client.request<CreatedSession>("create", { ...TASK })).result!;
    const action = { type: "tool_call", tool: created.tools[0]!.name, args: {} };
    const replies = await Promise.all(Array.from({ length: 10 }, () => client.request("step", { session_id: created.session_id, action })));
    const ok = replies.filter((r) => r.ok).length;
    for (const r of replies.filter((x) => !x.ok)) expect(r.error!.code).toBe("session_busy");
    expect((await client.request("info", { session_id: created.session_id })).result.steps).toBe(ok);
    await client.request("close", { session_id: created.session_id });
    await client.close();
  });

  it("sessions outlive the connection that created them", async () => {
    const client = await WsClient.connect(wsUrl);
    const created = (await client.request<CreatedSession>("create", { ...TASK })).result!;
    await client.close();
    const again = await WsClient.connect(wsUrl);
    const reply = await again.request("step", { session_id: created.session_id, action: { type: "message", content: "hello" } });
    expect(reply.ok).toBe(true);
    expect((await api(server.base, "DELETE", `/v1/sessions/${created.session_id}`)).status).toBe(200);
    await again.close();
  });

  it("a message over the body limit closes the connection (1009) and the server keeps serving", async () => {
    const tight = await startTestServer({ bodyLimit: 1024, withStore: false });
    try {
      const client = await WsClient.connect(`ws://127.0.0.1:${tight.port}/v1/ws`);
      client.socket.send(JSON.stringify({ id: 1, op: "envs", pad: "x".repeat(4096) }));
      await new Promise<void>((resolve) => client.socket.on("close", () => resolve()));
      const fresh = await WsClient.connect(`ws://127.0.0.1:${tight.port}/v1/ws`);
      expect((await fresh.request("envs")).ok).toBe(true);
      await fresh.close();
    } finally {
      await tight.close();
    }
  });

  it("an upgrade to an unknown path is refused with 404", async () => {
    await expect(WsClient.connect(`ws://127.0.0.1:${server.port}/v1/nope`)).rejects.toMatchObject({ status: 404 });
  });
});
