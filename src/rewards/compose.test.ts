import { describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { gate, min, product, weightedSum } from "./compose.js";
import { defineVerifier, runVerifier, type Verifier } from "./verifier.js";

const fixed = (name: string, score: number, passed = score >= 1): Verifier<unknown> =>
  defineVerifier(name, () => ({ score, passed, details: { fixed: score } }));
const later = (name: string, score: number): Verifier<unknown> =>
  defineVerifier(name, async () => {
    await new Promise((r) => setTimeout(r, 1));
    return { score, passed: score >= 1, details: {} };
  });
const throwing = (name: string): Verifier<unknown> =>
  defineVerifier(name, () => {
    throw new Error("judge unreachable");
  });

function configError(fn: () => unknown): LlmixError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LlmixError);
    expect((e as LlmixError).code).toBe("invalid_config");
    return e as LlmixError;
  }
  throw new Error("expected invalid_config");
}

describe("weightedSum", () => {
  it("normalizes weights and keeps every part", async () => {
    const v = weightedSum("outcome", [
      { verifier: fixed("db_state", 1), weight: 3 },
      { verifier: later("told_customer", 0), weight: 1 },
    ]);
    const r = await runVerifier(v, null);
    expect(r.score).toBe(0.75);
    expect(r.passed).toBe(false);
    expect(r.details).toEqual({ weights: { db_state: 0.75, told_customer: 0.25 }, contributions: { db_state: 0.75, told_customer: 0 } });
    expect(Object.keys(r.parts ?? {})).toEqual(["db_state", "told_customer"]);
    expect(r.parts?.db_state.details).toEqual({ fixed: 1 });
  });

  it("passes when every child passes, or by threshold when given", async () => {
    const all = weightedSum("o", [
      { verifier: fixed("a", 1), weight: 1 },
      { verifier: fixed("b", 1), weight: 2 },
    ]);
    expect(await runVerifier(all, null)).toMatchObject({ score: 1, passed: true });
    const partial = weightedSum("o", [
      { verifier: fixed("a", 1), weight: 1 },
      { verifier: fixed("b", 0.5), weight: 1 },
    ], { threshold: 0.7 });
    expect(await runVerifier(partial, null)).toMatchObject({ score: 0.75, passed: true });
  });

  it("stays within [0, 1] despite weight rounding", async () => {
    const v = weightedSum("o", [0.1, 0.2, 0.3, 0.7].map((w, i) => ({ verifier: fixed(`v${i}`, 1), weight: w })));
    expect((await runVerifier(v, null)).score).toBeLessThanOrEqual(1);
  });

  it.each([0, -1, NaN, Infinity, "1" as unknown as number])("rejects weight %s", (weight) => {
    const e = configError(() => weightedSum("o", [{ verifier: fixed("a", 1), weight: 1 }, { verifier: fixed("b", 1), weight }]));
    expect(e.details).toMatchObject({ verifier: "o", child: "b" });
  });

  it("rejects an empty list, duplicate names, a bad threshold and weights that overflow", () => {
    configError(() => weightedSum("o", []));
    configError(() => weightedSum("o", [{ verifier: fixed("a", 1), weight: 1 }, { verifier: fixed("a", 0), weight: 1 }]));
    configError(() => weightedSum("o", [{ verifier: fixed("a", 1), weight: 1 }], { threshold: 2 }));
    configError(() => weightedSum("o", [{ verifier: fixed("a", 1), weight: 1e308 }, { verifier: fixed("b", 1), weight: 1e308 }]));
    configError(() => weightedSum("", [{ verifier: fixed("a", 1), weight: 1 }]));
  });

  it("fails with the path of a child that returns NaN or throws", async () => {
    const nan = weightedSum("o", [{ verifier: fixed("a", 1), weight: 1 }, { verifier: fixed("bad", NaN), weight: 1 }]);
    await expect(runVerifier(nan, null)).rejects.toMatchObject({ code: "verifier_failed", details: { verifier: "bad", path: ["o", "bad"] } });
    const boom = weightedSum("o", [{ verifier: throwing("judge"), weight: 1 }]);
    await expect(runVerifier(boom, null)).rejects.toMatchObject({
      code: "verifier_failed",
      message: 'verifier "o > judge" failed: threw: judge unreachable',
    });
  });
});

describe("gate", () => {
  it("passes the inner score through when the gate passes", async () => {
    const r = await runVerifier(gate("safe_outcome", fixed("no_violation", 1), fixed("task", 0.6)), null);
    expect(r).toMatchObject({ score: 0.6, passed: false, details: { gate_passed: true, inner_run: true } });
  });

  it("scores 0 when the gate fails but still records the inner result", async () => {
    const r = await runVerifier(gate("safe_outcome", fixed("no_violation", 0), fixed("task", 1)), null);
    expect(r).toMatchObject({ score: 0, passed: false, details: { gate_passed: false, inner_run: true } });
    expect(r.parts?.task.score).toBe(1);
  });

  it("can skip the inner verifier when the gate fails", async () => {
    let calls = 0;
    const inner = defineVerifier("task", () => {
      calls += 1;
      return { score: 1, passed: true, details: {} };
    });
    const r = await runVerifier(gate("g", fixed("no_violation", 0), inner, { alwaysRunInner: false }), null);
    expect(calls).toBe(0);
    expect(r.parts).not.toHaveProperty("task");
    expect(r.details.inner_run).toBe(false);
  });

  it("uses the gate's passed flag, not its score", async () => {
    const r = await runVerifier(gate("g", fixed("lenient", 0.2, true), fixed("task", 1)), null);
    expect(r).toMatchObject({ score: 1, passed: true });
  });

  it("rejects a gate and inner with the same name", () => {
    configError(() => gate("g", fixed("x", 1), fixed("x", 1)));
  });

  it("propagates a throwing inner verifier", async () => {
    await expect(runVerifier(gate("g", fixed("ok", 1), throwing("task")), null)).rejects.toMatchObject({ code: "verifier_failed" });
  });
});

describe("product", () => {
  it("multiplies scores and keeps every part", async () => {
    const r = await runVerifier(product("p", [fixed("a", 0.5), later("b", 0.5), fixed("c", 1)]), null);
    expect(r.score).toBe(0.25);
    expect(Object.keys(r.parts ?? {})).toEqual(["a", "b", "c"]);
  });

  it("any zero zeroes the product", async () => {
    expect((await runVerifier(product("p", [fixed("a", 1), fixed("b", 0)]), null)).score).toBe(0);
  });

  it("passes when all children pass", async () => {
    expect((await runVerifier(product("p", [fixed("a", 1), fixed("b", 1)]), null)).passed).toBe(true);
    expect((await runVerifier(product("p", [fixed("a", 1), fixed("b", 0.9, false)]), null)).passed).toBe(false);
  });

  it("rejects an empty list and non-verifiers", () => {
    configError(() => product("p", []));
    configError(() => product("p", [{ name: "x" } as unknown as Verifier<unknown>]));
  });
});

describe("min", () => {
  it("takes the lowest score and names the weakest child", async () => {
    const r = await runVerifier(min("m", [fixed("a", 0.9), later("b", 0.3), fixed("c", 0.6)]), null);
    expect(r).toMatchObject({ score: 0.3, details: { rule: "min", weakest: "b" } });
    expect(Object.keys(r.parts ?? {})).toHaveLength(3);
  });

  it("honours a threshold", async () => {
    expect((await runVerifier(min("m", [fixed("a", 0.9), fixed("b", 0.8)], { threshold: 0.8 }), null)).passed).toBe(true);
  });

  it("rejects an empty list and duplicate names", () => {
    configError(() => min("m", []));
    configError(() => min("m", [fixed("a", 1), fixed("a", 1)]));
  });

  it("fails when a child returns a score above 1", async () => {
    await expect(runVerifier(min("m", [fixed("a", 1.5)]), null)).rejects.toMatchObject({ code: "verifier_failed", details: { path: ["m", "a"] } });
  });
});

describe("nesting", () => {
  it("keeps the whole tree and reports the full path of a deep failure", async () => {
    const tree = gate("outcome", fixed("no_violation", 1), weightedSum("task", [
      { verifier: fixed("db_state", 1), weight: 1 },
      { verifier: min("reply", [fixed("tone", 1), fixed("facts", 0)]), weight: 1 },
    ]));
    const r = await runVerifier(tree, null);
    expect(r.score).toBe(0.5);
    expect(r.parts?.task.parts?.reply.parts?.facts.score).toBe(0);
    const broken = product("outer", [min("mid", [throwing("leaf")])]);
    await expect(runVerifier(broken, null)).rejects.toMatchObject({ details: { verifier: "leaf", path: ["outer", "mid", "leaf"] } });
  });

  it("runs children in order, one at a time", async () => {
    const log: string[] = [];
    const step = (name: string, delay: number) =>
      defineVerifier(name, async () => {
        log.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, delay));
        log.push(`end ${name}`);
        return { score: 1, passed: true, details: {} };
      });
    await runVerifier(product("p", [step("slow", 5), step("fast", 0)]), null);
    expect(log).toEqual(["start slow", "end slow", "start fast", "end fast"]);
  });
});
