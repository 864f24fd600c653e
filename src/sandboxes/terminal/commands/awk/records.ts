/**
 * Splitting input into records (RS) and records into fields (FS), with POSIX rules: FS " " splits on
 * runs of blanks and newlines, any other single character splits on itself, anything longer is a
 * regex, and "" makes every character a field (as gawk does). RS "\n" is the default, a single
 * character splits on itself, "" is paragraph mode (blank lines separate records and a newline always
 * separates fields), and a longer RS is a regex (as gawk does). Splitting charges the work meter.
 */
import { LINE_COST, type WorkMeter } from "../../limits.js";
import type { CompiledPattern } from "../../regex.js";
import { MATCH_COST, SCAN_COST } from "./errors.js";
import type { RegexCache } from "./regex.js";

export type FieldSplitter =
  | { kind: "blank" }
  | { kind: "char"; char: string }
  | { kind: "chars" }
  | { kind: "regex"; pattern: CompiledPattern };

export type RecordSplitter = { kind: "char"; char: string } | { kind: "paragraph" } | { kind: "regex"; pattern: CompiledPattern };

/** True for a string of exactly one character (a surrogate pair counts as one). */
function isOneChar(s: string): boolean {
  return s.length === 1 || (s.length === 2 && s.codePointAt(0)! > 0xffff);
}

/** The splitter a value of FS (or split()'s separator) stands for; a bad regex throws RegexSyntaxError. */
export function fieldSplitter(fs: string, regexes: RegexCache): FieldSplitter {
  if (fs === " ") return { kind: "blank" };
  if (fs === "") return { kind: "chars" };
  if (isOneChar(fs) && fs !== "\\") return { kind: "char", char: fs };
  return { kind: "regex", pattern: regexes.get(fs) };
}

/** The splitter a value of RS stands for. */
export function recordSplitter(rs: string, regexes: RegexCache): RecordSplitter {
  if (rs === "") return { kind: "paragraph" };
  if (isOneChar(rs)) return { kind: "char", char: rs };
  return { kind: "regex", pattern: regexes.get(rs) };
}

/** Every leftmost-longest match of `pattern` in `text` (empty ones too with `empty`), charged per character and per match. */
export function allMatches(pattern: CompiledPattern, text: string, empty: boolean, meter: WorkMeter): Array<[number, number]> {
  meter.charge(text.length * SCAN_COST);
  const matches = pattern.matches(text, empty);
  meter.charge(matches.length * MATCH_COST);
  return matches;
}

const isBlank = (c: number): boolean => c === 32 || c === 9 || c === 10;

function splitBlank(text: string, out: string[]): void {
  let i = 0;
  const n = text.length;
  for (;;) {
    while (i < n && isBlank(text.charCodeAt(i))) i += 1;
    if (i >= n) return;
    const start = i;
    while (i < n && !isBlank(text.charCodeAt(i))) i += 1;
    out.push(text.slice(start, i));
  }
}

function splitOne(text: string, splitter: FieldSplitter, out: string[], meter: WorkMeter): void {
  switch (splitter.kind) {
    case "blank":
      splitBlank(text, out);
      return;
    case "char":
      for (const piece of text.split(splitter.char)) out.push(piece);
      return;
    case "chars":
      for (const ch of text) out.push(ch);
      return;
    case "regex": {
      let start = 0;
      const matches = allMatches(splitter.pattern, text, false, meter);
      for (const [s, e] of matches) {
        out.push(text.slice(start, s));
        start = e;
      }
      out.push(text.slice(start));
      return;
    }
  }
}

/**
 * The fields of `text` (without $0). In paragraph mode a newline separates fields whatever FS is.
 * Charges the text's length and one unit per field.
 */
export function splitFields(text: string, splitter: FieldSplitter, paragraph: boolean, meter: WorkMeter): string[] {
  const out: string[] = [];
  if (text === "") return out;
  meter.charge(text.length + 1);
  if (paragraph && splitter.kind !== "blank" && text.includes("\n")) {
    for (const line of text.split("\n")) if (line !== "") splitOne(line, splitter, out, meter);
  } else {
    splitOne(text, splitter, out, meter);
  }
  meter.charge(out.length);
  return out;
}

/** Reads records one at a time from one input text, with the RS in force at each read. */
export class RecordReader {
  private pos = 0;
  /** Matches of a regex RS over the rest of the text, computed once per RS (a linear pass). */
  private regexRun: { pattern: CompiledPattern; matches: Array<[number, number]>; next: number } | null = null;

  constructor(private readonly text: string) {}

  /** The next record, or null at the end of the text. Charges LINE_COST per record. */
  next(rs: RecordSplitter, meter: WorkMeter): string | null {
    const text = this.text;
    if (rs.kind !== "regex") this.regexRun = null;
    if (rs.kind === "paragraph") {
      while (this.pos < text.length && text.charCodeAt(this.pos) === 10) this.pos += 1;
    }
    if (this.pos >= text.length) return null;
    meter.charge(LINE_COST);
    const start = this.pos;
    switch (rs.kind) {
      case "char": {
        const at = text.indexOf(rs.char, start);
        if (at < 0) {
          this.pos = text.length;
          return text.slice(start);
        }
        this.pos = at + rs.char.length;
        return text.slice(start, at);
      }
      case "paragraph": {
        const at = text.indexOf("\n\n", start);
        if (at < 0) {
          this.pos = text.length;
          let end = text.length;
          while (end > start && text.charCodeAt(end - 1) === 10) end -= 1;
          return text.slice(start, end);
        }
        this.pos = at + 2;
        return text.slice(start, at);
      }
      case "regex": {
        if (this.regexRun === null || this.regexRun.pattern !== rs.pattern) {
          const matches = allMatches(rs.pattern, text.slice(start), false, meter).map(([s, e]): [number, number] => [s + start, e + start]);
          this.regexRun = { pattern: rs.pattern, matches, next: 0 };
        }
        const run = this.regexRun;
        while (run.next < run.matches.length && run.matches[run.next][0] < start) run.next += 1;
        if (run.next >= run.matches.length) {
          this.pos = text.length;
          return text.slice(start);
        }
        const [s, e] = run.matches[run.next++];
        this.pos = e;
        return text.slice(start, s);
      }
    }
  }
}
