/**
 * Shell glob patterns (`*`, `?`, `[...]`, backslash escapes), used for pathname expansion and
 * `find -name`. Matching is a linear-backtracking scan (one resumable star), so no pattern can
 * make it exponential.
 */
import { POSIX_CLASSES, foldCase, inBracket, type BracketSet } from "./chars.js";

type GlobToken = { t: "lit"; cp: number } | { t: "any" } | { t: "star" } | { t: "class"; set: BracketSet };

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
        tokens.push({ t: "class", set: parsed.set });
        i = parsed.end - 1;
      } else {
        tokens.push({ t: "lit", cp });
      }
    } else if (cp === 0x5c /* \ */ && i + 1 < cps.length) {
      i += 1;
      tokens.push({ t: "lit", cp: cps[i] });
    } else {
      tokens.push({ t: "lit", cp });
    }
  }
  return tokens;
}

/** True when `text` matches the whole glob pattern. */
export function matchGlob(pattern: string | GlobToken[], text: string, options: { caseInsensitive?: boolean } = {}): boolean {
  const tokens = typeof pattern === "string" ? compileGlob(pattern) : pattern;
  const icase = options.caseInsensitive === true;
  const chars = Array.from(text, (c) => c.codePointAt(0)!);
  const one = (tok: GlobToken, cp: number): boolean => {
    switch (tok.t) {
      case "any":
        return true;
      case "lit":
        return icase ? foldCase(tok.cp) === foldCase(cp) : tok.cp === cp;
      case "class":
        return inBracket(tok.set, cp, icase);
      default:
        return false;
    }
  };
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = -1;
  while (t < chars.length) {
    if (p < tokens.length && tokens[p].t === "star") {
      starP = p++;
      starT = t;
    } else if (p < tokens.length && one(tokens[p], chars[t])) {
      p += 1;
      t += 1;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (p < tokens.length && tokens[p].t === "star") p += 1;
  return p === tokens.length;
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
