/**
 * The HTTP API of the service against a real server on a loopback port: the catalogue, a full
 * billing-dispute episode with the reference actions, recording and replay, snapshots and forks, the
 * error codes of every bad input, limits (capacity, step timeout, body size), metrics and OpenAPI.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registryWith } from "../../src/cli/options.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { mountMcp } from "../../src/server/mcp.js";
import { featuresOf } from "../../src/tasks/features.js";
import { openApiPath } from "../../src/server/openapi.js";
import type { CreatedSession, StepResponse } from "../../src/server/sessions.js";
import { api, HOSTILE_MODULE, playReference, startTestServer, TASK, type TestServer } from "./service-helpers.js";

let server: TestServer;
let base: string;

beforeAll(async () => {
  server = await startTestServer();
  base = server.base;
});
afterAll(async () => {
  await server.close();
});

async function create(body: Record<string, unknown> = { ...TASK }): Promise<CreatedSession> {
  const res = await api<CreatedSession>(base, "POST", "/v1/sessions", body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const stepOver = (id: string) => async (action: unknown) => {
  const res = await api<StepResponse>(base, "POST", `/v1/sessions/${id}/step`, { action });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

describe("catalogue", () => {
  it("healthz is ok and counts live sessions", async () => {
    const res = await api(base, "GET", "/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok", sessions: expect.any(Number) });
  });

  it("lists the environments", async () => {
    const res = await api(base, "GET", "/v1/envs");
    expect(res.status).toBe(200);
    const billing = res.body.envs.find((e: { id: string }) => e.id === "billing-dispute");
    expect(billing).toEqual({ id: "billing-dispute", version: expect.any(String), description: expect.any(String), difficulties: expect.any(Array), max_steps: expect.any(Number) });
    expect(Object.keys(billing)).toEqual(["id", "version", "description", "difficulties", "max_steps"]);
  });

  it("describes one environment: tools with JSON Schemas and reward components with bounds", async () => {
    const res = await api(base, "GET", "/v1/envs/billing-dispute");
    expect(res.status).toBe(200);
    const local = builtinRegistry().get("billing-dispute").create();
    expect(res.body.version).toBe(local.info.version);
    expect(res.body.max_steps).toBe(local.maxSteps);
    expect(res.body.tools.length).toBeGreaterThan(0);
    for (const tool of res.body.tools) expect(tool).toMatchObject({ name: expect.any(String), parameters: { type: "object" }, effect: expect.stringMatching(/read|write/) });
    expect(res.body.reward_components.task).toEqual({ min: 0, max: 1, description: expect.any(String) });
    expect(res.body.reward_components).toEqual(JSON.parse(JSON.stringify(local.componentBounds())));
    await local.close();
  });

  it("samples task ids as llmix tasks does, and validates the query", async () => {
    const res = await api(base, "GET", "/v1/envs/billing-dispute/tasks?difficulty=easy&split=eval&n=3&seed=7");
    expect(res.status).toBe(200);
    expect(res.body.task_ids).toHaveLength(3);
    for (const id of res.body.task_ids) expect(id).toMatch(/^billing-dispute\/easy\/seed-\d+$/);
    const again = await api(base, "GET", "/v1/envs/billing-dispute/tasks?difficulty=easy&split=eval&n=3&seed=7");
    expect(again.body).toEqual(res.body);
    expect((await api(base, "GET", "/v1/envs/billing-dispute/tasks")).body.task_ids).toHaveLength(10);
    for (const query of ["difficulty=impossible", "split=test", "n=-1", "n=abc", "n=1.5", "seed=-3", "n=100001"]) {
      const bad = await api(base, "GET", `/v1/envs/billing-dispute/tasks?${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.error.code, query).toBe("invalid_argument");
    }
    expect((await api(base, "GET", "/v1/envs/nope/tasks")).body.error.code).toBe("unknown_env");
  });

  it("POST /v1/tasks/sample draws from a sampler whose state the caller sends back, learning from results", async () => {
    const spec = { kind: "curriculum", cells: ["easy", "medium", "hard"], min_results: 2 };
    const first = await api(base, "POST", "/v1/tasks/sample", { env: "billing-dispute", spec, n: 6, seed: 3 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.task_ids).toHaveLength(6);
    for (const id of first.body.task_ids) expect(id).toMatch(/^billing-dispute\/(easy|medium|hard)\/seed-\d+$/);
    expect(first.body.weights).toEqual({ "billing-dispute/easy": expect.any(Number), "billing-dispute/medium": expect.any(Number), "billing-dispute/hard": expect.any(Number) });
    // Easy always passes, hard always fails: both leave the band, medium is drawn most.
    const results = ["easy", "medium", "hard"].flatMap((d, i) => Array.from({ length: 4 }, (_, k) => ({ task_id: `billing-dispute/${d}/seed-${k}`, outcome: i === 0 ? 1 : i === 1 ? k % 2 : 0 })));
    const next = await api(base, "POST", "/v1/tasks/sample", { env: "billing-dispute", state: first.body.state, results, n: 200, step: 1 });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(next.body.pass_rates).toEqual({ "billing-dispute/easy": 1, "billing-dispute/medium": 0.5, "billing-dispute/hard": 0 });
    const medium = next.body.task_ids.filter((id: string) => id.includes("/medium/")).length;
    expect(medium).toBeGreaterThan(150);
    // Knobs weigh the environment's declared features: injection tasks are ~a quarter of hard ones, weighted 8:1 most.
    const knobbed = await api(base, "POST", "/v1/tasks/sample", { env: "billing-dispute", spec: { kind: "mix", weights: { hard: 1 }, knobs: { "variant=injection": 8 } }, n: 40 });
    expect(knobbed.status, JSON.stringify(knobbed.body)).toBe(200);
    const tasks = builtinRegistry().get("billing-dispute").create().tasks;
    expect(knobbed.body.task_ids.filter((id: string) => featuresOf(tasks, id).variant === "injection").length).toBeGreaterThan(24);
    // The same request gives the same answer: the service keeps nothing.
    expect((await api(base, "POST", "/v1/tasks/sample", { env: "billing-dispute", state: first.body.state, results, n: 200, step: 1 })).body).toEqual(next.body);
    for (const [body, pattern] of [
      [{ env: "billing-dispute", n: 1 }, /either spec .* or state/],
      [{ env: "billing-dispute", spec, state: first.body.state }, /either spec .* or state/],
      [{ env: "billing-dispute", spec: { kind: "mix", weights: { impossible: 1 } } }, /cell billing-dispute\/impossible is not one of billing-dispute's/],
      [{ env: "billing-dispute", spec: { kind: "bandit" } }, /unknown kind "bandit"/],
      [{ env: "billing-dispute", spec, n: 100_001 }, /n/],
      [{ env: "billing-dispute", spec, results: [{ task_id: "billing-dispute/easy/seed-1", outcome: 7 }] }, /outcome/],
      [{ env: "billing-dispute", state: { config: 1 } }, /sampler/],
      [{ env: "billing-dispute", spec: { kind: "mix", weights: { hard: 1 }, knobs: { "colour=blue": 2 } } }, /"colour" is not a feature/],
      // A hostile tenant: knobs that accept nothing would search the shared jobs host for seconds per draw; they are refused after 256 candidates.
      [{ env: "billing-dispute", spec: { kind: "mix", weights: { hard: 1 }, knobs: Object.fromEntries(["none", "social-engineering", "injection", "conflicting-records", "gateway-failure"].map((v) => [`variant=${v}`, 0])) } }, /knobs accepted none of 256 train tasks/],
      [{ env: "billing-dispute", spec: { kind: "mix", weights: { hard: 1 }, knobs: { "variant=injection": 2 } }, n: 1001 }, /at most 1000 tasks per call/],
    ] as const) {
      const bad = await api(base, "POST", "/v1/tasks/sample", body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.error.code).toBe("invalid_argument");
      expect(bad.body.error.message).toMatch(pattern);
    }
    expect((await api(base, "POST", "/v1/tasks/sample", { env: "nope", spec })).body.error.code).toBe("unknown_env");
  });

  it("an unknown environment is unknown_env (404) naming the valid ones", async () => {
    const res = await api(base, "GET", "/v1/envs/no-such-env");
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: "unknown_env", details: { valid: expect.arrayContaining(["billing-dispute"]) } });
  });
});

describe("a full episode over HTTP", () => {
  it("plays billing-dispute with the reference actions to outcome 1, then closes with the summary", async () => {
    const created = await create();
    expect(created).toMatchObject({ env: "billing-dispute", task_id: TASK.task_id, seed: 1, session_id: expect.stringMatching(/^ses_/) });
    expect(created.observation.rendered.length).toBeGreaterThan(0);
    expect(created.tools.length).toBeGreaterThan(0);
    const responses = await playReference(created, stepOver(created.session_id));
    const last = responses.at(-1) as StepResponse;
    expect(last.terminated).toBe(true);
    expect(last.reward_components.task).toBe(1);
    for (const r of responses) {
      expect(Object.keys(r).sort()).toEqual(["info", "observation", "reward", "reward_components", "terminated", "tool_result", "truncated"]);
      expect(r.reward).toBeCloseTo(Object.values(r.reward_components).reduce((a, b) => a + b, 0), 9);
    }
    expect(responses.some((r) => r.tool_result?.status === "ok")).toBe(true);

    const info = await api(base, "GET", `/v1/sessions/${created.session_id}`);
    expect(info.body).toMatchObject({ session_id: created.session_id, steps: responses.length, ended: true, record: false });
    const closed = await api(base, "DELETE", `/v1/sessions/${created.session_id}`);
    expect(closed.status).toBe(200);
    expect(closed.body.episode).toMatchObject({ task_id: TASK.task_id, steps: responses.length, outcome: 1, status: "ok", terminated: true });
    expect(closed.body.episode.total_reward).toBeCloseTo(responses.reduce((a, r) => a + r.reward, 0), 9);
    expect((await api(base, "GET", `/v1/sessions/${created.session_id}`)).body.error.code).toBe("unknown_session");
  });

  it("records an episode to the store; GET /v1/episodes/:id (URL-encoded) returns it and replay reproduces it", async () => {
    const created = await create({ ...TASK, record: true, policy_checkpoint: "step_42" });
    const responses = await playReference(created, stepOver(created.session_id));
    const closed = await api(base, "DELETE", `/v1/sessions/${created.session_id}`);
    const episodeId = closed.body.episode.episode_id as string;
    expect(closed.body.episode.run_id).toMatch(/^serve-/);
    const stored = await api(base, "GET", `/v1/episodes/${encodeURIComponent(episodeId)}`);
    expect(stored.status).toBe(200);
    expect(stored.body.episode).toMatchObject({ episode_id: episodeId, outcome: 1, steps: responses.length, policy_checkpoint: "step_42" });
    expect(stored.body.steps).toHaveLength(responses.length);
    expect(stored.body.steps[0].observation.rendered).toBe(created.observation.rendered);
    const replay = await api(base, "POST", `/v1/episodes/${encodeURIComponent(episodeId)}/replay`);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ episode_id: episodeId, matched: true, diffs: [], replayed: { outcome: 1 } });
    const missing = await api(base, "GET", `/v1/episodes/${encodeURIComponent("run-x/billing-dispute/easy/seed-1/g0")}`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("unknown_episode");
    expect((await api(base, "POST", `/v1/episodes/${encodeURIComponent("nope/g0")}/replay`)).body.error.code).toBe("unknown_episode");
  });

  it("episode ids with '/' are found when URL-encoded (rollout ids)", async () => {
    const store = server.store!;
    const created = await create({ ...TASK, record: true });
    await playReference(created, stepOver(created.session_id));
    const closed = await api(base, "DELETE", `/v1/sessions/${created.session_id}`);
    const { episode, steps } = { episode: closed.body.episode, steps: await store.getSteps(closed.body.episode.episode_id) };
    const runId = "run-http-test";
    const id = `${runId}/${TASK.task_id}/g0`;
    const run = await store.getRun(episode.run_id);
    await store.createRun({ ...run!, run_id: runId });
    await store.writeEpisodes([{ episode: { ...episode, episode_id: id, run_id: runId }, steps: steps.map((s) => ({ ...s, episode_id: id })) }]);
    const res = await api(base, "GET", `/v1/episodes/${encodeURIComponent(id)}`);
    expect(res.status).toBe(200);
    expect(res.body.episode.episode_id).toBe(id);
    const replay = await api(base, "POST", `/v1/episodes/${encodeURIComponent(id)}/replay`);
    expect(replay.body.matched).toBe(true);
  });
});

describe("snapshots", () => {
  it("snapshot, step on, restore: the same action gives the same result; a fork continues independently", async () => {
    const created = await create();
    const step = stepOver(created.session_id);
    const action = { type: "tool_call", tool: created.tools[0]!.name, args: {} };
    const snap = await api(base, "GET", `/v1/sessions/${created.session_id}/snapshot`);
    expect(snap.status).toBe(200);
    expect(snap.body.snapshot).toMatchObject({ format: "llmix.snapshot/1", env: "billing-dispute", task_id: TASK.task_id, step: 0 });
    const first = await step(action);
    const restored = await api(base, "POST", `/v1/sessions/${created.session_id}/restore`, { snapshot: snap.body.snapshot });
    expect(restored.status).toBe(200);
    expect(restored.body).toEqual({ ok: true });
    const again = await step(action);
    expect(again).toEqual(first);

    const fork = await create({ snapshot: snap.body.snapshot });
    expect(fork.session_id).not.toBe(created.session_id);
    expect(fork).toMatchObject({ env: "billing-dispute", task_id: TASK.task_id, seed: TASK.seed });
    expect(await stepOver(fork.session_id)(action)).toEqual(first);
    await api(base, "DELETE", `/v1/sessions/${fork.session_id}`);
    await api(base, "DELETE", `/v1/sessions/${created.session_id}`);
  });

  it("bad snapshots are invalid_snapshot (restore and fork)", async () => {
    const created = await create();
    const snap = (await api(base, "GET", `/v1/sessions/${created.session_id}/snapshot`)).body.snapshot;
    const cases: Array<[string, string, unknown, string]> = [
      ["POST", `/v1/sessions/${created.session_id}/restore`, { snapshot: { ...snap, world: 5 } }, "invalid_snapshot"],
      ["POST", `/v1/sessions/${created.session_id}/restore`, { snapshot: "nope" }, "invalid_snapshot"],
      ["POST", `/v1/sessions/${created.session_id}/restore`, {}, "invalid_argument"],
      ["POST", `/v1/sessions/${created.session_id}/restore`, { snapshot: { ...snap, version: "9.9.9" } }, "invalid_snapshot"],
      ["POST", "/v1/sessions", { snapshot: { ...snap, env: undefined } }, "invalid_snapshot"],
      ["POST", "/v1/sessions", { snapshot: 12 }, "invalid_snapshot"],
      ["POST", "/v1/sessions", { snapshot: { ...snap, env: "nope" } }, "unknown_env"],
      ["POST", "/v1/sessions", { snapshot: snap, env: "billing-dispute" }, "invalid_argument"],
    ];
    for (const [method, path, body, code] of cases) {
      const res = await api(base, method, path, body);
      expect(res.body.error?.code, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(code);
      expect(res.status).toBe(code === "unknown_env" ? 404 : 400);
    }
    // A failed restore leaves the session as it was.
    expect((await api(base, "GET", `/v1/sessions/${created.session_id}`)).body.steps).toBe(0);
    await api(base, "DELETE", `/v1/sessions/${created.session_id}`);
  });
});

describe("errors", () => {
  it("bad create bodies name the field and get 4xx codes", async () => {
    const cases: Array<[unknown, number, string, string?]> = [
      [{ env: "billing-dispute", task_id: "billing-dispute/easy/seed-1" }, 400, "invalid_argument", "seed"],
      [{ env: "billing-dispute", task_id: 5, seed: 1 }, 400, "invalid_argument", "task_id"],
      [{ env: "billing-dispute", task_id: "billing-dispute/easy/seed-1", seed: -1 }, 400, "invalid_argument", "seed"],
      [{ env: "billing-dispute", task_id: "billing-dispute/easy/seed-1", seed: 1.5 }, 400, "invalid_argument", "seed"],
      [{ env: "billing-dispute", task_id: "billing-dispute/easy/seed-1", seed: 1, record: "yes" }, 400, "invalid_argument", "record"],
      [{ task_id: "billing-dispute/easy/seed-1", seed: 1 }, 400, "invalid_argument", "env"],
      [{ env: "nope", task_id: "x/easy/seed-1", seed: 1 }, 404, "unknown_env"],
      [{ env: "billing-dispute", task_id: "billing-dispute/impossible/seed-1", seed: 1 }, 400, "invalid_task_id"],
      [{ env: "billing-dispute", task_id: "garbage", seed: 1 }, 400, "invalid_task_id"],
      [[1, 2], 400, "invalid_argument"],
      ["null", 400, "invalid_argument"],
      ["42", 400, "invalid_argument"],
    ];
    for (const [body, status, code, field] of cases) {
      const res = await api(base, "POST", "/v1/sessions", body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.error.code, JSON.stringify(body)).toBe(code);
      expect(Object.keys(res.body.error).sort()).toEqual(["code", "details", "message"]);
      if (field) expect(res.body.error.message).toContain(`body.${field}`);
    }
  });

  it("bodies: malformed JSON, wrong content type, empty, too large", async () => {
    const bad = await api(base, "POST", "/v1/sessions", "{not json");
    expect([bad.status, bad.body.error.code]).toEqual([400, "invalid_json"]);
    const proto = await api(base, "POST", "/v1/sessions", '{"env":"billing-dispute","__proto__":{"x":1}}');
    expect([proto.status, proto.body.error.code]).toEqual([400, "invalid_json"]);
    const infinite = await api(base, "POST", "/v1/sessions", '{"env":"billing-dispute","task_id":"billing-dispute/easy/seed-1","seed":1e400}');
    expect([infinite.status, infinite.body.error.code]).toEqual([400, "invalid_json"]);
    const inString = await api(base, "POST", "/v1/sessions", { env: "billing-dispute", task_id: "billing-dispute/easy/seed-1", seed: 1, policy_checkpoint: "1e400" });
    expect(inString.status).toBe(201);
    await api(base, "DELETE", `/v1/sessions/${inString.body.session_id}`);
    const text = await api(base, "POST", "/v1/sessions", "env=billing-dispute", { "content-type": "text/plain" });
    expect([text.status, text.body.error.code]).toEqual([400, "invalid_argument"]);
    const form = await api(base, "POST", "/v1/sessions", "a=1", { "content-type": "application/x-www-form-urlencoded" });
    expect([form.status, form.body.error.code]).toEqual([400, "invalid_argument"]);
    const empty = await api(base, "POST", "/v1/sessions", "");
    expect([empty.status, empty.body.error.code]).toEqual([400, "invalid_argument"]);
    const none = await fetch(`${base}/v1/sessions`, { method: "POST" });
    expect([none.status, ((await none.json()) as { error: { code: string } }).error.code]).toEqual([400, "invalid_argument"]);
    const huge = await api(base, "POST", "/v1/sessions", JSON.stringify({ env: "x".repeat(2 * 1024 * 1024) }));
    expect([huge.status, huge.body.error.code]).toEqual([413, "payload_too_large"]);
  });

  it("bodies nested deeper than 64 levels are refused; up to 64 they are answered, recorded and stored", async () => {
    const nest = (n: number) => "[".repeat(n) + "]".repeat(n);
    const created = await create({ ...TASK, record: true });
    const path = `/v1/sessions/${created.session_id}/step`;
    // Deep enough to overflow the stack of recursive validation, were it let through.
    const deep = await api(base, "POST", path, `{"action":{"type":"tool_call","tool":"lookup_customer","args":{"query":${nest(100_000)}}}}`);
    expect([deep.status, deep.body.error.code]).toEqual([400, "invalid_argument"]);
    expect((await api(base, "POST", path, `{"action":{"weird":${nest(63)}}}`)).status).toBe(400);
    const limit = await api(base, "POST", path, `{"action":{"weird":${nest(62)}}}`);
    expect(limit.status).toBe(200);
    expect(limit.body.reward_components.invalid_call).toBeLessThan(0);
    const closed = await api(base, "DELETE", `/v1/sessions/${created.session_id}`);
    expect(closed.status).toBe(200);
    expect((await server.store!.getSteps(closed.body.episode.episode_id))[0]!.action.type).toBe("invalid");
  });

  it("steps: unknown session 404, missing or non-object action 400, malformed action object answered by the environment", async () => {
    const unknown = await api(base, "POST", "/v1/sessions/ses_nope/step", { action: { type: "message", content: "hi" } });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "unknown_session"]);
    const created = await create();
    const path = `/v1/sessions/${created.session_id}/step`;
    const missing = await api(base, "POST", path, {});
    expect([missing.status, missing.body.error.code]).toEqual([400, "invalid_argument"]);
    expect(missing.body.error.message).toContain("action");
    for (const action of ["hello", 5, null, [1]]) {
      const res = await api(base, "POST", path, { action });
      expect([res.status, res.body.error.code], JSON.stringify(action)).toEqual([400, "invalid_action"]);
    }
    const odd = await api(base, "POST", path, { action: { type: "dance" } });
    expect(odd.status).toBe(200);
    expect(odd.body.reward_components.invalid_call).toBeLessThan(0);
    expect(odd.body.info.error.code).toBe("invalid_action");
    const unknownTool = await api(base, "POST", path, { action: { type: "tool_call", tool: "no_such_tool", args: {} } });
    expect(unknownTool.status).toBe(200);
    expect(unknownTool.body.reward_components.invalid_call).toBeLessThan(0);
    await api(base, "DELETE", `/v1/sessions/${created.session_id}`);
    expect((await api(base, "DELETE", `/v1/sessions/${created.session_id}`)).body.error.code).toBe("unknown_session");
    expect((await api(base, "GET", `/v1/sessions/${created.session_id}/snapshot`)).status).toBe(404);
  });

  it("unknown routes and methods are unknown_route (404)", async () => {
    for (const [method, path] of [["GET", "/nope"], ["PUT", "/v1/sessions"], ["PATCH", "/v1/envs"], ["GET", "/v1/sessions"], ["POST", "/healthz"], ["GET", "/v1/episodes/a/b/c"]]) {
      const res = await api(base, method as string, path as string);
      expect([res.status, res.body.error?.code], `${method} ${path}`).toEqual([404, "unknown_route"]);
    }
    const ws = await api(base, "GET", "/v1/ws");
    expect([ws.status, ws.body.error.code]).toEqual([400, "invalid_argument"]);
    const badUrl = await api(base, "GET", "/v1/sessions/%E0%A4%A");
    expect(badUrl.status).toBeGreaterThanOrEqual(400);
    expect(badUrl.status).toBeLessThan(500);
    expect(badUrl.body.error.code).toBeTruthy();
  });

  it("concurrent steps on one session: one runs, the others get session_busy (409), never interleaved", async () => {
    const created = await create();
    const action = { type: "tool_call", tool: created.tools[0]!.name, args: {} };
    const results = await Promise.all(Array.from({ length: 12 }, () => api(base, "POST", `/v1/sessions/${created.session_id}/step`, { action })));
    const ok = results.filter((r) => r.status === 200);
    const busy = results.filter((r) => r.status === 409);
    expect(ok.length + busy.length).toBe(12);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const r of busy) expect(r.body.error.code).toBe("session_busy");
    expect((await api(base, "GET", `/v1/sessions/${created.session_id}`)).body.steps).toBe(ok.length);
    await api(base, "DELETE", `/v1/sessions/${created.session_id}`);
  });
});

describe("limits", () => {
  it("capacity_reached is 503 with Retry-After; closing a session frees a slot", async () => {
    const small = await startTestServer({ capacity: 2, withStore: false });
    try {
      const a = await api(small.base, "POST", "/v1/sessions", TASK);
      await api(small.base, "POST", "/v1/sessions", TASK);
      const full = await api(small.base, "POST", "/v1/sessions", TASK);
      expect([full.status, full.body.error.code]).toEqual([503, "capacity_reached"]);
      expect(Number(full.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      await api(small.base, "DELETE", `/v1/sessions/${a.body.session_id}`);
      expect((await api(small.base, "POST", "/v1/sessions", TASK)).status).toBe(201);
      const rec = await api(small.base, "POST", "/v1/sessions", { ...TASK, record: true });
      expect(rec.status).toBe(503);
    } finally {
      await small.close();
    }
  });

  it("record without a store is invalid_argument; episodes without a store are store_error", async () => {
    const bare = await startTestServer({ withStore: false });
    try {
      const rec = await api(bare.base, "POST", "/v1/sessions", { ...TASK, record: true });
      expect([rec.status, rec.body.error.code]).toEqual([400, "invalid_argument"]);
      const ep = await api(bare.base, "GET", "/v1/episodes/x");
      expect([ep.status, ep.body.error.code]).toEqual([500, "store_error"]);
    } finally {
      await bare.close();
    }
  });

  it("a step over the time limit is step_timeout (504) and closes the session", async () => {
    const registry = await registryWith([HOSTILE_MODULE]);
    const slow = await startTestServer({ registry, stepTimeoutMs: 300, withStore: false });
    try {
      const created = (await api(slow.base, "POST", "/v1/sessions", { env: "hostile", task_id: "hostile/easy/seed-1", seed: 1 })).body;
      const path = `/v1/sessions/${created.session_id}/step`;
      expect((await api(slow.base, "POST", path, { action: { type: "tool_call", tool: "count", args: { by: 1 } } })).status).toBe(200);
      const res = await api(slow.base, "POST", path, { action: { type: "tool_call", tool: "hang", args: {} } });
      expect([res.status, res.body.error.code, res.body.error.details.session_closed]).toEqual([504, "step_timeout", true]);
      expect((await api(slow.base, "GET", `/v1/sessions/${created.session_id}`)).body.error.code).toBe("unknown_session");
      expect((await api(slow.base, "GET", "/healthz")).status).toBe(200);
    } finally {
      await slow.close();
    }
  });

  it("idle sessions are reaped after the TTL", async () => {
    const reaping = await startTestServer({ idleTtlMs: 50, withStore: false });
    try {
      const created = (await api(reaping.base, "POST", "/v1/sessions", TASK)).body;
      await new Promise((r) => setTimeout(r, 120));
      // The background reaper may have closed it already; either way it is closed exactly once.
      expect(await reaping.service.manager.reapIdle()).toBeLessThanOrEqual(1);
      expect((await api(reaping.base, "GET", `/v1/sessions/${created.session_id}`)).body.error.code).toBe("unknown_session");
      expect((await api(reaping.base, "GET", "/metrics")).body).toMatch(/^llmix_sessions_reaped_total 1$/m);
    } finally {
      await reaping.close();
    }
  });

  it("the body limit is configurable", async () => {
    const tight = await startTestServer({ bodyLimit: 256, withStore: false });
    try {
      const created = (await api(tight.base, "POST", "/v1/sessions", TASK)).body;
      const res = await api(tight.base, "POST", `/v1/sessions/${created.session_id}/step`, { action: { type: "message", content: "x".repeat(300) } });
      expect([res.status, res.body.error.code]).toEqual([413, "payload_too_large"]);
    } finally {
      await tight.close();
    }
  });
});

describe("metrics and OpenAPI", () => {
  it("/metrics is Prometheus text with sessions, steps, the step histogram, errors by code and requests by route", async () => {
    const res = await api(base, "GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = res.body as string;
    for (const line of [
      "# TYPE llmix_sessions_live gauge",
      "# TYPE llmix_sessions_created_total counter",
      "# TYPE llmix_steps_total counter",
      "# TYPE llmix_sessions_reaped_total counter",
      "# TYPE llmix_step_seconds histogram",
      "# TYPE llmix_errors_total counter",
      "# TYPE llmix_http_requests_total counter",
    ]) {
      expect(text).toContain(line);
    }
    expect(Number(/^llmix_steps_total (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(10);
    expect(Number(/^llmix_sessions_created_total (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(3);
    const count = Number(/^llmix_step_seconds_count (\d+)$/m.exec(text)?.[1]);
    expect(count).toBe(Number(/^llmix_steps_total (\d+)$/m.exec(text)?.[1]));
    expect(text).toMatch(new RegExp(`^llmix_step_seconds_bucket\\{le="\\+Inf"\\} ${count}$`, "m"));
    for (const le of ["0.0001", "0.0005", "0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1", "5"]) expect(text).toContain(`llmix_step_seconds_bucket{le="${le}"}`);
    expect(text).toMatch(/^llmix_errors_total\{code="unknown_session"\} \d+$/m);
    expect(text).toMatch(/^llmix_errors_total\{code="invalid_json"\} \d+$/m);
    expect(text).toMatch(/^llmix_http_requests_total\{route="\/v1\/sessions\/:id\/step",status="200"\} \d+$/m);
    expect(text).toMatch(/^llmix_http_requests_total\{route="unmatched",status="404"\} \d+$/m);
    // Every sample line is "name{labels} value".
    for (const line of text.trim().split("\n").filter((l) => !l.startsWith("#"))) expect(line).toMatch(/^[a-z_]+(\{[^}]*\})? [0-9.e+-]+$/);
  });

  it("/openapi.json is OpenAPI 3.1 and documents every registered route by hand", async () => {
    const res = await api(base, "GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    const routes = server.service.routes;
    expect(routes.map((r) => `${r.method} ${r.url}`).sort()).toEqual([
      "DELETE /v1/episodes/:id", "DELETE /v1/runs/:id", "DELETE /v1/sessions/:id", "GET /healthz", "GET /metrics", "GET /openapi.json", "GET /readyz", "GET /v1/audit",
      "GET /v1/envs", "GET /v1/envs/:env", "GET /v1/envs/:env/tasks", "GET /v1/episodes/:id", "GET /v1/runs", "GET /v1/runs/:id", "GET /v1/runs/:id/episodes",
      "GET /v1/runs/:id/export", "GET /v1/runs/:id/tasks", "GET /v1/sessions/:id", "GET /v1/sessions/:id/snapshot", "GET /v1/ws", "POST /v1/episodes/:id/replay",
      "POST /v1/purge", "POST /v1/sessions", "POST /v1/sessions/:id/restore", "POST /v1/sessions/:id/step", "POST /v1/tasks/sample",
    ]);
    for (const route of routes) {
      const op = res.body.paths[openApiPath(route.url)]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.url}`).toBeDefined();
      expect(op["x-llmix-undocumented"], `${route.method} ${route.url}`).toBeUndefined();
      expect(op.responses).toBeDefined();
    }
    // And nothing documented that is not served.
    const served = new Set(routes.map((r) => `${r.method.toLowerCase()} ${openApiPath(r.url)}`));
    for (const [path, ops] of Object.entries(res.body.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) expect(served.has(`${method} ${path}`), `${method} ${path}`).toBe(true);
    }
    const create = res.body.paths["/v1/sessions"].post.requestBody.content["application/json"].schema;
    expect(JSON.stringify(create)).toContain("task_id");
    expect(JSON.stringify(create)).toContain("snapshot");
    for (const name of Object.keys(res.body.components.schemas)) expect(res.body.components.schemas[name]).toBeTypeOf("object");
  });

  it("with MCP mounted as llmix serve mounts it, every route is still documented by hand", async () => {
    const withMcp = await startTestServer({ withStore: false, extraRoutes: (app, { manager }) => mountMcp(app, manager) });
    try {
      const doc = (await api(withMcp.base, "GET", "/openapi.json")).body;
      expect(withMcp.service.routes.some((r) => r.url === "/v1/sessions/:id/mcp")).toBe(true);
      for (const route of withMcp.service.routes) {
        const op = doc.paths[openApiPath(route.url)]?.[route.method.toLowerCase()];
        expect(op?.operationId, `${route.method} ${route.url}`).toBeTypeOf("string");
      }
    } finally {
      await withMcp.close();
    }
  });

  it("extra routes mount with the core's parsing, errors and OpenAPI entry", async () => {
    const extra = await startTestServer({
      withStore: false,
      extraRoutes: (app, context) => {
        app.post("/v1/sessions/:id/echo", { config: { openapi: { summary: "echo", responses: { "200": { description: "ok" } } } } }, async (request) => {
          await context.manager.info((request.params as { id: string }).id);
          return { body: request.body };
        });
      },
    });
    try {
      const created = (await api(extra.base, "POST", "/v1/sessions", TASK)).body;
      const echo = await api(extra.base, "POST", `/v1/sessions/${created.session_id}/echo`, { a: 1 });
      expect(echo.body).toEqual({ body: { a: 1 } });
      expect((await api(extra.base, "POST", "/v1/sessions/ses_x/echo", { a: 1 })).body.error.code).toBe("unknown_session");
      expect((await api(extra.base, "POST", `/v1/sessions/${created.session_id}/echo`, "{")).body.error.code).toBe("invalid_json");
      const doc = (await api(extra.base, "GET", "/openapi.json")).body;
      expect(doc.paths["/v1/sessions/{id}/echo"].post.summary).toBe("echo");
    } finally {
      await extra.close();
    }
  });
});
