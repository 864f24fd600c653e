import { describe, expect, it } from "vitest";
import { FailureProfileSchema, LatencyModelSchema, Rng, drawFailure, drawLatency } from "../../src/index.js";

describe("drawFailure", () => {
  it("consumes exactly one float (two uint32 outputs) whatever the profile", () => {
    for (const profile of [{}, { timeout: 1 }, { error: 0.3, partial: 0.3 }]) {
      const a = Rng.fromKey("df");
      const b = Rng.fromKey("df");
      drawFailure(FailureProfileSchema.parse(profile), a);
      b.float();
      expect(a.state()).toEqual(b.state());
    }
  });

  it("maps the uniform draw onto consecutive intervals in the order timeout, error, rate_limit, partial", () => {
    const profile = FailureProfileSchema.parse({ timeout: 0.25, error: 0.25, rateLimit: 0.25, partial: 0.25 });
    const rng = Rng.fromKey("df-order");
    for (let i = 0; i < 500; i++) {
      const u = Rng.fromState(rng.state()).float();
      const got = drawFailure(profile, rng);
      expect(got).toBe(["timeout", "error", "rate_limit", "partial"][Math.floor(u * 4)]);
    }
  });

  it("never fails with an empty profile and always fails with probability 1", () => {
    const rng = Rng.fromKey("df-edges");
    for (let i = 0; i < 500; i++) {
      expect(drawFailure(FailureProfileSchema.parse({}), rng)).toBeNull();
      expect(drawFailure(FailureProfileSchema.parse({ rateLimit: 1 }), rng)).toBe("rate_limit");
    }
  });

  it("the schema fills defaults", () => {
    expect(FailureProfileSchema.parse({})).toEqual({ timeout: 0, error: 0, rateLimit: 0, partial: 0, timeoutMs: 30_000 });
  });
});

describe("drawLatency", () => {
  it.each([
    { kind: "fixed", ms: 3 },
    { kind: "uniform", minMs: 1, maxMs: 9 },
    { kind: "lognormal", medianMs: 5, sigma: 2 },
  ] as const)("consumes exactly two floats for %o", (model) => {
    const a = Rng.fromKey("dl");
    const b = Rng.fromKey("dl");
    drawLatency(model, a);
    b.float();
    b.float();
    expect(a.state()).toEqual(b.state());
  });

  it("uniform with minMs = maxMs is constant; lognormal is finite even for huge sigma", () => {
    const rng = Rng.fromKey("dl-edges");
    for (let i = 0; i < 200; i++) {
      expect(drawLatency({ kind: "uniform", minMs: 8, maxMs: 8 }, rng)).toBe(8);
      const v = drawLatency({ kind: "lognormal", medianMs: 10, sigma: 3 }, rng);
      expect(Number.isFinite(v) && v >= 0).toBe(true);
    }
  });

  it("the latency schema accepts the three kinds and rejects others", () => {
    expect(LatencyModelSchema.safeParse({ kind: "fixed", ms: 0 }).success).toBe(true);
    expect(LatencyModelSchema.safeParse({ kind: "uniform", minMs: 0, maxMs: 0 }).success).toBe(true);
    expect(LatencyModelSchema.safeParse({ kind: "lognormal", medianMs: 1, sigma: 0 }).success).toBe(true);
    expect(LatencyModelSchema.safeParse({ kind: "fixed" }).success).toBe(false);
    expect(LatencyModelSchema.safeParse({ kind: "exponential", meanMs: 3 }).success).toBe(false);
  });
});
