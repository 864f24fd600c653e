/**
 * The function library code-repair projects are built from: small JavaScript functions over arrays,
 * strings, numbers and dates. Each comes with
 * - its correct source (the JS the project ships, before a bug is injected),
 * - a TypeScript reference implementation (expected values of tests come from it),
 * - an input generator,
 * - the bugs that can be injected into it: an exact text edit of the source plus a TypeScript model of
 *   the buggy behaviour, so the generator can pick inputs that expose the bug (and inputs that do not),
 * - optionally a decoy: a suspicious-looking comment on a correct line.
 * A test (library.test.ts) runs every function's JS in the sandbox against its reference, and every bug's
 * JS against its model, so the two can never drift apart.
 */
import type { Rng } from "../../core/rng.js";

export const MODULES = ["arrays", "strings", "numbers", "dates"] as const;
export type ModuleName = (typeof MODULES)[number];
export const BUG_KINDS = [
  "off-by-one",
  "wrong-comparator",
  "missing-edge-case",
  "wrong-default",
  "wrong-operator",
  "swapped-operands",
  "wrong-initial-value",
  "wrong-logic",
  "type-coercion",
  "early-return",
] as const;
export type BugKind = (typeof BUG_KINDS)[number];

/* eslint-disable @typescript-eslint/no-explicit-any */
type Fn = (...args: any[]) => unknown;

export interface BugSpec {
  kind: BugKind;
  /** Exact text of the correct source, replaced by `replace` to inject the bug (occurs exactly once). */
  find: string;
  replace: string;
  /** The buggy function, modelled in TypeScript. */
  buggy: Fn;
  /** Inputs likely to expose the bug; only those where the model differs from the reference are used. Default: the function's generator. */
  trigger?: (rng: Rng) => unknown[];
  /** What is wrong, in one line (documentation and the reference solver's notes). */
  description: string;
}

export interface FnSpec {
  name: string;
  module: ModuleName;
  /** One-line JSDoc summary. */
  doc: string;
  /** The correct JavaScript function declaration. */
  source: string;
  ref: Fn;
  /** Random valid arguments. */
  gen: (rng: Rng) => unknown[];
  bugs: BugSpec[];
  /** A suspicious-but-correct comment placed above the line containing `line`. */
  decoy?: { line: string; comment: string };
}

const WORDS = ["apple", "river", "stone", "cloud", "maple", "tiger", "lemon", "orbit", "pixel", "delta", "ember", "frost", "grape", "harbor", "ivory", "jungle"];
const ints = (rng: Rng, n: number, lo: number, hi: number) => Array.from({ length: n }, () => rng.int(lo, hi));
const isoDate = (rng: Rng) => new Date(Date.UTC(rng.int(1990, 2035), rng.int(0, 11), rng.int(1, 28))).toISOString().slice(0, 10);
const mixCase = (rng: Rng, w: string) => [...w].map((c) => (rng.bool(0.3) ? c.toUpperCase() : c)).join("");

// Inputs that expose a bug (`trigger`) come from wide distributions: tests of other tasks show their inputs
// with the right answers, so from a small set (16 words, a handful of years) a lookup table built from
// many tasks' visible tests would answer the hidden tests of a new task without fixing anything.
/** A pronounceable made-up word of 3-8 letters (about 10^8 of them). */
const pseudoWord = (rng: Rng) => Array.from({ length: rng.int(3, 8) }, (_, i) => rng.pick(i % 2 === 0 ? [..."bcdfghjklmnprstvwz"] : [..."aeiouy"])).join("");
/** An ISO date in the years 1000-9999 (the four-digit years the functions accept). */
const wideIsoDate = (rng: Rng) => new Date(Date.UTC(rng.int(1000, 9999), rng.int(0, 11), rng.int(1, 28))).toISOString().slice(0, 10);
/** Whitespace characters that String.prototype.trim and /\s/ both treat as whitespace. */
const WHITESPACE = [" ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u2003", "\u3000"];

// ---- arrays ----------------------------------------------------------------------------------------------

function chunk(items: unknown[], size: number, last = 0): unknown[][] {
  if (size < 1) throw new RangeError("size must be at least 1");
  const out: unknown[][] = [];
  for (let i = 0; i < items.length - last; i += size) out.push(items.slice(i, i + size));
  return out;
}

function maxBy(items: Array<Record<string, number>>, key: string, ties = false, start = -Infinity): unknown {
  let best: unknown;
  let bestValue = start;
  for (const item of items) {
    if (ties ? item[key]! >= bestValue : item[key]! > bestValue) {
      best = item;
      bestValue = item[key]!;
    }
  }
  return best;
}

function range(start: number, end: number, step = 1, inclusive = false): number[] {
  if (step === 0) throw new RangeError("step must not be 0");
  const out: number[] = [];
  if (step > 0) {
    for (let i = start; inclusive ? i <= end : i < end; i += step) out.push(i);
  } else {
    for (let i = start; i > end; i += step) out.push(i);
  }
  return out;
}

function sortBy(items: Array<Record<string, unknown>>, key: string, order = "asc", inverted = false): unknown[] {
  const direction = (order === "desc") !== inverted ? -1 : 1;
  return items.slice().sort((a, b) => {
    if ((a[key] as number) < (b[key] as number)) return -direction;
    if ((a[key] as number) > (b[key] as number)) return direction;
    return 0;
  });
}

function movingAverage(values: number[], size: number, short = false, seeded = false): number[] {
  const out: number[] = [];
  for (let i = 0; short ? i + size < values.length : i + size <= values.length; i++) {
    let sum = seeded ? values[i]! : 0;
    for (let j = i; j < i + size; j++) sum += values[j]!;
    out.push(sum / size);
  }
  return out;
}

function flatten(items: unknown[], depth = 1, orEqual = false): unknown[] {
  const out: unknown[] = [];
  for (const item of items) {
    if (Array.isArray(item) && (orEqual ? depth >= 0 : depth > 0)) {
      for (const inner of flatten(item, depth - 1, orEqual)) out.push(inner);
    } else {
      out.push(item);
    }
  }
  return out;
}

function binarySearch(sorted: number[], target: number, bug: "" | "strict" | "flipped" = ""): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (bug === "strict" ? lo < hi : lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] === target) return mid;
    if (bug === "flipped" ? sorted[mid]! > target : sorted[mid]! < target) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

function sumBy(items: Array<Record<string, unknown>>, key: string, bug: "" | "coerce" | "first" = ""): unknown {
  let total: unknown = 0;
  for (const item of items) {
    if (bug === "first") return (total as number) + Number(item[key]);
    // "coerce" models JavaScript's `+`: a string on either side concatenates.
    total = bug === "coerce" ? (total as string) + (item[key] as string) : (total as number) + Number(item[key]);
  }
  return total;
}

const nestedArray = (rng: Rng, depth: number): unknown[] =>
  Array.from({ length: rng.int(1, 4) }, () => (depth > 0 && rng.bool(0.45) ? nestedArray(rng, depth - 1) : rng.int(0, 9)));

const ARRAYS: FnSpec[] = [
  {
    name: "chunk",
    module: "arrays",
    doc: "Split `items` into consecutive groups of `size` (the last group may be shorter).",
    source: `function chunk(items, size) {
  if (size < 1) throw new RangeError("size must be at least 1");
  const out = [];
  for (let i = 0; i < items.length; i += size) {
    out.push(items.slice(i, i + size));
  }
  return out;
}`,
    ref: (items: unknown[], size: number) => chunk(items, size),
    gen: (rng) => [ints(rng, rng.int(0, 9), 0, 99), rng.int(1, 4)],
    bugs: [
      {
        kind: "off-by-one",
        find: "i < items.length; i += size",
        replace: "i < items.length - 1; i += size",
        buggy: (items: unknown[], size: number) => chunk(items, size, 1),
        trigger: (rng) => {
          const size = rng.int(1, 4);
          return [ints(rng, size * rng.int(0, 2) + 1, 0, 99), size];
        },
        description: "the loop stops one element early, so a last group of exactly one element is dropped",
      },
    ],
  },
  {
    name: "maxBy",
    module: "arrays",
    doc: "The first item with the largest `item[key]`, or undefined for an empty list.",
    source: `function maxBy(items, key) {
  let best;
  let bestValue = -Infinity;
  for (const item of items) {
    if (item[key] > bestValue) {
      best = item;
      bestValue = item[key];
    }
  }
  return best;
}`,
    ref: (items: Array<Record<string, number>>, key: string) => maxBy(items, key),
    gen: (rng) => [Array.from({ length: rng.int(1, 6) }, (_, i) => ({ id: i + 1, score: rng.int(-20, 20) })), "score"],
    bugs: [
      {
        kind: "wrong-comparator",
        find: "if (item[key] > bestValue) {",
        replace: "if (item[key] >= bestValue) {",
        buggy: (items: Array<Record<string, number>>, key: string) => maxBy(items, key, true),
        trigger: (rng) => {
          const top = rng.int(-5, 20);
          const items = Array.from({ length: rng.int(3, 6) }, (_, i) => ({ id: i + 1, score: rng.int(-20, top) }));
          for (const i of rng.sample([...items.keys()], 2)) items[i]!.score = top;
          return [items, "score"];
        },
        description: "`>=` instead of `>`: on a tie the last item wins instead of the first",
      },
      {
        kind: "wrong-initial-value",
        find: "let bestValue = -Infinity;",
        replace: "let bestValue = 0;",
        buggy: (items: Array<Record<string, number>>, key: string) => maxBy(items, key, false, 0),
        trigger: (rng) => [Array.from({ length: rng.int(1, 5) }, (_, i) => ({ id: i + 1, score: rng.int(-30, 0) })), "score"],
        description: "the running maximum starts at 0, so lists whose values are all <= 0 give undefined",
      },
    ],
  },
  {
    name: "range",
    module: "arrays",
    doc: "The numbers from `start` up to (not including) `end`, `step` apart; a negative step counts down.",
    source: `function range(start, end, step = 1) {
  if (step === 0) throw new RangeError("step must not be 0");
  const out = [];
  if (step > 0) {
    for (let i = start; i < end; i += step) out.push(i);
  } else {
    for (let i = start; i > end; i += step) out.push(i);
  }
  return out;
}`,
    ref: (start: number, end: number, step?: number) => range(start, end, step),
    gen: (rng) => {
      const start = rng.int(-5, 5);
      const end = start + rng.int(-8, 8);
      if (rng.bool(0.4)) return [start, end];
      return [start, end, (end >= start ? 1 : -1) * rng.int(1, 3)];
    },
    bugs: [
      {
        kind: "off-by-one",
        find: "for (let i = start; i < end; i += step)",
        replace: "for (let i = start; i <= end; i += step)",
        buggy: (start: number, end: number, step?: number) => range(start, end, step, true),
        trigger: (rng) => {
          const start = rng.int(-1000, 1000);
          const step = rng.int(1, 9);
          const end = start + step * rng.int(1, 12);
          return rng.bool(0.5) && step === 1 ? [start, end] : [start, end, step];
        },
        description: "`<=` instead of `<`: the end value is included when the range lands on it",
      },
    ],
  },
  {
    name: "sortBy",
    module: "arrays",
    doc: 'A sorted copy of `items` by `item[key]`, ascending unless `order` is "desc"; equal keys keep their order.',
    source: `function sortBy(items, key, order = "asc") {
  const direction = order === "desc" ? -1 : 1;
  return items.slice().sort((a, b) => {
    if (a[key] < b[key]) return -direction;
    if (a[key] > b[key]) return direction;
    return 0;
  });
}`,
    ref: (items: Array<Record<string, unknown>>, key: string, order?: string) => sortBy(items, key, order),
    gen: (rng) => {
      const items = Array.from({ length: rng.int(2, 6) }, () => ({ name: rng.pick(WORDS), age: rng.int(1, 9) }));
      const r = rng.int(0, 2);
      return r === 0 ? [items, "age"] : [items, rng.pick(["age", "name"]), r === 1 ? "asc" : "desc"];
    },
    bugs: [
      {
        kind: "wrong-default",
        find: 'function sortBy(items, key, order = "asc") {',
        replace: 'function sortBy(items, key, order = "desc") {',
        buggy: (items: Array<Record<string, unknown>>, key: string, order = "desc") => sortBy(items, key, order),
        trigger: (rng) => [Array.from({ length: rng.int(3, 6) }, () => ({ name: rng.pick(WORDS), age: rng.int(1, 9) })), "age"],
        description: 'the default order is "desc": calls without an order sort backwards',
      },
      {
        kind: "wrong-comparator",
        find: 'const direction = order === "desc" ? -1 : 1;',
        replace: 'const direction = order === "desc" ? 1 : -1;',
        buggy: (items: Array<Record<string, unknown>>, key: string, order?: string) => sortBy(items, key, order, true),
        description: "the comparator's direction is inverted: every order sorts backwards",
      },
    ],
  },
  {
    name: "movingAverage",
    module: "arrays",
    doc: "The average of every window of `size` consecutive values.",
    source: `function movingAverage(values, size) {
  const out = [];
  for (let i = 0; i + size <= values.length; i++) {
    let sum = 0;
    for (let j = i; j < i + size; j++) sum += values[j];
    out.push(sum / size);
  }
  return out;
}`,
    ref: (values: number[], size: number) => movingAverage(values, size),
    gen: (rng) => [ints(rng, rng.int(0, 8), 0, 20), rng.int(1, 4)],
    bugs: [
      {
        kind: "off-by-one",
        find: "for (let i = 0; i + size <= values.length; i++) {",
        replace: "for (let i = 0; i + size < values.length; i++) {",
        buggy: (values: number[], size: number) => movingAverage(values, size, true),
        trigger: (rng) => {
          const size = rng.int(1, 4);
          return [ints(rng, size + rng.int(0, 4), 0, 20), size];
        },
        description: "`<` instead of `<=`: the last window is missing",
      },
      {
        kind: "wrong-initial-value",
        find: "let sum = 0;",
        replace: "let sum = values[i];",
        buggy: (values: number[], size: number) => movingAverage(values, size, false, true),
        trigger: (rng) => {
          const size = rng.int(1, 4);
          return [ints(rng, size + rng.int(0, 4), 1, 9999), size];
        },
        description: "each window's sum starts at its first value instead of 0, so that value is counted twice",
      },
    ],
    decoy: { line: "for (let i = 0; i + size <= values.length; i++) {", comment: "// FIXME(review): `<=` here looks like an off-by-one to me; should it be `<`?" },
  },
  {
    name: "flatten",
    module: "arrays",
    doc: "A copy of `items` with nested arrays spread into it, up to `depth` levels (default 1).",
    source: `function flatten(items, depth = 1) {
  const out = [];
  for (const item of items) {
    if (Array.isArray(item) && depth > 0) {
      for (const inner of flatten(item, depth - 1)) out.push(inner);
    } else {
      out.push(item);
    }
  }
  return out;
}`,
    ref: (items: unknown[], depth?: number) => flatten(items, depth),
    gen: (rng) => (rng.bool(0.5) ? [nestedArray(rng, 3)] : [nestedArray(rng, 3), rng.int(0, 3)]),
    bugs: [
      {
        kind: "wrong-default",
        find: "function flatten(items, depth = 1) {",
        replace: "function flatten(items, depth = Infinity) {",
        buggy: (items: unknown[], depth = Infinity) => flatten(items, depth),
        trigger: (rng) => [[rng.int(0, 9), [rng.int(0, 9), [rng.int(0, 9), rng.int(0, 9)]], ...nestedArray(rng, 2)]],
        description: "the default depth is Infinity instead of 1: calls without a depth flatten everything",
      },
      {
        kind: "wrong-comparator",
        find: "if (Array.isArray(item) && depth > 0) {",
        replace: "if (Array.isArray(item) && depth >= 0) {",
        buggy: (items: unknown[], depth?: number) => flatten(items, depth, true),
        trigger: (rng) => [[rng.int(0, 9), [rng.int(0, 9), [rng.int(0, 9)]], ...nestedArray(rng, 1)], rng.int(0, 1)],
        description: "`>=` instead of `>`: flattens one level deeper than asked",
      },
    ],
  },
  {
    name: "binarySearch",
    module: "arrays",
    doc: "The index of `target` in the ascending array `sorted`, or -1.",
    source: `function binarySearch(sorted, target) {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] === target) return mid;
    if (sorted[mid] < target) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}`,
    ref: (sorted: number[], target: number) => binarySearch(sorted, target),
    gen: (rng) => {
      const sorted = [...new Set(ints(rng, rng.int(1, 9), 0, 60))].sort((a, b) => a - b);
      return [sorted, rng.bool(0.7) ? rng.pick(sorted) : rng.int(-5, 65)];
    },
    bugs: [
      {
        kind: "off-by-one",
        find: "while (lo <= hi) {",
        replace: "while (lo < hi) {",
        buggy: (sorted: number[], target: number) => binarySearch(sorted, target, "strict"),
        description: "`<` instead of `<=`: a target found only when the search narrows to one element is missed",
      },
      {
        kind: "wrong-comparator",
        find: "if (sorted[mid] < target) lo = mid + 1;",
        replace: "if (sorted[mid] > target) lo = mid + 1;",
        buggy: (sorted: number[], target: number) => binarySearch(sorted, target, "flipped"),
        description: "the comparison is flipped, so the search continues in the wrong half",
      },
    ],
  },
  {
    name: "compact",
    module: "arrays",
    doc: "A copy of `items` without null and undefined (0, false and empty strings are kept).",
    source: `function compact(items) {
  return items.filter((item) => item !== null && item !== undefined);
}`,
    ref: (items: unknown[]) => items.filter((item) => item !== null && item !== undefined),
    gen: (rng) => [Array.from({ length: rng.int(0, 7) }, () => rng.pick([1, 2, 3, 7, "a", "b", null, undefined, true]))],
    bugs: [
      {
        kind: "wrong-logic",
        find: "item !== null && item !== undefined",
        replace: "item !== null || item !== undefined",
        buggy: (items: unknown[]) => items.slice(),
        trigger: (rng) => {
          const item = () => [null, undefined, rng.int(-999, 999), pseudoWord(rng), 0, ""][rng.int(0, 5)];
          return [rng.shuffle([rng.pick([null, undefined]), ...Array.from({ length: rng.int(1, 6) }, item)])];
        },
        description: "`||` instead of `&&`: the condition is always true, so null and undefined are kept",
      },
      {
        kind: "missing-edge-case",
        find: "items.filter((item) => item !== null && item !== undefined)",
        replace: "items.filter((item) => Boolean(item))",
        buggy: (items: unknown[]) => items.filter((item) => Boolean(item)),
        trigger: (rng) => {
          const item = () => [0, "", false, null, rng.int(1, 999), pseudoWord(rng), rng.int(-999, -1)][rng.int(0, 6)];
          return [rng.shuffle([rng.pick([0, "", false]), ...Array.from({ length: rng.int(2, 6) }, item)])];
        },
        description: "filters on truthiness, so 0, false and empty strings are dropped too",
      },
    ],
  },
  {
    name: "sumBy",
    module: "arrays",
    doc: 'The sum of `item[key]` over `items`; the values may be numbers or numeric strings ("12").',
    source: `function sumBy(items, key) {
  let total = 0;
  for (const item of items) {
    total += Number(item[key]);
  }
  return total;
}`,
    ref: (items: Array<Record<string, unknown>>, key: string) => sumBy(items, key),
    gen: (rng) => [Array.from({ length: rng.int(0, 5) }, () => ({ name: rng.pick(WORDS), qty: rng.bool(0.25) ? String(rng.int(0, 50)) : rng.int(0, 50) })), "qty"],
    bugs: [
      {
        kind: "type-coercion",
        find: "total += Number(item[key]);",
        replace: "total += item[key];",
        buggy: (items: Array<Record<string, unknown>>, key: string) => sumBy(items, key, "coerce"),
        trigger: (rng) => {
          const items = Array.from({ length: rng.int(1, 5) }, () => ({ name: pseudoWord(rng), qty: rng.int(1, 99_999) as number | string }));
          const at = rng.int(0, items.length - 1);
          items[at]!.qty = String(items[at]!.qty);
          return [items, "qty"];
        },
        description: "adds the values without Number(): a numeric string turns the sum into string concatenation",
      },
      {
        kind: "early-return",
        find: "total += Number(item[key]);",
        replace: "return total + Number(item[key]);",
        buggy: (items: Array<Record<string, unknown>>, key: string) => sumBy(items, key, "first"),
        trigger: (rng) => [Array.from({ length: rng.int(2, 6) }, () => ({ name: pseudoWord(rng), qty: rng.int(1, 99_999) })), "qty"],
        description: "returns inside the loop, so only the first item is summed",
      },
    ],
  },
];

// ---- strings ---------------------------------------------------------------------------------------------

function truncate(text: string, max: number, suffix = "...", strict = false, plus = false): string {
  if (strict ? text.length < max : text.length <= max) return text;
  return text.slice(0, plus ? max + suffix.length : max - suffix.length) + suffix;
}

function titleCase(text: string, guard = true): string {
  return text
    .split(" ")
    .map((word) => (guard && word === "" ? word : word[0]!.toUpperCase() + word.slice(1).toLowerCase()))
    .join(" ");
}

function padLeft(value: unknown, width: number, fill = " ", short = false, bug: "" | "append" | "coerce" = ""): unknown {
  // "coerce" keeps a non-string value as is: its .length is undefined, so the loop never runs.
  if (bug === "coerce" && typeof value !== "string") return value;
  let text = String(value);
  while (text.length < (short ? width - 1 : width)) text = bug === "append" ? text + fill : fill + text;
  return text;
}

function slugify(text: string, bug: "" | "trim" | "plus" = ""): string {
  let s = text.toLowerCase().replace(bug === "plus" ? /[^a-z0-9]/g : /[^a-z0-9]+/g, "-");
  if (bug !== "trim") s = s.replace(/^-+|-+$/g, "");
  return s;
}

function countWords(text: string, bug: "" | "empty" | "trim" = ""): number {
  const words = (bug === "trim" ? text : text.trim()).split(/\s+/);
  return bug === "empty" ? words.length : words[0] === "" ? 0 : words.length;
}

const phrase = (rng: Rng) => {
  const n = rng.int(1, 4);
  return Array.from({ length: n }, () => mixCase(rng, rng.pick(WORDS))).join(rng.pick([" ", " ", " - ", ", ", "_", "!"]));
};
/** Like phrase, from made-up words (bug triggers). */
const wordsPhrase = (rng: Rng) => {
  const n = rng.int(1, 4);
  return Array.from({ length: n }, () => mixCase(rng, pseudoWord(rng))).join(rng.pick([" ", " ", " - ", ", ", "_", "!"]));
};

const STRINGS: FnSpec[] = [
  {
    name: "truncate",
    module: "strings",
    doc: "`text` cut to at most `max` characters, ending in `suffix` when it was cut.",
    source: `function truncate(text, max, suffix = "...") {
  if (text.length <= max) return text;
  return text.slice(0, max - suffix.length) + suffix;
}`,
    ref: (text: string, max: number, suffix?: string) => truncate(text, max, suffix),
    gen: (rng) => {
      const text = rng.sample(WORDS, rng.int(1, 3)).join(" ");
      const max = rng.int(4, 18);
      return rng.bool(0.5) ? [text, max] : [text, max, rng.pick(["~", "!", "…"])];
    },
    bugs: [
      {
        kind: "off-by-one",
        find: "if (text.length <= max) return text;",
        replace: "if (text.length < max) return text;",
        buggy: (text: string, max: number, suffix?: string) => truncate(text, max, suffix, true),
        trigger: (rng) => {
          const text = Array.from({ length: rng.int(1, 3) }, () => pseudoWord(rng)).join(" ");
          return rng.bool(0.5) ? [text, text.length] : [text, text.length, rng.pick(["~", "!"])];
        },
        description: "`<` instead of `<=`: text exactly `max` long is cut although it fits",
      },
      {
        kind: "wrong-default",
        find: 'function truncate(text, max, suffix = "...") {',
        replace: 'function truncate(text, max, suffix = "..") {',
        buggy: (text: string, max: number, suffix = "..") => truncate(text, max, suffix),
        trigger: (rng) => {
          const text = Array.from({ length: rng.int(2, 4) }, () => pseudoWord(rng)).join(" ");
          return [text, rng.int(4, text.length - 1)];
        },
        description: 'the default suffix is ".." instead of "..."',
      },
      {
        kind: "wrong-operator",
        find: "text.slice(0, max - suffix.length)",
        replace: "text.slice(0, max + suffix.length)",
        buggy: (text: string, max: number, suffix?: string) => truncate(text, max, suffix, false, true),
        trigger: (rng) => {
          const text = Array.from({ length: rng.int(2, 4) }, () => pseudoWord(rng)).join(" ");
          const max = rng.int(4, text.length - 1);
          return rng.bool(0.5) ? [text, max] : [text, max, rng.pick(["~", "!", "…"])];
        },
        description: "`+` instead of `-`: a cut text keeps suffix-length characters too many and ends up longer than `max`",
      },
    ],
  },
  {
    name: "titleCase",
    module: "strings",
    doc: "Every space-separated word capitalized, the rest of it lower case; spacing is kept.",
    source: `function titleCase(text) {
  return text
    .split(" ")
    .map((word) => (word === "" ? word : word[0].toUpperCase() + word.slice(1).toLowerCase()))
    .join(" ");
}`,
    ref: (text: string) => titleCase(text),
    gen: (rng) => [Array.from({ length: rng.int(1, 4) }, () => mixCase(rng, rng.pick(WORDS))).join(" ")],
    bugs: [
      {
        kind: "missing-edge-case",
        find: '.map((word) => (word === "" ? word : word[0].toUpperCase() + word.slice(1).toLowerCase()))',
        replace: ".map((word) => word[0].toUpperCase() + word.slice(1).toLowerCase())",
        buggy: (text: string) => titleCase(text, false),
        trigger: (rng) => {
          const words = Array.from({ length: rng.int(1, 3) }, () => mixCase(rng, pseudoWord(rng)));
          const where = rng.int(0, 2);
          return [where === 0 ? ` ${words.join(" ")}` : where === 1 ? `${words.join("  ")} ` : words.join("  ")];
        },
        description: "empty words (double, leading or trailing spaces) crash on word[0]",
      },
    ],
  },
  {
    name: "padLeft",
    module: "strings",
    doc: "`value` as text, padded on the left with `fill` to at least `width` characters.",
    source: `function padLeft(value, width, fill = " ") {
  let text = String(value);
  while (text.length < width) text = fill + text;
  return text;
}`,
    ref: (value: unknown, width: number, fill?: string) => padLeft(value, width, fill),
    gen: (rng) => {
      const value = rng.bool(0.6) ? rng.int(0, 999) : rng.pick(WORDS).slice(0, rng.int(1, 4));
      const width = rng.int(0, 8);
      return rng.bool(0.5) ? [value, width] : [value, width, rng.pick(["0", "*", "."])];
    },
    bugs: [
      {
        kind: "wrong-default",
        find: 'function padLeft(value, width, fill = " ") {',
        replace: 'function padLeft(value, width, fill = "0") {',
        buggy: (value: unknown, width: number, fill = "0") => padLeft(value, width, fill),
        trigger: (rng) => {
          const value = rng.int(0, 99_999);
          return [value, String(value).length + rng.int(1, 5)];
        },
        description: 'the default fill is "0" instead of a space',
      },
      {
        kind: "off-by-one",
        find: "while (text.length < width) text = fill + text;",
        replace: "while (text.length < width - 1) text = fill + text;",
        buggy: (value: unknown, width: number, fill?: string) => padLeft(value, width, fill, true),
        trigger: (rng) => {
          const value = rng.int(0, 99_999);
          const width = String(value).length + rng.int(1, 4);
          return rng.bool(0.5) ? [value, width] : [value, width, rng.pick(["0", "*"])];
        },
        description: "pads to `width - 1`: results are one character short",
      },
      {
        kind: "swapped-operands",
        find: "text = fill + text;",
        replace: "text = text + fill;",
        buggy: (value: unknown, width: number, fill?: string) => padLeft(value, width, fill, false, "append"),
        trigger: (rng) => {
          const value = rng.bool(0.5) ? rng.int(0, 99_999) : pseudoWord(rng);
          const width = String(value).length + rng.int(1, 4);
          return rng.bool(0.5) ? [value, width] : [value, width, rng.pick(["0", "*", "."])];
        },
        description: "the operands of `+` are swapped: the fill is appended on the right instead of the left",
      },
      {
        kind: "type-coercion",
        find: "let text = String(value);",
        replace: "let text = value;",
        buggy: (value: unknown, width: number, fill?: string) => padLeft(value, width, fill, false, "coerce"),
        trigger: (rng) => {
          const value = rng.int(0, 99_999);
          return rng.bool(0.5) ? [value, String(value).length + rng.int(0, 4)] : [value, String(value).length + rng.int(1, 4), rng.pick(["0", "*"])];
        },
        description: "the value is not converted with String(): a number has no length, so it comes back unpadded and still a number",
      },
    ],
  },
  {
    name: "slugify",
    module: "strings",
    doc: "A URL slug: lower case, every run of other characters replaced by one dash, no dash at either end.",
    source: `function slugify(text) {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}`,
    ref: (text: string) => slugify(text),
    gen: (rng) => [phrase(rng)],
    bugs: [
      {
        kind: "missing-edge-case",
        find: '\n    .replace(/^-+|-+$/g, "")',
        replace: "",
        buggy: (text: string) => slugify(text, "trim"),
        trigger: (rng) => [rng.pick([" ", "!", "-", "  ", "# "]) + wordsPhrase(rng) + rng.pick(["", "?", " ", "!!"])],
        description: "leading and trailing dashes are not trimmed",
      },
      {
        kind: "missing-edge-case",
        find: '.replace(/[^a-z0-9]+/g, "-")',
        replace: '.replace(/[^a-z0-9]/g, "-")',
        buggy: (text: string) => slugify(text, "plus"),
        trigger: (rng) => [Array.from({ length: rng.int(2, 3) }, () => mixCase(rng, pseudoWord(rng))).join(rng.pick([" - ", ", ", "  ", "!?"]))],
        description: "each separator character becomes its own dash, so runs of separators give several dashes",
      },
    ],
  },
  {
    name: "countWords",
    module: "strings",
    doc: "The number of whitespace-separated words in `text`.",
    source: `function countWords(text) {
  const words = text.trim().split(/\\s+/);
  return words[0] === "" ? 0 : words.length;
}`,
    ref: (text: string) => countWords(text),
    gen: (rng) => [Array.from({ length: rng.int(1, 5) }, () => rng.pick(WORDS)).join(rng.pick([" ", "  ", "\t", "\n"]))],
    bugs: [
      {
        kind: "missing-edge-case",
        find: 'return words[0] === "" ? 0 : words.length;',
        replace: "return words.length;",
        buggy: (text: string) => countWords(text, "empty"),
        trigger: (rng) => [Array.from({ length: rng.int(0, 24) }, () => rng.pick(WHITESPACE)).join("")],
        description: "an empty or all-whitespace text counts as one word",
      },
      {
        kind: "missing-edge-case",
        find: "const words = text.trim().split(/\\s+/);",
        replace: "const words = text.split(/\\s+/);",
        buggy: (text: string) => countWords(text, "trim"),
        trigger: (rng) => [rng.pick([" ", "  ", "\t", "\n "]) + Array.from({ length: rng.int(1, 4) }, () => pseudoWord(rng)).join(" ") + rng.pick(["", " ", "\n"])],
        description: "the text is not trimmed, so leading or trailing whitespace changes the count",
      },
    ],
  },
];

// ---- numbers ---------------------------------------------------------------------------------------------

function roundTo(value: number, digits = 2, minusOne = false): number {
  const factor = 10 ** (minusOne ? digits - 1 : digits);
  return Math.round(value * factor) / factor;
}

function median(values: number[], bug: "" | "lexical" | "shifted" | "precedence" = ""): number | null {
  if (values.length === 0) return null;
  const sorted = bug === "lexical" ? values.slice().sort() : values.slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length % 2 !== 0) return sorted[mid]!;
  if (bug === "precedence") return sorted[mid - 1]! + sorted[mid]! / 2;
  return bug === "shifted" ? (sorted[mid]! + sorted[mid + 1]!) / 2 : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function isPrime(n: number, bug: "" | "square" | "integer" | "early" = ""): boolean {
  if ((bug !== "integer" && !Number.isInteger(n)) || n < 2) return false;
  for (let d = 2; bug === "square" ? d * d < n : d * d <= n; d++) {
    if (bug === "early") return n % d !== 0;
    if (n % d === 0) return false;
  }
  return true;
}

function formatThousands(n: number, bug: "" | "comma" | "sign" = ""): string {
  const sign = n < 0 ? "-" : "";
  const digits = bug === "sign" ? String(Math.trunc(n)) : String(Math.abs(Math.trunc(n)));
  let out = "";
  for (let i = 0; i < digits.length; i++) {
    if ((bug === "comma" ? i >= 0 : i > 0) && (digits.length - i) % 3 === 0) out += ",";
    out += digits[i];
  }
  return sign + out;
}

function gcd(a: number, b: number): number {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** The smallest prime >= n. */
function primeAtLeast(n: number): number {
  while (!isPrime(n)) n++;
  return n;
}

const NUMBERS: FnSpec[] = [
  {
    name: "roundTo",
    module: "numbers",
    doc: "`value` rounded to `digits` decimal places (default 2).",
    source: `function roundTo(value, digits = 2) {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}`,
    ref: (value: number, digits?: number) => roundTo(value, digits),
    gen: (rng) => {
      const value = rng.int(-99999, 99999) / 1000;
      return rng.bool(0.5) ? [value] : [value, rng.int(0, 3)];
    },
    bugs: [
      {
        kind: "wrong-default",
        find: "function roundTo(value, digits = 2) {",
        replace: "function roundTo(value, digits = 0) {",
        buggy: (value: number, digits = 0) => roundTo(value, digits),
        trigger: (rng) => [rng.int(-99999, 99999) / 1000],
        description: "the default is 0 digits instead of 2",
      },
      {
        kind: "off-by-one",
        find: "const factor = 10 ** digits;",
        replace: "const factor = 10 ** (digits - 1);",
        buggy: (value: number, digits?: number) => roundTo(value, digits, true),
        description: "rounds to one decimal place fewer than asked",
      },
    ],
  },
  {
    name: "median",
    module: "numbers",
    doc: "The median of `values` (the mean of the middle two for an even count), or null for an empty list.",
    source: `function median(values) {
  if (values.length === 0) return null;
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length % 2 !== 0) return sorted[mid];
  return (sorted[mid - 1] + sorted[mid]) / 2;
}`,
    ref: (values: number[]) => median(values),
    gen: (rng) => [ints(rng, rng.int(1, 7), 1, 150)],
    bugs: [
      {
        kind: "wrong-comparator",
        find: ".sort((a, b) => a - b);",
        replace: ".sort();",
        buggy: (values: number[]) => median(values, "lexical"),
        trigger: (rng) => [rng.shuffle([...ints(rng, rng.int(1, 3), 2, 9), ...ints(rng, rng.int(1, 3), 10, 150)])],
        description: "sorts with the default comparator, which orders numbers as strings (10 before 9)",
      },
      {
        kind: "wrong-operator",
        find: "return (sorted[mid - 1] + sorted[mid]) / 2;",
        replace: "return sorted[mid - 1] + sorted[mid] / 2;",
        buggy: (values: number[]) => median(values, "precedence"),
        trigger: (rng) => [ints(rng, 2 * rng.int(1, 3), 1, 99_999)],
        description: "the parentheses are missing: for an even count only the upper middle value is halved (`/` binds tighter than `+`)",
      },
      {
        kind: "off-by-one",
        find: "return (sorted[mid - 1] + sorted[mid]) / 2;",
        replace: "return (sorted[mid] + sorted[mid + 1]) / 2;",
        buggy: (values: number[]) => median(values, "shifted"),
        trigger: (rng) => [ints(rng, 2 * rng.int(1, 3), 1, 150)],
        description: "for an even count it averages the wrong pair (one position too far)",
      },
    ],
  },
  {
    name: "isPrime",
    module: "numbers",
    doc: "Whether `n` is a prime number (non-integers are not).",
    source: `function isPrime(n) {
  if (!Number.isInteger(n) || n < 2) return false;
  for (let d = 2; d * d <= n; d++) {
    if (n % d === 0) return false;
  }
  return true;
}`,
    ref: (n: number) => isPrime(n),
    gen: (rng) => [rng.int(0, 200)],
    bugs: [
      {
        kind: "off-by-one",
        find: "for (let d = 2; d * d <= n; d++) {",
        replace: "for (let d = 2; d * d < n; d++) {",
        buggy: (n: number) => isPrime(n, "square"),
        trigger: (rng) => [primeAtLeast(rng.int(2, 100_000)) ** 2],
        description: "`<` instead of `<=`: squares of primes (4, 9, 25, ...) are reported prime",
      },
      {
        kind: "early-return",
        find: "if (n % d === 0) return false;",
        replace: "return n % d !== 0;",
        buggy: (n: number) => isPrime(n, "early"),
        trigger: (rng) => [(2 * rng.int(1, 999) + 1) * (2 * rng.int(1, 999) + 1)],
        description: "returns on the first divisor tried (2), so every odd number from 9 up is reported prime",
      },
      {
        kind: "missing-edge-case",
        find: "if (!Number.isInteger(n) || n < 2) return false;",
        replace: "if (n < 2) return false;",
        buggy: (n: number) => isPrime(n, "integer"),
        trigger: (rng) => [rng.int(2, 99_999) + rng.int(1, 999) / 1000],
        description: "non-integers are not rejected, and some are reported prime",
      },
    ],
  },
  {
    name: "formatThousands",
    module: "numbers",
    doc: "The integer part of `n` with commas between groups of three digits, e.g. -1,234,567.",
    source: `function formatThousands(n) {
  const sign = n < 0 ? "-" : "";
  const digits = String(Math.abs(Math.trunc(n)));
  let out = "";
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ",";
    out += digits[i];
  }
  return sign + out;
}`,
    ref: (n: number) => formatThousands(n),
    gen: (rng) => [(rng.bool(0.3) ? -1 : 1) * rng.int(0, 10 ** rng.int(1, 9))],
    bugs: [
      {
        kind: "off-by-one",
        find: "if (i > 0 && (digits.length - i) % 3 === 0) out += \",\";",
        replace: "if (i >= 0 && (digits.length - i) % 3 === 0) out += \",\";",
        buggy: (n: number) => formatThousands(n, "comma"),
        trigger: (rng) => {
          const k = rng.int(1, 3);
          return [(rng.bool(0.3) ? -1 : 1) * rng.int(10 ** (3 * k - 1), 10 ** (3 * k) - 1)];
        },
        description: "`>=` instead of `>`: numbers whose digit count is a multiple of 3 get a leading comma",
      },
      {
        kind: "missing-edge-case",
        find: "const digits = String(Math.abs(Math.trunc(n)));",
        replace: "const digits = String(Math.trunc(n));",
        buggy: (n: number) => formatThousands(n, "sign"),
        trigger: (rng) => [-rng.int(100, 9_999_999)],
        description: "negative numbers keep their minus sign among the digits: it is printed twice and grouped like a digit",
      },
    ],
  },
  {
    name: "clamp",
    module: "numbers",
    doc: "`value` limited to the range [min, max].",
    source: `function clamp(value, min, max) {
  return Math.min(Math.max(value, min), max);
}`,
    ref: (value: number, min: number, max: number) => Math.min(Math.max(value, min), max),
    gen: (rng) => {
      const min = rng.int(-20, 10);
      return [rng.int(-40, 40), min, min + rng.int(0, 30)];
    },
    bugs: [
      {
        kind: "swapped-operands",
        find: "function clamp(value, min, max) {",
        replace: "function clamp(value, max, min) {",
        // The parameters are swapped, so min is the caller's max and max the caller's min.
        buggy: (value: number, min: number, max: number) => Math.min(Math.max(value, max), min),
        trigger: (rng) => {
          const min = rng.int(-99_999, 99_999);
          const max = min + rng.int(1, 9_999);
          return [rng.int(min + 1, max + 9_999), min, max];
        },
        description: "the parameters are declared as (value, max, min): min and max are swapped, so every value above min comes back as min",
      },
    ],
    decoy: { line: "return Math.min(Math.max(value, min), max);", comment: "// FIXME(review): are min and max swapped here? Math.min with max looks backwards." },
  },
  {
    name: "gcd",
    module: "numbers",
    doc: "The greatest common divisor of two integers (always >= 0).",
    source: `function gcd(a, b) {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b !== 0) {
    [a, b] = [b, a % b];
  }
  return a;
}`,
    ref: (a: number, b: number) => gcd(a, b),
    gen: (rng) => {
      const k = rng.int(1, 12);
      return [k * rng.int(-20, 20), k * rng.int(-20, 20)];
    },
    bugs: [],
    decoy: { line: "while (b !== 0) {", comment: "// FIXME(review): can this loop forever for negative inputs? Maybe it should be `b > 0`." },
  },
];

// ---- dates (ISO "YYYY-MM-DD" strings, UTC) -------------------------------------------------------------

const DAY_NAMES = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const utc = (iso: string) => new Date(`${iso}T00:00:00Z`);

function isLeapYear(year: number, bug: "" | "400" | "100" | "inverted" = ""): boolean {
  if (bug === "inverted") return (year % 4 === 0 && year % 100 === 0) || year % 400 === 0;
  if (bug === "400") return year % 4 === 0 && year % 100 !== 0;
  if (bug === "100") return year % 4 === 0;
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function formatDuration(total: number, orEqual = false): string {
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  const mm = String(minutes).padStart(2, "0");
  const ss = String(seconds).padStart(2, "0");
  return (orEqual ? hours >= 0 : hours > 0) ? `${hours}:${mm}:${ss}` : `${minutes}:${ss}`;
}

const DATES: FnSpec[] = [
  {
    name: "isLeapYear",
    module: "dates",
    doc: "Whether `year` is a leap year in the Gregorian calendar.",
    source: `function isLeapYear(year) {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}`,
    ref: (year: number) => isLeapYear(year),
    gen: (rng) => [rng.bool(0.2) ? 100 * rng.int(15, 30) : rng.int(1890, 2110)],
    bugs: [
      {
        kind: "missing-edge-case",
        find: "return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;",
        replace: "return year % 4 === 0 && year % 100 !== 0;",
        buggy: (year: number) => isLeapYear(year, "400"),
        trigger: (rng) => [400 * rng.int(1, 25_000)],
        description: "the 400-year rule is missing: 1600, 2000 and 2400 are reported as common years",
      },
      {
        kind: "missing-edge-case",
        find: "return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;",
        replace: "return year % 4 === 0;",
        buggy: (year: number) => isLeapYear(year, "100"),
        // Centuries not divisible by 400: 100 * k with k not a multiple of 4.
        trigger: (rng) => [100 * (4 * rng.int(0, 24_999) + rng.int(1, 3))],
        description: "the 100-year rule is missing: 1900 and 2100 are reported as leap years",
      },
      {
        kind: "wrong-logic",
        find: "year % 100 !== 0",
        replace: "year % 100 === 0",
        buggy: (year: number) => isLeapYear(year, "inverted"),
        trigger: (rng) => [4 * rng.int(1, 2_499_999)],
        description: "the century condition is inverted (`=== 0` for `!== 0`): ordinary leap years such as 2024 are missed and 1900 is reported leap",
      },
    ],
  },
  {
    name: "daysInMonth",
    module: "dates",
    doc: "The number of days in `month` (1-12) of `year`.",
    source: `function daysInMonth(year, month) {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}`,
    ref: (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate(),
    gen: (rng) => [rng.int(1990, 2030), rng.int(1, 12)],
    bugs: [
      {
        kind: "off-by-one",
        find: "Date.UTC(year, month, 0)",
        replace: "Date.UTC(year, month - 1, 0)",
        buggy: (year: number, month: number) => new Date(Date.UTC(year, month - 1, 0)).getUTCDate(),
        trigger: (rng) => [rng.int(1000, 9999), rng.pick([2, 3, 4, 5, 6, 7, 9, 10, 11, 12])],
        description: "asks for day 0 of the month itself, i.e. the length of the previous month",
      },
    ],
    decoy: { line: "return new Date(Date.UTC(year, month, 0)).getUTCDate();", comment: "// FIXME(review): month is 1-based here but Date.UTC wants 0-based months; off by one?" },
  },
  {
    name: "weekday",
    module: "dates",
    doc: 'The three-letter weekday of an ISO date, e.g. weekday("2024-01-01") === "Mon".',
    source: `function weekday(isoDate) {
  const names = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  return names[new Date(isoDate + "T00:00:00Z").getUTCDay()];
}`,
    ref: (iso: string) => DAY_NAMES[utc(iso).getUTCDay()],
    gen: (rng) => [isoDate(rng)],
    bugs: [
      {
        kind: "off-by-one",
        find: 'const names = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];',
        replace: 'const names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];',
        buggy: (iso: string) => ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][utc(iso).getUTCDay()],
        trigger: (rng) => [wideIsoDate(rng)],
        description: "the name table starts on Monday, but getUTCDay() counts from Sunday: every day is shifted by one",
      },
    ],
  },
  {
    name: "formatDuration",
    module: "dates",
    doc: 'A number of seconds as "m:ss", or "h:mm:ss" from one hour up.',
    source: `function formatDuration(totalSeconds) {
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  const mm = String(minutes).padStart(2, "0");
  const ss = String(seconds).padStart(2, "0");
  return hours > 0 ? \`\${hours}:\${mm}:\${ss}\` : \`\${minutes}:\${ss}\`;
}`,
    ref: (total: number) => formatDuration(total),
    gen: (rng) => [rng.bool(0.5) ? rng.int(0, 3599) : rng.int(3600, 40000)],
    bugs: [
      {
        kind: "wrong-comparator",
        find: "return hours > 0 ?",
        replace: "return hours >= 0 ?",
        buggy: (total: number) => formatDuration(total, true),
        trigger: (rng) => [rng.int(0, 3599)],
        description: '`>=` instead of `>`: durations under an hour get a "0:" hour part',
      },
    ],
  },
  {
    name: "quarter",
    module: "dates",
    doc: "The calendar quarter (1-4) of an ISO date.",
    source: `function quarter(isoDate) {
  const month = new Date(isoDate + "T00:00:00Z").getUTCMonth();
  return Math.floor(month / 3) + 1;
}`,
    ref: (iso: string) => Math.floor(utc(iso).getUTCMonth() / 3) + 1,
    gen: (rng) => [isoDate(rng)],
    bugs: [
      {
        kind: "off-by-one",
        find: "return Math.floor(month / 3) + 1;",
        replace: "return Math.ceil(month / 3);",
        buggy: (iso: string) => Math.ceil(utc(iso).getUTCMonth() / 3),
        trigger: (rng) => [new Date(Date.UTC(rng.int(1000, 9999), rng.pick([0, 3, 6, 9]), rng.int(1, 28))).toISOString().slice(0, 10)],
        description: "uses ceil on the 0-based month: the first month of every quarter lands in the previous one",
      },
    ],
  },
  {
    name: "isWeekend",
    module: "dates",
    doc: "Whether an ISO date falls on a Saturday or Sunday.",
    source: `function isWeekend(isoDate) {
  const day = new Date(isoDate + "T00:00:00Z").getUTCDay();
  return day === 0 || day === 6;
}`,
    ref: (iso: string) => [0, 6].includes(utc(iso).getUTCDay()),
    gen: (rng) => [isoDate(rng)],
    bugs: [
      {
        kind: "wrong-comparator",
        find: "return day === 0 || day === 6;",
        replace: "return day > 5;",
        buggy: (iso: string) => utc(iso).getUTCDay() > 5,
        trigger: (rng) => {
          const d = utc(wideIsoDate(rng));
          d.setUTCDate(d.getUTCDate() - d.getUTCDay());
          return [d.toISOString().slice(0, 10)];
        },
        description: "`day > 5` only matches Saturday: Sundays (day 0) are missed",
      },
      {
        kind: "wrong-logic",
        find: "return day === 0 || day === 6;",
        replace: "return day === 0 && day === 6;",
        buggy: () => false,
        trigger: (rng) => {
          const d = utc(wideIsoDate(rng));
          d.setUTCDate(d.getUTCDate() - d.getUTCDay() + rng.pick([0, 6]));
          return [d.toISOString().slice(0, 10)];
        },
        description: "`&&` instead of `||`: a day cannot be both 0 and 6, so no date is a weekend",
      },
    ],
  },
  {
    name: "addDays",
    module: "dates",
    doc: "The ISO date `days` days after `isoDate` (negative: before).",
    source: `function addDays(isoDate, days) {
  const date = new Date(isoDate + "T00:00:00Z");
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
}`,
    ref: (iso: string, days: number) => {
      const d = utc(iso);
      d.setUTCDate(d.getUTCDate() + days);
      return d.toISOString().slice(0, 10);
    },
    gen: (rng) => [isoDate(rng), rng.int(-400, 400)],
    bugs: [
      {
        kind: "wrong-operator",
        find: "date.setUTCDate(date.getUTCDate() + days);",
        replace: "date.setUTCDate(date.getUTCDate() - days);",
        buggy: (iso: string, days: number) => {
          const d = utc(iso);
          d.setUTCDate(d.getUTCDate() - days);
          return d.toISOString().slice(0, 10);
        },
        trigger: (rng) => [wideIsoDate(rng), (rng.bool(0.5) ? -1 : 1) * rng.int(1, 2000)],
        description: "`-` instead of `+`: the date moves the wrong way (days before instead of after)",
      },
    ],
  },
  {
    name: "daysBetween",
    module: "dates",
    doc: "Whole days from ISO date `from` to ISO date `to` (negative when `to` is earlier).",
    source: `function daysBetween(from, to) {
  const ms = Date.parse(to + "T00:00:00Z") - Date.parse(from + "T00:00:00Z");
  return Math.round(ms / 86400000);
}`,
    ref: (from: string, to: string) => Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86400000),
    gen: (rng) => [isoDate(rng), isoDate(rng)],
    bugs: [
      {
        kind: "swapped-operands",
        find: 'const ms = Date.parse(to + "T00:00:00Z") - Date.parse(from + "T00:00:00Z");',
        replace: 'const ms = Date.parse(from + "T00:00:00Z") - Date.parse(to + "T00:00:00Z");',
        buggy: (from: string, to: string) => Math.round((Date.parse(`${from}T00:00:00Z`) - Date.parse(`${to}T00:00:00Z`)) / 86400000),
        trigger: (rng) => [wideIsoDate(rng), wideIsoDate(rng)],
        description: "the operands of the subtraction are swapped: every result has the wrong sign",
      },
    ],
  },
];

/** Every function of the library, by module. */
export const LIBRARY: Readonly<Record<ModuleName, readonly FnSpec[]>> = { arrays: ARRAYS, strings: STRINGS, numbers: NUMBERS, dates: DATES };

/** A function of the library by name. */
export function fnSpec(name: string): FnSpec {
  for (const m of MODULES) {
    const hit = LIBRARY[m].find((f) => f.name === name);
    if (hit) return hit;
  }
  throw new Error(`no library function "${name}"`);
}

/** JavaScript source text of a value (arrays, plain objects, strings, numbers, booleans, null, undefined). */
export function toJs(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "number") return Object.is(value, -0) ? "-0" : Number.isNaN(value) ? "NaN" : String(value);
  if (typeof value === "string" || typeof value === "boolean" || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(toJs).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}: ${toJs(v)}`);
    return entries.length === 0 ? "{}" : `{ ${entries.join(", ")} }`;
  }
  throw new Error(`cannot write ${typeof value} as JavaScript`);
}

/** What a call gives: its value, or that it threw. */
export function outcome(fn: Fn, args: readonly unknown[]): { value: unknown } | { threw: true } {
  try {
    return { value: fn(...args) };
  } catch {
    return { threw: true };
  }
}

/** Structural equality as the sandbox's assert sees it (=== on primitives, NaN equal to NaN). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b || (Number.isNaN(a) && Number.isNaN(b))) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
