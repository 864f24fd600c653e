import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HostPool } from "../../src/hosts/host-pool.js";
import { randomSnapshotKey } from "../../src/hosts/signing.js";

const HOSTILE = resolve("test/fixtures/hostile-env.ts");

let pool: HostPool | null = null;
afterEach(async () => {
  await pool?.close();
  pool = null;
});

function newPool(options: Partial<ConstructorParameters<typeof HostPool>[0]> = {}) {
  pool = new HostPool({ modules: [HOSTILE], size: 1, stepTimeoutMs: 1500, snapshotKey: randomSnapshotKey(), ...options });
  return pool;
}

const count = { type: "tool_call", tool: "count", args: { by: 1 } };

async function open(p: HostPool, sid: string) {
  return p.open({ sid, env: "hostile", task_id: "hostile/easy/seed-1", seed: 1, record: false, policy_checkpoint: null });
}

describe("HostPool", () => {
  it("runs sessions on a host and answers steps with the wire form", async () => {
    const p = newPool();
    await p.ready();
    const opened = await open(p, "s1");
    expect(JSON.parse(opened.body)).toMatchObject({ session_id: "s1", env: "hostile", task_id: "hostile/easy/seed-1" });
    const reply = await p.step("s1", count);
    expect(JSON.parse(reply.body)).toMatchObject({ observation: { rendered: expect.stringContaining("1") }, terminated: false });
  });

  it.each([
    ["hang", "step_timeout"],
    ["stall", "step_timeout"],
    ["exit_thread", "host_failed"],
    ["allocate", "resource_exhausted"],
  ])("a %s step ends its session with %s; the host's other sessions are rebuilt and answer as before", async (tool, code) => {
    // Filling a heap takes a while: only the steps that never return need a short deadline.
    const p = newPool({ heapMb: 256, stepTimeoutMs: code === "step_timeout" ? 1500 : 60_000 });
    await p.ready();
    await open(p, "innocent");
    await open(p, "hostile");
    for (let i = 0; i < 3; i++) await p.step("innocent", count);
    // What the innocent session answers next, measured on a twin that never shared a host with trouble.
    await open(p, "twin");
    for (let i = 0; i < 4; i++) await p.step("twin", count);
    const expected = (await p.step("twin", count)).body;
    await expect(p.step("hostile", { type: "tool_call", tool, args: {} })).rejects.toMatchObject({ code, details: { host_stopped: true } });
    await expect(p.step("hostile", count)).rejects.toMatchObject({ code: "unknown_session" });
    await p.step("innocent", count);
    expect((await p.step("innocent", count)).body).toBe(expected);
    const stats = p.snapshotStats();
    expect(stats.hosts_stopped[code as "step_timeout"]).toBe(1);
    expect(stats.last_rebuild).toMatchObject({ sessions: 2, rebuilt: 2, lost: 0 });
  });

  it("a parked session survives its host's death: it is rebuilt from the pool's record, not from the parked snapshot that died with the host", async () => {
    const p = newPool({ stepTimeoutMs: 1500, residentSessions: 1 });
    await p.ready();
    for (const sid of ["parked", "twin", "hostile"]) await open(p, sid);
    for (let i = 0; i < 3; i++) for (const sid of ["parked", "twin"]) await p.step(sid, count);
    // Idle past PARK_IDLE_MS (2 s), then another session's use parks the idle ones beyond the cap of 1.
    await new Promise((resolve) => setTimeout(resolve, 2_200));
    const expected = (await p.step("twin", count)).body;
    await expect(p.step("hostile", { type: "tool_call", tool: "hang", args: {} })).rejects.toMatchObject({ code: "step_timeout" });
    // Its fourth step answers what the twin's fourth did, and they go on level.
    expect((await p.step("parked", count)).body).toBe(expected);
    expect((await p.step("parked", count)).body).toBe((await p.step("twin", count)).body);
    expect(p.snapshotStats().last_rebuild).toMatchObject({ rebuilt: 2, lost: 0 });
  });

  it("answers the host held back when another session's step killed it are recomputed, identically, after the rebuild", async () => {
    // Steps posted in one turn reach the host together and their answers leave together, after the
    // batch: the innocent steps before the hang are done but unanswered when the host is stopped.
    const p = newPool({ stepTimeoutMs: 1500 });
    await p.ready();
    for (const sid of ["a", "b", "hostile", "twin-a", "twin-b"]) await open(p, sid);
    for (let i = 0; i < 2; i++) for (const sid of ["a", "b", "twin-a", "twin-b"]) await p.step(sid, count);
    const expected = [(await p.step("twin-a", count)).body, (await p.step("twin-b", count)).body];
    const a = p.step("a", count);
    const b = p.step("b", count);
    const hang = p.step("hostile", { type: "tool_call", tool: "hang", args: {} });
    await expect(hang).rejects.toMatchObject({ code: "step_timeout" });
    expect([(await a).body, (await b).body]).toEqual(expected);
    // And they go on from there as the twins do.
    expect((await p.step("a", count)).body).toBe((await p.step("twin-a", count)).body);
    expect(p.snapshotStats().last_rebuild).toMatchObject({ rebuilt: 4, lost: 0 });
  });
});
