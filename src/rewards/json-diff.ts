/**
 * Structural comparison of plain JSON values: normalization (ignored keys, order-insensitive arrays)
 * and a leaf-level diff that counts matched leaves and lists differing paths. Used by `jsonEquals` and
 * as the default diff of `stateDiff` for JSON world states.
 */
import { canonicalJson, type JsonValue } from "../core/json.js";

export interface JsonCompareOptions {
  /** Object keys dropped at every depth before comparing (timestamps, generated ids). */
  ignoreKeys?: readonly string[];
  /** Compare arrays as multisets: elements are sorted by canonical JSON before comparing. */
  unorderedArrays?: boolean;
}

export interface JsonDiffOptions extends JsonCompareOptions {
  /** At most this many difference entries are listed (default 100); the rest are counted in an `omitted` entry. */
  maxDifferences?: number;
}

/** One differing path. `missing`: only in expected; `extra`: only in actual; `changed`: both, different. */
export type JsonDiffEntry =
  | { path: string; kind: "changed"; expected: JsonValue; actual: JsonValue }
  | { path: string; kind: "missing"; expected: JsonValue }
  | { path: string; kind: "extra"; actual: JsonValue }
  | { path: "$"; kind: "omitted"; count: number };

export interface JsonDiff {
  equal: boolean;
  /** Leaves equal on both sides. */
  matched: number;
  /** Leaves over the union of both sides (a leaf missing on one side counts once, unmatched). */
  total: number;
  /** Differing paths, capped at `maxDifferences`; a final `omitted` entry counts the rest. */
  differences: JsonDiffEntry[];
}

/**
 * Returns a canonical copy of a JSON value: keys sorted, ignored keys dropped, `undefined` object
 * entries dropped and `undefined` array items made null (as JSON.stringify does), arrays sorted when
 * order-insensitive. Throws TypeError on values JSON cannot carry (NaN, functions, bigint, undefined root).
 */
export function normalizeJson(value: unknown, options: JsonCompareOptions = {}): JsonValue {
  const ignore = new Set(options.ignoreKeys ?? []);
  return normalize(value, "$", ignore, options.unorderedArrays === true);
}

function normalize(value: unknown, path: string, ignore: Set<string>, unordered: boolean): JsonValue {
  if (value === null) return null;
  switch (typeof value) {
    case "boolean":
    case "string":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`non-finite number at ${path}`);
      // -0 and 0 are the same JSON number.
      return value === 0 ? 0 : value;
    case "object": {
      if (Array.isArray(value)) {
        const items = value.map((v, i) => normalize(v ?? null, `${path}[${i}]`, ignore, unordered));
        if (!unordered) return items;
        // Sorting by canonical bytes (code-unit order, not locale) makes the order deterministic.
        const keyed = items.map((item) => ({ key: canonicalJson(item), item }));
        keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
        return keyed.map((k) => k.item);
      }
      const obj = value as Record<string, unknown>;
      const out: { [key: string]: JsonValue } = {};
      for (const key of Object.keys(obj).sort()) {
        if (ignore.has(key) || obj[key] === undefined) continue;
        out[key] = normalize(obj[key], childPath(path, key), ignore, unordered);
      }
      return out;
    }
    default:
      throw new TypeError(`cannot represent ${typeof value} as JSON at ${path}`);
  }
}

/**
 * Diff of two JSON states, usable as the `diff` of `stateDiff`. Counts leaves (primitives, empty arrays,
 * empty objects) equal on both sides over the leaves of both sides, and lists differing paths.
 */
export function diffJsonStates(expected: unknown, actual: unknown, options: JsonDiffOptions = {}): JsonDiff {
  const e = normalizeJson(expected, options);
  const a = normalizeJson(actual, options);
  const max = options.maxDifferences ?? 100;
  const acc = { matched: 0, total: 0, differences: [] as JsonDiffEntry[], omitted: 0, max };
  walk(e, a, "$", acc);
  const differences = acc.differences;
  if (acc.omitted > 0) differences.push({ path: "$", kind: "omitted", count: acc.omitted });
  const equal = acc.omitted === 0 && acc.differences.length === 0;
  return { equal, matched: acc.matched, total: acc.total, differences };
}

interface Acc {
  matched: number;
  total: number;
  differences: JsonDiffEntry[];
  omitted: number;
  max: number;
}

function record(acc: Acc, entry: JsonDiffEntry): void {
  if (acc.differences.length < acc.max) acc.differences.push(entry);
  else acc.omitted += 1;
}

function walk(e: JsonValue, a: JsonValue, path: string, acc: Acc): void {
  const ek = kindOf(e);
  const ak = kindOf(a);
  if (ek === "object" && ak === "object" && !isEmpty(e) && !isEmpty(a)) {
    const eo = e as Record<string, JsonValue>;
    const ao = a as Record<string, JsonValue>;
    const keys = [...new Set([...Object.keys(eo), ...Object.keys(ao)])].sort();
    for (const key of keys) {
      const p = childPath(path, key);
      if (!(key in ao)) missing(eo[key], p, acc);
      else if (!(key in eo)) extra(ao[key], p, acc);
      else walk(eo[key], ao[key], p, acc);
    }
    return;
  }
  if (ek === "array" && ak === "array" && !isEmpty(e) && !isEmpty(a)) {
    const ea = e as JsonValue[];
    const aa = a as JsonValue[];
    for (let i = 0; i < Math.max(ea.length, aa.length); i++) {
      const p = `${path}[${i}]`;
      if (i >= aa.length) missing(ea[i], p, acc);
      else if (i >= ea.length) extra(aa[i], p, acc);
      else walk(ea[i], aa[i], p, acc);
    }
    return;
  }
  // Leaves, empty containers, or a type change: compare whole values.
  if (canonicalJson(e) === canonicalJson(a)) {
    const n = leafCount(e);
    acc.matched += n;
    acc.total += n;
    return;
  }
  // A replaced subtree counts as many unmatched leaves as its larger side, so the ratio reflects its size.
  acc.total += Math.max(leafCount(e), leafCount(a));
  record(acc, { path, kind: "changed", expected: e, actual: a });
}

function missing(e: JsonValue, path: string, acc: Acc): void {
  acc.total += leafCount(e);
  record(acc, { path, kind: "missing", expected: e });
}

function extra(a: JsonValue, path: string, acc: Acc): void {
  acc.total += leafCount(a);
  record(acc, { path, kind: "extra", actual: a });
}

function kindOf(v: JsonValue): "array" | "object" | "leaf" {
  if (Array.isArray(v)) return "array";
  if (v !== null && typeof v === "object") return "object";
  return "leaf";
}

function isEmpty(v: JsonValue): boolean {
  return Array.isArray(v) ? v.length === 0 : Object.keys(v as object).length === 0;
}

/** Number of leaves of a value; an empty container is one leaf so that `{}` vs `{a: 1}` is not 0/0. */
export function leafCount(v: JsonValue): number {
  if (v === null || typeof v !== "object") return 1;
  const children = Array.isArray(v) ? v : Object.values(v);
  if (children.length === 0) return 1;
  let n = 0;
  for (const c of children) n += leafCount(c);
  return n;
}

/** JSONPath-style child path: `$.name` for identifier keys, `$["odd key"]` otherwise. */
function childPath(path: string, key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}
