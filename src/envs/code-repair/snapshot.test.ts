/**
 * Restored code-repair worlds are validated (issue 12, item 4): every snapshot an episode produces
 * restores byte for byte, and every edited one is refused with invalid_snapshot naming what is wrong,
 * leaving the episode as it was.
 */
import { describe, expect, it } from "vitest";
import { expectRoundTrips, rejection } from "../../../test/helpers.js";
import type { Action, StepResult } from "../../core/contract.js";
import type { EnvironmentSnapshot } from "../../core/environment.js";
import { ValidationError } from "../../core/errors.js";
import { canonicalJson } from "../../core/json.js";
import { toDecision } from "../../core/policy.js";
import type { SnapshotEntry } from "../../sandboxes/filesystem.js";
import { CodeRepair } from "./env.js";

interface FsSnapshot {
  kind: string;
  version: number;
  entries: SnapshotEntry[];
  protections: Array<{ prefix: string; mode: string }>;
}
type Snapshot = EnvironmentSnapshot & { world: { fs: FsSnapshot; terminal: { cwd: string; env: Record<string, string>; lastExitCode: number } } };

/** Mid-episode, after the reference solver patched the first buggy module and the agent moved into src. */
async function patchedEpisode(): Promise<{ env: CodeRepair; snapshot: Snapshot }> {
  const env = new CodeRepair();
  let observation = await env.reset("code-repair/medium/seed-4", 1);
  const solver = env.referenceSolver();
  const history: Array<{ action: Action; result: StepResult }> = [];
  for (let step = 1; step <= 4; step++) {
    const action = toDecision(await solver.act({ step, observation, tools: env.tools(), history })).action as Action;
    const result = await env.step(action);
    history.push({ action, result });
    observation = result.observation;
  }
  await env.step({ type: "tool_call", tool: "terminal", args: { command: "cd src && NOTE=patched" } });
  return { env, snapshot: JSON.parse(JSON.stringify(await env.snapshot())) as Snapshot };
}

describe("snapshot -> restore -> snapshot", () => {
  it("is byte-identical after every step of many episodes (reference solver mixed with random actions)", async () => {
    const ids = (["easy", "medium", "hard"] as const).flatMap((d) => Array.from({ length: 3 }, () => d)).map((d, i) => `code-repair/${d}/seed-${300 + i}`);
    const restores = await expectRoundTrips(() => new CodeRepair(), ids, { messageRate: 0.05, randomShares: [0, 0.5, 1] });
    expect(restores).toBeGreaterThan(80);
  });

  it("accepts a project whose root and working directory were removed", async () => {
    const { env } = await patchedEpisode();
    await env.step({ type: "tool_call", tool: "terminal", args: { command: "rm -r /project" } });
    const snapshot = JSON.parse(JSON.stringify(await env.snapshot())) as Snapshot;
    expect(snapshot.world.fs.entries).toEqual([]);
    const peer = new CodeRepair();
    await peer.restore(snapshot);
    expect(canonicalJson(await peer.snapshot())).toBe(canonicalJson(snapshot));
  });
});

describe("edited snapshots are refused with invalid_snapshot naming what is wrong", () => {
  const entries = (s: Snapshot) => s.world.fs.entries;
  const file = (path: string, content: string): SnapshotEntry => ({ path, type: "file", content });
  const edits: Array<[string, (s: Snapshot) => void, RegExp]> = [
    // The shape (worldSchema).
    ["a mistyped field", (s) => void ((s.world.terminal as Record<string, unknown>).lastExitCode = "0"), /snapshot\.world\.terminal\.lastExitCode: .*expected number/],
    ["a missing field", (s) => void delete (s.world.fs as Partial<FsSnapshot>).protections, /snapshot\.world\.fs\.protections: .*expected array/],
    ["an extra field", (s) => void ((s.world.terminal as Record<string, unknown>).history = []), /snapshot\.world\.terminal: Unrecognized key: "history"/],
    ["an entry of an unknown type", (s) => void ((entries(s)[0] as unknown as Record<string, unknown>).type = "link"), /snapshot\.world\.fs\.entries\[0\]/],
    ["a variable with an invalid name", (s) => void (s.world.terminal.env["1X"] = "y"), /snapshot\.world\.terminal\.env/],
    ["more entries than maxNodes", (s) => void entries(s).push(...Array.from({ length: 1001 }, (_, i) => file(`/project/f${i}`, ""))), /snapshot\.world\.fs\.entries: Too big/],
    ["a file longer than maxFileBytes", (s) => void entries(s).push(file("/project/big.js", "x".repeat(256 * 1024 + 1))), /snapshot\.world\.fs\.entries\[\d+\]\.content: Too big/],
    // The file system's limits and syntax (MemoryFileSystem.restore).
    ["a file over maxFileBytes in UTF-8", (s) => void entries(s).push(file("/project/big.js", "é".repeat(200_000))), /\/project\/big\.js is 400000 bytes; the limit is 262144 \(maxFileBytes\)/],
    ["files over maxTotalBytes", (s) => void entries(s).push(...Array.from({ length: 9 }, (_, i) => file(`/project/big${i}.js`, "x".repeat(250_000)))), /the limit is 2097152 \(maxTotalBytes\)/],
    ["a path that is not normalized", (s) => void entries(s).push(file("/project/src/../../etc/x", "")), /has an invalid path/],
    ["a file whose directory is missing", (s) => void entries(s).push(file("/project/nowhere/x.js", "")), /parent of \/project\/nowhere\/x\.js is missing/],
    // The project.
    ["a file outside the project", (s) => void entries(s).push(file("/etc/passwd", "root:x:0:0")), /fs entry \/etc\/passwd lies outside the project \/project/],
    ["a protected tree", (s) => void s.world.fs.protections.push({ prefix: "/project/test", mode: "read-only" }), /fs\.protections: nothing in the project is protected/],
    ["a working directory outside the project", (s) => void (s.world.terminal.cwd = "/etc"), /terminal\.cwd \/etc lies outside the project/],
  ];

  it.each(edits)("%s", async (_name, edit, message) => {
    const { env, snapshot } = await patchedEpisode();
    const bad = structuredClone(snapshot);
    edit(bad);
    const error = await rejection(env.restore(bad));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(message);
    expect(canonicalJson(await env.snapshot())).toBe(canonicalJson(snapshot));
  });
});
