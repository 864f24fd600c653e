/**
 * Text filters: head, tail, wc, sort, uniq, cut. They read files or stdin and follow GNU
 * coreutils output formats; sorting uses C-locale (code unit) order so results never depend on
 * the host locale. Reading is charged to the work budget by readOperand; what grows faster than
 * the input (sort's comparisons, cut's output delimiters) is charged where it happens.
 */
import {
  errorCode,
  errorText,
  FLUSH_CHARS,
  parseOptions,
  quote,
  quoteIfNeeded,
  readOperand,
  resolvePath,
  splitLines,
  splitLinesKeep,
  usageError,
  type CommandContext,
  type CommandSpec,
} from "../context.js";
import { SORT_COMPARISON_COST } from "../limits.js";

const SUFFIXES: Record<string, number> = {
  "": 1,
  b: 512,
  kB: 1000,
  K: 1024,
  KiB: 1024,
  MB: 1000 ** 2,
  M: 1024 ** 2,
  MiB: 1024 ** 2,
  GB: 1000 ** 3,
  G: 1024 ** 3,
  GiB: 1024 ** 3,
};

/** Parses a head/tail count such as "10", "-5", "+3" or "2K". */
function parseCount(value: string): { n: number; sign: "" | "+" | "-" } | null {
  const m = /^([+-]?)(\d+)([A-Za-z]*)$/.exec(value.trim());
  if (!m || !(m[3] in SUFFIXES)) return null;
  const n = Number(m[2]) * SUFFIXES[m[3]];
  if (!Number.isSafeInteger(n)) return null;
  return { n, sign: m[1] as "" | "+" | "-" };
}

/** Rewrites the obsolete `-N` (and for tail `+N`) count syntax into `-n N`. */
function rewriteObsoleteCount(args: string[], allowPlus: boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      return out.concat(args.slice(i));
    }
    // A number right after -n/-c is that option's argument ("head -n -3"), not a count option.
    const takesValue = i > 0 && /^(-[nc]|--lines|--bytes)$/.test(args[i - 1]);
    if (takesValue) out.push(a);
    else if (/^-\d+$/.test(a)) out.push("-n", a.slice(1));
    else if (allowPlus && i === 0 && /^\+\d+$/.test(a)) out.push("-n", a);
    else out.push(a);
  }
  return out;
}

function readFailure(ctx: CommandContext, op: string, error: unknown): void {
  if (errorCode(error) === "is_a_directory") {
    ctx.stderr.write(`${ctx.name}: error reading ${quote(op)}: Is a directory\n`);
  } else {
    ctx.stderr.write(`${ctx.name}: cannot open ${quote(op)} for reading: ${errorText(error)}\n`);
  }
}

/** head and tail share everything but the selection. */
function headTail(ctx: CommandContext, isTail: boolean): number {
  const opts = parseOptions(
    ctx,
    {
      flags: isTail ? "qvzfF" : "qvz",
      withArg: "nc",
      long: { "lines=": "n", "bytes=": "c", quiet: "q", silent: "q", verbose: "v", follow: "f" },
    },
    rewriteObsoleteCount(ctx.args, isTail),
  );
  if (typeof opts === "number") return opts;
  const mode = opts.order.filter((k) => k === "n" || k === "c").at(-1) ?? "n";
  const raw = opts.last(mode) ?? "10";
  const count = parseCount(raw);
  if (!count) {
    ctx.stderr.write(`${ctx.name}: invalid number of ${mode === "n" ? "lines" : "bytes"}: ${quote(raw)}\n`);
    return 1;
  }
  const files = opts.operands.length > 0 ? opts.operands : ["-"];
  const headers = opts.has("v") || (files.length > 1 && !opts.has("q"));
  let status = 0;
  let first = true;
  for (const op of files) {
    const r = readOperand(ctx, op);
    if (!r.ok) {
      readFailure(ctx, op, r.error);
      status = 1;
      continue;
    }
    if (headers) {
      ctx.stdout.write(`${first ? "" : "\n"}==> ${op === "-" ? "standard input" : op} <==\n`);
    }
    first = false;
    if (mode === "c") {
      const bytes = Buffer.from(r.text, "utf8");
      let slice: Buffer;
      if (isTail) slice = count.sign === "+" ? bytes.subarray(Math.max(0, count.n - 1)) : bytes.subarray(Math.max(0, bytes.length - count.n));
      else slice = count.sign === "-" ? bytes.subarray(0, Math.max(0, bytes.length - count.n)) : bytes.subarray(0, count.n);
      ctx.stdout.write(slice.toString("utf8"));
      continue;
    }
    const lines = splitLinesKeep(r.text, ctx.budget);
    let selected: string[];
    if (isTail) selected = count.sign === "+" ? lines.slice(Math.max(0, count.n - 1)) : count.n === 0 ? [] : lines.slice(-count.n);
    else selected = count.sign === "-" ? lines.slice(0, Math.max(0, lines.length - count.n)) : lines.slice(0, count.n);
    ctx.stdout.write(selected.join(""));
  }
  return status;
}

// ------------------------------------------------------------------------------------------ wc

interface Counts {
  l: number;
  w: number;
  m: number;
  c: number;
  L: number;
}

function countText(text: string): Counts {
  let lines = 0;
  let words = 0;
  let chars = 0;
  let maxLine = 0;
  let lineWidth = 0;
  let inWord = false;
  for (const ch of text) {
    chars += 1;
    if (ch === "\n") {
      lines += 1;
      maxLine = Math.max(maxLine, lineWidth);
      lineWidth = 0;
    } else if (ch === "\t") {
      lineWidth += 8 - (lineWidth % 8);
    } else {
      lineWidth += 1;
    }
    const space = ch === " " || ch === "\n" || ch === "\t" || ch === "\r" || ch === "\v" || ch === "\f";
    if (space) inWord = false;
    else if (!inWord) {
      inWord = true;
      words += 1;
    }
  }
  maxLine = Math.max(maxLine, lineWidth);
  return { l: lines, w: words, m: chars, c: Buffer.byteLength(text, "utf8"), L: maxLine };
}

function wc(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "lwcmL",
    long: { lines: "l", words: "w", bytes: "c", chars: "m", "max-line-length": "L" },
  });
  if (typeof opts === "number") return opts;
  const order: Array<keyof Counts> = ["l", "w", "m", "c", "L"];
  let shown = order.filter((k) => opts.has(k));
  if (shown.length === 0) shown = ["l", "w", "c"];
  const files = opts.operands.length > 0 ? opts.operands : [""];
  let status = 0;
  const results: Array<{ name: string; counts: Counts }> = [];
  let stdinUsed = false;
  for (const op of files) {
    const r = readOperand(ctx, op === "" ? "-" : op);
    if (op === "" || op === "-") stdinUsed = true;
    if (!r.ok) {
      ctx.stderr.write(`wc: ${quoteIfNeeded(op)}: ${errorText(r.error)}\n`);
      status = 1;
      continue;
    }
    results.push({ name: op, counts: countText(r.text) });
  }
  const total: Counts = { l: 0, w: 0, m: 0, c: 0, L: 0 };
  for (const { counts } of results) {
    for (const k of order) total[k] = k === "L" ? Math.max(total.L, counts.L) : total[k] + counts[k];
  }
  // GNU: a single count for a single input is unpadded; otherwise the width fits the total size.
  let width = 1;
  if (!(shown.length === 1 && files.length === 1)) {
    width = Math.max(String(total.c).length, stdinUsed ? 7 : 1);
  }
  const line = (counts: Counts, name: string): string =>
    shown.map((k) => String(counts[k]).padStart(width)).join(" ") + (name ? ` ${name}` : "") + "\n";
  for (const r of results) ctx.stdout.write(line(r.counts, r.name));
  if (files.length > 1) ctx.stdout.write(line(total, "total"));
  return status;
}

// ---------------------------------------------------------------------------------------- sort

interface SortKey {
  startField: number;
  startChar: number;
  endField: number | null;
  endChar: number;
  numeric: boolean;
  human: boolean;
  reverse: boolean;
  fold: boolean;
  blanks: boolean;
}

const BLANK = /[ \t]/;

function fieldSpans(line: string, sep: string | null): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  if (sep !== null) {
    let start = 0;
    for (;;) {
      const idx = line.indexOf(sep, start);
      if (idx < 0) {
        spans.push([start, line.length]);
        return spans;
      }
      spans.push([start, idx]);
      start = idx + sep.length;
    }
  }
  // Without -t, a field is a run of blanks followed by non-blanks (leading blanks belong to it).
  let i = 0;
  while (i < line.length) {
    const start = i;
    while (i < line.length && BLANK.test(line[i])) i += 1;
    while (i < line.length && !BLANK.test(line[i])) i += 1;
    spans.push([start, i]);
  }
  return spans;
}

function extractKey(line: string, key: SortKey, sep: string | null): string {
  const spans = fieldSpans(line, sep);
  const skipBlanks = (pos: number, end: number): number => {
    while (pos < end && BLANK.test(line[pos])) pos += 1;
    return pos;
  };
  let start: number;
  if (key.startField > spans.length) start = line.length;
  else {
    const [fs, fe] = spans[key.startField - 1];
    start = key.blanks ? skipBlanks(fs, fe) : fs;
    start = Math.min(start + key.startChar - 1, fe);
  }
  let end = line.length;
  if (key.endField !== null && key.endField <= spans.length) {
    const [fs, fe] = spans[key.endField - 1];
    if (key.endChar === 0) end = fe;
    else end = Math.min((key.blanks ? skipBlanks(fs, fe) : fs) + key.endChar, fe);
  }
  return end > start ? line.slice(start, end) : "";
}

function parseNumber(text: string, human: boolean): number {
  const m = /^[ \t]*(-?\d*(?:\.\d*)?)([KMGTPE]?)/.exec(text);
  if (!m || !/\d/.test(m[1])) return 0;
  const value = Number(m[1]);
  if (!human || !m[2]) return value;
  return value * 1024 ** ("KMGTPE".indexOf(m[2]) + 1);
}

/** A line with its sort keys extracted (numbers for numeric keys, upper case for -f). */
interface Decorated {
  line: string;
  keys: Array<string | number>;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function parseKeySpec(spec: string, global: SortKey): SortKey | string {
  const m = /^(\d+)(?:\.(\d+))?([bdfghinMRrV]*)(?:,(\d+)(?:\.(\d+))?([bdfghinMRrV]*))?$/.exec(spec);
  if (!m) return `sort: invalid number at field start: invalid count at start of ${quote(spec)}`;
  const startField = Number(m[1]);
  if (startField === 0) return `sort: field number is zero: invalid field specification ${quote(spec)}`;
  if (m[2] !== undefined && Number(m[2]) === 0) return `sort: character offset is zero: invalid field specification ${quote(spec)}`;
  const letters = (m[3] ?? "") + (m[6] ?? "");
  const own = letters.length > 0;
  return {
    startField,
    startChar: m[2] !== undefined ? Number(m[2]) : 1,
    endField: m[4] !== undefined ? Number(m[4]) : null,
    endChar: m[5] !== undefined ? Number(m[5]) : 0,
    numeric: own ? /[ngh]/.test(letters) : global.numeric,
    human: own ? letters.includes("h") : global.human,
    reverse: own ? letters.includes("r") : global.reverse,
    fold: own ? letters.includes("f") : global.fold,
    blanks: own ? letters.includes("b") : global.blanks,
  };
}

function sort(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "bcfghnrsu",
    withArg: "kto",
    long: {
      "ignore-leading-blanks": "b",
      check: "c",
      "ignore-case": "f",
      "general-numeric-sort": "g",
      "human-numeric-sort": "h",
      "numeric-sort": "n",
      reverse: "r",
      stable: "s",
      unique: "u",
      "key=": "k",
      "field-separator=": "t",
      "output=": "o",
    },
    usageExit: 2,
  });
  if (typeof opts === "number") return opts;
  const global: SortKey = {
    startField: 1,
    startChar: 1,
    endField: null,
    endChar: 0,
    numeric: opts.has("n") || opts.has("g") || opts.has("h"),
    human: opts.has("h"),
    reverse: opts.has("r"),
    fold: opts.has("f"),
    blanks: opts.has("b"),
  };
  let sep: string | null = null;
  const t = opts.last("t");
  if (t !== undefined) {
    if (t === "") {
      ctx.stderr.write("sort: empty tab\n");
      return 2;
    }
    if ([...t].length > 1 && t !== "\\0") {
      ctx.stderr.write(`sort: multi-character tab ${quote(t)}\n`);
      return 2;
    }
    sep = t === "\\0" ? "\0" : t;
  }
  const keys: SortKey[] = [];
  for (const spec of opts.all("k")) {
    const key = parseKeySpec(spec, global);
    if (typeof key === "string") {
      ctx.stderr.write(`${key}\n`);
      return 2;
    }
    keys.push(key);
  }
  const wholeLine = keys.length === 0;
  if (wholeLine) keys.push({ ...global, reverse: false });

  const lines: string[] = [];
  for (const op of opts.operands.length > 0 ? opts.operands : ["-"]) {
    const r = readOperand(ctx, op);
    if (!r.ok) {
      const code = errorCode(r.error);
      ctx.stderr.write(
        code === "is_a_directory" ? `sort: read failed: ${quoteIfNeeded(op)}: Is a directory\n` : `sort: cannot read: ${quoteIfNeeded(op)}: ${errorText(r.error)}\n`,
      );
      return 2;
    }
    for (const line of splitLines(r.text, ctx.budget)) lines.push(line);
  }

  // Keys are extracted once per line (not once per comparison), then compared n·log n times.
  const extracted = keys.some((key) => !wholeLine || key.blanks);
  const comparisons = lines.length * Math.ceil(Math.log2(lines.length + 1));
  ctx.budget.charge(comparisons * SORT_COMPARISON_COST + (extracted ? keys.length * lines.reduce((sum, l) => sum + l.length, 0) : 0));
  const decorate = (line: string): Decorated => ({
    line,
    keys: keys.map((key) => {
      const text = wholeLine && !key.blanks ? line : extractKey(line, key, sep);
      return key.numeric ? parseNumber(text, key.human) : key.fold ? text.toUpperCase() : text;
    }),
  });
  const compareKeys = (a: Decorated, b: Decorated): number => {
    for (let k = 0; k < keys.length; k++) {
      const x = a.keys[k];
      const y = b.keys[k];
      let c: number;
      if (typeof x === "number") {
        const d = x - (y as number);
        c = d < 0 ? -1 : d > 0 ? 1 : 0;
      } else {
        c = compareText(x, y as string);
      }
      if (keys[k].reverse) c = -c;
      if (c !== 0) return c;
    }
    return 0;
  };
  const lastResort = !opts.has("s") && !opts.has("u");
  const compare = (a: Decorated, b: Decorated): number => {
    let c = compareKeys(a, b);
    if (wholeLine && global.reverse) c = -c;
    if (c === 0 && lastResort) {
      c = compareText(a.line, b.line);
      if (global.reverse) c = -c;
    }
    return c;
  };
  const decorated = lines.map(decorate);

  if (opts.has("c")) {
    for (let i = 1; i < decorated.length; i++) {
      const c = compare(decorated[i - 1], decorated[i]);
      if (c > 0 || (c === 0 && opts.has("u"))) {
        ctx.stderr.write(`sort: ${opts.operands[0] ?? "-"}:${i + 1}: disorder: ${lines[i]}\n`);
        return 1;
      }
    }
    return 0;
  }

  const sorted = decorated.sort(compare);
  let output = sorted;
  if (opts.has("u")) {
    output = [];
    for (const entry of sorted) {
      if (output.length === 0 || compare(output[output.length - 1], entry) !== 0) output.push(entry);
    }
  }
  const text = output.map((entry) => `${entry.line}\n`).join("");
  const outFile = opts.last("o");
  if (outFile !== undefined) {
    try {
      ctx.fs.writeFile(resolvePath(ctx, outFile), text);
    } catch (error) {
      ctx.stderr.write(`sort: open failed: ${quoteIfNeeded(outFile)}: ${errorText(error)}\n`);
      return 2;
    }
    return 0;
  }
  ctx.stdout.write(text);
  return 0;
}

// ---------------------------------------------------------------------------------------- uniq

function uniq(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "cdiuDz",
    withArg: "fsw",
    long: {
      count: "c",
      repeated: "d",
      "ignore-case": "i",
      unique: "u",
      "skip-fields=": "f",
      "skip-chars=": "s",
      "check-chars=": "w",
    },
  });
  if (typeof opts === "number") return opts;
  const ops = opts.operands;
  if (ops.length > 2) return usageError(ctx, `extra operand ${quote(ops[2])}`);
  const numeric = (key: string, what: string): number | string => {
    const v = opts.last(key);
    if (v === undefined) return 0;
    return /^\d+$/.test(v) ? Number(v) : `uniq: ${v}: invalid number of ${what}`;
  };
  const skipFields = numeric("f", "fields to skip");
  const skipChars = numeric("s", "bytes to skip");
  const checkChars = opts.has("w") ? numeric("w", "bytes to compare") : -1;
  for (const v of [skipFields, skipChars, checkChars]) {
    if (typeof v === "string") {
      ctx.stderr.write(`${v}\n`);
      return 1;
    }
  }
  const r = readOperand(ctx, ops[0] ?? "-");
  if (!r.ok) {
    ctx.stderr.write(`uniq: ${quoteIfNeeded(ops[0])}: ${errorText(r.error)}\n`);
    return 1;
  }
  const keyOf = (line: string): string => {
    let i = 0;
    // Stops at the end of the line: a huge -f must not loop once there is nothing left to skip.
    for (let f = 0; f < (skipFields as number) && i < line.length; f++) {
      while (i < line.length && BLANK.test(line[i])) i += 1;
      while (i < line.length && !BLANK.test(line[i])) i += 1;
    }
    let key = line.slice(i + (skipChars as number));
    if ((checkChars as number) >= 0) key = key.slice(0, checkChars as number);
    return opts.has("i") ? key.toLowerCase() : key;
  };
  const lines = splitLines(r.text, ctx.budget);
  let out = "";
  for (let i = 0; i < lines.length; ) {
    const key = keyOf(lines[i]);
    let j = i + 1;
    while (j < lines.length && keyOf(lines[j]) === key) j += 1;
    const count = j - i;
    const keep = (!opts.has("d") || count > 1) && (!opts.has("u") || count === 1);
    if (keep) {
      if (opts.has("D")) for (let k = i; k < j; k++) out += `${lines[k]}\n`;
      else out += opts.has("c") ? `${String(count).padStart(7)} ${lines[i]}\n` : `${lines[i]}\n`;
    }
    i = j;
  }
  if (ops[1] !== undefined) {
    try {
      ctx.fs.writeFile(resolvePath(ctx, ops[1]), out);
    } catch (error) {
      ctx.stderr.write(`uniq: ${quoteIfNeeded(ops[1])}: ${errorText(error)}\n`);
      return 1;
    }
    return 0;
  }
  ctx.stdout.write(out);
  return 0;
}

// ----------------------------------------------------------------------------------------- cut

type Range = [number, number];

/**
 * A membership test for positions in a list of ranges (or outside them, for --complement): the ranges
 * are merged and bisected, so a long list costs log(ranges) per position, not ranges.
 */
function rangeSelector(ranges: Range[], complement: boolean): (position: number) => boolean {
  const merged: Range[] = [];
  for (const [lo, hi] of [...ranges].sort((a, b) => a[0] - b[0])) {
    const last = merged[merged.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else merged.push([lo, hi]);
  }
  return (position) => {
    let lo = 0;
    let hi = merged.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (position < merged[mid][0]) hi = mid - 1;
      else if (position > merged[mid][1]) lo = mid + 1;
      else return !complement;
    }
    return complement;
  };
}

function parseList(ctx: CommandContext, list: string, fields: boolean): Range[] | number {
  const ranges: Range[] = [];
  for (const item of list.split(/[,\s]/)) {
    const m = /^(\d*)(-?)(\d*)$/.exec(item);
    if (!m || item === "" || item === "-") {
      return usageError(ctx, fields ? `invalid field value ${quote(item)}` : "invalid byte or character range");
    }
    const lo = m[1] === "" ? 1 : Number(m[1]);
    const hi = m[2] === "" ? lo : m[3] === "" ? Infinity : Number(m[3]);
    if ((m[1] !== "" && lo === 0) || hi === 0) return usageError(ctx, "fields and positions are numbered from 1");
    if (hi < lo) return usageError(ctx, "invalid decreasing range");
    ranges.push([lo, hi]);
  }
  return ranges;
}

function cut(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "snz",
    withArg: "bcfd",
    long: {
      "bytes=": "b",
      "characters=": "c",
      "fields=": "f",
      "delimiter=": "d",
      "only-delimited": "s",
      complement: "C",
      "output-delimiter=": "O",
    },
  });
  if (typeof opts === "number") return opts;
  const kinds = ["b", "c", "f"].filter((k) => opts.has(k));
  if (kinds.length === 0) return usageError(ctx, "you must specify a list of bytes, characters, or fields");
  if (kinds.length > 1) return usageError(ctx, "only one type of list may be specified");
  const kind = kinds[0];
  if (opts.has("d") && kind !== "f") return usageError(ctx, "an input delimiter may be specified only when operating on fields");
  if (opts.has("s") && kind !== "f") {
    return usageError(ctx, "suppressing non-delimited lines makes sense\n\tonly when operating on fields");
  }
  const delim = opts.last("d") ?? "\t";
  if ([...delim].length !== 1) return usageError(ctx, "the delimiter must be a single character");
  const outDelim = opts.last("O") ?? (kind === "f" ? delim : "");
  const ranges = parseList(ctx, opts.last(kind)!, kind === "f");
  if (typeof ranges === "number") return ranges;
  const selected = rangeSelector(ranges, opts.has("C"));
  // Output delimiters are charged before a line is joined: a long one between many fields could
  // otherwise build a string far larger than the input.
  const join = (pieces: string[]): string => {
    ctx.budget.charge(pieces.length * (outDelim.length + 1));
    return pieces.join(outDelim);
  };

  let status = 0;
  for (const op of opts.operands.length > 0 ? opts.operands : ["-"]) {
    const r = readOperand(ctx, op);
    if (!r.ok) {
      ctx.stderr.write(`cut: ${quoteIfNeeded(op)}: ${errorText(r.error)}\n`);
      status = 1;
      continue;
    }
    let out = "";
    for (const line of splitLines(r.text, ctx.budget)) {
      if (kind === "f") {
        if (!line.includes(delim)) {
          if (!opts.has("s")) out += `${line}\n`;
          continue;
        }
        const fields = line.split(delim);
        ctx.budget.charge(fields.length);
        out += `${join(fields.filter((_, i) => selected(i + 1)))}\n`;
      } else if (kind === "c") {
        const chars = Array.from(line);
        ctx.budget.charge(chars.length);
        out += `${join(chars.filter((_, i) => selected(i + 1)))}\n`;
      } else {
        const bytes = Buffer.from(line, "utf8");
        ctx.budget.charge(bytes.length);
        const kept = bytes.filter((_, i) => selected(i + 1));
        out += `${Buffer.from(kept).toString("utf8")}\n`;
      }
      if (out.length >= FLUSH_CHARS) {
        ctx.stdout.write(out);
        out = "";
      }
    }
    ctx.stdout.write(out);
  }
  return status;
}

/** Text filter commands. */
export const TEXT_COMMANDS: CommandSpec[] = [
  { name: "head", run: (ctx) => headTail(ctx, false) },
  { name: "tail", run: (ctx) => headTail(ctx, true) },
  { name: "wc", run: wc },
  { name: "sort", run: sort },
  { name: "uniq", run: uniq },
  { name: "cut", run: cut },
];
