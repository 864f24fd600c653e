/**
 * awk regexes on the sandbox's Pike VM (../../regex.ts: linear time, never JS RegExp on agent input).
 * awk's EREs differ from grep -E in their escapes: `\t`, `\n`, `\/`, `\"`, `\ddd` are characters (also
 * inside brackets, where `\]` and `\\` are literal too), and gawk's `\y` is a word boundary. This module
 * rewrites an awk regex into the grep dialect, and caches compiled regexes (dynamic regexes are strings
 * computed at run time; each distinct one is compiled once).
 */
import type { WorkMeter } from "../../limits.js";
import { compilePatterns, RegexSyntaxError, type CompiledPattern } from "../../regex.js";
import { MAX_CACHED_REGEXES } from "./errors.js";

const C_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", f: "\f", v: "\v", a: "\x07", b: "\b", "/": "/", '"': '"' };
/** Characters special in a grep ERE outside brackets. */
const ERE_SPECIAL = new Set([".", "[", "]", "(", ")", "*", "+", "?", "{", "}", "|", "^", "$", "\\"]);
/** Characters that cannot stand for themselves inside a bracket expression; written as [.c.] there. */
const BRACKET_SPECIAL = new Set(["]", "[", "^", "-"]);
const isOctal = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "7";
const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9a-fA-F]$/.test(c);

/** Reads an escape at src[i] === "\\"; returns the character it stands for (null if it is an operator) and the next index. */
function escapeAt(src: string, i: number): { char: string | null; next: number } {
  const e = src[i + 1];
  if (e === undefined) throw new RegexSyntaxError("Trailing backslash");
  if (e in C_ESCAPES) return { char: C_ESCAPES[e], next: i + 2 };
  if (isOctal(e)) {
    let j = i + 1;
    let digits = "";
    while (digits.length < 3 && isOctal(src[j])) digits += src[j++];
    return { char: String.fromCharCode(parseInt(digits, 8)), next: j };
  }
  if (e === "x" && isHex(src[i + 2])) {
    let j = i + 2;
    let digits = "";
    while (digits.length < 2 && isHex(src[j])) digits += src[j++];
    return { char: String.fromCharCode(parseInt(digits, 16)), next: j };
  }
  // gawk reads \8 and \9 as the digits themselves (there are no back-references in awk).
  if (e === "8" || e === "9") return { char: e, next: i + 2 };
  return { char: null, next: i + 2 };
}

/** One member of a bracket expression, written so the grep parser reads it as that character. */
function bracketChar(c: string): string {
  return BRACKET_SPECIAL.has(c) ? `[.${c}.]` : c;
}

/** Rewrites a bracket expression starting at src[i] === "["; returns it and the index after its "]". */
function bracket(src: string, i: number): { text: string; next: number } {
  let j = i + 1;
  let out = "[";
  if (src[j] === "^") {
    out += "^";
    j += 1;
  }
  let first = true;
  let pendingRange = false;
  for (;;) {
    if (j >= src.length) throw new RegexSyntaxError("Unmatched [, [^, [:, [., or [=");
    const c = src[j];
    if (c === "]" && !first) break;
    first = false;
    let member: string;
    if (c === "[" && (src[j + 1] === ":" || src[j + 1] === "." || src[j + 1] === "=")) {
      const close = src.indexOf(`${src[j + 1]}]`, j + 2);
      if (close < 0) throw new RegexSyntaxError("Unmatched [, [^, [:, [., or [=");
      member = src.slice(j, close + 2);
      j = close + 2;
    } else if (c === "\\" && j + 1 < src.length) {
      const esc = escapeAt(src, j);
      member = bracketChar(esc.char ?? src[j + 1]);
      j = esc.next;
    } else if (c === "-" && !pendingRange && out.length > 1 && src[j + 1] !== "]" && !out.endsWith("[") && !out.endsWith("^")) {
      // A range operator between two members.
      out += "-";
      pendingRange = true;
      j += 1;
      continue;
    } else {
      member = bracketChar(c);
      j += 1;
    }
    out += member;
    pendingRange = false;
  }
  return { text: `${out}]`, next: j + 1 };
}

/** Rewrites awk ERE syntax into the grep -E dialect the Pike VM parses (throws RegexSyntaxError). */
export function translateRegex(src: string): string {
  let out = "";
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === "[") {
      const b = bracket(src, i);
      out += b.text;
      i = b.next;
      continue;
    }
    if (c !== "\\") {
      out += c;
      i += 1;
      continue;
    }
    const e = src[i + 1];
    if (e === "y") {
      out += "\\b";
      i += 2;
      continue;
    }
    const esc = escapeAt(src, i);
    if (esc.char === null) out += `\\${e}`;
    else out += ERE_SPECIAL.has(esc.char) ? `\\${esc.char}` : esc.char;
    i = esc.next;
  }
  return out;
}

/**
 * Compiled regexes by awk source. Compiling is charged (a unit per source character, plus a fixed
 * cost); a failed compile is cached too, so a bad dynamic regex in a loop fails fast every time.
 */
export class RegexCache {
  private readonly cache = new Map<string, CompiledPattern | RegexSyntaxError>();

  constructor(private readonly meter: WorkMeter) {}

  /** The compiled regex for `source`; throws RegexSyntaxError (or RegexTooBigError) when it is invalid. */
  get(source: string): CompiledPattern {
    let entry = this.cache.get(source);
    if (entry === undefined) {
      this.meter.charge(100 + 10 * source.length);
      try {
        entry = compilePatterns([translateRegex(source)], { extended: true }, this.meter);
      } catch (error) {
        if (!(error instanceof RegexSyntaxError)) throw error;
        entry = error;
      }
      if (this.cache.size >= MAX_CACHED_REGEXES) this.cache.clear();
      this.cache.set(source, entry);
    }
    if (entry instanceof RegexSyntaxError) throw entry;
    return entry;
  }
}
