/**
 * Shell glob patterns (`*`, `?`, `[...]`, backslash escapes), used for pathname expansion and
 * `find -name`. Matching is a linear-backtracking scan (one resumable star), so no pattern can
 * make it exponential; it is still O(pattern × text) in the worst case, so every step is charged
 * to the caller's WorkMeter.
 */
import { CharSet, POSIX_CLASSES, foldCase, type BracketSet } from "./chars.js";
import { UNMETERED, type WorkMeter } from "./limits.js";

type GlobToken =
  | { t: "lit"; cp: number; folded: number }
  | { t: "any" }
  | { t: "star" }
  | { t: "class"; exact: CharSet; folded: CharSet };

/** Steps charged at a time: charging each comparison would cost more than the comparison. */
const CHARGE_EVERY = 1024;

/** Parses a bracket expression starting after '['; returns the set and the index after ']', or null. */
function parseBracket(cps: number[], start: number): { set: BracketSet; end: number } | null {
  let i = start;
  const set: BracketSet = { negate: false, ranges: [], classes: [] };
  if (cps[i] === 0x21 /* ! */ || cps[i] === 0x5e /* ^ */) {
    set.negate = true;
    i += 1;
  }
  let first = true;
  while (i < cps.length) {
    let cp = cps[i];
    if (cp === 0x5d /* ] */ && !first) return { set, end: i + 1 };
    first = false;
    if (cp === 0x5b /* [ */ && cps[i + 1] === 0x3a /* : */) {
      const close = findClassEnd(cps, i + 2);
      if (close > 0) {
        const name = String.fromCodePoint(...cps.slice(i + 2, close));
        if (name in POSIX_CLASSES) {
          set.classes.push(name);
          i = close + 2;
          continue;
        }
      }
    }
    if (cp === 0x5c /* \ */ && i + 1 < cps.length) {
      i += 1;
      cp = cps[i];
    }
    if (cps[i + 1] === 0x2d /* - */ && i + 2 < cps.length && cps[i + 2] !== 0x5d) {
      let hi = cps[i + 2];
      let skip = 3;
      if (hi === 0x5c && i + 3 < cps.length) {
        hi = cps[i + 3];
        skip = 4;
      }
      if (cp <= hi) set.ranges.push([cp, hi]);
      i += skip;
      continue;
    }
    set.ranges.push([cp, cp]);
    i += 1;
  }
  return null;
}

function findClassEnd(cps: number[], from: number): number {
  for (let j = from; j + 1 < cps.length && j < from + 16; j++) {
    if (cps[j] === 0x3a && cps[j + 1] === 0x5d) return j;
  }
  return -1;
}

/** A literal token, with its case folding computed once rather than per comparison. */
function literal(cp: number): GlobToken {
  return { t: "lit", cp, folded: foldCase(cp) };
}

/** Compiles a glob pattern into tokens. An unterminated '[' is a literal, as in bash. */
export function compileGlob(pattern: string): GlobToken[] {
  const cps = Array.from(pattern, (c) => c.codePointAt(0)!);
  const tokens: GlobToken[] = [];
  const lastClose = cps.lastIndexOf(0x5d);
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i];
    if (cp === 0x2a /* * */) {
      if (tokens[tokens.length - 1]?.t !== "star") tokens.push({ t: "star" });
    } else if (cp === 0x3f /* ? */) {
      tokens.push({ t: "any" });
    } else if (cp === 0x5b /* [ */) {
      // Without any later ']' the bracket cannot close: skip the scan (keeps hostile input linear).
      const parsed = lastClose > i + 1 ? parseBracket(cps, i + 1) : null;
      if (parsed) {
        tokens.push({ t: "class", exact: new CharSet(parsed.set, false), folded: new CharSet(parsed.set, true) });
        i = parsed.end - 1;
      } else {
        tokens.push(literal(cp));
      }
    } else if (cp === 0x5c /* \ */ && i + 1 < cps.length) {
      i += 1;
      tokens.push(literal(cps[i]));
    } else {
      tokens.push(literal(cp));
    }
  }
  return tokens;
}

/** True when `text` matches the whole glob pattern; each comparison is charged to `meter`. */
export function matchGlob(
  pattern: string | GlobToken[],
  text: string,
  options: { caseInsensitive?: boolean; meter?: WorkMeter } = {},
): boolean {
  const tokens = typeof pattern === "string" ? compileGlob(pattern) : pattern;
  const icase = options.caseInsensitive === true;
  const meter = options.meter ?? UNMETERED;
  const chars = Array.from(text, (c) => c.codePointAt(0)!);
  const folded = icase ? chars.map(foldCase) : chars;
  meter.charge(chars.length + 1);
  const one = (tok: GlobToken, at: number): boolean => {
    switch (tok.t) {
      case "any":
        return true;
      case "lit":
        return icase ? tok.folded === folded[at] : tok.cp === chars[at];
      case "class":
        return (icase ? tok.folded : tok.exact).has(chars[at]);
      default:
        return false;
    }
  };
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = -1;
  let steps = 0;
  const done = (matched: boolean): boolean => {
    meter.charge(steps);
    return matched;
  };
  while (t < chars.length) {
    if (++steps === CHARGE_EVERY) {
      meter.charge(steps);
      steps = 0;
    }
    if (p < tokens.length && tokens[p].t === "star") {
      starP = p++;
      starT = t;
    } else if (p < tokens.length && one(tokens[p], t)) {
      p += 1;
      t += 1;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else {
      return done(false);
    }
  }
  while (p < tokens.length && tokens[p].t === "star") p += 1;
  return done(p === tokens.length);
}

/** True when the pattern has an unescaped glob metacharacter, i.e. pathname expansion applies. */
export function hasGlobMeta(pattern: string): boolean {
  const lastClose = pattern.lastIndexOf("]");
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\") i += 1;
    else if (c === "*" || c === "?") return true;
    else if (c === "[" && lastClose > i + 1) return true;
  }
  return false;
}

/** Escapes glob metacharacters so the text matches only itself. */
export function escapeGlob(text: string): string {
  return text.replace(/[\\*?[\]]/g, "\\$&");
}

/** Removes glob escapes (for a pattern that matched nothing and is used literally). */
export function unescapeGlob(pattern: string): string {
  return pattern.replace(/\\(.)/gsu, "$1");
}
