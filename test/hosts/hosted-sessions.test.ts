/**
 * Parking: beyond its resident cap a host snapshots and closes its least recently used sessions and
 * restores them on their next request. A parked session must answer exactly what a resident one would.
 */
import { describe, expect, it } from "vitest";
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
