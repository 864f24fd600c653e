import { describe, expect, it } from "vitest";
import { judged, liftedFailures } from "./judged.js";
import { defineVerifier, runVerifier } from "./verifier.js";

const fixed = (name: string, score: number, passed = score >= 1) => defineVerifier<null>(name, () => ({ score, passed, details: {} }));

describe("judged: a judge inside a verifiable gate", () => {
  it("gate (default) lowers a success and never lifts a failure", async () => {
    expect((await runVerifier(judged("o", fixed("verified", 1), fixed("judge", 0.5, false)), null)).score).toBe(0.5);
    const failure = await runVerifier(judged("o", fixed("verified", 0, false), fixed("judge", 1, true)), null);
    expect(failure).toMatchObject({ score: 0, passed: false, details: { combine: "gate", can_lift_failure: false } });
    expect(liftedFailures(failure)).toEqual([]);
  });

  it("rank spreads successes over [floor, 1] and leaves failures below the floor", async () => {
    const success = await runVerifier(judged("o", fixed("verified", 1), fixed("judge", 0.5), { combine: "rank", floor: 0.6 }), null);
    expect(success.score).toBeCloseTo(0.8);
    expect(success.passed).toBe(true);
    const partial = await runVerifier(judged("o", fixed("verified", 0.9, false), fixed("judge", 1), { combine: "rank", floor: 0.6 }), null);
    expect(partial).toMatchObject({ score: 0.6, passed: false });
    expect(liftedFailures(partial)).toEqual([]);
  });

  it("blend can lift a failure: it says so, and liftedFailures finds it however deep", async () => {
    const lifted = await runVerifier(judged("outer", fixed("base", 1), judged("inner", fixed("verified", 0, false), fixed("judge", 1), { combine: "blend", weight: 0.6 })), null);
    const inner = lifted.parts?.inner;
    expect(inner).toMatchObject({ score: 0.6, passed: true, details: { can_lift_failure: true } });
    expect(liftedFailures(lifted)).toEqual([{ path: "inner", verified: 0, score: 0.6, combine: "blend" }]);
  });

  it("refuses an unknown combine, bad floor or weight, and one verifier twice", () => {
    expect(() => judged("o", fixed("v", 1), fixed("j", 1), { combine: "max" as never })).toThrow(/combine must be one of gate, rank, blend/);
    expect(() => judged("o", fixed("v", 1), fixed("j", 1), { floor: 2 })).toThrow(/floor/);
    expect(() => judged("o", fixed("v", 1), fixed("j", 1), { weight: -1 })).toThrow(/weight/);
    expect(() => judged("o", fixed("v", 1), fixed("v", 1))).toThrow(/different names/);
  });
});
