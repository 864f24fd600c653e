import { describe, expect, it } from "vitest";
import { ReferenceCache, referenceKey } from "./reference-cache.js";

class EnvA {}
class EnvB {}

describe("referenceKey", () => {
  it("compares plain options by value (key order aside) and everything else by identity", () => {
    const tokenizer = { count: (s: string) => s.length };
    expect(referenceKey(EnvA, { maxSteps: 5, scenario: { a: 1, b: [2] } }, "t/easy/seed-1", 3)).toBe(
      referenceKey(EnvA, { scenario: { b: [2], a: 1 }, maxSteps: 5 }, "t/easy/seed-1", 3),
    );
    expect(referenceKey(EnvA, {}, "t/easy/seed-1", 3)).not.toBe(referenceKey(EnvB, {}, "t/easy/seed-1", 3));
    expect(referenceKey(EnvA, {}, "t/easy/seed-1", 3)).not.toBe(referenceKey(EnvA, {}, "t/easy/seed-1", 4));
    expect(referenceKey(EnvA, {}, "t/easy/seed-1", 3)).not.toBe(referenceKey(EnvA, {}, "t/easy/seed-2", 3));
    expect(referenceKey(EnvA, { maxSteps: 5 }, "t", 1)).not.toBe(referenceKey(EnvA, { maxSteps: 6 }, "t", 1));
    expect(referenceKey(EnvA, { tokenizer }, "t", 1)).toBe(referenceKey(EnvA, { tokenizer }, "t", 1));
    // A plain object holding the same function is the same tokenizer; another function is not.
    expect(referenceKey(EnvA, { tokenizer }, "t", 1)).toBe(referenceKey(EnvA, { tokenizer: { ...tokenizer } }, "t", 1));
    expect(referenceKey(EnvA, { tokenizer }, "t", 1)).not.toBe(referenceKey(EnvA, { tokenizer: { count: (s: string) => s.length } }, "t", 1));
    class Tokenizer {
      count(s: string) {
        return s.length;
      }
    }
    expect(referenceKey(EnvA, { tokenizer: new Tokenizer() }, "t", 1)).not.toBe(referenceKey(EnvA, { tokenizer: new Tokenizer() }, "t", 1));
  });
});

describe("ReferenceCache", () => {
  it("computes once per view and key, keeps the most recently used, and forgets failures", async () => {
    const cache = new ReferenceCache(2);
    const view = {};
    let computed = 0;
    const compute = (value: number) => async () => {
      computed++;
      return value;
    };
    expect(await cache.get(view, "a", compute(1))).toBe(1);
    expect(await cache.get(view, "a", compute(99))).toBe(1);
    expect(await cache.get({}, "a", compute(2))).toBe(2);
    expect(computed).toBe(2);
    await cache.get(view, "b", compute(3));
    await cache.get(view, "a", compute(99)); // a is now the most recent; b is next to go
    await cache.get(view, "c", compute(4));
    expect(await cache.get(view, "a", compute(99))).toBe(1);
    expect(await cache.get(view, "b", compute(5))).toBe(5);

    await expect(cache.get(view, "bad", async () => Promise.reject(new Error("replay failed")))).rejects.toThrow("replay failed");
    expect(await cache.get(view, "bad", compute(6))).toBe(6);
  });
});
