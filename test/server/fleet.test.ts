/**
 * A fleet of session managers sharing sessions through a real Redis (127.0.0.1:6379), in one process:
 * any replica steps any session with the answers of an uninterrupted run, byte for byte; one operation
 * at a time fleet-wide; a dead replica's lock is taken over; restores, ownership, retries, capacity,
 * reaping and recorded episodes work across replicas. (test/server/fleet.e2e.test.ts kills a real
 * `llmix serve` process.)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/envs/index.js";
import { Fleet } from "../../src/server/fleet.js";
import { SessionManager, type Caller } from "../../src/server/sessions.js";
import { api, startTestServer } from "./service-helpers.js";
import { openStore, type SqliteTrajectoryStore } from "../../src/store/sqlite-store.js";

const REDIS = "redis://127.0.0.1:6379";
const KEY = "ab".repeat(32);
const TASK = { env: "billing-dispute", task_id: "billing-dispute/easy/seed-1", seed: 1 } as const;
const LOOKUP = { type: "tool_call", tool: "get_agent_profile", args: {} } as const;
/** 40 actions: past the host's checkpoint (every 32) and past the episode's end (max steps). */
const ACTIONS = [
  ...Array.from({ length: 20 }, (_, i) => (i % 4 === 3 ? { type: "tool_call", tool: "lookup_customer", args: { query: `c${i}@example.com` } } : LOOKUP)),
  ...Array.from({ length: 20 }, () => LOOKUP),
];

const prefixes: string[] = [];
const managers: SessionManager[] = [];
const dirs: string[] = [];

function newPrefix(): string {
  const prefix = `llmix:test:fleet:${process.pid}:${prefixes.length}:${Date.now()}:`;
  prefixes.push(prefix);
  return prefix;
}

async function replica(prefix: string, options: { capacity?: number; fleetCapacity?: number; store?: SqliteTrajectoryStore; idleTtlMs?: number; now?: () => number; replicaTtlMs?: number } = {}): Promise<{ manager: SessionManager; fleet: Fleet }> {
  const fleet = new Fleet({ redisUrl: REDIS, prefix, lockMs: 60_000, capacity: options.fleetCapacity, replicaTtlMs: options.replicaTtlMs });
  await fleet.join();
  const manager = new SessionManager({
    registry: builtinRegistry(), hosts: 1, idleTtlMs: options.idleTtlMs ?? 0, snapshotKey: KEY, fleet, capacity: options.capacity, store: options.store, now: options.now,
  });
  managers.push(manager);
  return { manager, fleet };
}

/** The answers of an uninterrupted run on one manager without a fleet. */
async function uninterrupted(actions: readonly unknown[], record = false, store?: SqliteTrajectoryStore): Promise<{ created: string; answers: string[]; id: string }> {
  const plain = new SessionManager({ registry: builtinRegistry(), hosts: 1, idleTtlMs: 0, snapshotKey: KEY, store });
  managers.push(plain);
  const created = await plain.create({ ...TASK, record });
  const id = created.value.session_id;
  const answers: string[] = [];
  for (const action of actions) answers.push((await plain.step(id, action)).text);
  if (record) await plain.close(id);
  return { created: created.text.replace(id, "ID"), answers, id };
}

function tempStore(): SqliteTrajectoryStore {
  const dir = mkdtempSync(join(tmpdir(), "llmix-fleet-"));
  dirs.push(dir);
  return openStore(join(dir, "llmix.db"));
}

afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.shutdown()));
});

afterAll(async () => {
  const redis = new Redis(REDIS);
  for (const prefix of prefixes) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("a fleet of replicas", () => {
  it("steps one session on any replica with an uninterrupted run's answers, byte for byte (catch-up, checkpoint, a newcomer rebuilding)", async () => {
    const reference = await uninterrupted(ACTIONS);
    const prefix = newPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const created = await a.manager.create(TASK);
    const id = created.value.session_id;
    expect(created.text.replace(id, "ID")).toBe(reference.created);
    const answers: string[] = [];
    let c: Awaited<ReturnType<typeof replica>> | undefined;
    for (const [i, action] of ACTIONS.entries()) {
      // Two steps on B, one on A; from step 34 a third replica that has never seen the session takes turns.
      if (i === 34) c = await replica(prefix);
      const on = c && i % 2 === 0 ? c : i % 3 === 0 ? a : b;
      answers.push((await on.manager.step(id, action)).text);
    }
    expect(answers).toEqual(reference.answers);
    const stats = [a, b, c!].map((r) => r.manager.drainStats());
    // Each replica rebuilt the session at most once; the rest was catching up by replay.
    expect(stats.map((s) => s.fleet_adopted_total)).toEqual([0, 1, 1]);
    expect(stats[0]!.fleet_replayed_total).toBeGreaterThan(10);
    const infos = await Promise.all([a, b, c!].map((r) => r.manager.info(id)));
    expect(new Set(infos.map((info) => JSON.stringify({ ...info, idle_ms: 0 }))).size).toBe(1);
    expect(infos[0]).toMatchObject({ steps: ACTIONS.length, ended: true });
    expect((await a.fleet.stats()).sessions).toBe(1);
    await b.manager.close(id);
    expect((await a.fleet.stats()).sessions).toBe(0);
    await expect(a.manager.step(id, LOOKUP)).rejects.toMatchObject({ code: "unknown_session" });
  });

  it("stores a recorded episode once, with every step, whichever replicas stepped it", async () => {
    const plainStore = tempStore();
    const reference = await uninterrupted(ACTIONS, true, plainStore);
    const store = tempStore();
    const prefix = newPrefix();
    const a = await replica(prefix, { store });
    const b = await replica(prefix, { store });
    const id = (await a.manager.create({ ...TASK, record: true })).value.session_id;
    for (const [i, action] of ACTIONS.entries()) await (i % 2 === 0 ? a : b).manager.step(id, action);
    await a.manager.close(id);
    const expected = await plainStore.getSteps(reference.id);
    const stored = await store.getSteps(id);
    expect(stored.length).toBe(expected.length);
    const comparable = (steps: typeof stored) => steps.map((s) => ({ step: s.step, action: s.action, observation: s.observation, reward: s.reward, reward_components: s.reward_components }));
    expect(comparable(stored)).toEqual(comparable(expected));
    const episodes = await store.episodes({});
    expect(episodes.filter((e) => e.episode_id === id)).toHaveLength(1);
    expect(episodes[0]?.outcome).toBe((await plainStore.getEpisode(reference.id))?.outcome);
  });

  it("a replica that died between storing an episode and marking it stored: the next close does not store it twice", async () => {
    const store = tempStore();
    const prefix = newPrefix();
    const a = await replica(prefix, { store });
    const b = await replica(prefix, { store });
    const id = (await a.manager.create({ ...TASK, record: true })).value.session_id;
    for (const action of ACTIONS) await a.manager.step(id, action);
    // The episode ended and was stored on A; A's mark is lost (it died before writing it).
    const redis = new Redis(REDIS);
    await redis.hset(`${prefix}s:${id}`, "stored", "0");
    redis.disconnect();
    await b.manager.close(id);
    expect((await store.episodes({})).filter((e) => e.episode_id === id)).toHaveLength(1);
  });

  it("runs one operation at a time fleet-wide, and takes over the lock of a replica that died", async () => {
    const prefix = newPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const id = (await a.manager.create(TASK)).value.session_id;
    const results = await Promise.allSettled([a.manager.step(id, LOOKUP), b.manager.step(id, LOOKUP)]);
    const busy = results.filter((r) => r.status === "rejected");
    expect(busy.length).toBe(1);
    expect((busy[0] as PromiseRejectedResult).reason).toMatchObject({ code: "session_busy" });
    // A replica that took the lock and died: its heartbeat stops, and the lock is taken over.
    const dead = new Fleet({ redisUrl: REDIS, prefix, lockMs: 60_000, replicaTtlMs: 300 });
    await dead.join();
    await dead.acquire(id, dead.token());
    await expect(b.manager.step(id, LOOKUP)).rejects.toMatchObject({ code: "session_busy" });
    await dead.leave();
    expect((await b.manager.step(id, LOOKUP)).value.observation.rendered.length).toBeGreaterThan(0);
    expect((await a.manager.info(id)).steps).toBe(2);
  });

  it("a restore on one replica starts a new epoch that the others rebuild", async () => {
    const prefix = newPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const plain = new SessionManager({ registry: builtinRegistry(), hosts: 1, idleTtlMs: 0, snapshotKey: KEY });
    managers.push(plain);
    const p = (await plain.create(TASK)).value.session_id;
    const id = (await a.manager.create(TASK)).value.session_id;
    for (const action of ACTIONS.slice(0, 5)) {
      await plain.step(p, action);
      await a.manager.step(id, action);
    }
    const snapshot = JSON.parse((await a.manager.snapshot(id)).text).snapshot;
    const plainSnapshot = JSON.parse((await plain.snapshot(p)).text).snapshot;
    for (const action of ACTIONS.slice(5, 9)) {
      await plain.step(p, action);
      await a.manager.step(id, action);
    }
    await b.manager.restore(id, snapshot);
    await plain.restore(p, plainSnapshot);
    for (const [i, action] of ACTIONS.slice(5, 15).entries()) {
      const expected = (await plain.step(p, action)).text;
      expect((await (i % 2 === 0 ? a : b).manager.step(id, action)).text).toBe(expected);
    }
    expect((await a.manager.info(id)).steps).toBe(15);
  });

  it("keeps sessions to their owner on every replica, and answers a lost reply again (expect_steps)", async () => {
    const prefix = newPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const alice: Caller = { name: "alice", admin: false };
    const bob: Caller = { name: "bob", admin: false };
    const id = (await a.manager.create(TASK, alice)).value.session_id;
    await expect(b.manager.step(id, LOOKUP, bob)).rejects.toMatchObject({ code: "unknown_session" });
    await expect(b.manager.info(id, bob)).rejects.toMatchObject({ code: "unknown_session" });
    const first = (await a.manager.step(id, LOOKUP, alice, 0)).text;
    // The answer was lost; the client retries the same step on the other replica: the same answer, not a second step.
    expect((await b.manager.step(id, LOOKUP, alice, 0)).text).toBe(first);
    expect((await b.manager.info(id, alice)).steps).toBe(1);
    await expect(b.manager.step(id, LOOKUP, alice, 5)).rejects.toMatchObject({ code: "step_conflict", details: { steps: 1, expect_steps: 5 } });
    expect((await b.manager.info(id, { name: "root", admin: true })).steps).toBe(1);
  });

  it("bounds sessions fleet-wide and copies per replica", async () => {
    const prefix = newPrefix();
    const a = await replica(prefix, { fleetCapacity: 3, capacity: 2 });
    const b = await replica(prefix, { fleetCapacity: 3, capacity: 2 });
    const ids = [(await a.manager.create(TASK)).value.session_id, (await a.manager.create(TASK)).value.session_id, (await b.manager.create(TASK)).value.session_id];
    await expect(b.manager.create(TASK)).rejects.toMatchObject({ code: "capacity_reached", details: { fleet_capacity: 3 } });
    // A holds two copies, its capacity: stepping a third session drops the least recently used copy.
    await a.manager.step(ids[2]!, LOOKUP);
    expect(a.manager.size).toBe(2);
    for (const sid of ids) await a.manager.step(sid, LOOKUP);
    expect((await b.fleet.stats()).sessions).toBe(3);
  });

  it("reaps sessions the whole fleet left idle, storing recorded ones", async () => {
    let now = Date.now();
    const store = tempStore();
    const prefix = newPrefix();
    const a = await replica(prefix, { idleTtlMs: 60_000, now: () => now, store });
    const b = await replica(prefix, { idleTtlMs: 60_000, now: () => now, store });
    const idle = (await a.manager.create({ ...TASK, record: true })).value.session_id;
    await a.manager.step(idle, LOOKUP);
    now += 30_000;
    const busy = (await a.manager.create(TASK)).value.session_id;
    now += 40_000;
    await b.manager.step(busy, LOOKUP);
    // B never held the idle session: it reaps it from the fleet's state all the same, without rebuilding it.
    const adopted = b.manager.drainStats().fleet_adopted_total;
    expect(await b.manager.reapIdle()).toBe(1);
    expect(b.manager.drainStats().fleet_adopted_total).toBe(adopted);
    expect((await a.fleet.stats()).sessions).toBe(1);
    await expect(a.manager.step(idle, LOOKUP)).rejects.toMatchObject({ code: "unknown_session" });
    expect((await store.getSteps(idle)).length).toBe(1);
  });

  it("an unreachable Redis is fleet_unavailable, naming the URL without its password", async () => {
    const fleet = new Fleet({ redisUrl: "redis://:secret@127.0.0.1:1", lockMs: 1000 });
    const error = await fleet.join().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "fleet_unavailable" });
    expect((error as Error).message).toContain("127.0.0.1:1");
    expect((error as Error).message).not.toContain("secret");
    await fleet.leave();
  });

  it("/readyz reports the fleet's Redis, and a step while Redis is away is fleet_unavailable (503), not a hang", async () => {
    const prefix = newPrefix();
    const fleet = new Fleet({ redisUrl: REDIS, prefix, lockMs: 60_000 });
    await fleet.join();
    const server = await startTestServer({ fleet, snapshotKey: KEY });
    try {
      let ready = await api(server.base, "GET", "/readyz");
      for (let tries = 0; ready.status !== 200 && tries < 100; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        ready = await api(server.base, "GET", "/readyz");
      }
      expect(ready.body).toMatchObject({ status: "ready", checks: { hosts: { ok: true }, store: { ok: true }, fleet: { ok: true, sessions: 0, replicas: 1 } } });
      const created = await api(server.base, "POST", "/v1/sessions", TASK);
      expect(created.status).toBe(201);
      // Redis goes away (this replica's connection is cut).
      (fleet as unknown as { redis: Redis }).redis.disconnect();
      const step = await api(server.base, "POST", `/v1/sessions/${created.body.session_id}/step`, { action: LOOKUP });
      expect(step.status).toBe(503);
      expect(step.body.error.code).toBe("fleet_unavailable");
      expect(step.headers.get("retry-after")).toBe("1");
      const unready = await api(server.base, "GET", "/readyz");
      expect(unready.status).toBe(503);
      expect(unready.body).toMatchObject({ status: "unready", checks: { fleet: { ok: false } } });
    } finally {
      await server.close();
    }
  });
});
