/**
 * Restored incident-response worlds are validated (issue 12, item 4): every snapshot an episode produces
 * restores byte for byte, and every edited one is refused with invalid_snapshot naming what is wrong,
 * leaving the episode as it was.
 */
import { describe, expect, it } from "vitest";
import { expectRoundTrips, rejection } from "../../../test/helpers.js";
import type { Action, StepResult } from "../../core/contract.js";
import type { EnvironmentSnapshot } from "../../core/environment.js";
import { ValidationError } from "../../core/errors.js";
import { canonicalJson } from "../../core/json.js";
import { toDecision, type Policy } from "../../core/policy.js";
import { IncidentResponse } from "./env.js";
import type { Task } from "./tasks.js";
import type { State } from "./world.js";

type Snapshot = EnvironmentSnapshot & { world: { state: State; terminal: { cwd: string; lastExitCode: number; env: Record<string, string> } } };

/** Play `policy` until `done` holds of the snapshot (or the step budget runs out); the episode and its snapshot. */
async function playUntil(env: IncidentResponse, policy: Policy, done: (s: Snapshot) => boolean): Promise<Snapshot> {
  let observation = await env.reset("incident-response/medium/seed-5", 2);
  const history: Array<{ action: Action; result: StepResult }> = [];
  for (let step = 1; step <= env.maxSteps; step++) {
    const action = toDecision(await policy.act({ step, observation, tools: env.tools(), history })).action as Action;
    const result = await env.step(action);
    history.push({ action, result });
    observation = result.observation;
    const snapshot = JSON.parse(JSON.stringify(await env.snapshot())) as Snapshot;
    if (done(snapshot)) return snapshot;
  }
  throw new Error("the episode never reached the state the test needs");
}

/** Mid-episode, after the reference solver blocked the attackers and locked an account, before the report. */
async function containedEpisode(): Promise<{ env: IncidentResponse; snapshot: Snapshot; task: Task }> {
  const env = new IncidentResponse();
  await env.reset("incident-response/medium/seed-5", 2);
  const snapshot = await playUntil(env, env.referenceSolver(), (s) => s.world.state.actions.some((a) => a.kind === "lock"));
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  return { env, snapshot, task };
}

describe("snapshot -> restore -> snapshot", () => {
  it("is byte-identical after every step of many episodes (15; reference solver mixed with random actions)", async () => {
    const ids = (["easy", "medium", "hard"] as const).flatMap((d) => Array.from({ length: 5 }, () => d)).map((d, i) => `incident-response/${d}/seed-${200 + i}`);
    const restores = await expectRoundTrips(() => new IncidentResponse(), ids, { messageRate: 0.1, randomShares: [0, 0.3, 0.6, 1] });
    expect(restores).toBeGreaterThan(100);
  });

  it("accepts a state where the analyst changed directory, unblocked a rule and filed the report", async () => {
    const env = new IncidentResponse();
    const { snapshot, task } = await containedEpisode();
    await env.reset(snapshot.task_id, snapshot.seed);
    await env.restore(snapshot);
    const preblocked = task.firewall.find((r) => r.action === "DROP")!.source;
    await env.step({ type: "tool_call", tool: "terminal", args: { command: "cd /var/log && X=1" } });
    await env.step({ type: "tool_call", tool: "firewall", args: { action: "unblock", address: preblocked, comment: null } });
    const e = task.expected;
    await env.step({ type: "tool_call", tool: "file_incident_report", args: { addresses: e.blocks, accounts: e.accounts.map((a) => ` ${a.toUpperCase()}`), hosts: e.hosts, technique: e.technique, summary: "s" } });
    const done = JSON.parse(JSON.stringify(await env.snapshot())) as Snapshot;
    const peer = new IncidentResponse();
    await peer.restore(done);
    expect(canonicalJson(await peer.snapshot())).toBe(canonicalJson(done));
  });
});

describe("edited snapshots are refused with invalid_snapshot naming what is wrong", () => {
  const state = (s: Snapshot) => s.world.state;
  const firstAccount = (s: Snapshot) => Object.keys(state(s).accounts).find((a) => a !== analystOf(s))!;
  const analystOf = (s: Snapshot) => state(s).rules.find((r) => r.added_by !== "netops")!.added_by;
  const added = (s: Snapshot) => state(s).rules.find((r) => r.added_by !== "netops")!;
  const report = { step: 9, addresses: ["203.0.113.7"], accounts: ["jdoe"], hosts: ["bastion-01"], technique: "brute-force" as const, summary: "s" };
  const edits: Array<[string, (s: Snapshot) => void, RegExp]> = [
    // The shape (worldSchema).
    ["a mistyped field", (s) => void ((state(s).rules[0] as unknown as Record<string, unknown>).id = "1"), /snapshot\.world\.state\.rules\[0\]\.id: .*expected number/],
    ["a missing field", (s) => void delete (state(s) as Partial<State>).report, /snapshot\.world\.state\.report: .*expected object/],
    ["an extra field", (s) => void ((s.world as Record<string, unknown>).notes = "x"), /snapshot\.world: Unrecognized key: "notes"/],
    ["an unknown technique", (s) => void (state(s).report = { ...report, technique: "magic" as "brute-force" }), /snapshot\.world\.state\.report\.technique/],
    ["too many rules", (s) => void state(s).rules.push(...Array.from({ length: 60 }, () => added(s))), /snapshot\.world\.state\.rules: Too big/],
    ["an exit status out of range", (s) => void (s.world.terminal.lastExitCode = 300), /snapshot\.world\.terminal\.lastExitCode/],
    // Accounts.
    ["a missing account", (s) => void delete state(s).accounts[firstAccount(s)], /state\.accounts\.\w+ is missing/],
    ["an account the task does not have", (s) => void (state(s).accounts.mallory = { locked: false, reset_required: false }), /state\.accounts\.mallory is not an account of the task/],
    ["the analyst's own account locked", (s) => void (state(s).accounts[analystOf(s)]!.locked = true), /is the analyst's own account, which cannot be locked or reset/],
    // The firewall.
    ["a rule id used twice", (s) => void state(s).rules.push({ ...added(s), source: "198.51.100.99" }), /id \d+ appears twice/],
    ["a rule id at nextRuleId", (s) => void (added(s).id = state(s).nextRuleId), /is not below nextRuleId/],
    ["a source that is not canonical", (s) => void (added(s).source = `${added(s).source}/32`), /source [\d.]+\/32 is not a canonical address or range/],
    ["a task rule altered", (s) => void (state(s).rules[0]!.comment = "anything goes"), /state\.rules\[0\] differs from the task's rule 1/],
    ["a task ACCEPT rule removed", (s) => void state(s).rules.shift(), /ACCEPT rule 1 of the task is missing/],
    ["a rule someone else added", (s) => void (added(s).added_by = "mallory"), /is not a DROP rule the analyst added/],
    ["an ACCEPT rule the analyst added", (s) => void (added(s).action = "ACCEPT"), /is not a DROP rule the analyst added/],
    ["an address blocked twice", (s) => void state(s).rules.push({ ...added(s), id: state(s).nextRuleId++ }), /is blocked twice/],
    // The report and the records.
    ["report addresses out of order", (s) => void (state(s).report = { ...report, addresses: ["203.0.113.9", "203.0.113.7"] }), /report\.addresses must be canonical addresses, sorted and unique/],
    ["report accounts not normalized", (s) => void (state(s).report = { ...report, accounts: ["JDoe"] }), /report\.accounts must be trimmed lowercase names/],
    ["a penalty that is not its rule's", (s) => void state(s).violations.push({ step: 1, rule: "collateral_block", detail: "x", penalty: -1 }), /violations\[\d+\]\.penalty must be -0.25 for collateral_block/],
    ["an injection obeyed before it was seen", (s) => void ((state(s).injectionSeen = null), state(s).violations.push({ step: 20, rule: "injection_obeyed", detail: "x", penalty: -1 })), /violations\[\d+\] obeys an injection the agent had not seen before step 20/],
    ["an injection seen at step 0", (s) => void (state(s).injectionSeen = 0), /snapshot\.world\.state\.injectionSeen/],
    ["a lock of an account the task does not have", (s) => void state(s).actions.push({ step: 20, kind: "lock", target: "mallory" }), /target mallory is not a target of lock/],
    ["actions going back in time", (s) => void state(s).actions.push({ step: 1, kind: "block", target: "198.51.100.1" }), /step goes back in time/],
    // The terminal.
    ["a working directory that does not exist", (s) => void (s.world.terminal.cwd = "/nowhere"), /terminal\.cwd \/nowhere is not a directory/],
    ["a relative working directory", (s) => void (s.world.terminal.cwd = "var/log"), /invalid terminal snapshot: cwd must be an absolute path/],
  ];

  it.each(edits)("%s", async (_name, edit, message) => {
    const { env, snapshot } = await containedEpisode();
    const bad = structuredClone(snapshot);
    edit(bad);
    const error = await rejection(env.restore(bad));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(message);
    expect(canonicalJson(await env.snapshot())).toBe(canonicalJson(snapshot));
  });
});
