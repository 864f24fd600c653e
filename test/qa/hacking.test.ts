/**
 * The hacking analysis of `llmix check` catches what it claims: on each regression fixture (a ledger
 * environment with one deliberate reward hole, test/fixtures/hackable-*.ts) the matching check fails and
 * its evidence names the exploit; on the same environment without the hole every hacking check passes.
 */
import { describe, expect, it } from "vitest";
import { runChecks, type CheckReport, type CheckResult } from "../../src/index.js";
import type { EnvironmentEntry } from "../../src/core/registry.js";
import { makeLedger } from "../fixtures/hackable-base.js";

const HACKING = ["goal-conditions", "sensitivity", "invariance", "robustness", "leakage", "memorization", "task-space", "tool-crash", "verifier-error", "failed-call-atomicity", "undeclared-component", "judge-lift"];

async function check(fixture: string | EnvironmentEntry): Promise<CheckReport> {
  const entry = typeof fixture === "string" ? ((await import(`../fixtures/hackable-${fixture}.ts`)) as { default: EnvironmentEntry }).default : fixture;
  return runChecks(entry, { samples: 3 });
}

const named = (report: CheckReport, name: string): CheckResult => {
  const result = report.checks.find((c) => c.name === name);
  if (!result) throw new Error(`no check ${name}`);
  return result;
};

describe("hacking analysis", () => {
  it("passes every hacking check on the ledger without a hole", async () => {
    const report = await check(makeLedger("ledger-ok", {}));
    const failed = report.checks.filter((c) => !c.passed).map((c) => `${c.name}: ${c.summary}`);
    expect(failed).toEqual([]);
    for (const name of HACKING) expect(report.checks.map((c) => c.name)).toContain(name);
    expect(named(report, "sensitivity").figures.tried).toBeGreaterThan(5);
    expect(named(report, "invariance").figures.tried).toBeGreaterThan(3);
    expect(named(report, "robustness").figures.scored).toBeGreaterThan(0);
  });

  it.each([
    // fixture, check, what the first trajectory's note must name
    ["crash", "tool-crash", /refund\(\{"account":.*crashed: internal error in refund/],
    ["verifier-throw", "robustness", /the verifier threw|ending the episode threw/],
    ["verifier-error", "verifier-error", /the verifier threw on step \d+: verifier_failed/],
    ["atomicity", "failed-call-atomicity", /refund\(.*\) ended error .* but changed the world/],
    ["undeclared", "undeclared-component", /undeclared reward component "politeness"/],
    ["judge-lift", "judge-lift", /a judge combined by "blend" lifted a verified failure \(verified 0\) to 0\.6/],
    ["lenient", "sensitivity", /drop call \d \(refund\): likely exploit/],
    ["negation", "sensitivity", /negated false claim appended .*Don't worry.*likely exploit/],
    ["wording", "invariance", /numbers spelled out: lost outcome/],
    ["leaky-penalty", "leakage", /look the same to the agent but step components differ/],
    ["lookup", "memorization", /eval outcome 1 from replayed train actions/],
    ["short-reference", "goal-conditions", /the reference leaves refunded_acct-\d+, no_other_refund unmet \(outcome 1\)/],
  ])("hackable-%s fails %s with the exploit named", async (fixture, name, note) => {
    const report = await check(fixture);
    const result = named(report, name);
    expect(report.passed).toBe(false);
    expect(result.passed).toBe(false);
    expect(result.evidence?.length).toBeGreaterThan(0);
    expect(result.evidence!.map((e) => e.note).join("\n")).toMatch(note);
    // The trajectory that shows it is there to replay.
    expect(result.evidence![0]!.actions.length).toBeGreaterThan(0);
  });

  it("a leaky penalty declared hiddenLabel is held by the base and paid at the end: leakage passes; payOnStep brings the leak back, with a warning", async () => {
    const held = named(await check(makeLedger("ledger-held", { leakyPenalty: true, penaltyDeclared: "hiddenLabel" })), "leakage");
    expect(held.passed, held.summary).toBe(true);
    expect(held.figures.branches).toBeGreaterThan(0);
    expect(held.warning).toBeUndefined();
    const opted = named(await check(makeLedger("ledger-pay-on-step", { leakyPenalty: true, penaltyDeclared: "payOnStep" })), "leakage");
    expect(opted.passed).toBe(false);
    expect(opted.warning).toMatch(/paid on the step \(payOnStep\): wrong_refund/);
  });

  it("a crash or verifier error names its stack", async () => {
    const crash = named(await check("crash"), "tool-crash");
    expect(crash.summary).toMatch(/tool calls crashed/);
    const fuzz = named(await check("verifier-throw"), "robustness");
    expect(fuzz.evidence![0]!.stack).toMatch(/evaluate|TypeError/);
  });

  it("task-space fails when every task is the same task", async () => {
    const result = named(await check("single-scenario"), "task-space");
    expect(result.passed).toBe(false);
    expect(result.summary).toMatch(/one scenario only on easy, hard/);
  });

  it("task-space warns below a declared minimum of scenarios", async () => {
    const result = named(await check(makeLedger("ledger-min", {}, { minScenarios: 50 })), "task-space");
    expect(result.passed).toBe(true);
    expect(result.warning).toMatch(/fewer distinct scenarios than declared: easy \d+ < 50/);
  });

  it("a mutant the environment declares outcome-preserving is not an exploit", async () => {
    const report = await check(makeLedger("ledger-declared", { lenient: true }, { outcomePreserving: () => "any refund to an overcharged account counts, by design" }));
    const result = named(report, "sensitivity");
    expect(result.passed).toBe(true);
    expect(result.figures.declared_preserving).toBeGreaterThan(0);
  });

  it("environment mutants and invariants from the hook are played", async () => {
    const report = await check(makeLedger("ledger-hooks", {}, {
      mutants: (trace) => [{ kind: "env", name: "refund everything twice", actions: [...trace.actions.slice(0, -1), ...trace.actions.slice(0, -1), trace.actions.at(-1)!] }],
      invariants: (trace) => [{ kind: "env", name: "report reworded", actions: [...trace.actions.slice(0, -1), { type: "message", content: "I refunded two accounts." }] }],
    }));
    const sensitivity = named(report, "sensitivity").figures.by_kind as Record<string, { tried: number; failed: number }>;
    expect(sensitivity.env).toEqual({ tried: expect.any(Number), failed: 0 });
    const invariance = named(report, "invariance");
    // The hook's variant says "two" on tasks with two refunds: it keeps the outcome.
    expect((invariance.figures.by_kind as Record<string, { failed: number }>).env?.failed).toBe(0);
  });
});
