import { describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { exactString, jsonEquals, numberWithin, setMatch } from "./exact.js";
import { runVerifier } from "./verifier.js";

type Answer = { answer?: unknown };
const pick = (i: Answer) => i.answer as never;

describe("exactString", () => {
  it("matches after the default trim", async () => {
    const v = exactString<Answer>({ name: "capital", expected: "Paris", select: pick });
    const r = await runVerifier(v, { answer: "  Paris\n" });
    expect(r).toMatchObject({ score: 1, passed: true });
    expect(r.details).toMatchObject({ expected: "Paris", found: "  Paris\n", normalized_found: "Paris", matched_alternative: "Paris" });
  });

  it("is case- and punctuation-sensitive by default", async () => {
    const v = exactString<Answer>({ name: "capital", expected: "Paris", select: pick });
    expect((await runVerifier(v, { answer: "paris" })).score).toBe(0);
    expect((await runVerifier(v, { answer: "Paris." })).score).toBe(0);
  });

  it("applies every normalization option to both sides", async () => {
    const v = exactString<Answer>({
      name: "n",
      expected: "The  Quick, Brown fox!",
      select: pick,
      normalize: { collapseWhitespace: true, caseInsensitive: true, stripPunctuation: true, nfkc: true },
    });
    const r = await runVerifier(v, { answer: "ｔｈｅ quick\tbrown   FOX" });
    expect(r.score).toBe(1);
    expect(r.details.normalization).toEqual({
      trim: true,
      collapse_whitespace: true,
      case_insensitive: true,
      strip_punctuation: true,
      nfkc: true,
    });
  });

  it("accepts any of several alternatives and reports which", async () => {
    const v = exactString<Answer>({ name: "alt", expected: ["NYC", "New York City"], select: pick, normalize: { caseInsensitive: true } });
    const r = await runVerifier(v, { answer: "new york city" });
    expect(r).toMatchObject({ score: 1, details: { matched_alternative: "New York City" } });
    expect((await runVerifier(v, { answer: "New York" })).score).toBe(0);
  });

  it("scores a missing or non-string answer 0 without failing", async () => {
    const v = exactString<Answer>({ name: "s", expected: "1", select: pick });
    expect(await runVerifier(v, {})).toMatchObject({ score: 0, passed: false, details: { found: null, reason: "no value found" } });
    expect(await runVerifier(v, { answer: 1 })).toMatchObject({ score: 0, details: { reason: "found a number, not a string" } });
    expect(await runVerifier(v, { answer: NaN })).toMatchObject({ score: 0, details: { found: "NaN" } });
  });

  it("rejects a bad configuration", () => {
    expect(() => exactString<Answer>({ name: "", expected: "a", select: pick })).toThrow(LlmixError);
    expect(() => exactString<Answer>({ name: "x", expected: [], select: pick })).toThrow(/non-empty list/);
  });

  it("a throwing select becomes verifier_failed", async () => {
    const v = exactString<Answer>({
      name: "sel",
      expected: "a",
      select: () => {
        throw new Error("no answer field");
      },
    });
    await expect(runVerifier(v, {})).rejects.toMatchObject({ code: "verifier_failed", details: { verifier: "sel" } });
  });
});

describe("numberWithin", () => {
  const make = (opts: { absTolerance?: number; relTolerance?: number; expected?: number } = {}) =>
    numberWithin<Answer>({ name: "num", expected: opts.expected ?? 10, select: pick, ...opts });

  it("needs equality with zero tolerance", async () => {
    expect((await runVerifier(make(), { answer: 10 })).score).toBe(1);
    expect((await runVerifier(make(), { answer: 10.000001 })).score).toBe(0);
  });

  it("absorbs binary rounding with zero tolerance (0.1 + 0.2 vs 0.3)", async () => {
    expect((await runVerifier(make({ expected: 0.3 }), { answer: 0.1 + 0.2 })).score).toBe(1);
  });

  it("treats the absolute tolerance bound as inclusive", async () => {
    const v = make({ absTolerance: 0.5 });
    expect((await runVerifier(v, { answer: 10.5 })).score).toBe(1);
    expect((await runVerifier(v, { answer: 9.5 })).score).toBe(1);
    expect((await runVerifier(v, { answer: 10.5000001 })).score).toBe(0);
    expect((await runVerifier(v, { answer: 9.4999999 })).score).toBe(0);
  });

  it("honours a decimal boundary despite binary rounding (1.1 vs 1.0, tol 0.1)", async () => {
    const v = make({ expected: 1.0, absTolerance: 0.1 });
    expect((await runVerifier(v, { answer: 1.1 })).score).toBe(1);
    expect((await runVerifier(v, { answer: 1.1001 })).score).toBe(0);
  });

  it("uses the relative tolerance against |expected| and the larger of the two", async () => {
    const rel = make({ expected: -200, relTolerance: 0.01 });
    expect((await runVerifier(rel, { answer: -202 })).score).toBe(1);
    expect((await runVerifier(rel, { answer: -202.01 })).score).toBe(0);
    const both = make({ expected: 200, relTolerance: 0.01, absTolerance: 5 });
    expect((await runVerifier(both, { answer: 204.9 })).details.tolerance).toBe(5);
    expect((await runVerifier(both, { answer: 204.9 })).score).toBe(1);
  });

  it("parses numeric strings and reports the parsed value", async () => {
    const v = numberWithin<Answer>({ name: "money", expected: 1234.5, select: pick });
    const r = await runVerifier(v, { answer: "$1,234.50" });
    expect(r).toMatchObject({ score: 1, details: { found: "$1,234.50", parsed: 1234.5, difference: 0 } });
  });

  it("reads percentages only when asked", async () => {
    const strict = numberWithin<Answer>({ name: "p", expected: 0.5, select: pick });
    expect((await runVerifier(strict, { answer: "50%" })).score).toBe(0);
    const fraction = numberWithin<Answer>({ name: "p", expected: 0.5, select: pick, parse: { percent: "fraction" } });
    expect((await runVerifier(fraction, { answer: "50%" })).score).toBe(1);
  });

  it("scores unparsable, missing and non-finite answers 0 with a reason", async () => {
    const v = make({ absTolerance: 100 });
    expect(await runVerifier(v, { answer: "ten" })).toMatchObject({ score: 0, details: { parsed: null, reason: "found text that is not a number" } });
    expect(await runVerifier(v, {})).toMatchObject({ score: 0, details: { reason: "no value found" } });
    expect(await runVerifier(v, { answer: NaN })).toMatchObject({ score: 0, details: { found: "NaN", reason: "found a non-finite number" } });
    expect(await runVerifier(v, { answer: Infinity })).toMatchObject({ score: 0, details: { found: "Infinity" } });
    expect(await runVerifier(v, { answer: [10] })).toMatchObject({ score: 0, details: { reason: "found a object, not a number" } });
  });

  it("rejects bad expected values and tolerances", () => {
    expect(() => make({ expected: NaN })).toThrow(LlmixError);
    expect(() => make({ expected: Infinity })).toThrow(/finite/);
    expect(() => make({ absTolerance: -1 })).toThrow(/absTolerance/);
    expect(() => make({ relTolerance: NaN })).toThrow(/relTolerance/);
    expect(() => make({ absTolerance: Infinity })).toThrow(/absTolerance/);
    try {
      make({ absTolerance: -1 });
    } catch (e) {
      expect((e as LlmixError).code).toBe("invalid_config");
    }
  });
});

describe("jsonEquals", () => {
  const expected = { id: 7, tags: ["a", "b"], meta: { updated_at: "2024-01-01", owner: "ann" } };

  it("is insensitive to key order", async () => {
    const v = jsonEquals<Answer>({ name: "j", expected, select: pick });
    const r = await runVerifier(v, { answer: { meta: { owner: "ann", updated_at: "2024-01-01" }, tags: ["a", "b"], id: 7 } });
    expect(r).toMatchObject({ score: 1, passed: true });
    expect(r.details.differences).toBeUndefined();
  });

  it("lists differing paths when unequal", async () => {
    const v = jsonEquals<Answer>({ name: "j", expected, select: pick });
    const r = await runVerifier(v, { answer: { ...expected, id: 8, extra: true } });
    expect(r.score).toBe(0);
    expect(r.details.differences).toEqual([
      { path: "$.extra", kind: "extra", actual: true },
      { path: "$.id", kind: "changed", expected: 7, actual: 8 },
    ]);
  });

  it("is order-sensitive for arrays unless asked", async () => {
    const strict = jsonEquals<Answer>({ name: "j", expected, select: pick });
    const swapped = { ...expected, tags: ["b", "a"] };
    expect((await runVerifier(strict, { answer: swapped })).score).toBe(0);
    const loose = jsonEquals<Answer>({ name: "j", expected, select: pick, unorderedArrays: true });
    expect((await runVerifier(loose, { answer: swapped })).score).toBe(1);
    // Multiset, not set: a duplicate still differs.
    expect((await runVerifier(loose, { answer: { ...expected, tags: ["a", "b", "b"] } })).score).toBe(0);
  });

  it("sorts nested arrays of objects when order-insensitive", async () => {
    const v = jsonEquals<Answer>({ name: "rows", expected: [{ id: 1, v: [1, 2] }, { id: 2, v: [] }], select: pick, unorderedArrays: true });
    expect((await runVerifier(v, { answer: [{ v: [], id: 2 }, { id: 1, v: [2, 1] }] })).score).toBe(1);
  });

  it("ignores keys at every depth", async () => {
    const v = jsonEquals<Answer>({ name: "j", expected, select: pick, ignoreKeys: ["updated_at"] });
    const r = await runVerifier(v, { answer: { ...expected, meta: { owner: "ann", updated_at: "2030-05-05" } } });
    expect(r.score).toBe(1);
    expect(r.details.expected).toEqual({ id: 7, meta: { owner: "ann" }, tags: ["a", "b"] });
  });

  it("treats -0 as 0 and drops undefined entries like JSON does", async () => {
    const v = jsonEquals<Answer>({ name: "j", expected: { a: 0 }, select: pick });
    expect((await runVerifier(v, { answer: { a: -0, b: undefined } })).score).toBe(1);
  });

  it("distinguishes types (1 vs \"1\", null vs missing)", async () => {
    const v = jsonEquals<Answer>({ name: "j", expected: { a: 1, b: null }, select: pick });
    expect((await runVerifier(v, { answer: { a: "1", b: null } })).score).toBe(0);
    expect((await runVerifier(v, { answer: { a: 1 } })).score).toBe(0);
  });

  it("scores non-JSON answers 0 instead of failing", async () => {
    const v = jsonEquals<Answer>({ name: "j", expected: { a: 1 }, select: pick });
    expect(await runVerifier(v, { answer: { a: NaN } })).toMatchObject({ score: 0, details: { reason: expect.stringContaining("non-finite") } });
    expect(await runVerifier(v, {})).toMatchObject({ score: 0, details: { found: null } });
    expect(await runVerifier(v, { answer: () => 1 })).toMatchObject({ score: 0, details: { found: "<function>" } });
  });

  it("rejects a non-JSON expected value", () => {
    expect(() => jsonEquals<Answer>({ name: "j", expected: { a: NaN }, select: pick })).toThrow(LlmixError);
  });

  it("caps the listed differences", async () => {
    const v = jsonEquals<Answer>({ name: "j", expected: [1, 2, 3, 4, 5], select: pick, maxDifferences: 2 });
    const r = await runVerifier(v, { answer: [9, 9, 9, 9, 9] });
    expect(r.details.differences).toHaveLength(3);
    expect((r.details.differences as unknown[])[2]).toEqual({ path: "$", kind: "omitted", count: 3 });
  });
});

describe("setMatch", () => {
  const hosts = ["db-1", "web-2", "cache-3", "queue-4"];

  it("scores a perfect answer 1", async () => {
    const v = setMatch<Answer>({ name: "hosts", expected: hosts, select: pick });
    const r = await runVerifier(v, { answer: ["queue-4", "cache-3", "web-2", "db-1"] });
    expect(r).toMatchObject({ score: 1, passed: true, details: { precision: 1, recall: 1, f1: 1, missing: [], extra: [] } });
  });

  it("computes precision, recall and F1 and lists missing and extra items", async () => {
    const v = setMatch<Answer>({ name: "hosts", expected: hosts, select: pick });
    const r = await runVerifier(v, { answer: ["db-1", "web-2", "mail-9"] });
    expect(r.details).toMatchObject({
      true_positives: 2,
      precision: 2 / 3,
      recall: 0.5,
      missing: ["cache-3", "queue-4"],
      extra: ["mail-9"],
    });
    expect(r.score).toBeCloseTo(4 / 7, 12);
    expect(r.passed).toBe(false);
  });

  it("can score by recall or precision", async () => {
    const answer = { answer: ["db-1", "web-2", "mail-9"] };
    const recall = setMatch<Answer>({ name: "r", expected: hosts, select: pick, score: "recall" });
    expect((await runVerifier(recall, answer)).score).toBe(0.5);
    const precision = setMatch<Answer>({ name: "p", expected: hosts, select: pick, score: "precision" });
    expect((await runVerifier(precision, answer)).score).toBeCloseTo(2 / 3, 12);
  });

  it("naming everything does not earn full marks under F1", async () => {
    const v = setMatch<Answer>({ name: "hosts", expected: ["db-1"], select: pick });
    const r = await runVerifier(v, { answer: ["db-1", "a", "b", "c"] });
    expect(r.details.recall).toBe(1);
    expect(r.score).toBeCloseTo(0.4, 12);
  });

  it("applies the threshold", async () => {
    const v = setMatch<Answer>({ name: "hosts", expected: hosts, select: pick, score: "recall", threshold: 0.75 });
    expect((await runVerifier(v, { answer: hosts.slice(0, 3) })).passed).toBe(true);
    expect((await runVerifier(v, { answer: hosts.slice(0, 2) })).passed).toBe(false);
  });

  it("normalizes and deduplicates items", async () => {
    const v = setMatch<Answer>({ name: "hosts", expected: hosts, select: pick, normalize: { caseInsensitive: true } });
    const r = await runVerifier(v, { answer: ["DB-1", "db-1 ", "Web-2", "CACHE-3", "queue-4"] });
    expect(r.score).toBe(1);
    expect(r.details.found).toEqual(["cache-3", "db-1", "queue-4", "web-2"]);
  });

  it("accepts any iterable, e.g. a Set", async () => {
    const v = setMatch<Answer>({ name: "hosts", expected: new Set(hosts), select: pick });
    expect((await runVerifier(v, { answer: new Set(hosts) })).score).toBe(1);
  });

  it("follows the documented empty-set conventions", async () => {
    const none = setMatch<Answer>({ name: "none", expected: [], select: pick });
    expect(await runVerifier(none, { answer: [] })).toMatchObject({ score: 1, details: { precision: 1, recall: 1, f1: 1 } });
    expect(await runVerifier(none, { answer: ["x"] })).toMatchObject({ score: 0, details: { precision: 0, recall: 1 } });
    const some = setMatch<Answer>({ name: "some", expected: ["x"], select: pick, score: "precision" });
    expect(await runVerifier(some, {})).toMatchObject({ score: 0, details: { precision: 0, recall: 0, f1: 0 } });
  });

  it("scores a string or non-string items 0 instead of failing", async () => {
    const v = setMatch<Answer>({ name: "hosts", expected: ["ab"], select: pick });
    expect(await runVerifier(v, { answer: "ab" })).toMatchObject({ score: 0, details: { reason: "found value is not a list of strings" } });
    expect(await runVerifier(v, { answer: ["ab", 3] })).toMatchObject({ score: 0, details: { reason: "found item 1 is not a string" } });
    expect(await runVerifier(v, { answer: 42 })).toMatchObject({ score: 0 });
  });

  it("rejects a bad configuration", () => {
    expect(() => setMatch<Answer>({ name: "s", expected: ["a"], select: pick, threshold: 1.5 })).toThrow(LlmixError);
    expect(() => setMatch<Answer>({ name: "s", expected: ["a"], select: pick, threshold: NaN })).toThrow(/threshold/);
    expect(() => setMatch<Answer>({ name: "s", expected: ["a"], select: pick, score: "accuracy" as "f1" })).toThrow(/score must be/);
    expect(() => setMatch<Answer>({ name: "s", expected: [1 as unknown as string], select: pick })).toThrow(/only strings/);
  });
});
