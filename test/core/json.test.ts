import { describe, expect, it } from "vitest";
import { canonicalJson, cloneJson, fingerprint, sha256 } from "../../src/index.js";

describe("canonicalJson", () => {
  it("sorts keys at every depth and has no whitespace", () => {
    const value = { b: 1, a: { d: [3, { z: 1, y: 2 }], c: "x" } };
    expect(canonicalJson(value)).toBe('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it("is independent of insertion order", () => {
    const a = { x: 1, y: 2, nested: { p: true, q: null } };
    const b = { nested: { q: null, p: true }, y: 2, x: 1 };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
  });

  it("sorts keys by code unit, numeric-looking keys included", () => {
    // JSON.stringify would put integer-like keys first in ascending numeric order
    expect(canonicalJson({ b: 0, "10": 0, "9": 0, A: 0 })).toBe('{"10":0,"9":0,"A":0,"b":0}');
  });

  it("drops undefined object entries, turns undefined array slots into null", () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson([1, undefined, 2])).toBe("[1,null,2]");
    expect(canonicalJson({ a: { b: undefined } })).toBe('{"a":{}}');
  });

  it("keeps null, booleans, strings with escapes, and -0 as 0", () => {
    expect(canonicalJson(null)).toBe("null");
    expect(canonicalJson([true, false])).toBe("[true,false]");
    expect(canonicalJson('q"\n\u2028')).toBe(JSON.stringify('q"\n\u2028'));
    expect(canonicalJson(-0)).toBe("0");
    expect(canonicalJson(1e21)).toBe("1e+21");
  });

  it("agrees with JSON.parse round trip", () => {
    const value = { list: [1, "two", { three: 3 }], empty: {}, arr: [] };
    expect(JSON.parse(canonicalJson(value))).toEqual(value);
  });

  it.each([
    ["NaN", Number.NaN, "$"],
    ["Infinity", Number.POSITIVE_INFINITY, "$"],
    ["nested NaN", { a: [1, { b: Number.NaN }] }, "$.a[1].b"],
  ])("rejects %s and names the path", (_name, value, path) => {
    expect(() => canonicalJson(value)).toThrow(TypeError);
    expect(() => canonicalJson(value)).toThrow(path);
  });

  it.each([
    ["a function", () => 1],
    ["a bigint", 1n],
    ["a symbol", Symbol("s")],
    ["top-level undefined", undefined],
  ])("rejects %s", (_name, value) => {
    expect(() => canonicalJson(value)).toThrow(TypeError);
  });
});

describe("sha256 / fingerprint / cloneJson", () => {
  it("sha256 matches the known vector", () => {
    expect(sha256("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256(new TextEncoder().encode("abc"))).toBe(sha256("abc"));
  });

  it("fingerprint is the sha256 of the canonical JSON and key-order independent", () => {
    expect(fingerprint({ b: 2, a: 1 })).toBe(sha256('{"a":1,"b":2}'));
    expect(fingerprint({ b: 2, a: 1 })).toBe(fingerprint({ a: 1, b: 2 }));
    expect(fingerprint({ a: 1, b: undefined })).toBe(fingerprint({ a: 1 }));
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }));
    expect(fingerprint([1, 2])).not.toBe(fingerprint([2, 1]));
  });

  it("fingerprint is pinned (golden value)", () => {
    expect(fingerprint({ task: "x", n: [1, 2, 3], ok: true })).toBe(
      "29cd71189471ecde16ff2e52f89b0266e88fedc42bd07141afb038a3936645ce",
    );
  });

  it("cloneJson is a deep copy", () => {
    const value = { a: [1, { b: 2 }] };
    const copy = cloneJson(value);
    expect(copy).toEqual(value);
    (copy.a[1] as { b: number }).b = 3;
    expect((value.a[1] as { b: number }).b).toBe(2);
  });
});
