import { describe, expect, it } from "vitest";
import { LlmixError, Rng, SplitMix64, ValidationError, type RngState } from "../../src/index.js";

const draw = (rng: Rng, n: number): number[] => Array.from({ length: n }, () => rng.nextUint32());

function expectValidation(fn: () => unknown, code: string): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ValidationError);
  expect((thrown as LlmixError).code).toBe(code);
}

describe("SplitMix64", () => {
  it("matches the published vector for seed 0", () => {
    const sm = new SplitMix64(0n);
    expect([sm.next(), sm.next(), sm.next(), sm.next()]).toEqual([
      0xe220a8397b1dcdafn,
      0x6e789e6aa1b965f4n,
      0x06c45d188009454fn,
      0xf88bb8a8724c81ecn,
    ]);
  });

  it("reduces seeds modulo 2^64 (negative seeds wrap)", () => {
    const a = new SplitMix64(-1n);
    const b = new SplitMix64((1n << 64n) - 1n);
    expect(a.next()).toBe(b.next());
    const c = new SplitMix64(1n << 64n);
    expect(c.next()).toBe(0xe220a8397b1dcdafn);
  });

  it("always yields unsigned 64-bit values", () => {
    const sm = new SplitMix64(123456789n);
    for (let i = 0; i < 100; i++) {
      const v = sm.next();
      expect(v >= 0n && v < 1n << 64n).toBe(true);
    }
  });
});

describe("xoshiro128** test vectors", () => {
  it("matches the reference outputs and state", () => {
    const rng = new Rng([0x964d4a0c, 0xd40ab895, 0xad7fdecb, 0x3006f0f0]);
    expect(rng.nextUint32()).toBe(0xf1391922);
    expect(rng.state().s).toEqual([0x72410269, 0xef382c52, 0x2e43bec7, 0x62432f20]);
    expect(draw(rng, 3)).toEqual([0x6fe53806, 0xa5be2840, 0xf510ee70]);
  });

  it("from state [1,2,3,4] gives the reference sequence", () => {
    expect(draw(new Rng([1, 2, 3, 4]), 6)).toEqual([11520, 0, 5927040, 70819200, 2031721883, 1637235492]);
  });

  it("outputs are uint32", () => {
    const rng = Rng.fromSeed(7);
    for (const v of draw(rng, 1000)) {
      expect(Number.isInteger(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThanOrEqual(0xffffffff);
    }
  });
});

describe("Rng.fromSeed / fromKey", () => {
  it("fromSeed expands through SplitMix64 (low word first)", () => {
    const rng = Rng.fromSeed(0);
    expect(rng.state().s).toEqual([0x7b1dcdaf, 0xe220a839, 0xa1b965f4, 0x6e789e6a]);
    expect(rng.key).toBe("seed:0");
    expect(Rng.fromSeed(0n).state().s).toEqual(rng.state().s);
  });

  it("fromKey is pinned to golden values (an accidental change to derivation is caught)", () => {
    const rng = Rng.fromKey("a", "b", 1);
    expect(rng.key).toBe("a\u241fb\u241f1");
    expect(rng.state().s).toEqual([563049306, 2052585, 3243037281, 77841741]);
    expect(draw(rng, 5)).toEqual([3232955008, 1797945026, 441190372, 2118566165, 4272567338]);
    const again = Rng.fromKey("a", "b", 1);
    expect(again.int(1, 100)).toBe(9);
    expect(again.float()).toBe(0.4186166979575353);
  });

  it("fromKey depends on every part and on part boundaries", () => {
    const base = draw(Rng.fromKey("a", "b", 1), 4);
    expect(draw(Rng.fromKey("a", "b", 2), 4)).not.toEqual(base);
    expect(draw(Rng.fromKey("b", "a", 1), 4)).not.toEqual(base);
    expect(draw(Rng.fromKey("ab", 1), 4)).not.toEqual(base);
    // numbers and their string forms are the same key part
    expect(draw(Rng.fromKey("a", "b", "1"), 4)).toEqual(base);
  });
});

describe("fork and split", () => {
  it("fork depends only on key and label, not on the parent's position", () => {
    const a = Rng.fromKey("env", "task", 3);
    const b = Rng.fromKey("env", "task", 3);
    draw(b, 17);
    expect(draw(a.fork("tools"), 8)).toEqual(draw(b.fork("tools"), 8));
    expect(a.fork("tools").key).toBe(`${a.key}\u241ftools`);
  });

  it("fork does not advance the parent, and different labels are independent", () => {
    const a = Rng.fromKey("k");
    const before = a.state();
    const f1 = a.fork("x");
    const f2 = a.fork("y");
    expect(a.state()).toEqual(before);
    expect(draw(f1, 4)).not.toEqual(draw(f2, 4));
    expect(draw(f1.fork("x"), 4)).not.toEqual(draw(a.fork("x"), 4));
  });

  it("split advances the parent by exactly two outputs and is deterministic", () => {
    const a = Rng.fromKey("k");
    const b = Rng.fromKey("k");
    const child = a.split();
    draw(b, 2);
    expect(a.state().s).toEqual(b.state().s);
    expect(child.key).toBe(`${a.key}/split`);
    const c = Rng.fromKey("k").split();
    expect(draw(child, 5)).toEqual(draw(c, 5));
    // successive splits differ
    expect(draw(a.split(), 5)).not.toEqual(draw(Rng.fromKey("k").split(), 5));
  });
});

describe("state / fromState", () => {
  it("round-trips and continues identically", () => {
    const a = Rng.fromKey("round", "trip");
    draw(a, 13);
    const snap = a.state();
    const b = Rng.fromState(JSON.parse(JSON.stringify(snap)) as RngState);
    expect(b.key).toBe(a.key);
    expect(draw(b, 50)).toEqual(draw(a, 50));
    expect(b.float()).toBe(a.float());
    expect(b.int(0, 99)).toBe(a.int(0, 99));
  });

  it("state() is a copy, not a live view", () => {
    const a = Rng.fromSeed(1);
    const s = a.state();
    const copy = [...s.s];
    a.nextUint32();
    expect(s.s).toEqual(copy);
  });

  it.each([
    ["null", null],
    ["a number", 5],
    ["missing key", { s: [1, 2, 3, 4] }],
    ["non-string key", { key: 1, s: [1, 2, 3, 4] }],
    ["three words", { key: "k", s: [1, 2, 3] }],
    ["five words", { key: "k", s: [1, 2, 3, 4, 5] }],
    ["non-integer word", { key: "k", s: [1.5, 2, 3, 4] }],
    ["negative word", { key: "k", s: [-1, 2, 3, 4] }],
    ["word above 2^32-1", { key: "k", s: [2 ** 32, 2, 3, 4] }],
    ["string words", { key: "k", s: ["1", "2", "3", "4"] }],
    ["NaN word", { key: "k", s: [Number.NaN, 2, 3, 4] }],
  ])("fromState rejects %s with invalid_snapshot", (_name, state) => {
    expectValidation(() => Rng.fromState(state as unknown as RngState), "invalid_snapshot");
  });

  it("fromState rejects an all-zero state with a typed error", () => {
    expect(() => Rng.fromState({ key: "k", s: [0, 0, 0, 0] })).toThrow(ValidationError);
  });

  it("the constructor rejects an all-zero state", () => {
    expectValidation(() => new Rng([0, 0, 0, 0]), "invalid_argument");
  });
});

describe("float and bool", () => {
  it("float lies in [0, 1) and has a sane mean", () => {
    const rng = Rng.fromKey("float");
    let sum = 0;
    for (let i = 0; i < 20_000; i++) {
      const f = rng.float();
      expect(f >= 0 && f < 1).toBe(true);
      sum += f;
    }
    expect(Math.abs(sum / 20_000 - 0.5)).toBeLessThan(0.01);
  });

  it("float is 0 for an all-zero output pair and < 1 for the maximal one", () => {
    // state [1,2,3,4] emits 11520 then 0: hi = 11520 >>> 5 = 360, lo = 0
    expect(new Rng([1, 2, 3, 4]).float()).toBe((360 * 67108864) / 9007199254740992);
    expect((0x7ffffff * 67108864 + 0x3ffffff) / 9007199254740992).toBeLessThan(1);
  });

  it("bool respects p = 0 and p = 1 and is roughly fair", () => {
    const rng = Rng.fromKey("bool");
    let trues = 0;
    for (let i = 0; i < 1000; i++) {
      expect(rng.bool(0)).toBe(false);
      expect(rng.bool(1)).toBe(true);
      if (rng.bool()) trues++;
    }
    expect(trues).toBeGreaterThan(430);
    expect(trues).toBeLessThan(570);
  });
});

describe("int", () => {
  it("stays inside inclusive bounds and hits both ends", () => {
    const rng = Rng.fromKey("int-bounds");
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const v = rng.int(-3, 3);
      expect(Number.isInteger(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(-3);
      expect(v).toBeLessThanOrEqual(3);
      seen.add(v);
    }
    expect([...seen].sort((a, b) => a - b)).toEqual([-3, -2, -1, 0, 1, 2, 3]);
  });

  it("int(n, n) is n", () => {
    const rng = Rng.fromKey("int-one");
    for (let i = 0; i < 20; i++) expect(rng.int(42, 42)).toBe(42);
  });

  it("is roughly unbiased: chi-square over 6 buckets, 60k draws", () => {
    const rng = Rng.fromKey("int-chi");
    const counts = new Array<number>(6).fill(0);
    const n = 60_000;
    for (let i = 0; i < n; i++) counts[rng.int(1, 6) - 1]++;
    const expected = n / 6;
    const chi = counts.reduce((acc, c) => acc + (c - expected) ** 2 / expected, 0);
    // 5 degrees of freedom: p = 0.001 at 20.5
    expect(chi).toBeLessThan(20.5);
  });

  it("is unbiased for a span that does not divide 2^32 (rejection sampling)", () => {
    // span 3 * 2^30: naive modulo would make the lowest 2^30 values twice as likely
    const rng = Rng.fromKey("int-reject");
    const span = 3 * 2 ** 30;
    let low = 0;
    const n = 30_000;
    for (let i = 0; i < n; i++) if (rng.int(0, span - 1) < 2 ** 30) low++;
    expect(low / n).toBeGreaterThan(0.31);
    expect(low / n).toBeLessThan(0.356);
  });

  it("handles full uint32 and wider spans", () => {
    const rng = Rng.fromKey("int-wide");
    for (let i = 0; i < 200; i++) {
      const v = rng.int(0, 0xffffffff);
      expect(v >= 0 && v <= 0xffffffff && Number.isInteger(v)).toBe(true);
      const w = rng.int(-(2 ** 40), 2 ** 40);
      expect(w >= -(2 ** 40) && w <= 2 ** 40 && Number.isInteger(w)).toBe(true);
    }
  });

  it.each([
    [1.5, 3],
    [1, 2.5],
    [5, 4],
    [Number.NaN, 3],
    [0, Number.POSITIVE_INFINITY],
    [0, 2 ** 53],
    ["1" as unknown as number, 3],
  ])("rejects int(%s, %s) with invalid_argument", (min, max) => {
    expectValidation(() => Rng.fromKey("bad").int(min, max), "invalid_argument");
  });
});

describe("pick / weighted / shuffle / sample", () => {
  it("pick returns elements of the list and covers them", () => {
    const rng = Rng.fromKey("pick");
    const items = ["a", "b", "c"] as const;
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) seen.add(rng.pick(items));
    expect([...seen].sort()).toEqual(["a", "b", "c"]);
    expect(rng.pick(["only"])).toBe("only");
  });

  it("pick on an empty list is invalid_argument", () => {
    expectValidation(() => Rng.fromKey("pick").pick([]), "invalid_argument");
  });

  it("weighted follows the weights and never picks a zero weight", () => {
    const rng = Rng.fromKey("weighted");
    const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < 10_000; i++) counts[rng.weighted(["a", "b", "c"], [1, 0, 3])]++;
    expect(counts.b).toBe(0);
    expect(counts.a / 10_000).toBeGreaterThan(0.22);
    expect(counts.a / 10_000).toBeLessThan(0.28);
    expect(rng.weighted(["x", "y"], [0, 5])).toBe("y");
  });

  it.each([
    ["empty items", [], []],
    ["length mismatch", ["a", "b"], [1]],
    ["negative weight", ["a", "b"], [1, -1]],
    ["NaN weight", ["a", "b"], [1, Number.NaN]],
    ["infinite weight", ["a", "b"], [1, Number.POSITIVE_INFINITY]],
    ["all zero", ["a", "b"], [0, 0]],
  ])("weighted rejects %s", (_name, items, weights) => {
    expectValidation(() => Rng.fromKey("w").weighted(items as string[], weights as number[]), "invalid_argument");
  });

  it("shuffle is a permutation, leaves the input alone, and is deterministic", () => {
    const items = Array.from({ length: 20 }, (_, i) => i);
    const frozen = Object.freeze([...items]);
    const a = Rng.fromKey("shuffle").shuffle(frozen);
    const b = Rng.fromKey("shuffle").shuffle(frozen);
    expect(a).toEqual(b);
    expect([...a].sort((x, y) => x - y)).toEqual(items);
    expect(a).not.toEqual(items);
    expect(frozen).toEqual(items);
    expect(Rng.fromKey("s").shuffle([])).toEqual([]);
    expect(Rng.fromKey("s").shuffle([1])).toEqual([1]);
  });

  it("shuffle is roughly uniform over the 6 permutations of 3", () => {
    const rng = Rng.fromKey("shuffle-uniform");
    const counts = new Map<string, number>();
    for (let i = 0; i < 6000; i++) {
      const key = rng.shuffle([1, 2, 3]).join("");
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect(counts.size).toBe(6);
    for (const c of counts.values()) expect(Math.abs(c - 1000)).toBeLessThan(150);
  });

  it("sample returns k distinct items, k=0 and k=all work", () => {
    const rng = Rng.fromKey("sample");
    const items = ["a", "b", "c", "d", "e"];
    const s = rng.sample(items, 3);
    expect(s).toHaveLength(3);
    expect(new Set(s).size).toBe(3);
    for (const x of s) expect(items).toContain(x);
    expect(rng.sample(items, 0)).toEqual([]);
    expect([...rng.sample(items, 5)].sort()).toEqual(items);
  });

  it("sample with k > length is invalid_argument", () => {
    expectValidation(() => Rng.fromKey("sample").sample([1, 2], 3), "invalid_argument");
  });

  // BUG (src/core/rng.ts sample): only k > length is checked; slice(0, -1) then returns length-1 items
  // and slice(0, 1.5) one item.
  it.each([-1, 1.5, Number.NaN])("sample rejects k = %s with invalid_argument", (k) => {
    expectValidation(() => Rng.fromKey("sample").sample([1, 2, 3], k), "invalid_argument");
  });

  it("normal has roughly the requested mean and spread", () => {
    const rng = Rng.fromKey("normal");
    const xs = Array.from({ length: 20_000 }, () => rng.normal(10, 2));
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
    expect(Math.abs(mean - 10)).toBeLessThan(0.1);
    expect(Math.abs(sd - 2)).toBeLessThan(0.1);
  });
});
