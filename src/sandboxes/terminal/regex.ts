/**
 * POSIX regular expressions (GNU grep dialect: BRE and ERE) compiled to a Pike VM.
 *
 * Why not translate to JS RegExp: a backtracking engine can be driven into exponential time by
 * patterns such as `(a+)+$`, and a training sandbox must never hang on agent input. The Pike VM
 * runs in O(program × text) time, and gives POSIX leftmost-longest matches as GNU grep -o does;
 * all the matches of a line come from one pass (see CompiledPattern), so -o stays linear too.
 * Back-references need backtracking, so they are rejected with a clear message.
 *
 * "Linear" only helps if the program is small, so compilation follows RE2's limits: a counted
 * repetition is at most {255}, nested counted repetitions may not multiply past 1000, and the
 * program has at most 5,000 instructions; anything larger is a RegexTooBigError ("Regular expression
 * too big", with the reason). Matching charges its work to a WorkMeter, so the shell's work budget
 * stops what is still too slow.
 */
import { caseVariants, CharSet, isWordChar, POSIX_CLASSES, type BracketSet } from "./chars.js";
import { UNMETERED, type WorkMeter } from "./limits.js";

/** A malformed pattern; the message is GNU grep's text (without the "grep: " prefix). */
export class RegexSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A pattern beyond the sandbox's size limits (GNU's "Regular expression too big", with the reason). */
export class RegexTooBigError extends RegexSyntaxError {
  constructor(reason: string) {
    super(`Regular expression too big (${reason})`);
  }
}

type AssertKind = "bol" | "eol" | "wordb" | "nwordb" | "wstart" | "wend" | "notWordBefore" | "notWordAfter";

type Node =
  | { t: "char"; cp: number }
  | { t: "any" }
  | { t: "set"; set: BracketSet }
  | { t: "assert"; kind: AssertKind }
  | { t: "cat"; items: Node[] }
  | { t: "alt"; items: Node[] }
  | { t: "repeat"; node: Node; min: number; max: number }; // max -1: unbounded

const MAX_GROUP_DEPTH = 100;
/** Most quantifiers on one atom (`a**`): each nests the atom once more, and compilation recurses on nesting. */
const MAX_QUANTIFIER_CHAIN = 8;
const MAX_REPEAT = 255;
/** RE2's rule: nested counted repetitions may not multiply past this (`(.{0,255}){0,97}` expands 24,735-fold). */
const MAX_REPEAT_PRODUCT = 1000;
const MAX_PROGRAM = 5_000;
/** Longest pattern set, in characters; a longer one could not fit in MAX_PROGRAM, so it is refused before parsing. */
const MAX_PATTERN_LENGTH = 4 * MAX_PROGRAM;


const C = {
  backslash: 0x5c,
  lparen: 0x28,
  rparen: 0x29,
  lbrace: 0x7b,
  rbrace: 0x7d,
  lbracket: 0x5b,
  rbracket: 0x5d,
  bar: 0x7c,
  star: 0x2a,
  plus: 0x2b,
  qmark: 0x3f,
  caret: 0x5e,
  dollar: 0x24,
  dot: 0x2e,
  colon: 0x3a,
  comma: 0x2c,
  dash: 0x2d,
  equals: 0x3d,
} as const;

const WORD_SET: BracketSet = { negate: false, ranges: [[95, 95]], classes: ["alnum"] };
const SPACE_SET: BracketSet = { negate: false, ranges: [], classes: ["space"] };

const isDigitCp = (cp: number | undefined): boolean => cp !== undefined && cp >= 0x30 && cp <= 0x39;

/** Recursive-descent parser for one BRE or ERE; group nesting is bounded. */
class PatternParser {
  private i = 0;
  private depth = 0;

  constructor(
    private readonly cps: number[],
    private readonly ere: boolean,
  ) {}

  parse(): Node {
    const node = this.parseAlt();
    if (this.i < this.cps.length) throw new RegexSyntaxError("Unmatched ) or \\)");
    return node;
  }

  private at(offset = 0): number | undefined {
    return this.cps[this.i + offset];
  }

  private isAltOp(): boolean {
    return this.ere ? this.at() === C.bar : this.at() === C.backslash && this.at(1) === C.bar;
  }

  private isCloseGroup(): boolean {
    return this.ere ? this.at() === C.rparen : this.at() === C.backslash && this.at(1) === C.rparen;
  }

  private parseAlt(): Node {
    const branches = [this.parseConcat()];
    while (this.isAltOp()) {
      this.i += this.ere ? 1 : 2;
      branches.push(this.parseConcat());
    }
    return branches.length === 1 ? branches[0] : { t: "alt", items: branches };
  }

  private parseConcat(): Node {
    const items: Node[] = [];
    while (this.i < this.cps.length && !this.isAltOp() && !this.isCloseGroup()) {
      // In a BRE, '*' is literal at the start of an expression (also right after a leading '^').
      const atStart =
        items.length === 0 || (!this.ere && items.length === 1 && items[0].t === "assert" && items[0].kind === "bol");
      let atom = this.parseAtom(atStart);
      for (let chain = 1; ; chain++) {
        const q = this.parseQuantifier();
        if (!q) break;
        if (chain > MAX_QUANTIFIER_CHAIN) throw new RegexTooBigError(`more than ${MAX_QUANTIFIER_CHAIN} repetition operators on one atom`);
        atom = { t: "repeat", node: atom, min: q.min, max: q.max };
      }
      items.push(atom);
    }
    return items.length === 1 ? items[0] : { t: "cat", items };
  }

  private parseGroup(): Node {
    this.i += this.ere ? 1 : 2;
    this.depth += 1;
    if (this.depth > MAX_GROUP_DEPTH) throw new RegexTooBigError(`groups nested deeper than ${MAX_GROUP_DEPTH}`);
    const node = this.parseAlt();
    if (!this.isCloseGroup()) throw new RegexSyntaxError("Unmatched ( or \\(");
    this.i += this.ere ? 1 : 2;
    this.depth -= 1;
    return { t: "cat", items: [node] };
  }

  private parseAtom(atStart: boolean): Node {
    const c = this.at()!;
    if (c === C.backslash) return this.parseEscape();
    if (c === C.lbracket) return this.parseBracket();
    if (c === C.dot) {
      this.i += 1;
      return { t: "any" };
    }
    if (this.ere) {
      if (c === C.lparen) return this.parseGroup();
      if (c === C.caret || c === C.dollar) {
        this.i += 1;
        return { t: "assert", kind: c === C.caret ? "bol" : "eol" };
      }
    } else {
      if (c === C.caret && atStart && this.isBreAnchorStart()) {
        this.i += 1;
        return { t: "assert", kind: "bol" };
      }
      if (c === C.dollar && this.isBreAnchorEnd()) {
        this.i += 1;
        return { t: "assert", kind: "eol" };
      }
    }
    // Everything else, including a leading '*', '+', '?' or '{', is a literal.
    this.i += 1;
    return { t: "char", cp: c };
  }

  /** '^' anchors in a BRE only at the start of the pattern, a group or an alternative. */
  private isBreAnchorStart(): boolean {
    if (this.i === 0) return true;
    const p1 = this.cps[this.i - 1];
    const p2 = this.cps[this.i - 2];
    return p2 === C.backslash && (p1 === C.lparen || p1 === C.bar);
  }

  /** '$' anchors in a BRE only at the end of the pattern, a group or an alternative. */
  private isBreAnchorEnd(): boolean {
    if (this.i + 1 === this.cps.length) return true;
    return this.at(1) === C.backslash && (this.at(2) === C.rparen || this.at(2) === C.bar);
  }

  private parseEscape(): Node {
    const next = this.at(1);
    if (next === undefined) throw new RegexSyntaxError("Trailing backslash");
    if (!this.ere) {
      if (next === C.lparen) return this.parseGroup();
      if (next === C.lbrace) throw new RegexSyntaxError("Invalid preceding regular expression");
    }
    if (next >= 0x31 && next <= 0x39) {
      throw new RegexSyntaxError("back-references (\\1 ... \\9) are not supported in this sandbox");
    }
    this.i += 2;
    switch (String.fromCodePoint(next)) {
      case "w":
        return { t: "set", set: WORD_SET };
      case "W":
        return { t: "set", set: { ...WORD_SET, negate: true } };
      case "s":
        return { t: "set", set: SPACE_SET };
      case "S":
        return { t: "set", set: { ...SPACE_SET, negate: true } };
      case "b":
        return { t: "assert", kind: "wordb" };
      case "B":
        return { t: "assert", kind: "nwordb" };
      case "<":
        return { t: "assert", kind: "wstart" };
      case ">":
        return { t: "assert", kind: "wend" };
      case "`":
        return { t: "assert", kind: "bol" };
      case "'":
        return { t: "assert", kind: "eol" };
      default:
        return { t: "char", cp: next };
    }
  }

  private parseQuantifier(): { min: number; max: number } | null {
    const c = this.at();
    if (c === C.star) {
      this.i += 1;
      return { min: 0, max: -1 };
    }
    if (this.ere) {
      if (c === C.plus || c === C.qmark) {
        this.i += 1;
        return c === C.plus ? { min: 1, max: -1 } : { min: 0, max: 1 };
      }
      if (c === C.lbrace) {
        const interval = this.readInterval(this.i + 1, false);
        if (!interval) return null; // GNU: an invalid interval in an ERE is literal text
        this.i = interval.end;
        return interval;
      }
      return null;
    }
    if (c === C.backslash) {
      const n = this.at(1);
      if (n === C.plus || n === C.qmark) {
        this.i += 2;
        return n === C.plus ? { min: 1, max: -1 } : { min: 0, max: 1 };
      }
      if (n === C.lbrace) {
        const interval = this.readInterval(this.i + 2, true);
        if (!interval) throw new RegexSyntaxError("Invalid content of \\{\\}");
        this.i = interval.end;
        return interval;
      }
    }
    return null;
  }

  /** Reads `m}`, `m,}`, `,n}`, `m,n}` (BRE: closing `\}`) from `start`; null when malformed. */
  private readInterval(start: number, bre: boolean): { min: number; max: number; end: number } | null {
    let j = start;
    const readNum = (): number | null => {
      const from = j;
      while (isDigitCp(this.cps[j]) && j - from < 6) j += 1;
      if (j === from) return null;
      return Number(String.fromCodePoint(...this.cps.slice(from, j)));
    };
    const min = readNum();
    let max: number | null = min;
    if (this.cps[j] === C.comma) {
      j += 1;
      max = readNum();
      if (max === null) max = -1;
    }
    if (bre) {
      if (this.cps[j] !== C.backslash || this.cps[j + 1] !== C.rbrace) {
        if (j >= this.cps.length) throw new RegexSyntaxError("Unmatched \\{");
        return null;
      }
      j += 2;
    } else {
      if (this.cps[j] !== C.rbrace) return null;
      j += 1;
    }
    const lo = min ?? 0;
    if (min === null && max === null) return null;
    if (max !== -1 && max !== null && max < lo) throw new RegexSyntaxError("Invalid content of \\{\\}");
    if (lo > MAX_REPEAT || (max !== null && max > MAX_REPEAT)) throw new RegexTooBigError(`a repetition count above ${MAX_REPEAT}`);
    return { min: lo, max: max ?? lo, end: j };
  }

  private parseBracket(): Node {
    const cps = this.cps;
    let j = this.i + 1;
    const set: BracketSet = { negate: false, ranges: [], classes: [] };
    if (cps[j] === C.caret) {
      set.negate = true;
      j += 1;
    }
    const bodyStart = j;
    let first = true;
    const unmatched = (): RegexSyntaxError => new RegexSyntaxError("Unmatched [, [^, [:, [., or [=");
    for (;;) {
      if (j >= cps.length) throw unmatched();
      const c = cps[j];
      if (c === C.rbracket && !first) break;
      first = false;
      let lo: number;
      if (c === C.lbracket && (cps[j + 1] === C.colon || cps[j + 1] === C.equals || cps[j + 1] === C.dot)) {
        const kind = cps[j + 1];
        let k = j + 2;
        while (k + 1 < cps.length && !(cps[k] === kind && cps[k + 1] === C.rbracket)) k += 1;
        if (k + 1 >= cps.length) throw unmatched();
        const name = String.fromCodePoint(...cps.slice(j + 2, k));
        j = k + 2;
        if (kind === C.colon) {
          if (!(name in POSIX_CLASSES)) throw new RegexSyntaxError("Invalid character class name");
          set.classes.push(name);
          continue;
        }
        const chars = Array.from(name);
        if (chars.length !== 1) throw new RegexSyntaxError("Invalid collation character");
        lo = chars[0].codePointAt(0)!;
      } else {
        lo = c;
        j += 1;
      }
      if (cps[j] === C.dash && cps[j + 1] !== undefined && cps[j + 1] !== C.rbracket) {
        let hi = cps[j + 1];
        j += 2;
        if (hi === C.lbracket && (cps[j] === C.dot || cps[j] === C.equals)) {
          const kind = cps[j];
          let k = j + 1;
          while (k + 1 < cps.length && !(cps[k] === kind && cps[k + 1] === C.rbracket)) k += 1;
          if (k + 1 >= cps.length) throw unmatched();
          hi = cps[j + 1];
          j = k + 2;
        }
        if (hi < lo) throw new RegexSyntaxError("Invalid range end");
        set.ranges.push([lo, hi]);
      } else {
        set.ranges.push([lo, lo]);
      }
    }
    // GNU grep rejects "[:space:]" written without the outer brackets.
    if (
      set.classes.length === 0 &&
      cps[bodyStart] === C.colon &&
      cps[j - 1] === C.colon &&
      j - bodyStart > 2 &&
      !set.negate
    ) {
      const name = String.fromCodePoint(...cps.slice(bodyStart + 1, j - 1));
      if (name in POSIX_CLASSES) {
        throw new RegexSyntaxError(`character class syntax is [[:space:]], not [:space:]`);
      }
    }
    this.i = j + 1;
    return { t: "set", set };
  }
}

// ---------------------------------------------------------------------------------------- program

const OP_CHAR = 0;
const OP_ANY = 1;
const OP_SET = 2;
const OP_ASSERT = 3;
const OP_SPLIT = 4;
const OP_JMP = 5;
const OP_MATCH = 6;

type Inst =
  | { op: typeof OP_CHAR; cps: number[] }
  | { op: typeof OP_ANY }
  | { op: typeof OP_SET; set: CharSet }
  | { op: typeof OP_ASSERT; kind: AssertKind }
  | { op: typeof OP_SPLIT; x: number; y: number }
  | { op: typeof OP_JMP; x: number }
  | { op: typeof OP_MATCH };

/** Refuses nested counted repetitions whose counts multiply past MAX_REPEAT_PRODUCT (before they are expanded). */
function checkRepeatNesting(node: Node, outer: number): void {
  if (node.t === "cat" || node.t === "alt") {
    for (const item of node.items) checkRepeatNesting(item, outer);
  } else if (node.t === "repeat") {
    const product = outer * Math.max(node.max === -1 ? node.min : node.max, 1);
    if (product > MAX_REPEAT_PRODUCT) throw new RegexTooBigError(`nested repetition counts multiply past ${MAX_REPEAT_PRODUCT}`);
    checkRepeatNesting(node.node, product);
  }
}

function compileProgram(root: Node, icase: boolean): Inst[] {
  const prog: Inst[] = [];
  // A repetition emits its body many times: its bracket expressions are compiled once.
  const sets = new Map<BracketSet, CharSet>();
  const push = (inst: Inst): number => {
    if (prog.length >= MAX_PROGRAM) throw new RegexTooBigError(`more than ${MAX_PROGRAM} instructions`);
    prog.push(inst);
    return prog.length - 1;
  };
  const emit = (node: Node): void => {
    switch (node.t) {
      case "char":
        push({ op: OP_CHAR, cps: icase ? caseVariants(node.cp) : [node.cp] });
        return;
      case "any":
        push({ op: OP_ANY });
        return;
      case "set":
        if (!sets.has(node.set)) sets.set(node.set, new CharSet(node.set, icase));
        push({ op: OP_SET, set: sets.get(node.set)! });
        return;
      case "assert":
        push({ op: OP_ASSERT, kind: node.kind });
        return;
      case "cat":
        for (const item of node.items) emit(item);
        return;
      case "alt": {
        const jumps: number[] = [];
        for (let k = 0; k < node.items.length; k++) {
          if (k < node.items.length - 1) {
            const split = push({ op: OP_SPLIT, x: 0, y: 0 });
            (prog[split] as { x: number }).x = prog.length;
            emit(node.items[k]);
            jumps.push(push({ op: OP_JMP, x: 0 }));
            (prog[split] as { y: number }).y = prog.length;
          } else {
            emit(node.items[k]);
          }
        }
        for (const j of jumps) (prog[j] as { x: number }).x = prog.length;
        return;
      }
      case "repeat": {
        for (let k = 0; k < node.min; k++) emit(node.node);
        if (node.max === -1) {
          const split = push({ op: OP_SPLIT, x: 0, y: 0 });
          (prog[split] as { x: number }).x = prog.length;
          emit(node.node);
          push({ op: OP_JMP, x: split });
          (prog[split] as { y: number }).y = prog.length;
        } else {
          const splits: number[] = [];
          for (let k = node.min; k < node.max; k++) {
            const split = push({ op: OP_SPLIT, x: 0, y: 0 });
            (prog[split] as { x: number }).x = prog.length;
            splits.push(split);
            emit(node.node);
          }
          for (const s of splits) (prog[s] as { y: number }).y = prog.length;
        }
        return;
      }
    }
  };
  emit(root);
  push({ op: OP_MATCH });
  return prog;
}

// ---------------------------------------------------------------------------------------- matcher

/**
 * One leftmost-longest search of a line: it looks for the leftmost match at or after `origin`, and
 * keeps the longest match from that start (`start` is -1 until it has one). Searches form a chain:
 * each one starts where the previous one's match ends (one past it for an empty match), which is
 * how grep -o finds successive matches.
 */
interface Search {
  origin: number;
  start: number;
  end: number;
  /** False once an earlier search found a longer match and this one was dropped. */
  live: boolean;
}

function newSearch(origin: number): Search {
  return { origin, start: -1, end: -1, live: true };
}

/** The VM's threads at one position, in priority order, at most one per instruction. */
class ThreadList {
  readonly pcs: Int32Array;
  readonly starts: Int32Array;
  readonly owners: Search[] = [];
  n = 0;
  /** Index of the thread at the MATCH instruction, or -1. */
  matchIndex = -1;
  private readonly marks: Int32Array;
  private gen = 1;

  constructor(
    size: number,
    private readonly matchPc: number,
  ) {
    this.pcs = new Int32Array(size);
    this.starts = new Int32Array(size);
    this.marks = new Int32Array(size);
  }

  /** Empties the list for a new position. */
  clear(): void {
    this.n = 0;
    this.matchIndex = -1;
    this.gen += 1;
  }

  /** Marks `pc` as reached at this position; false when it already was (a higher-priority thread got there first). */
  visit(pc: number): boolean {
    if (this.marks[pc] === this.gen) return false;
    this.marks[pc] = this.gen;
    return true;
  }

  push(pc: number, start: number, owner: Search): void {
    if (pc === this.matchPc) this.matchIndex = this.n;
    this.pcs[this.n] = pc;
    this.starts[this.n] = start;
    this.owners[this.n] = owner;
    this.n += 1;
  }

  /** Keeps the threads `keep` accepts, in order, and drops the MATCH thread; only kept threads stay marked. */
  retain(keep: (index: number) => boolean): void {
    this.gen += 1;
    const match = this.matchIndex;
    this.matchIndex = -1;
    let w = 0;
    for (let k = 0; k < this.n; k++) {
      if (k === match || !keep(k)) continue;
      this.pcs[w] = this.pcs[k];
      this.starts[w] = this.starts[k];
      this.owners[w] = this.owners[k];
      this.marks[this.pcs[w]] = this.gen;
      w += 1;
    }
    this.n = w;
  }
}

/** Code points of a line plus the UTF-16 offset of each (for slicing matches). */
function codePoints(line: string): { cps: number[]; offsets: number[] } {
  const cps: number[] = [];
  const offsets: number[] = [];
  for (let k = 0; k < line.length; k++) {
    const cp = line.codePointAt(k)!;
    offsets.push(k);
    cps.push(cp);
    if (cp > 0xffff) k += 1;
  }
  offsets.push(line.length);
  return { cps, offsets };
}

/**
 * A string every match must contain: the longest run of plain characters in the pattern's top-level
 * sequence ("" when there is none, or for alternatives and repetitions, which need not contain one).
 */
function requiredLiteral(node: Node): string {
  if (node.t === "char") return String.fromCodePoint(node.cp);
  if (node.t !== "cat") return "";
  let best = "";
  let run = "";
  for (const item of node.items) {
    if (item.t === "char") {
      run += String.fromCodePoint(item.cp);
      if (run.length > best.length) best = run;
    } else if (item.t !== "assert") {
      // Assertions consume nothing, so the characters on either side stay adjacent in a match.
      run = "";
    }
  }
  return best;
}

/**
 * A compiled pattern set; methods take one line (without its newline) and charge their work to the
 * meter: one unit per character scanned, plus one per VM thread-step and per instruction reached.
 *
 * All matches of a line come from one pass. A Pike VM keeps at most one thread per instruction,
 * preferring the earliest start; grep -o needs a chain of searches (see Search), and running them
 * one after another rescans the tail of the line for each match, quadratic on `a|a.*c` over
 * "aaaa...". Here all searches of the chain run in the same pass, sharing the one-thread-per-
 * instruction rule with priority to earlier searches. That is exact: two threads at the same
 * instruction and position have the same future, and if the earlier search's thread ever reaches
 * MATCH, that search's match grows and every later search is dropped and restarted after it, so the
 * later thread could never have contributed. The pass therefore does O(program) work per character.
 */
export class CompiledPattern {
  private readonly clist: ThreadList;
  private readonly nlist: ThreadList;
  /** The closure's work stack: each instruction is pushed at most twice per closure (by splits). */
  private readonly stack: Int32Array;
  /** Work of the current position, charged once per position. */
  private steps = 0;

  /**
   * `literal`: a string every match contains (or ""). Most log lines do not contain it, and
   * `String.includes` rules them out ~20x faster than running the automaton. `exact`: the pattern is
   * that literal and nothing else, so string search alone gives the same matches.
   */
  constructor(
    private readonly prog: Inst[],
    private readonly literal = "",
    private readonly exact = false,
    private readonly meter: WorkMeter = UNMETERED,
  ) {
    this.clist = new ThreadList(prog.length, prog.length - 1);
    this.nlist = new ThreadList(prog.length, prog.length - 1);
    this.stack = new Int32Array(2 * prog.length + 1);
  }

  /** True when the line contains a match. */
  test(line: string): boolean {
    this.meter.charge(line.length + 1);
    if (this.literal !== "" && !line.includes(this.literal)) return false;
    return this.exact || this.run(codePoints(line).cps, true)[0].start >= 0;
  }

  /**
   * Non-empty leftmost-longest matches, left to right, as [start, end) UTF-16 offsets. With
   * `includeEmpty`, empty matches are kept too (awk's match, sub and gsub need them).
   */
  matches(line: string, includeEmpty = false): Array<[number, number]> {
    this.meter.charge(line.length + 1);
    if (this.literal !== "" && !line.includes(this.literal)) return [];
    if (this.exact) {
      const out: Array<[number, number]> = [];
      for (let at = line.indexOf(this.literal); at >= 0; at = line.indexOf(this.literal, at + this.literal.length)) {
        out.push([at, at + this.literal.length]);
      }
      return out;
    }
    const { cps, offsets } = codePoints(line);
    return this.run(cps, false)
      .filter((s) => (includeEmpty ? s.start >= 0 : s.end > s.start))
      .map((s): [number, number] => [offsets[s.start], offsets[s.end]]);
  }

  private check(kind: AssertKind, cps: number[], pos: number): boolean {
    const before = pos > 0 && isWordChar(cps[pos - 1]);
    const after = pos < cps.length && isWordChar(cps[pos]);
    switch (kind) {
      case "bol":
        return pos === 0;
      case "eol":
        return pos === cps.length;
      case "wordb":
        return before !== after;
      case "nwordb":
        return before === after;
      case "wstart":
        return !before && after;
      case "wend":
        return before && !after;
      case "notWordBefore":
        return !before;
      case "notWordAfter":
        return !after;
    }
  }

  /** Adds the thread at `pc` and everything reachable through jumps, splits and assertions. */
  private add(list: ThreadList, pc0: number, start: number, owner: Search, cps: number[], pos: number): void {
    const stack = this.stack;
    const prog = this.prog;
    let sp = 0;
    let visited = 0;
    stack[sp++] = pc0;
    while (sp > 0) {
      const pc = stack[--sp];
      if (!list.visit(pc)) continue;
      visited += 1;
      const inst = prog[pc];
      if (inst.op === OP_JMP) stack[sp++] = inst.x;
      else if (inst.op === OP_SPLIT) {
        stack[sp++] = inst.y;
        stack[sp++] = inst.x;
      } else if (inst.op === OP_ASSERT) {
        if (this.check(inst.kind, cps, pos)) stack[sp++] = pc + 1;
      } else {
        list.push(pc, start, owner);
      }
    }
    this.steps += visited;
  }

  /**
   * One pass over the line. Returns the chain of searches: with `firstOnly` it stops at the first
   * match of any kind (the first search then has it); otherwise every search with a non-empty
   * match is one match of grep -o.
   */
  private run(cps: number[], firstOnly: boolean): Search[] {
    let clist = this.clist;
    let nlist = this.nlist;
    clist.clear();
    const chain: Search[] = [newSearch(0)];
    for (let pos = 0; ; pos++) {
      this.steps = 1;
      const last = chain[chain.length - 1];
      if (last.start < 0 && pos >= last.origin) this.add(clist, 0, pos, last, cps, pos);
      if (clist.matchIndex >= 0) {
        if (firstOnly) {
          chain[0].start = clist.starts[clist.matchIndex];
          chain[0].end = pos;
          this.meter.charge(this.steps);
          return chain;
        }
        this.settle(clist, chain, cps, pos);
      }
      if (pos >= cps.length) {
        this.meter.charge(this.steps);
        return chain;
      }
      nlist.clear();
      const cp = cps[pos];
      for (let k = 0; k < clist.n; k++) {
        const inst = this.prog[clist.pcs[k]];
        let ok = false;
        switch (inst.op) {
          case OP_CHAR:
            ok = inst.cps.includes(cp);
            break;
          case OP_ANY:
            ok = true;
            break;
          case OP_SET:
            ok = inst.set.has(cp);
            // Outside ASCII a set test bisects ranges and may look up case variants: about twice the work.
            if (cp >= 128) this.steps += 1;
            break;
        }
        if (ok) this.add(nlist, clist.pcs[k] + 1, clist.starts[k], clist.owners[k], cps, pos + 1);
      }
      this.steps += clist.n;
      this.meter.charge(this.steps);
      const tmp = clist;
      clist = nlist;
      nlist = tmp;
    }
  }

  /**
   * A thread reached MATCH at `pos`, so its search has a better match ending here (its threads all
   * start no later than its current match, and earlier positions are behind us). Later searches are
   * dropped, threads that can no longer win are cut, and a new search starts where this match ends.
   */
  private settle(list: ThreadList, chain: Search[], cps: number[], pos: number): void {
    while (list.matchIndex >= 0) {
      const owner = list.owners[list.matchIndex];
      const start = list.starts[list.matchIndex];
      owner.start = start;
      owner.end = pos;
      while (chain[chain.length - 1] !== owner) chain.pop()!.live = false;
      const next = newSearch(start === pos ? pos + 1 : pos);
      chain.push(next);
      list.retain((k) => list.owners[k].live && (list.owners[k] !== owner || list.starts[k] <= start));
      if (next.origin === pos) this.add(list, 0, pos, next, cps, pos);
    }
  }
}

/** How to compile grep patterns. */
export interface PatternOptions {
  /** ERE (grep -E) instead of BRE. */
  extended?: boolean;
  /** Fixed strings (grep -F). */
  fixed?: boolean;
  ignoreCase?: boolean;
  /** grep -w: the match must not touch word characters on either side. */
  wordMatch?: boolean;
  /** grep -x: the match must span the whole line. */
  lineMatch?: boolean;
}

/** Compiles grep patterns (any one may match); throws RegexSyntaxError with GNU wording. Matching charges `meter`. */
export function compilePatterns(patterns: string[], options: PatternOptions = {}, meter: WorkMeter = UNMETERED): CompiledPattern {
  const length = patterns.reduce((sum, pattern) => sum + pattern.length, 0);
  if (length > MAX_PATTERN_LENGTH) throw new RegexTooBigError(`patterns longer than ${MAX_PATTERN_LENGTH} characters`);
  const nodes = patterns.map((pattern): Node => {
    const cps = Array.from(pattern, (c) => c.codePointAt(0)!);
    if (options.fixed) return { t: "cat", items: cps.map((cp): Node => ({ t: "char", cp })) };
    return new PatternParser(cps, options.extended === true).parse();
  });
  let root: Node = nodes.length === 1 ? nodes[0] : { t: "alt", items: nodes };
  if (options.wordMatch) {
    root = { t: "cat", items: [{ t: "assert", kind: "notWordBefore" }, root, { t: "assert", kind: "notWordAfter" }] };
  }
  if (options.lineMatch) {
    root = { t: "cat", items: [{ t: "assert", kind: "bol" }, root, { t: "assert", kind: "eol" }] };
  }
  checkRepeatNesting(root, 1);
  // Case-insensitive matching folds more than toLowerCase does (e.g. the Kelvin sign is a "k"), so the
  // literal shortcut is kept to case-sensitive patterns, where it is exact.
  const literal = options.ignoreCase ? "" : requiredLiteral(root);
  // Exact only without surrogates: in UTF-16 a lone surrogate of the pattern could match half of a pair.
  const exact = literal !== "" && !/[\uD800-\uDFFF]/.test(literal) && (root.t === "char" || (root.t === "cat" && root.items.every((i) => i.t === "char")));
  return new CompiledPattern(compileProgram(root, options.ignoreCase === true), literal, exact, meter);
}
