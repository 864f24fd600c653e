import { describe, expect, it } from "vitest";
import { GRPO_EPSILON, groupAdvantages } from "./advantages.js";

describe("groupAdvantages", () => {
  it("computes GRPO, Dr. GRPO and RLOO for a group", () => {
    const adv = groupAdvantages([1, 0, 0, 1]);
    // mean 0.5, population std 0.5
    expect(adv[0]?.grpo).toBeCloseTo(0.5 / (0.5 + GRPO_EPSILON), 12);
    expect(adv[1]?.grpo).toBeCloseTo(-0.5 / (0.5 + GRPO_EPSILON), 12);
    expect(adv.map((a) => a.dr_grpo)).toEqual([0.5, -0.5, -0.5, 0.5]);
    // RLOO: 1 - mean(0,0,1) = 2/3; 0 - mean(1,0,1) = -2/3
    expect(adv[0]?.rloo).toBeCloseTo(2 / 3, 12);
    expect(adv[1]?.rloo).toBeCloseTo(-2 / 3, 12);
  });

  it("gives zero advantages to a group whose rewards are all equal, and to a group of one", () => {
    expect(groupAdvantages([0.3, 0.3, 0.3]).every((a) => a.grpo === 0 && a.dr_grpo === 0 && Math.abs(a.rloo) < 1e-15)).toBe(true);
    expect(groupAdvantages([0.7])).toEqual([{ grpo: 0, dr_grpo: 0, rloo: 0 }]);
    expect(groupAdvantages([])).toEqual([]);
  });

  it("sums to zero over the group (GRPO and Dr. GRPO) and RLOO = k/(k-1) * Dr. GRPO", () => {
    const rewards = [0.1, 0.9, -0.2, 0.4, 0.4];
    const adv = groupAdvantages(rewards);
    expect(adv.reduce((s, a) => s + a.grpo, 0)).toBeCloseTo(0, 12);
    expect(adv.reduce((s, a) => s + a.dr_grpo, 0)).toBeCloseTo(0, 12);
    for (const a of adv) expect(a.rloo).toBeCloseTo((5 / 4) * a.dr_grpo, 12);
  });

  it("refuses non-finite rewards with a typed error", () => {
    expect(() => groupAdvantages([1, Number.NaN])).toThrow(expect.objectContaining({ code: "invalid_argument" }));
  });
});
