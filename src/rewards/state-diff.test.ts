import { describe, expect, it } from "vitest";
import type { JsonValue } from "../core/json.js";
import { diffJsonStates, stateDiff, type StateDiffOutcome } from "./state-diff.js";
import { runVerifier } from "./verifier.js";

/** A toy task: the reference solution refunds order 2. */
interface Episode {
  initial: { orders: Record<string, string> };
  final: { orders: Record<string, string> };
}
const replayReference = async (e: Episode) => {
  await Promise.resolve(); // the replay is asynchronous in the environment base
  const fresh = structuredClone(e.initial);
  fresh.orders["2"] = "refunded";
  return fresh;
};
const initial = { orders: { "1": "open", "2": "open", "3": "open", "4": "open" } };

function verifier(extra: { allOrNothing?: boolean; threshold?: number } = {}) {
  return stateDiff<Episode, JsonValue>({
    name: "db_state",
    expected: replayReference,
    actual: (e) => e.final,
    diff: diffJsonStates,
    ...extra,
  });
}

describe("stateDiff", () => {
  it("scores 1 and passes when the final state equals the replayed reference", async () => {
    const final = { orders: { ...initial.orders, "2": "refunded" } };
    const r = await runVerifier(verifier(), { initial, final });
    expect(r).toMatchObject({ score: 1, passed: true, details: { equal: true, matched: 4, total: 4, differences: [] } });
  });

  it("gives partial credit matched/total and lists the differences", async () => {
    const final = { orders: { ...initial.orders, "3": "refunded" } };
    const r = await runVerifier(verifier(), { initial, final });
    expect(r.score).toBe(0.5);
    expect(r.passed).toBe(false);
    expect(r.details.differences).toEqual([
      { path: '$.orders["2"]', kind: "changed", expected: "refunded", actual: "open" },
      { path: '$.orders["3"]', kind: "changed", expected: "open", actual: "refunded" },
    ]);
  });

  it("scores 0 for any difference with allOrNothing", async () => {
    const final = { orders: { ...initial.orders, "2": "refunded", "4": "closed" } };
    const r = await runVerifier(verifier({ allOrNothing: true }), { initial, final });
    expect(r).toMatchObject({ score: 0, passed: false, details: { matched: 3, total: 4, all_or_nothing: true } });
  });

  it("passes at a lower threshold", async () => {
    const final = { orders: { ...initial.orders, "2": "refunded", "4": "closed" } };
    const r = await runVerifier(verifier({ threshold: 0.75 }), { initial, final });
    expect(r).toMatchObject({ score: 0.75, passed: true });
  });

  it("accepts an async actual-state function", async () => {
    const v = stateDiff<number, JsonValue>({
      name: "async",
      expected: async (n) => ({ n }),
      actual: async (n) => ({ n }),
      diff: diffJsonStates,
    });
    expect((await runVerifier(v, 3)).score).toBe(1);
  });

  it("works with a custom diff over non-JSON states", async () => {
    const v = stateDiff<null, Set<string>>({
      name: "files",
      expected: () => new Set(["a", "b"]),
      actual: () => new Set(["a"]),
      diff: (e, a) => {
        const missing = [...e].filter((x) => !a.has(x));
        return { equal: missing.length === 0 && a.size === e.size, matched: e.size - missing.length, total: e.size, differences: missing };
      },
    });
    expect(await runVerifier(v, null)).toMatchObject({ score: 0.5, details: { differences: ["b"] } });
  });

  it("scores 0 when unequal with total 0", async () => {
    const v = stateDiff<null, number>({
      name: "empty",
      expected: () => 1,
      actual: () => 2,
      diff: () => ({ equal: false, matched: 0, total: 0, differences: "opaque" }),
    });
    expect((await runVerifier(v, null)).score).toBe(0);
  });

  it.each<[string, StateDiffOutcome]>([
    ["matched > total", { equal: false, matched: 5, total: 4, differences: [] }],
    ["NaN matched", { equal: false, matched: NaN, total: 4, differences: [] }],
    ["negative total", { equal: false, matched: 0, total: -1, differences: [] }],
    ["unequal but all matched", { equal: false, matched: 4, total: 4, differences: [] }],
    ["non-boolean equal", { equal: "yes" as unknown as boolean, matched: 4, total: 4, differences: [] }],
  ])("fails on an inconsistent diff: %s", async (_label, outcome) => {
    const v = stateDiff<null, null>({ name: "broken", expected: () => null, actual: () => null, diff: () => outcome });
    await expect(runVerifier(v, null)).rejects.toMatchObject({ code: "verifier_failed", details: { verifier: "broken" } });
  });

  it("a failing replay becomes verifier_failed", async () => {
    const v = stateDiff<null, null>({
      name: "replay",
      expected: async () => {
        throw new Error("reference solution failed at step 3");
      },
      actual: () => null,
      diff: () => ({ equal: true, matched: 0, total: 0, differences: [] }),
    });
    await expect(runVerifier(v, null)).rejects.toMatchObject({
      code: "verifier_failed",
      message: 'verifier "replay" threw: reference solution failed at step 3',
    });
  });

  it("a non-JSON snapshot fed to diffJsonStates becomes verifier_failed", async () => {
    const v = stateDiff<null, unknown>({ name: "snap", expected: () => ({ a: 1 }), actual: () => ({ a: NaN }), diff: diffJsonStates });
    await expect(runVerifier(v, null)).rejects.toMatchObject({ code: "verifier_failed" });
  });

  it("rejects a bad threshold or name", () => {
    const base = { expected: () => 1, actual: () => 1, diff: () => ({ equal: true, matched: 1, total: 1, differences: [] }) };
    expect(() => stateDiff<null, number>({ name: "t", threshold: -0.1, ...base })).toThrow(/threshold/);
    expect(() => stateDiff<null, number>({ name: "", ...base })).toThrow(/name/);
  });
});
