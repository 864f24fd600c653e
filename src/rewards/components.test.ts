import { describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { flattenParts, REWARD_COMPONENTS, STANDARD_COMPONENTS, sumComponents } from "./components.js";
import type { VerifierResult } from "./verifier.js";

describe("REWARD_COMPONENTS", () => {
  it("lists the stable names", () => {
    expect(STANDARD_COMPONENTS).toEqual(["task", "invalid_call", "denied_call", "tool_cost", "step_cost", "policy_violation"]);
    expect(REWARD_COMPONENTS.step_cost).toBe("step_cost");
  });
});

describe("sumComponents", () => {
  it("sums components", () => {
    expect(sumComponents({ task: 1, step_cost: -0.01, invalid_call: 0 })).toBeCloseTo(0.99, 12);
    expect(sumComponents({})).toBe(0);
  });

  it("gives the same bits whatever the insertion order", () => {
    const a = { x: 0.1, y: 0.2, z: 0.3, w: 1e-17 };
    const b = { w: 1e-17, z: 0.3, y: 0.2, x: 0.1 };
    expect(Object.is(sumComponents(a), sumComponents(b))).toBe(true);
  });

  it.each([NaN, Infinity, -Infinity, "1" as unknown as number, undefined as unknown as number])("rejects %s", (bad) => {
    try {
      sumComponents({ task: 1, tool_cost: bad });
      throw new Error("expected a rejection");
    } catch (e) {
      expect(e).toBeInstanceOf(LlmixError);
      expect((e as LlmixError).code).toBe("invalid_argument");
      expect((e as LlmixError).details.component).toBe("tool_cost");
    }
  });

  it("rejects a sum that overflows", () => {
    expect(() => sumComponents({ a: Number.MAX_VALUE, b: Number.MAX_VALUE })).toThrow(/overflow/);
  });
});

describe("flattenParts", () => {
  const leaf = (score: number): VerifierResult => ({ score, passed: score === 1, details: {} });

  it("flattens a tree into dotted keys", () => {
    const tree: VerifierResult = {
      score: 0.5,
      passed: false,
      details: {},
      parts: {
        db_state: leaf(1),
        told_customer: leaf(0),
        reply: { score: 0.5, passed: false, details: {}, parts: { tone: leaf(1), facts: leaf(0.5) } },
      },
    };
    expect(flattenParts(tree, "outcome")).toEqual({
      outcome: 0.5,
      "outcome.db_state": 1,
      "outcome.told_customer": 0,
      "outcome.reply": 0.5,
      "outcome.reply.tone": 1,
      "outcome.reply.facts": 0.5,
    });
  });

  it("flattens a leaf to its prefix only", () => {
    expect(flattenParts(leaf(1), "task")).toEqual({ task: 1 });
  });

  it("rejects colliding keys and an empty prefix", () => {
    const clash: VerifierResult = {
      score: 1,
      passed: true,
      details: {},
      parts: { "a.b": leaf(1), a: { ...leaf(1), parts: { b: leaf(0) } } },
    };
    expect(() => flattenParts(clash, "o")).toThrow(/same key "o.a.b"/);
    expect(() => flattenParts(leaf(1), "")).toThrow(LlmixError);
  });
});
