/**
 * End-to-end: two `llmix serve --fleet` replicas (the built dist/cli/bin.js) sharing a real Redis. 16
 * billing-dispute sessions are created on both and stepped round-robin across them with the reference
 * solver's actions; one replica is SIGKILLed while a round of steps is in flight. Every session
 * finishes on the survivor with the answers of an uninterrupted run, byte for byte, and the same
 * outcome. A client whose request died with the replica retries it with `expect_steps`, so a step the
 * dead replica had committed is answered again, never applied twice.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/envs/index.js";
import { SessionManager, type StepResponse } from "../../src/server/sessions.js";
import { api, playReference, spawnServe } from "./service-helpers.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const bin = join(root, "dist/cli/bin.js");
const dir = mkdtempSync(join(tmpdir(), "llmix-fleet-e2e-"));
const children: ChildProcess[] = [];
const PREFIX = `llmix:test:fleet-e2e:${process.pid}:${Date.now()}:`;
const SESSIONS = 16;
const KILL_ROUND = 2;

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
  const redis = new Redis("redis://127.0.0.1:6379");
  const keys = await redis.keys(`${PREFIX}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

/** POST JSON; the answer's status and exact text (a dead replica is status 0). */
async function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  } catch (error) {
    return { status: 0, text: String(error) };
  }
}

interface Episode {
  task_id: string;
  seed: number;
  actions: unknown[];
  answers: string[];
}

/** The reference solver's episodes, uninterrupted, on one in-process manager. */
async function referenceEpisodes(): Promise<Episode[]> {
  const manager = new SessionManager({ registry: builtinRegistry(), hosts: 1, idleTtlMs: 0 });
  try {
    const episodes: Episode[] = [];
    for (let n = 1; n <= SESSIONS; n++) {
      const task = { env: "billing-dispute", task_id: `billing-dispute/${n % 2 ? "easy" : "medium"}/seed-${n}`, seed: n };
      const created = await manager.create(task);
      const episode: Episode = { task_id: task.task_id, seed: n, actions: [], answers: [] };
      await playReference(created.value, async (action) => {
        const answer = await manager.step(created.value.session_id, action);
        episode.actions.push(action);
        episode.answers.push(answer.text);
        return answer.value;
      });
      episodes.push(episode);
    }
    return episodes;
  } finally {
    await manager.shutdown();
  }
}

describe("a fleet of two llmix serve replicas", () => {
  it("finishes every session on the survivor of a SIGKILL with an uninterrupted run's answers", async () => {
    const reference = await referenceEpisodes();
    expect(reference.every((e) => e.actions.length > KILL_ROUND + 1)).toBe(true);
    const args = (name: string) => ["--port", "0", "--hosts", "1", "--idle-ttl", "0", "--store", join(dir, `${name}.db`), "--fleet", "redis://127.0.0.1:6379", "--fleet-prefix", PREFIX];
    const [a, b] = await Promise.all([spawnServe(bin, dir, args("a"), children), spawnServe(bin, dir, args("b"), children)]);
    expect(a.line).toMatch(/fleet redis:\/\/127\.0\.0\.1:6379\/? as rep_[0-9a-f]+/);
    // As a load balancer does: wait until /readyz says the replica's hosts are up.
    let ready = await api(a.url, "GET", "/readyz");
    for (let tries = 0; ready.status !== 200 && tries < 100; tries++) {
      expect(ready.body.status).toBe("unready");
      await new Promise((resolve) => setTimeout(resolve, 200));
      ready = await api(a.url, "GET", "/readyz");
    }
    expect(ready.status).toBe(200);
    expect(ready.body.checks.fleet).toMatchObject({ ok: true, replicas: 2 });

    const replicas = [a.url, b.url];
    const ids: string[] = [];
    for (const [j, episode] of reference.entries()) {
      const created = await post(`${replicas[j % 2]}/v1/sessions`, { env: "billing-dispute", task_id: episode.task_id, seed: episode.seed });
      expect(created.status).toBe(201);
      ids.push((JSON.parse(created.text) as { session_id: string }).session_id);
    }

    let killed = false;
    let retried = 0;
    const answers: string[][] = reference.map(() => []);
    const rounds = Math.max(...reference.map((e) => e.actions.length));
    for (let k = 0; k < rounds; k++) {
      const round = reference.map(async (episode, j) => {
        if (k >= episode.actions.length) return;
        const action = episode.actions[k];
        const on = killed ? a.url : replicas[(k + j) % 2];
        let reply = await post(`${on}/v1/sessions/${ids[j]}/step`, { action, expect_steps: k });
        // The replica died under this request (or holds the lock it died with, until its heartbeat lapses): retry on the survivor.
        for (let tries = 0; reply.status !== 200 && tries < 100; tries++) {
          expect([0, 409, 503]).toContain(reply.status);
          retried++;
          await new Promise((resolve) => setTimeout(resolve, 200));
          reply = await post(`${a.url}/v1/sessions/${ids[j]}/step`, { action, expect_steps: k });
        }
        expect(reply.status, reply.text).toBe(200);
        answers[j]!.push(reply.text);
      });
      if (k === KILL_ROUND) {
        // Mid-round: some of B's steps are committed, some are running, some never arrive.
        await new Promise((resolve) => setTimeout(resolve, 5));
        b.child.kill("SIGKILL");
        killed = true;
        expect(await b.exited).toBe(null);
      }
      await Promise.all(round);
    }

    expect(retried).toBeGreaterThan(0);
    for (const [j, episode] of reference.entries()) {
      expect(answers[j], `session ${j} (${episode.task_id})`).toEqual(episode.answers);
      const last = JSON.parse(episode.answers.at(-1) as string) as StepResponse;
      expect(last.terminated || last.truncated).toBe(true);
    }
    const outcomes = reference.map((e) => (JSON.parse(e.answers.at(-1) as string) as StepResponse).reward_components.task);
    expect(outcomes.filter((o) => o === 1).length).toBeGreaterThan(SESSIONS / 2);

    const metrics = await api<string>(a.url, "GET", "/metrics");
    expect(metrics.body).toContain(`llmix_fleet_sessions ${SESSIONS}`);
    expect(metrics.body).toMatch(/llmix_fleet_adopted_total [1-9]/);
    for (const id of ids) expect((await api(a.url, "DELETE", `/v1/sessions/${id}`)).status).toBe(200);
    expect((await api(a.url, "GET", "/readyz")).body.checks.fleet).toMatchObject({ ok: true, sessions: 0 });
    a.child.kill("SIGTERM");
    expect(await a.exited).toBe(0);
  }, 120_000);
});
