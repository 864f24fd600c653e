/**
 * String helpers for awk's builtins. awk counts characters, not UTF-16 code units, so positions and
 * lengths go through code points when a string holds surrogate pairs (and take the fast path when it
 * does not, which is nearly always). Also: sub/gsub's replacement rules and the seeded random numbers.
 */

const SURROGATE = /[\uD800-\uDFFF]/;

/** Length in characters (code points). */
export function charLength(s: string): number {
  if (!SURROGATE.test(s)) return s.length;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    n += 1;
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) i += 1;
  }
  return n;
}

/** Characters [from, to) of `s`, 0-based character positions. */
export function charSlice(s: string, from: number, to: number): string {
  if (!SURROGATE.test(s)) return s.slice(from, to);
  return Array.from(s).slice(from, to).join("");
}

/** The character position of UTF-16 offset `offset` in `s`. */
export function charIndex(s: string, offset: number): number {
  return SURROGATE.test(s) ? charLength(s.slice(0, offset)) : offset;
}

/**
 * awk's substr(s, m[, n]) as gawk computes it: a start below 1 counts as 1 (the length is not
 * shortened), the start and length are truncated to integers, and a length below 1 gives "".
 */
export function substr(s: string, m: number, n: number | undefined): string {
  if (n !== undefined && !(n >= 1)) return "";
  const start = m >= 1 ? Math.trunc(m) : 1;
  const len = charLength(s);
  if (start > len) return "";
  const end = n === undefined ? len + 1 : Math.min(len + 1, start + Math.trunc(n));
  return charSlice(s, start - 1, end - 1);
}

/**
 * toupper/tolower character by character, as awk does: a character whose case mapping is longer
 * (ß → SS) stays as it is, so lengths never change.
 */
export function changeCase(s: string, upper: boolean): string {
  const whole = upper ? s.toUpperCase() : s.toLowerCase();
  if (whole.length === s.length && !/[^\x00-\x7f]/.test(s)) return whole;
  let out = "";
  for (const ch of s) {
    const mapped = upper ? ch.toUpperCase() : ch.toLowerCase();
    out += Array.from(mapped).length === 1 ? mapped : ch;
  }
  return out;
}

/** A parsed sub/gsub replacement: literal text, with `null` where the matched text goes. */
export type Replacement = Array<string | null>;

/**
 * Parses a replacement as POSIX and gawk do: `&` is the matched text, `\&` a literal ampersand,
 * `\\` a literal backslash; any other backslash stays as written.
 */
export function parseReplacement(repl: string): Replacement {
  const parts: Replacement = [];
  let text = "";
  for (let i = 0; i < repl.length; i++) {
    const c = repl[i];
    if (c === "\\" && (repl[i + 1] === "&" || repl[i + 1] === "\\")) {
      text += repl[++i];
    } else if (c === "&") {
      parts.push(text, null);
      text = "";
    } else {
      text += c;
    }
  }
  parts.push(text);
  return parts;
}

/** The replacement text for one match. */
export function expandReplacement(parts: Replacement, matched: string): string {
  if (parts.length === 1) return parts[0] as string;
  let out = "";
  for (const p of parts) out += p === null ? matched : p;
  return out;
}

/**
 * The matches sub (first only) or gsub (all) replaces, from the regex's leftmost-longest matches
 * including empty ones: an empty match right where a non-empty one ended is skipped, as in every awk
 * (gsub(/b*\/, "-", "abc") gives "-a-c-").
 */
export function substitutionMatches(all: Array<[number, number]>, global: boolean): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let lastEnd = -1;
  for (const m of all) {
    if (m[0] === m[1] && m[0] === lastEnd) continue;
    out.push(m);
    if (!global) break;
    lastEnd = m[1] > m[0] ? m[1] : -1;
  }
  return out;
}

/**
 * rand()'s generator: mulberry32, seeded from srand's argument (0 until srand is called). Seeded and
 * never from the clock, so a program's output is the same on every run.
 */
export class Random {
  private state = 0;
  /** The seed in force (srand returns the previous one). */
  seed = 0;

  constructor() {
    this.reseed(0);
  }

  /** Sets the seed; returns the previous one. */
  reseed(seed: number): number {
    const previous = this.seed;
    this.seed = seed;
    const t = Number.isFinite(seed) ? Math.trunc(seed) : 0;
    // Mix the integer's two 32-bit halves so that large seeds differ too.
    this.state = (Number(BigInt.asUintN(32, BigInt(t))) ^ Math.imul(Math.floor(t / 2 ** 32) | 0, 0x9e3779b9)) >>> 0;
    return previous;
  }

  /** A number in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}
