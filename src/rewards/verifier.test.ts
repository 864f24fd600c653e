import { describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { defineVerifier, runVerifier, type Verifier, type VerifierResult } from "./verifier.js";

const ok: VerifierResult = { score: 0.5, passed: false, details: { note: "half" } };

async function failure(p: Promise<unknown>): Promise<LlmixError> {
  try {
    await p;
  } catch (error) {
    expect(error).toBeInstanceOf(LlmixError);
    return error as LlmixError;
  }
  throw new Error("expected a rejection");
}

describe("runVerifier", () => {
  it("returns a well-formed synchronous result unchanged", async () => {
    const v = defineVerifier<number>("half", () => ok);
    await expect(runVerifier(v, 1)).resolves.toEqual(ok);
  });

  it("awaits an async verifier", async () => {
    const v = defineVerifier<number>("async", async (n) => {
      await new Promise((r) => setTimeout(r, 1));
      return { score: n, passed: n >= 1, details: { n } };
    });
    await expect(runVerifier(v, 1)).resolves.toEqual({ score: 1, passed: true, details: { n: 1 } });
  });

  it("accepts the bounds 0 and 1", async () => {
    for (const score of [0, 1]) {
      const v = defineVerifier<null>("b", () => ({ score, passed: score === 1, details: {} }));
      await expect(runVerifier(v, null)).resolves.toMatchObject({ score });
    }
  });

  it.each([NaN, Infinity, -Infinity, -0.0001, 1.0001, "1" as unknown as number])("rejects score %s", async (score) => {
    const v = defineVerifier<null>("bad-score", () => ({ score, passed: true, details: {} }));
    const e = await failure(runVerifier(v, null));
    expect(e.code).toBe("verifier_failed");
    expect(e.message).toContain('"bad-score"');
    expect(e.details).toMatchObject({ verifier: "bad-score", reason: "invalid_result" });
  });

  it("rejects a missing passed flag, non-object details and non-JSON details", async () => {
    const cases: unknown[] = [
      null,
      { score: 1, details: {} },
      { score: 1, passed: true, details: null },
      { score: 1, passed: true, details: [] },
      { score: 1, passed: true, details: { x: NaN } },
      { score: 1, passed: true, details: { f: () => 1 } },
    ];
    for (const c of cases) {
      const v = defineVerifier<null>("malformed", () => c as VerifierResult);
      expect((await failure(runVerifier(v, null))).code).toBe("verifier_failed");
    }
  });

  it("validates nested parts too", async () => {
    const v = defineVerifier<null>("parent", () => ({
      score: 1,
      passed: true,
      details: {},
      parts: { child: { score: NaN, passed: true, details: {} } },
    }));
    const e = await failure(runVerifier(v, null));
    expect(e.details.problem).toContain("parts.child.score");
  });

  it("turns a synchronous throw into verifier_failed naming the verifier", async () => {
    const v: Verifier<null> = {
      name: "boom",
      verify() {
        throw new Error("kaput");
      },
    };
    const e = await failure(runVerifier(v, null));
    expect(e.code).toBe("verifier_failed");
    expect(e.message).toBe('verifier "boom" threw: kaput');
    expect(e.details).toMatchObject({ verifier: "boom", path: ["boom"], reason: "threw", message: "kaput" });
    expect((e.cause as Error).message).toBe("kaput");
  });

  it("turns an async rejection and a thrown non-Error into verifier_failed", async () => {
    const a = defineVerifier<null>("rejects", async () => Promise.reject(new Error("later")));
    expect((await failure(runVerifier(a, null))).message).toContain("later");
    const b = defineVerifier<null>("string-throw", () => {
      throw "plain string";
    });
    expect((await failure(runVerifier(b, null))).details.message).toBe("plain string");
  });

  it("keeps the code of a typed error as cause_code", async () => {
    const v = defineVerifier<null>("sql", () => {
      throw new LlmixError("sql_error", "no such table");
    });
    const e = await failure(runVerifier(v, null));
    expect(e.code).toBe("verifier_failed");
    expect(e.details.cause_code).toBe("sql_error");
  });

  it("prefixes the path when a nested verifier fails", async () => {
    const inner = defineVerifier<null>("inner", () => {
      throw new Error("deep");
    });
    const outer = defineVerifier<null>("outer", (x) => runVerifier(inner, x));
    const e = await failure(runVerifier(outer, null));
    expect(e.details).toMatchObject({ verifier: "inner", path: ["outer", "inner"] });
    expect(e.message).toBe('verifier "outer > inner" failed: threw: deep');
  });

  it("defineVerifier rejects an empty name", () => {
    expect(() => defineVerifier("", () => ok)).toThrow(LlmixError);
  });
});
