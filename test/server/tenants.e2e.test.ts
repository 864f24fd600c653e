/**
 * A two-tenant deployment (issue 20): each tenant's sessions, runs, episodes, exports and MCP endpoints
 * stay its own over HTTP, the WebSocket, MCP and the CLI; refusals look exactly like absence and are
 * audited; the policy's environment and task-set rules hold; retention purges through the service
 * leave a consistent store. Admins see everything.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataPolicy } from "../../src/server/data-policy.js";
import { mountMcp } from "../../src/server/mcp.js";
import { splitOf } from "../../src/tasks/splits.js";
import { episode, run } from "../../src/store/test-support.js";
import { api, startTestServer, WsClient, type TestServer } from "./service-helpers.js";

const run$ = promisify(execFile);
const BIN = join(process.cwd(), "dist/cli/bin.js");

const TOKENS = { acme: "acme-secret-1", globex: "globex-secret-1", ops: "ops-secret-1" } as const;
const auth = (token: string) => ({ authorization: `Bearer ${token}` });
const enc = encodeURIComponent;

// An easy billing task of each split: the policy lets globex run the train split only.
const seeds = Array.from({ length: 200 }, (_, i) => `billing-dispute/easy/seed-${i + 1}`);
const TRAIN_TASK = seeds.find((id) => splitOf(id) === "train") as string;
const EVAL_TASK = seeds.find((id) => splitOf(id) === "eval") as string;

const POLICY = {
  tenants: {
    acme: { tokens: [{ name: "acme-trainer", token: TOKENS.acme, scopes: ["env:run", "trajectories:read", "trajectories:export", "trajectories:delete"] }], retention_days: 30 },
    globex: {
      tokens: [{ name: "globex-trainer", token: TOKENS.globex, scopes: ["env:run", "trajectories:read", "trajectories:export", "trajectories:delete"] }],
      environments: ["billing-dispute"],
    },
  },
  admins: [{ name: "ops", token: TOKENS.ops }],
  environments: { "billing-dispute": { splits: ["train"] }, "code-repair": {} },
};

describe("a two-tenant deployment", () => {
  let server: TestServer;
  let dir: string;
  let policyFile: string;
  const acme = { sid: "", run: "", episode: "" };
  const globex = { sid: "", run: "", episode: "" };

  /** Create a recorded session, take one step, close it: one stored episode in the tenant's run. */
  async function recordOne(token: string): Promise<{ sid: string; run: string; episode: string }> {
    const created = await api(server.base, "POST", "/v1/sessions", { env: "billing-dispute", task_id: TRAIN_TASK, seed: 3, record: true }, auth(token));
    expect(created.status).toBe(201);
    const sid = created.body.session_id as string;
    const stepped = await api(server.base, "POST", `/v1/sessions/${sid}/step`, { action: { type: "message", content: "Hello, let me look into this." } }, auth(token));
    expect(stepped.status).toBe(200);
    const closed = await api(server.base, "DELETE", `/v1/sessions/${sid}`, undefined, auth(token));
    expect(closed.status).toBe(200);
    return { sid, run: closed.body.episode.run_id, episode: closed.body.episode.episode_id };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "llmix-tenants-"));
    policyFile = join(dir, "policy.json");
    writeFileSync(policyFile, JSON.stringify(POLICY));
    server = await startTestServer({ policy: DataPolicy.fromFile(policyFile), extraRoutes: (app, { manager }) => mountMcp(app, manager) });
    Object.assign(acme, await recordOne(TOKENS.acme));
    Object.assign(globex, await recordOne(TOKENS.globex));
    // A live session of acme's, for the session-level checks.
    const live = await api(server.base, "POST", "/v1/sessions", { env: "billing-dispute", task_id: TRAIN_TASK, seed: 4 }, auth(TOKENS.acme));
    acme.sid = live.body.session_id;
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("records each tenant's sessions under a run of its own", async () => {
    expect(acme.run).not.toBe(globex.run);
    expect((await server.store?.getRun(acme.run))?.tenant).toBe("acme");
    expect((await server.store?.getRun(globex.run))?.tenant).toBe("globex");
  });

  it("HTTP: a tenant sees only its own runs, episodes and exports; the other's answer as absent", async () => {
    const runs = await api(server.base, "GET", "/v1/runs", undefined, auth(TOKENS.globex));
    expect(runs.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([globex.run]);
    const own = await api(server.base, "GET", `/v1/episodes/${enc(globex.episode)}`, undefined, auth(TOKENS.globex));
    expect(own.status).toBe(200);
    for (const [method, path] of [
      ["GET", `/v1/runs/${enc(acme.run)}`],
      ["GET", `/v1/runs/${enc(acme.run)}/episodes`],
      ["GET", `/v1/runs/${enc(acme.run)}/tasks`],
      ["GET", `/v1/runs/${enc(acme.run)}/export?format=jsonl`],
      ["DELETE", `/v1/runs/${enc(acme.run)}`],
      ["GET", `/v1/episodes/${enc(acme.episode)}`],
      ["POST", `/v1/episodes/${enc(acme.episode)}/replay`],
      ["DELETE", `/v1/episodes/${enc(acme.episode)}`],
    ] as const) {
      const res = await api(server.base, method, path, undefined, auth(TOKENS.globex));
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toMatch(/^unknown_(run|episode)$/);
      // The answer is the one a made-up id gets: it says nothing of the run beyond the id the caller sent.
      const id = path.includes("/runs/") ? acme.run : acme.episode;
      const madeUp = await api(server.base, method, path.replace(enc(id), "made-up-id"), undefined, auth(TOKENS.globex));
      expect(JSON.stringify(res.body).replaceAll(id, "made-up-id")).toBe(JSON.stringify(madeUp.body));
    }
    // The refusals look like absence: a made-up id answers the same.
    const missing = await api(server.base, "GET", `/v1/episodes/${enc("no/such/episode")}`, undefined, auth(TOKENS.globex));
    expect(missing.status).toBe(404);
    // The episode is still there for its owner and for admins.
    expect((await api(server.base, "GET", `/v1/episodes/${enc(acme.episode)}`, undefined, auth(TOKENS.acme))).status).toBe(200);
    const all = await api(server.base, "GET", "/v1/runs", undefined, auth(TOKENS.ops));
    expect(all.body.runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual([acme.run, globex.run].sort());
  });

  it("HTTP, WebSocket and MCP: another tenant's session is unknown to every operation", async () => {
    for (const [method, path, body] of [
      ["GET", `/v1/sessions/${acme.sid}`, undefined],
      ["POST", `/v1/sessions/${acme.sid}/step`, { action: { type: "message", content: "hi" } }],
      ["GET", `/v1/sessions/${acme.sid}/snapshot`, undefined],
      ["DELETE", `/v1/sessions/${acme.sid}`, undefined],
    ] as const) {
      const res = await api(server.base, method, path, body, auth(TOKENS.globex));
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe("unknown_session");
    }
    const mcp = await api(server.base, "POST", `/v1/sessions/${acme.sid}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }, { ...auth(TOKENS.globex), accept: "application/json, text/event-stream" });
    expect(mcp.status).toBe(404);
    const ownMcp = await api(server.base, "POST", `/v1/sessions/${acme.sid}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }, { ...auth(TOKENS.acme), accept: "application/json, text/event-stream" });
    expect(ownMcp.status).toBe(200);
    const ws = await WsClient.connect(`ws://127.0.0.1:${server.port}/v1/ws`, auth(TOKENS.globex));
    try {
      for (const op of ["info", "step", "snapshot", "close"]) {
        const reply = await ws.request(op, { session_id: acme.sid, action: { type: "message", content: "hi" } });
        expect(reply.ok, op).toBe(false);
        expect(reply.error?.code, op).toBe("unknown_session");
      }
    } finally {
      await ws.close();
    }
    // The session is intact for its owner.
    expect((await api(server.base, "GET", `/v1/sessions/${acme.sid}`, undefined, auth(TOKENS.acme))).status).toBe(200);
  });

  it("enforces the policy's environments and task sets at session creation, over HTTP and the WebSocket", async () => {
    const otherEnv = await api(server.base, "POST", "/v1/sessions", { env: "code-repair", task_id: "code-repair/easy/seed-1", seed: 1 }, auth(TOKENS.globex));
    expect(otherEnv.status).toBe(403);
    expect(otherEnv.body.error.message).toContain("globex-trainer");
    const notAllowed = await api(server.base, "POST", "/v1/sessions", { env: "web-shop", task_id: "web-shop/easy/seed-1", seed: 1 }, auth(TOKENS.acme));
    expect(notAllowed.status).toBe(403);
    const evalTask = await api(server.base, "POST", "/v1/sessions", { env: "billing-dispute", task_id: EVAL_TASK, seed: 1 }, auth(TOKENS.acme));
    expect(evalTask.status).toBe(403);
    expect(evalTask.body.error.message).toContain("train");
    const ws = await WsClient.connect(`ws://127.0.0.1:${server.port}/v1/ws`, auth(TOKENS.globex));
    try {
      const reply = await ws.request("create", { env: "code-repair", task_id: "code-repair/easy/seed-1", seed: 1 });
      expect(reply.error?.code).toBe("forbidden");
    } finally {
      await ws.close();
    }
  });

  it("audits creations, reads and refused attempts with the token's name and id; only admins read the log", async () => {
    expect((await api(server.base, "GET", "/v1/audit", undefined, auth(TOKENS.globex))).status).toBe(403);
    const log = await api(server.base, "GET", "/v1/audit?limit=1000", undefined, auth(TOKENS.ops));
    expect(log.status).toBe(200);
    const events = log.body.events as Array<{ token: string; token_id: string; tenant: string; action: string; target_id: string; via: string }>;
    const denied = events.filter((e) => e.action === "denied" && e.token === "globex-trainer");
    expect(denied.map((e) => e.target_id)).toContain(acme.episode);
    expect(denied.map((e) => e.target_id)).toContain(acme.run);
    expect(denied.every((e) => e.tenant === "globex" && /^[0-9a-f]{12}$/.test(e.token_id))).toBe(true);
    expect(events.some((e) => e.action === "create" && e.token === "acme-trainer" && e.via === "http")).toBe(true);
    expect(events.some((e) => e.action === "read" && e.target_id === acme.episode && e.token === "acme-trainer")).toBe(true);
    // No event holds a secret.
    expect(JSON.stringify(events)).not.toMatch(/secret-1/);
  });

  it("the CLI under --policy sees and exports one tenant's data, and refuses the other's", async () => {
    const store = join(dir, "cli.db");
    // The same two tenants' runs in a store of the CLI's own.
    const { openStore } = await import("../../src/store/sqlite-store.js");
    const s = openStore(store);
    await s.createRun(run("acme-run", undefined, { tenant: "acme", status: "finished", env: "billing-dispute" }));
    await s.createRun(run("globex-run", undefined, { tenant: "globex", status: "finished", env: "billing-dispute" }));
    await s.writeEpisodes([episode("acme-run", "billing-dispute/easy/seed-1", 0, { env: "billing-dispute" }), episode("globex-run", "billing-dispute/easy/seed-1", 0, { env: "billing-dispute" })]);
    await s.close();
    const cli = (args: string[], token?: string) =>
      run$("node", [BIN, ...args, "--store", store, "--data-policy", policyFile], { env: { ...process.env, ...(token ? { LLMIX_TOKEN: token } : {}) } }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
    const runs = await cli(["runs", "--json"], TOKENS.globex);
    expect(runs.code).toBe(0);
    expect(JSON.parse(runs.stdout).map((r: { run_id: string }) => r.run_id)).toEqual(["globex-run"]);
    const show = await cli(["show", "--episode", "acme-run/billing-dispute/easy/seed-1/g0"], TOKENS.globex);
    expect(show.code).not.toBe(0);
    expect(show.stderr).toContain("unknown_episode");
    const exported = await cli(["export", "--run", "acme-run", "--format", "jsonl", "--out", join(dir, "x.jsonl")], TOKENS.globex);
    expect(exported.code).not.toBe(0);
    expect(exported.stderr).toContain("unknown_run");
    expect((await cli(["export", "--run", "globex-run", "--format", "jsonl", "--out", join(dir, "own.jsonl")], TOKENS.globex)).code).toBe(0);
    expect((await cli(["runs"])).stderr).toContain("--token");
    expect((await cli(["runs"], "not-a-token")).stderr).toContain("unauthorized");
    expect((await cli(["audit"], TOKENS.globex)).stderr).toContain("forbidden");
    // A tenant's purge stays inside its tenant, whatever it asks.
    const purge = await cli(["purge", "--tenant", "acme"], TOKENS.globex);
    expect(purge.code).not.toBe(0);
    const ownPurge = await cli(["purge", "--env", "billing-dispute", "--json"], TOKENS.globex);
    expect(JSON.parse(ownPurge.stdout).purges[0].episodes).toEqual(["globex-run/billing-dispute/easy/seed-1/g0"]);
    const audit = await cli(["audit", "--json", "--limit", "50"], TOKENS.ops);
    const actions = JSON.parse(audit.stdout).map((e: { action: string; token: string; via: string }) => `${e.token}:${e.action}:${e.via}`);
    expect(actions).toContain("globex-trainer:denied:cli");
    expect(actions).toContain("globex-trainer:export:cli");
    expect(actions).toContain("globex-trainer:purge:cli");
  });

  it("retention: an admin's purge removes every row of the expired episodes and keeps the store consistent", async () => {
    const store = server.store!;
    await store.createRun(run("acme-old", "2020-01-01T00:00:00.000Z", { tenant: "acme", status: "finished" }));
    await store.writeEpisodes([episode("acme-old", "tiny/easy/seed-1", 0, { finishedAt: "2020-01-01T00:00:00.000Z" }), episode("acme-old", "tiny/easy/seed-2", 0, { finishedAt: "2020-01-02T00:00:00.000Z" })]);
    expect((await api(server.base, "POST", "/v1/purge", undefined, auth(TOKENS.acme))).status).toBe(403);
    const purged = await api(server.base, "POST", "/v1/purge", undefined, auth(TOKENS.ops));
    expect(purged.status).toBe(200);
    expect(purged.body.purges).toEqual([{ rule: "tenant acme: 30 days", episodes: ["acme-old/tiny/easy/seed-1/g0", "acme-old/tiny/easy/seed-2/g0"], steps: 6, runs: ["acme-old"] }]);
    const raw = new Database(store.path, { readonly: true });
    try {
      expect(raw.prepare("SELECT count(*) FROM steps WHERE episode_id NOT IN (SELECT episode_id FROM episodes)").pluck().get()).toBe(0);
      expect(raw.prepare("SELECT count(*) FROM episodes WHERE run_id NOT IN (SELECT run_id FROM runs)").pluck().get()).toBe(0);
      expect(raw.prepare("SELECT count(*) FROM episodes WHERE run_id = 'acme-old'").pluck().get()).toBe(0);
    } finally {
      raw.close();
    }
    // Fresh episodes are kept; the purge is in the audit log.
    expect((await api(server.base, "GET", `/v1/episodes/${enc(acme.episode)}`, undefined, auth(TOKENS.acme))).status).toBe(200);
    const log = await api(server.base, "GET", "/v1/audit?action=purge", undefined, auth(TOKENS.ops));
    expect(log.body.events[0]).toMatchObject({ token: "ops", action: "purge", target_id: "tenant acme: 30 days" });
  });

  it("shows the policy (without secrets) in the OpenAPI document", async () => {
    const doc = await api(server.base, "GET", "/openapi.json");
    expect(doc.body.info["x-llmix-data-policy"].tenants.map((t: { name: string }) => t.name)).toEqual(["acme", "globex"]);
    expect(JSON.stringify(doc.body)).not.toMatch(/secret-1/);
  });
});

describe("data policy files", () => {
  const bad = (value: unknown) => {
    try {
      DataPolicy.fromConfig(value, "test");
      return "accepted";
    } catch (error) {
      return `${(error as { code: string }).code}: ${(error as Error).message}`;
    }
  };

  it("refuses malformed policies with invalid_config naming the field", () => {
    expect(bad({})).toMatch(/invalid_config: .*no token/);
    expect(bad({ tenants: { "bad name": { tokens: [{ token: "x", scopes: ["env:run"] }] } } })).toMatch(/invalid_config/);
    expect(bad({ tenants: { a: { tokens: [{ token: "x", scopes: ["admin"] }] } } })).toMatch(/policy.admins/);
    expect(bad({ tenants: { a: { tokens: [{ token: "x", scopes: ["env:run"] }] }, b: { tokens: [{ token: "x", scopes: ["env:run"] }] } } })).toMatch(/repeats/);
    expect(bad({ tenants: { a: { tokens: [{ token: "x", scopes: ["env:run"], name: "n" }] }, b: { tokens: [{ token: "y", scopes: ["env:run"], name: "n" }] } } })).toMatch(/used twice/);
    expect(bad({ admins: [{ token: "x" }], retention: { days: -1 } })).toMatch(/policy.retention.days/);
    expect(bad({ admins: [{ token: "x" }], surprise: true })).toMatch(/invalid_config/);
    expect(bad({ admins: [{ token: "x" }], environments: { e: {} }, tenants: { a: { tokens: [{ token: "y", scopes: ["env:run"] }], environments: ["f"] } } })).toMatch(/does not allow/);
    expect(bad({ admins: [{ token: "x" }] })).toBe("accepted");
  });

  it("keeps each episode for the smallest retention that applies", () => {
    const policy = DataPolicy.fromConfig({ admins: [{ token: "x" }], retention: { days: 90 }, tenants: { a: { tokens: [{ token: "y", scopes: ["env:run"] }], retention_days: 30 } }, environments: { e: { retention_days: 7 } } });
    const now = new Date("2026-01-31T00:00:00.000Z");
    expect(policy.retentionPurges(now)).toEqual([
      { rule: "default: 90 days", criteria: { finished_before: "2025-11-02T00:00:00.000Z" } },
      { rule: "tenant a: 30 days", criteria: { tenant: "a", finished_before: "2026-01-01T00:00:00.000Z" } },
      { rule: "environment e: 7 days", criteria: { env: "e", finished_before: "2026-01-24T00:00:00.000Z" } },
    ]);
  });
});

describe("the retention schedule", () => {
  it("a server started under a policy with retention purges expired episodes at start, audited as the server's own", async () => {
    const { openStore } = await import("../../src/store/sqlite-store.js");
    const { startServer } = await import("../../src/server/serve.js");
    const { builtinRegistry } = await import("../../src/envs/index.js");
    const dir = mkdtempSync(join(tmpdir(), "llmix-retention-"));
    const path = join(dir, "llmix.db");
    try {
      const seed = openStore(path);
      await seed.createRun(run("old", "2020-01-01T00:00:00.000Z", { status: "finished", tenant: "acme" }));
      await seed.createRun(run("fresh", "2020-01-01T00:00:00.000Z", { status: "finished", tenant: "acme" }));
      // More than one batch of expired episodes: the sweep removes them in RETENTION_BATCH transactions.
      const old = Array.from({ length: 1100 }, (_, g) => episode("old", "tiny/easy/seed-1", g, { finishedAt: "2020-01-01T00:00:00.000Z", steps: 1 }));
      await seed.writeEpisodes([...old, episode("fresh", "tiny/easy/seed-1", 0, { finishedAt: new Date().toISOString() })]);
      await seed.close();
      const policy = DataPolicy.fromConfig({ admins: [{ name: "ops", token: TOKENS.ops }], retention: { days: 365, sweep_minutes: 1 } });
      const server = await startServer({ registry: builtinRegistry(), policy, storePath: path, port: 0, hosts: 1 });
      try {
        // The first sweep runs as the server starts; wait for its audit event.
        let events: Array<{ token: string; action: string; detail: { episodes: number } }> = [];
        for (let i = 0; i < 200 && events.length < 3; i++) {
          events = (await server.store.auditLog({ action: "purge" })) as unknown as typeof events;
          if (events.length < 3) await new Promise((r) => setTimeout(r, 50));
        }
        expect(events.map((e) => e.detail.episodes)).toEqual([100, 500, 500]);
        expect(events[0]).toMatchObject({ token: "server", action: "purge", via: "schedule" });
        expect(await server.store.getRun("old")).toBeUndefined();
        expect(await server.store.countEpisodes({ run_id: "fresh" })).toBe(1);
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
