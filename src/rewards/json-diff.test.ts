import { describe, expect, it } from "vitest";
import { diffJsonStates, leafCount, normalizeJson } from "./json-diff.js";

describe("normalizeJson", () => {
  it("sorts keys, drops ignored keys and undefined entries, nulls undefined array items", () => {
    const out = normalizeJson({ b: 1, a: { ts: 5, z: [undefined, 2] }, c: undefined }, { ignoreKeys: ["ts"] });
    expect(JSON.stringify(out)).toBe('{"a":{"z":[null,2]},"b":1}');
  });
  it("sorts arrays deterministically when unordered", () => {
    // Order is by canonical bytes (not numeric): '"a"' < "1" < "10" < "3" < "null" < "{...}".
    const sorted = [null, "a", 10, { k: 1 }, 3, 1];
    expect(normalizeJson([3, "a", null, { k: 1 }, 10, 1], { unorderedArrays: true })).toEqual(["a", 1, 10, 3, null, { k: 1 }]);
    expect(normalizeJson(sorted, { unorderedArrays: true })).toEqual(normalizeJson([...sorted].reverse(), { unorderedArrays: true }));
  });
  it("rejects values JSON cannot carry", () => {
    expect(() => normalizeJson({ a: NaN })).toThrow(/non-finite number at \$\.a/);
    expect(() => normalizeJson(undefined)).toThrow(TypeError);
    expect(() => normalizeJson({ f: 10n })).toThrow(/bigint/);
  });
});

describe("leafCount", () => {
  it("counts primitives and empty containers as one leaf", () => {
    expect(leafCount(5)).toBe(1);
    expect(leafCount({})).toBe(1);
    expect(leafCount([])).toBe(1);
    expect(leafCount({ a: [1, 2, {}], b: { c: null } })).toBe(4);
  });
});

describe("diffJsonStates", () => {
  it("reports equal states with every leaf matched", () => {
    const s = { users: [{ id: 1, name: "a" }], count: 1 };
    expect(diffJsonStates(s, structuredClone(s))).toEqual({ equal: true, matched: 3, total: 3, differences: [] });
  });

  it("counts matched leaves and lists changed, missing and extra paths", () => {
    const expected = { orders: [{ id: 1, status: "refunded" }, { id: 2, status: "open" }], note: "x" };
    const actual = { orders: [{ id: 1, status: "open" }], "odd key": true, note: "x" };
    const d = diffJsonStates(expected, actual);
    expect(d.equal).toBe(false);
    expect(d.matched).toBe(2); // orders[0].id and note
    expect(d.total).toBe(6); // 5 expected leaves + 1 extra
    expect(d.differences).toEqual([
      { path: '$["odd key"]', kind: "extra", actual: true },
      { path: "$.orders[0].status", kind: "changed", expected: "refunded", actual: "open" },
      { path: "$.orders[1]", kind: "missing", expected: { id: 2, status: "open" } },
    ]);
  });

  it("counts a type change by the larger side", () => {
    const d = diffJsonStates({ a: { x: 1, y: 2, z: 3 } }, { a: "flat" });
    expect(d).toMatchObject({ equal: false, matched: 0, total: 3 });
    expect(d.differences[0]).toMatchObject({ path: "$.a", kind: "changed" });
  });

  it("compares empty containers as leaves", () => {
    expect(diffJsonStates({ a: {} }, { a: {} })).toMatchObject({ equal: true, matched: 1, total: 1 });
    expect(diffJsonStates({ a: {} }, { a: [] })).toMatchObject({ equal: false, matched: 0, total: 1 });
    expect(diffJsonStates({ a: {} }, { a: { b: 1 } })).toMatchObject({ equal: false, total: 1 });
  });

  it("honours ignoreKeys and unorderedArrays", () => {
    const expected = { rows: [{ id: 1, at: 1 }, { id: 2, at: 2 }] };
    const actual = { rows: [{ id: 2, at: 99 }, { id: 1, at: 98 }] };
    expect(diffJsonStates(expected, actual).equal).toBe(false);
    expect(diffJsonStates(expected, actual, { ignoreKeys: ["at"], unorderedArrays: true }).equal).toBe(true);
  });

  it("caps differences and counts the omitted ones", () => {
    const d = diffJsonStates([1, 2, 3, 4], [0, 0, 0, 0], { maxDifferences: 1 });
    expect(d.equal).toBe(false);
    expect(d.differences).toEqual([
      { path: "$[0]", kind: "changed", expected: 1, actual: 0 },
      { path: "$", kind: "omitted", count: 3 },
    ]);
    expect(diffJsonStates([1], [0], { maxDifferences: 0 })).toMatchObject({ equal: false, differences: [{ kind: "omitted", count: 1 }] });
  });

  it("works on primitives at the root", () => {
    expect(diffJsonStates(1, 1)).toEqual({ equal: true, matched: 1, total: 1, differences: [] });
    expect(diffJsonStates(null, 0)).toMatchObject({ equal: false, matched: 0, total: 1 });
  });
});
