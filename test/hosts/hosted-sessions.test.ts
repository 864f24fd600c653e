/**
 * Parking: beyond its resident cap a host snapshots and closes its least recently used sessions and
 * restores them on their next request. A parked session must answer exactly what a resident one would.
 */
import { describe, expect, it } from "vitest";
import type { Action } from "../../src/core/contract.js";
import { runPolicy } from "../../src/core/run-policy.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { HostedSessions } from "../../src/hosts/hosted-sessions.js";
import { randomSnapshotKey, SnapshotSigner } from "../../src/hosts/signing.js";

const ACTIONS = [
  { type: "tool_call", tool: "get_agent_profile", args: {} },
  { type: "tool_call", tool: "lookup_customer", args: { email: "nobody@example.com" } },
  { type: "message", content: "Hello, could you tell me the email on your account?" },
  { type: "tool_call", tool: "list_charges", args: {} },
];

/** Open `n` billing sessions, then step them round-robin; every answer body in order. */
async function drive(hosted: HostedSessions, n: number): Promise<string[]> {
  const bodies: string[] = [];
  for (let i = 0; i < n; i++) {
    const opened = await hosted.open({ sid: `s${i}`, env: "billing-dispute", task_id: `billing-dispute/medium/seed-${i + 1}`, seed: i, record: false, policy_checkpoint: null });
    bodies.push(opened.body);
  }
  for (const action of ACTIONS) {
    // Reverse order on odd rounds, so the least recently used is not always the next one asked for.
    const order = [...Array(n).keys()];
    if (bodies.length % 2 === 1) order.reverse();
    for (const i of order) bodies.push((await hosted.step(`s${i}`, action, false)).body);
  }
  const snapshots: string[] = [];
  for (let i = 0; i < n; i++) snapshots.push((await hosted.snapshot(`s${i}`)).body);
  return [...bodies, ...snapshots];
}

describe("HostedSessions parking", () => {
  it("answers byte-identically whether its sessions stayed resident or were parked and restored", async () => {
    const key = randomSnapshotKey();
    const resident = new HostedSessions(builtinRegistry(), new SnapshotSigner(key));
    // Each use is a minute after the last: every session beyond the cap is idle enough to park.
    let clock = 0;
    const parking = new HostedSessions(builtinRegistry(), new SnapshotSigner(key), 2, () => (clock += 60_000));
    const expected = await drive(resident, 6);
    const actual = await drive(parking, 6);
    expect(resident.parkedCount).toBe(0);
    expect(parking.size).toBe(6);
    expect(parking.parkedCount).toBe(4);
    expect(actual).toEqual(expected);
    // Closing a parked session gives its summary like any other.
    const closed = await parking.close("s0", new Date(0), new Date(1));
    expect(closed.summary.steps).toBe(ACTIONS.length);
    expect(parking.size).toBe(5);
    await resident.closeAll();
    await parking.closeAll();
  });

  it("parks nothing that was used within the idle time, so stepping more sessions than the cap does not thrash", async () => {
    const hosted = new HostedSessions(builtinRegistry(), new SnapshotSigner(randomSnapshotKey()), 2, () => 1_000);
    await drive(hosted, 5);
    expect(hosted.parkedCount).toBe(0);
    await hosted.closeAll();
  });
});

describe("HostedSessions redaction", () => {
  /** The reference solver's actions for a billing task (deterministic: they replay it on any host). */
  async function reference(taskId: string, seed: number): Promise<Action[]> {
    const env = builtinRegistry().get("billing-dispute").create();
    try {
      const initial = await env.reset(taskId, seed);
      return (await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial })).transitions.map((t) => t.action);
    } finally {
      await env.close();
    }
  }

  /** The world's values of a task, the ones worth looking for in text (names, emails, phones). */
  async function values(taskId: string, seed: number): Promise<string[]> {
    const env = builtinRegistry().get("billing-dispute").create();
    await env.reset(taskId, seed);
    const out = env.sensitiveValues().filter((v) => v.rule === "email" || (v.rule === "name" && v.value.includes(" "))).map((v) => v.value);
    await env.close();
    return out;
  }

  it("redacts the records and the summary it hands over, never the answer; a restore to another task redacts that task's people", async () => {
    let clock = 0;
    // One resident session and a minute between uses: the session is parked and brought back between steps.
    const key = randomSnapshotKey();
    const hosted = new HostedSessions(builtinRegistry(), new SnapshotSigner(key), 1, () => (clock += 60_000), {}, {});
    const other = new HostedSessions(builtinRegistry(), new SnapshotSigner(key), 1, () => (clock += 60_000), {}, {});
    const [a, b] = ["billing-dispute/medium/seed-3", "billing-dispute/hard/seed-8"];
    await hosted.open({ sid: "r1", env: "billing-dispute", task_id: a, seed: 2, record: true, policy_checkpoint: null });
    await hosted.open({ sid: "idle", env: "billing-dispute", task_id: b, seed: 2, record: false, policy_checkpoint: null });
    const bodies: string[] = [];
    const records: string[] = [];
    for (const action of await reference(a, 2)) {
      const reply = await hosted.step("r1", action, false);
      bodies.push(reply.body);
      records.push(JSON.stringify(reply.record));
      await hosted.step("idle", { type: "tool_call", tool: "get_agent_profile", args: {} }, false);
    }
    expect(hosted.parkedCount).toBe(1);
    const own = await values(a, 2);
    expect(own.filter((v) => bodies.join("\n").includes(v)).length).toBeGreaterThan(0);
    expect(own.filter((v) => records.join("\n").toLowerCase().includes(v.toLowerCase()))).toEqual([]);
    expect(records.join("\n")).toContain("[redacted:email#");
    const { summary } = await hosted.close("r1", new Date(0), new Date(1));
    expect(summary.outcome).toBe(1);

    // A session restored to a snapshot of another task: its next records are redacted with that task's values.
    await other.open({ sid: "src", env: "billing-dispute", task_id: b, seed: 4, record: false, policy_checkpoint: null });
    const snapshot = JSON.parse((await other.snapshot("src")).body).snapshot as unknown;
    await hosted.open({ sid: "r2", env: "billing-dispute", task_id: a, seed: 2, record: true, policy_checkpoint: null });
    await hosted.restore("r2", snapshot, false);
    const after: string[] = [];
    for (const action of (await reference(b, 4)).slice(0, 4)) after.push(JSON.stringify((await hosted.step("r2", action, false)).record));
    const theirs = await values(b, 4);
    expect(theirs.filter((v) => after.join("\n").toLowerCase().includes(v.toLowerCase()))).toEqual([]);
    expect(after.join("\n")).toContain("[redacted:");
    await hosted.closeAll();
    await other.closeAll();
  });

  it("hands over the records unredacted without rules", async () => {
    const hosted = new HostedSessions(builtinRegistry(), new SnapshotSigner(randomSnapshotKey()));
    const task = "billing-dispute/medium/seed-3";
    await hosted.open({ sid: "p", env: "billing-dispute", task_id: task, seed: 2, record: true, policy_checkpoint: null });
    const records: string[] = [];
    for (const action of (await reference(task, 2)).slice(0, 3)) records.push(JSON.stringify((await hosted.step("p", action, false)).record));
    expect(records.join("\n")).not.toContain("[redacted:");
    expect((await values(task, 2)).filter((v) => records.join("\n").includes(v)).length).toBeGreaterThan(0);
    await hosted.closeAll();
  });
});
