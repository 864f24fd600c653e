/**
 * awk's interpreter: walks the syntax tree. Everything it does is bounded:
 * - work: each statement charges its cost (1 + its expression nodes) every time it runs, each loop
 *   iteration charges its test, calls charge a frame, and strings, splits, regex matches, array keys
 *   and output charge their length, so any program stops within the command line's work budget;
 * - memory: strings awk builds are capped at MAX_STRING_LENGTH, live array elements at
 *   MAX_ARRAY_ELEMENTS, created fields at MAX_FIELDS (each a size_limit stop);
 * - stack: calls nest at most MAX_CALL_DEPTH deep and MAX_STACK_LEVELS tree levels in all.
 * `for (k in a)` visits keys in insertion order (a JS Map's), so output never depends on hashing.
 */
import type { Sink } from "../../context.js";
import { FLUSH_CHARS } from "../../context.js";
import { MAX_FORMAT_WIDTH, type WorkBudget } from "../../limits.js";
import { RegexSyntaxError, RegexTooBigError, type CompiledPattern } from "../../regex.js";
import { SPECIAL_NAMES, type Expr, type FieldNode, type FunctionDef, type LValue, type Pos, type Program, type SpecialName, type Stmt, type VarNode } from "./ast.js";
import {
  AwkRuntimeError,
  CALL_COST,
  CALL_LEVELS,
  ELEMENT_COST,
  FLOAT_FORMAT_COST,
  MAX_CALL_DEPTH,
  MAX_OPEN_FILES,
  MAX_STACK_LEVELS,
  MAX_STRING_LENGTH,
} from "./errors.js";
import { formatG, sprintf, type FormatContext } from "./format.js";
import { unescape } from "./lexer.js";
import { CurrentRecord } from "./record.js";
import { allMatches, fieldSplitter, recordSplitter, RecordReader, splitFields, type FieldSplitter, type RecordSplitter } from "./records.js";
import type { RegexCache } from "./regex.js";
import { changeCase, charIndex, charLength, expandReplacement, parseReplacement, Random, substitutionMatches, substr } from "./strings.js";
import { arrayOfCell, Cell, Elements, peekArray, type AwkArray } from "./variables.js";
import { integerString, isNumeric, nonFiniteString, stringToNumber, StrNum, UNINIT, type Value } from "./values.js";

/** How a statement finished. */
const NORMAL = 0;
const BREAK = 1;
const CONTINUE = 2;
const RETURN = 3;
type Completion = typeof NORMAL | typeof BREAK | typeof CONTINUE | typeof RETURN;

/** Thrown by next and nextfile to the record loop, and by exit to the top (they may come from inside functions). */
class Signal {
  constructor(readonly kind: "next" | "nextfile" | "exit") {}
}
const NEXT = new Signal("next");
const NEXTFILE = new Signal("nextfile");
const EXIT = new Signal("exit");

/** What the interpreter needs from the command around it. */
export interface AwkHost {
  stdin: string;
  stdout: Sink;
  stderr: Sink;
  budget: WorkBudget;
  env: ReadonlyMap<string, string>;
  regexes: RegexCache;
  /** Reads a file (for operands and getline < file): its text, or the reason it cannot be read. */
  readFile(name: string): { ok: true; text: string } | { ok: false; reason: string };
}

const ASSIGNMENT_OPERAND = /^[A-Za-z_][A-Za-z0-9_]*=/;

export class Interpreter {
  private readonly globals: Cell[];
  private frame: Cell[] = [];
  private readonly budget: WorkBudget;
  private readonly regexes: RegexCache;

  /** $0 and its fields. */
  private readonly rec: CurrentRecord;

  // Special variables; FS, RS, OFS, ... also kept in the form they are used in.
  private readonly specials = new Map<SpecialName, Value>();
  private nr = 0;
  private fnr = 0;
  private fs: FieldSplitter = { kind: "blank" };
  private rs: RecordSplitter = { kind: "char", char: "\n" };
  private ofs = " ";
  private ors = "\n";
  private subsep = "\x1c";
  private convfmt = "%.6g";
  private ofmt = "%.6g";
  /** Significant digits when CONVFMT/OFMT is "%.<n>g" (the fast path), else -1. */
  private convDigits = 6;
  private ofmtDigits = 6;
  /** True while a number is being converted through a custom CONVFMT/OFMT. */
  private converting = false;

  // Input.
  private reader: RecordReader | null = null;
  private argIndex = 1;
  private sawFileOperand = false;
  private stdinUsed = false;
  /** Files open for getline < file (null: the open failed). */
  private readonly files = new Map<string, RecordReader | null>();

  // Output, buffered and written in pieces of FLUSH_CHARS.
  private out = "";

  // Control and accounting.
  private readonly rangeActive: boolean[];
  private returnValue: Value = UNINIT;
  private exitCode = 0;
  private callDepth = 0;
  private stackLevels = 0;
  private readonly elements: Elements;
  private current: Pos = { line: 1, col: 1 };
  private readonly random = new Random();
  private readonly formatContext: FormatContext;

  constructor(
    private readonly program: Program,
    private readonly host: AwkHost,
    operands: string[],
  ) {
    this.budget = host.budget;
    this.regexes = host.regexes;
    this.globals = program.globals.map(() => new Cell());
    this.rangeActive = program.rules.map(() => false);
    const environ = new Map<string, Value>();
    for (const [name, value] of host.env) environ.set(name, new StrNum(value));
    this.globals[0].array = environ;
    const argv = new Map<string, Value>([["0", "awk"]]);
    operands.forEach((op, i) => argv.set(String(i + 1), new StrNum(op)));
    this.globals[1].array = argv;
    this.elements = new Elements(this.budget);
    this.elements.adopt(environ);
    this.elements.adopt(argv);
    this.rec = new CurrentRecord({
      budget: this.budget,
      toStr: (v) => this.toStr(v),
      ofs: () => this.ofs,
      paragraph: () => this.rs.kind === "paragraph",
      checkLength: (length) => this.checkLength(length),
    });
    const initial: Array<[SpecialName, Value]> = [
      ["FS", " "],
      ["OFS", " "],
      ["ORS", "\n"],
      ["RS", "\n"],
      ["SUBSEP", "\x1c"],
      ["CONVFMT", "%.6g"],
      ["OFMT", "%.6g"],
      ["RSTART", 0],
      ["RLENGTH", -1],
      ["FILENAME", ""],
      ["ARGC", operands.length + 1],
    ];
    for (const [name, value] of initial) this.specials.set(name, value);
    this.formatContext = {
      toNum: (v) => this.toNum(v),
      toStr: (v) => this.toStr(v),
      checkWidth: (directive, size, what) =>
        this.budget.checkSize(size, MAX_FORMAT_WIDTH, "maxFormatWidth", `${directive}: ${what} too large`),
      grow: (added, total) => {
        this.budget.charge(added);
        this.checkLength(total);
      },
      work: (units) => this.budget.charge(units),
      fail: (message) => {
        throw new AwkRuntimeError(message, this.current);
      },
    };
  }

  // ------------------------------------------------------------------------------ running

  /** Assigns `name=value` as -v and command-line operands do (escapes processed, the value a strnum). */
  assignVariable(name: string, raw: string): void {
    const value = new StrNum(unescape(raw));
    if ((SPECIAL_NAMES as readonly string[]).includes(name)) {
      this.setSpecial(name as SpecialName, value);
      return;
    }
    const slot = this.program.globals.indexOf(name);
    if (slot < 0) return; // the program never mentions it
    const cell = this.globals[slot];
    if (cell.array) throw new AwkRuntimeError(`cannot assign to ${name}: it is an array`, null);
    cell.value = value;
  }

  /** Runs BEGIN, the records, and END; returns the exit status. Runtime errors are reported here. */
  run(): number {
    try {
      // Without rules or END, the input is never read. exit in BEGIN or in a rule still runs END.
      const exited = this.runActions(this.program.begin);
      if (!exited && (this.program.rules.length > 0 || this.program.end.length > 0)) this.records();
      this.runActions(this.program.end);
    } catch (error) {
      if (!(error instanceof AwkRuntimeError)) throw error;
      this.flush();
      const where = error.pos ? `runtime error at line ${error.pos.line} col ${error.pos.col}: ` : "";
      this.host.stderr.write(`awk: ${where}${error.message}\n`);
      return 2;
    }
    this.flush();
    return this.exitCode;
  }

  /** Runs BEGIN or END actions; true when one of them called exit. */
  private runActions(actions: Stmt[]): boolean {
    try {
      for (const action of actions) this.exec(action);
    } catch (error) {
      // next in a function called from BEGIN or END (the parser refuses it written there directly).
      if (error === NEXT || error === NEXTFILE) throw new AwkRuntimeError(`${(error as Signal).kind} cannot be used in a BEGIN or END action`, this.current);
      if (error !== EXIT) throw error;
      this.resetStack();
      return true;
    }
    return false;
  }

  /** The main loop over the input records; true when exit was called. */
  private records(): boolean {
    const rules = this.program.rules;
    for (;;) {
      const record = this.nextMainRecord();
      if (record === null) return false;
      this.nr += 1;
      this.fnr += 1;
      this.setRecord(record);
      try {
        for (let i = 0; i < rules.length; i++) {
          const rule = rules[i];
          this.budget.charge(rule.cost);
          this.current = rule;
          if (!this.ruleMatches(i)) continue;
          if (rule.action === null) this.emit(this.rec.text + this.ors);
          else this.exec(rule.action);
        }
      } catch (error) {
        if (error === EXIT) {
          this.resetStack();
          return true;
        }
        if (error !== NEXT && error !== NEXTFILE) throw error;
        this.resetStack();
        if (error === NEXTFILE) this.reader = null;
      }
    }
  }

  private ruleMatches(i: number): boolean {
    const rule = this.program.rules[i];
    if (rule.pattern === null) return true;
    if (rule.range === null) return this.toBool(this.eval(rule.pattern));
    if (this.rangeActive[i]) {
      if (this.toBool(this.eval(rule.range))) this.rangeActive[i] = false;
      return true;
    }
    if (!this.toBool(this.eval(rule.pattern))) return false;
    // A range whose end matches the same record covers just that record.
    if (!this.toBool(this.eval(rule.range))) this.rangeActive[i] = true;
    return true;
  }

  /** After next, nextfile or exit unwound calls: back to the top level. */
  private resetStack(): void {
    this.frame = [];
    this.callDepth = 0;
    this.stackLevels = 0;
  }

  // -------------------------------------------------------------------------------- input

  /** The next record of the main input (ARGV's files, or stdin), or null at the end. */
  private nextMainRecord(): string | null {
    for (;;) {
      if (this.reader === null && !this.openNextInput()) return null;
      const record = this.reader!.next(this.rs, this.budget);
      if (record !== null) return record;
      this.reader = null;
    }
  }

  private openNextInput(): boolean {
    const argv = this.globals[1].array!;
    while (this.argIndex < this.toNum(this.specials.get("ARGC")!)) {
      const value = argv.get(String(this.argIndex++));
      const arg = value === undefined ? "" : this.toStr(value);
      if (arg === "") continue;
      if (ASSIGNMENT_OPERAND.test(arg)) {
        const eq = arg.indexOf("=");
        this.assignVariable(arg.slice(0, eq), arg.slice(eq + 1));
        continue;
      }
      this.sawFileOperand = true;
      let text: string;
      if (arg === "-" || arg === "/dev/stdin") {
        text = this.stdin();
      } else {
        const r = this.host.readFile(arg);
        if (!r.ok) {
          // As in gawk: a directory is skipped with a warning; any other unreadable operand is fatal.
          if (r.reason !== "Is a directory") throw new AwkRuntimeError(`cannot open file "${arg}" for reading: ${r.reason}`, null);
          this.flush();
          this.host.stderr.write(`awk: warning: "${arg}" is a directory: skipped\n`);
          continue;
        }
        text = r.text;
      }
      this.reader = new RecordReader(text);
      this.fnr = 0;
      this.specials.set("FILENAME", arg);
      return true;
    }
    if (this.sawFileOperand || this.stdinUsed) return false;
    this.stdinUsed = true;
    this.reader = new RecordReader(this.stdin());
    this.fnr = 0;
    return true;
  }

  /** Standard input, charged as reading a file is. */
  private stdin(): string {
    this.budget.charge(this.host.stdin.length + 1);
    return this.host.stdin;
  }

  private getline(e: Extract<Expr, { kind: "getline" }>): number {
    if (e.file === null) {
      const record = this.nextMainRecord();
      if (record === null) return 0;
      this.nr += 1;
      this.fnr += 1;
      if (e.target) this.store(e.target, new StrNum(record));
      else this.setRecord(record);
      return 1;
    }
    const name = this.toStr(this.eval(e.file));
    let reader = this.files.get(name);
    if (reader === undefined) {
      if (this.files.size >= MAX_OPEN_FILES) throw new AwkRuntimeError(`too many open files (${MAX_OPEN_FILES}); close() the ones you are done with`, e);
      let text: string | null = null;
      if (name === "-" || name === "/dev/stdin") text = this.stdin();
      else {
        const r = this.host.readFile(name);
        if (r.ok) text = r.text;
      }
      // A failed open is remembered until close(): nothing in an awk run can create the file, and
      // `while (getline line < "typo")` would otherwise retry (and throw) on every iteration.
      reader = text === null ? null : new RecordReader(text);
      this.files.set(name, reader);
    }
    if (reader === null) return -1;
    const record = reader.next(this.rs, this.budget);
    if (record === null) return 0;
    if (e.target) this.store(e.target, new StrNum(record));
    else this.setRecord(record);
    return 1;
  }

  // ------------------------------------------------------------------------------- output

  private emit(text: string): void {
    this.out += text;
    if (this.out.length >= FLUSH_CHARS) this.flush();
  }

  private flush(): void {
    if (this.out === "") return;
    const text = this.out;
    this.out = "";
    this.host.stdout.write(text);
  }

  /** Writes print/printf output where it is redirected: only the standard streams can be written. */
  private write(text: string, redirect: Extract<Stmt, { kind: "print" }>["redirect"]): void {
    if (redirect === null) {
      this.emit(text);
      return;
    }
    const target = this.toStr(this.eval(redirect.target));
    if (target === "/dev/stdout" || target === "-") this.emit(text);
    else if (target === "/dev/stderr") this.host.stderr.write(text);
    else {
      throw new AwkRuntimeError(
        `cannot write to ${JSON.stringify(target)}: awk cannot write files in this sandbox (redirect awk's output in the shell instead, e.g. awk '...' > file)`,
        redirect.target,
      );
    }
  }

  // -------------------------------------------------------------------------- conversions

  /** Refuses a string longer than MAX_STRING_LENGTH (a size_limit stop). */
  private checkLength(length: number): void {
    if (length > MAX_STRING_LENGTH) this.budget.refuse("maxAwkStringLength", `string too long (${length} characters; the limit is ${MAX_STRING_LENGTH})`, { max: MAX_STRING_LENGTH, size: length });
  }

  private numberToString(n: number, format: string, digits: number): string {
    if (Number.isInteger(n)) return integerString(n);
    if (!Number.isFinite(n)) return nonFiniteString(n);
    // High precisions cost more (V8 formats digit by digit); a custom format is charged by sprintf itself.
    this.budget.charge(FLOAT_FORMAT_COST + 4 * Math.max(digits, 0));
    // Inside a conversion by a custom CONVFMT (say "%s"), numbers fall back to "%.6g" instead of recursing.
    if (digits >= 0 || this.converting) return formatG(n, digits >= 0 ? digits : 6);
    this.converting = true;
    try {
      return sprintf(format, [n], this.formatContext);
    } finally {
      this.converting = false;
    }
  }

  /** String value (numbers through CONVFMT). */
  private toStr(v: Value): string {
    if (typeof v === "string") return v;
    if (typeof v === "number") return this.numberToString(v, this.convfmt, this.convDigits);
    if (v instanceof StrNum) return v.str;
    return "";
  }

  /** String value for print (numbers through OFMT). */
  private toOutput(v: Value): string {
    return typeof v === "number" ? this.numberToString(v, this.ofmt, this.ofmtDigits) : this.toStr(v);
  }

  private toNum(v: Value): number {
    if (typeof v === "number") return v;
    if (typeof v === "string") {
      if (v.length > 32) this.budget.charge(v.length >> 3);
      return stringToNumber(v);
    }
    if (v instanceof StrNum) return v.num ?? stringToNumber(v.str);
    return 0;
  }

  private toBool(v: Value): boolean {
    if (typeof v === "number") return v !== 0;
    if (typeof v === "string") return v !== "";
    if (v instanceof StrNum) {
      const n = v.num;
      return n !== null ? n !== 0 : v.str !== "";
    }
    return false;
  }

  /** An array subscript: numbers through CONVFMT (integers exactly), several joined by SUBSEP. */
  private subscript(subs: Expr[]): string {
    let key: string;
    if (subs.length === 1) key = this.toStr(this.eval(subs[0]));
    else {
      key = "";
      for (let i = 0; i < subs.length; i++) {
        if (i > 0) key += this.subsep;
        key += this.toStr(this.eval(subs[i]));
      }
      this.checkLength(key.length);
    }
    this.budget.charge(ELEMENT_COST + key.length);
    return key;
  }

  // ---------------------------------------------------------------------------- variables

  private cellOf(v: VarNode): Cell {
    return v.local ? this.frame[v.slot] : this.globals[v.slot];
  }

  private scalarCell(v: VarNode): Cell {
    const cell = this.cellOf(v);
    if (cell.array !== null) throw new AwkRuntimeError(`attempt to use array ${v.name} in a scalar context`, v);
    return cell;
  }

  /** The array a name stands for, created on first use (in the caller's variable for an untyped parameter). */
  private arrayOf(v: VarNode): AwkArray {
    return arrayOfCell(this.cellOf(v), v.name, v);
  }

  private getSpecial(name: SpecialName): Value {
    switch (name) {
      case "NF":
        return this.rec.nf;
      case "NR":
        return this.nr;
      case "FNR":
        return this.fnr;
      default:
        return this.specials.get(name)!;
    }
  }

  private setSpecial(name: SpecialName, v: Value): void {
    switch (name) {
      case "NF":
        this.rec.setNF(this.toNum(v), this.current);
        return;
      case "NR":
        this.nr = this.toNum(v);
        return;
      case "FNR":
        this.fnr = this.toNum(v);
        return;
      case "FS":
        this.fs = this.compileSeparator(this.toStr(v), (s) => fieldSplitter(s, this.regexes));
        break;
      case "RS":
        this.rs = this.compileSeparator(this.toStr(v), (s) => recordSplitter(s, this.regexes));
        break;
      case "OFS":
        this.ofs = this.toStr(v);
        break;
      case "ORS":
        this.ors = this.toStr(v);
        break;
      case "SUBSEP":
        this.subsep = this.toStr(v);
        break;
      case "CONVFMT":
        this.convfmt = this.toStr(v);
        this.convDigits = gDigits(this.convfmt);
        break;
      case "OFMT":
        this.ofmt = this.toStr(v);
        this.ofmtDigits = gDigits(this.ofmt);
        break;
      default:
        break;
    }
    this.specials.set(name, v);
  }

  private compileSeparator<T>(source: string, compile: (s: string) => T): T {
    try {
      return compile(source);
    } catch (error) {
      throw this.regexError(error, source, this.current);
    }
  }

  /** A regex error as awk reports it; a regex beyond the sandbox's size limits stops the command line. */
  private regexError(error: unknown, source: string, at: Pos): AwkRuntimeError {
    if (error instanceof RegexTooBigError) this.budget.refuse("maxRegexSize", error.message);
    if (!(error instanceof RegexSyntaxError)) throw error;
    return new AwkRuntimeError(`invalid regular expression /${source}/: ${error.message}`, at);
  }

  /** The regex an expression stands for: a literal's own, or its string value compiled (dynamic regex). */
  private patternOf(e: Expr): CompiledPattern {
    if (e.kind === "regex") return e.pattern;
    const source = this.toStr(this.eval(e));
    try {
      return this.regexes.get(source);
    } catch (error) {
      throw this.regexError(error, source, e);
    }
  }

  // ------------------------------------------------------------------------------- fields

  private setRecord(text: string): void {
    this.rec.set(text, this.fs);
  }

  private fieldIndex(e: Expr, at: Pos): number {
    const n = this.toNum(this.eval(e));
    if (!(n >= 0)) throw new AwkRuntimeError(`attempt to access field ${this.toStr(n)}`, at);
    return Math.trunc(n);
  }

  private getField(i: number): Value {
    return this.rec.field(i);
  }

  private setField(i: number, v: Value): void {
    if (i === 0) this.setRecord(this.toStr(v));
    else this.rec.assign(i, v);
  }

  // ---------------------------------------------------------------------------- lvalues

  private load(t: LValue): Value {
    switch (t.kind) {
      case "var":
        return this.scalarCell(t).value;
      case "special":
        return this.getSpecial(t.name);
      case "index":
        return this.elements.get(this.arrayOf(t.array), this.subscript(t.subs));
      case "field":
        return this.getField(this.fieldIndex(t.index, t));
    }
  }

  private store(t: LValue, v: Value): void {
    switch (t.kind) {
      case "var":
        this.scalarCell(t).value = v;
        return;
      case "special":
        this.setSpecial(t.name, v);
        return;
      case "index":
        this.elements.set(this.arrayOf(t.array), this.subscript(t.subs), v);
        return;
      case "field":
        this.setField(this.fieldIndex(t.index, t), v);
        return;
    }
  }

  /** Reads, updates and writes an lvalue, locating it (subscript, field number) once. */
  private modify(t: LValue, update: (old: Value) => Value): Value {
    switch (t.kind) {
      case "var": {
        const cell = this.scalarCell(t);
        return (cell.value = update(cell.value));
      }
      case "special": {
        const v = update(this.getSpecial(t.name));
        this.setSpecial(t.name, v);
        return v;
      }
      case "index": {
        const array = this.arrayOf(t.array);
        const key = this.subscript(t.subs);
        const v = update(this.elements.get(array, key));
        this.elements.set(array, key, v);
        return v;
      }
      case "field": {
        const i = this.fieldIndex(t.index, t);
        const v = update(this.getField(i));
        this.setField(i, v);
        return v;
      }
    }
  }

  // --------------------------------------------------------------------------- statements

  // Statements and expressions recurse through exec and eval, so those two stay small: every local a
  // case needs lives in a helper, which keeps their stack frames (the cost of each nesting level) small.

  private exec(s: Stmt): Completion {
    this.budget.charge(s.cost);
    this.current = s;
    switch (s.kind) {
      case "expr":
        this.eval(s.expr);
        return NORMAL;
      case "print":
        this.print(s);
        return NORMAL;
      case "printf":
        this.printf(s);
        return NORMAL;
      case "if":
        if (this.toBool(this.eval(s.test))) return this.exec(s.yes);
        return s.no === null ? NORMAL : this.exec(s.no);
      case "block":
        return this.block(s.body);
      case "while":
        return this.whileLoop(s);
      case "do":
        return this.doLoop(s);
      case "for":
        return this.forLoop(s);
      case "forin":
        return this.forIn(s);
      case "next":
        throw NEXT;
      case "nextfile":
        throw NEXTFILE;
      case "exit":
        if (s.code !== null) this.setExitCode(this.toNum(this.eval(s.code)));
        throw EXIT;
      case "return":
        this.returnValue = s.value === null ? UNINIT : this.eval(s.value);
        return RETURN;
      case "break":
        return BREAK;
      case "continue":
        return CONTINUE;
      case "delete":
        this.delete(s);
        return NORMAL;
      case "empty":
        return NORMAL;
    }
  }

  private block(body: Stmt[]): Completion {
    for (let k = 0; k < body.length; k++) {
      const c = this.exec(body[k]);
      if (c !== NORMAL) return c;
    }
    return NORMAL;
  }

  private print(s: Extract<Stmt, { kind: "print" }>): void {
    const args = s.args;
    let text: string;
    if (args.length === 0) text = this.rec.text;
    else {
      text = this.toOutput(this.eval(args[0]));
      for (let k = 1; k < args.length; k++) {
        // Written in pieces when long, so that a print of many long values is never built whole.
        if (text.length >= FLUSH_CHARS && s.redirect === null) {
          this.emit(text);
          text = "";
        }
        text += this.ofs + this.toOutput(this.eval(args[k]));
      }
    }
    this.write(text + this.ors, s.redirect);
  }

  private printf(s: Extract<Stmt, { kind: "printf" }>): void {
    const format = this.toStr(this.eval(s.args[0]));
    const values: Value[] = [];
    for (let k = 1; k < s.args.length; k++) values.push(this.eval(s.args[k]));
    this.current = s;
    this.write(sprintf(format, values, this.formatContext), s.redirect);
  }

  private whileLoop(s: Extract<Stmt, { kind: "while" }>): Completion {
    while (this.toBool(this.eval(s.test))) {
      const c = this.exec(s.body);
      if (c === BREAK) break;
      if (c === RETURN) return c;
      this.budget.charge(s.cost);
    }
    return NORMAL;
  }

  private doLoop(s: Extract<Stmt, { kind: "do" }>): Completion {
    for (;;) {
      const c = this.exec(s.body);
      if (c === BREAK) break;
      if (c === RETURN) return c;
      this.budget.charge(s.cost);
      if (!this.toBool(this.eval(s.test))) break;
    }
    return NORMAL;
  }

  private forLoop(s: Extract<Stmt, { kind: "for" }>): Completion {
    if (s.init) this.eval(s.init);
    for (;;) {
      if (s.test && !this.toBool(this.eval(s.test))) break;
      const c = this.exec(s.body);
      if (c === BREAK) break;
      if (c === RETURN) return c;
      if (s.update) this.eval(s.update);
      this.budget.charge(s.cost);
    }
    return NORMAL;
  }

  private forIn(s: Extract<Stmt, { kind: "forin" }>): Completion {
    const array = this.arrayOf(s.array);
    // A snapshot of the keys, in insertion order; keys deleted by the body are skipped.
    const keys = Array.from(array.keys());
    this.budget.charge(2 * keys.length);
    for (const key of keys) {
      if (!array.has(key)) continue;
      this.store(s.variable, new StrNum(key));
      const c = this.exec(s.body);
      if (c === BREAK) break;
      if (c === RETURN) return c;
      this.budget.charge(s.cost);
    }
    return NORMAL;
  }

  private setExitCode(value: number): void {
    const code = Math.trunc(value);
    this.exitCode = Number.isFinite(code) ? ((code % 256) + 256) % 256 : 0;
  }

  private delete(s: Extract<Stmt, { kind: "delete" }>): void {
    const array = this.arrayOf(s.array);
    if (s.subs === null) this.elements.clear(array);
    else this.elements.delete(array, this.subscript(s.subs));
  }

  // -------------------------------------------------------------------------- expressions

  private eval(e: Expr): Value {
    switch (e.kind) {
      case "num":
        return e.value;
      case "str":
        return e.value;
      case "regex":
        return e.pattern.test(this.rec.text) ? 1 : 0;
      case "var":
        return this.scalarCell(e).value;
      case "special":
        return this.getSpecial(e.name);
      case "index":
        return this.elements.get(this.arrayOf(e.array), this.subscript(e.subs));
      case "field":
        // $0 and constant field numbers are by far the commonest.
        if (e.index.kind === "num" && e.index.value >= 0) return this.getField(Math.trunc(e.index.value));
        return this.getField(this.fieldIndex(e.index, e));
      case "assign":
        return this.assign(e);
      case "cond":
        return this.toBool(this.eval(e.test)) ? this.eval(e.yes) : this.eval(e.no);
      case "and":
        return this.toBool(this.eval(e.left)) && this.toBool(this.eval(e.right)) ? 1 : 0;
      case "or":
        return this.toBool(this.eval(e.left)) || this.toBool(this.eval(e.right)) ? 1 : 0;
      case "not":
        return this.toBool(this.eval(e.operand)) ? 0 : 1;
      case "neg":
        return -this.toNum(this.eval(e.operand));
      case "plus":
        return this.toNum(this.eval(e.operand));
      case "arith":
        return this.arith(e.op, this.toNum(this.eval(e.left)), this.toNum(this.eval(e.right)), e);
      case "concat":
        return this.concat(e.parts);
      case "compare":
        return this.compare(e.op, this.eval(e.left), this.eval(e.right)) ? 1 : 0;
      case "match":
        return this.patternOf(e.right).test(this.toStr(this.eval(e.left))) !== e.negate ? 1 : 0;
      case "in":
        return this.arrayOf(e.array).has(this.subscript(e.subs)) ? 1 : 0;
      case "incdec":
        return this.incdec(e);
      case "call":
        return this.call(e);
      case "builtin":
        return this.builtin(e);
      case "getline":
        return this.getline(e);
    }
  }

  private incdec(e: Extract<Expr, { kind: "incdec" }>): number {
    const delta = e.op === "++" ? 1 : -1;
    const t = e.target;
    // Variables and array elements (n++, count[$1]++) are the common case: no closure for them.
    if (t.kind === "var") {
      const cell = this.scalarCell(t);
      const before = this.toNum(cell.value);
      cell.value = before + delta;
      return e.prefix ? before + delta : before;
    }
    if (t.kind === "index") {
      const array = this.arrayOf(t.array);
      const key = this.subscript(t.subs);
      const before = this.toNum(this.elements.get(array, key));
      array.set(key, before + delta);
      return e.prefix ? before + delta : before;
    }
    if (e.prefix) return this.modify(t, (old) => this.toNum(old) + delta) as number;
    let before = 0;
    this.modify(e.target, (old) => {
      before = this.toNum(old);
      return before + delta;
    });
    return before;
  }

  private assign(e: Extract<Expr, { kind: "assign" }>): Value {
    if (e.op === "=") {
      const t = e.target;
      if (t.kind === "var") {
        const cell = this.scalarCell(t);
        return (cell.value = this.eval(e.value));
      }
      // The target's location (subscript, field number) is found before the value is evaluated.
      if (t.kind === "index") {
        const array = this.arrayOf(t.array);
        const key = this.subscript(t.subs);
        const v = this.eval(e.value);
        this.elements.set(array, key, v);
        return v;
      }
      if (t.kind === "field") {
        const i = this.fieldIndex(t.index, t);
        const v = this.eval(e.value);
        this.setField(i, v);
        return v;
      }
      const v = this.eval(e.value);
      this.store(t, v);
      return v;
    }
    const op = e.op[0] as "+" | "-" | "*" | "/" | "%" | "^";
    return this.modify(e.target, (old) => this.arith(op, this.toNum(old), this.toNum(this.eval(e.value)), e));
  }

  private arith(op: string, x: number, y: number, at: Pos): number {
    switch (op) {
      case "+":
        return x + y;
      case "-":
        return x - y;
      case "*":
        return x * y;
      case "/":
        if (y === 0) throw new AwkRuntimeError("division by zero", at);
        return x / y;
      case "%":
        if (y === 0) throw new AwkRuntimeError("division by zero in %", at);
        return x % y;
      default:
        return x ** y;
    }
  }

  /**
   * Concatenation. JS joins strings as ropes, so the cost is the parts plus every part but the longest
   * (appending to a long string does not copy it); the result is capped at MAX_STRING_LENGTH.
   */
  private concat(parts: Expr[]): string {
    let text = "";
    let longest = 0;
    for (let k = 0; k < parts.length; k++) {
      const piece = this.toStr(this.eval(parts[k]));
      if (piece.length > longest) longest = piece.length;
      text += piece;
      if (text.length > MAX_STRING_LENGTH) this.checkLength(text.length);
    }
    this.budget.charge(parts.length + text.length - longest);
    return text;
  }

  /** awk's comparison: numeric when both sides are numeric (numbers, numeric strnums, uninitialized), else as strings. */
  private compare(op: string, a: Value, b: Value): boolean {
    if (isNumeric(a) && isNumeric(b)) {
      const x = this.toNum(a);
      const y = this.toNum(b);
      switch (op) {
        case "<":
          return x < y;
        case "<=":
          return x <= y;
        case "==":
          return x === y;
        case "!=":
          return x !== y;
        case ">":
          return x > y;
        default:
          return x >= y;
      }
    }
    const s = this.toStr(a);
    const t = this.toStr(b);
    this.budget.charge(1 + Math.min(s.length, t.length));
    switch (op) {
      case "<":
        return s < t;
      case "<=":
        return s <= t;
      case "==":
        return s === t;
      case "!=":
        return s !== t;
      case ">":
        return s > t;
      default:
        return s >= t;
    }
  }

  // ------------------------------------------------------------------------------- calls

  private call(e: Extract<Expr, { kind: "call" }>): Value {
    const def: FunctionDef = this.program.functions[e.fn];
    this.budget.charge(CALL_COST + e.args.length);
    const levels = def.depth + CALL_LEVELS;
    if (this.callDepth + 1 > MAX_CALL_DEPTH || this.stackLevels + levels > MAX_STACK_LEVELS) {
      this.budget.refuse(
        "maxAwkCallDepth",
        `function calls nested too deeply (${this.callDepth + 1} calls in progress, the innermost ${def.name}; recursion is limited to a few hundred levels)`,
        { max: MAX_CALL_DEPTH },
      );
    }
    // Arguments are evaluated in the caller's frame; arrays (and untyped variables) go by reference.
    const frame: Cell[] = new Array(def.params.length);
    for (let k = 0; k < def.params.length; k++) {
      const cell = new Cell();
      if (k < e.args.length) {
        const arg = e.args[k];
        if (arg.kind === "var") {
          const source = this.cellOf(arg);
          if (source.array !== null) {
            cell.array = source.array;
            cell.borrowed = true;
          } else if (source.value === UNINIT) cell.ref = source;
          else cell.value = source.value;
        } else {
          cell.value = this.eval(arg);
        }
      }
      frame[k] = cell;
    }
    const caller = this.frame;
    this.frame = frame;
    this.callDepth += 1;
    this.stackLevels += levels;
    const completion = this.exec(def.body);
    this.callDepth -= 1;
    this.stackLevels -= levels;
    this.frame = caller;
    this.elements.release(frame);
    const result = completion === RETURN ? this.returnValue : UNINIT;
    this.returnValue = UNINIT;
    return result;
  }

  /** A builtin call: a dispatcher without locals (it is on the recursion path), the work in helpers. */
  private builtin(e: Extract<Expr, { kind: "builtin" }>): Value {
    switch (e.name) {
      case "length":
        return this.length(e.args);
      case "substr":
        return this.substr(e.args);
      case "index":
        return this.index(e.args);
      case "split":
        return this.splitBuiltin(e.args);
      case "sub":
        return this.substitute(e, false);
      case "gsub":
        return this.substitute(e, true);
      case "match":
        return this.match(e.args);
      case "sprintf":
        return this.sprintfBuiltin(e.args);
      case "sin":
        return Math.sin(this.num(e.args[0]));
      case "cos":
        return Math.cos(this.num(e.args[0]));
      case "atan2":
        return Math.atan2(this.num(e.args[0]), this.num(e.args[1]));
      case "exp":
        return Math.exp(this.num(e.args[0]));
      case "log":
        return Math.log(this.num(e.args[0]));
      case "sqrt":
        return Math.sqrt(this.num(e.args[0]));
      case "int":
        return Math.trunc(this.num(e.args[0]));
      case "rand":
        return this.random.next();
      case "srand":
        return this.random.reseed(e.args.length > 0 ? this.num(e.args[0]) : 0);
      case "tolower":
        return this.changeCase(e.args[0], false);
      case "toupper":
        return this.changeCase(e.args[0], true);
      case "close":
        return this.files.delete(this.toStr(this.eval(e.args[0]))) ? 0 : -1;
      case "fflush":
        if (e.args.length > 0) this.eval(e.args[0]);
        return 0;
      case "system":
        // Refused by the parser; kept for exhaustiveness.
        throw new AwkRuntimeError("system() is not supported in this sandbox", e);
    }
  }

  private length(args: Expr[]): number {
    if (args.length === 0) return charLength(this.rec.text);
    const arg = args[0];
    if (arg.kind === "var") {
      const array = peekArray(this.cellOf(arg));
      if (array !== null) return array.size;
    }
    const s = this.toStr(this.eval(arg));
    this.budget.charge(1 + (s.length >> 3));
    return charLength(s);
  }

  private substr(args: Expr[]): string {
    const s = this.toStr(this.eval(args[0]));
    const m = this.toNum(this.eval(args[1]));
    const n = args.length > 2 ? this.toNum(this.eval(args[2])) : undefined;
    const result = substr(s, m, n);
    this.budget.charge(1 + result.length);
    return result;
  }

  private index(args: Expr[]): number {
    const s = this.toStr(this.eval(args[0]));
    const t = this.toStr(this.eval(args[1]));
    this.budget.charge(1 + s.length + t.length);
    const at = s.indexOf(t);
    return at < 0 ? 0 : charIndex(s, at) + 1;
  }

  /** match(s, re): the leftmost-longest match's position (RSTART, 0 if none) and length (RLENGTH, -1 if none). */
  private match(args: Expr[]): number {
    const s = this.toStr(this.eval(args[0]));
    const first = allMatches(this.patternOf(args[1]), s, true, this.budget)[0];
    const start = first === undefined ? 0 : charIndex(s, first[0]) + 1;
    const length = first === undefined ? -1 : charLength(s.slice(first[0], first[1]));
    this.specials.set("RSTART", start);
    this.specials.set("RLENGTH", length);
    return start;
  }

  private sprintfBuiltin(args: Expr[]): string {
    const format = this.toStr(this.eval(args[0]));
    const values: Value[] = [];
    for (let k = 1; k < args.length; k++) values.push(this.eval(args[k]));
    return sprintf(format, values, this.formatContext);
  }

  private changeCase(arg: Expr, upper: boolean): string {
    const s = this.toStr(this.eval(arg));
    this.budget.charge(1 + s.length);
    return changeCase(s, upper);
  }

  private num(e: Expr): number {
    return this.toNum(this.eval(e));
  }

  private splitBuiltin(args: Expr[]): number {
    const s = this.toStr(this.eval(args[0]));
    const array = this.arrayOf(args[1] as VarNode);
    let splitter: FieldSplitter;
    if (args.length < 3) splitter = this.fs;
    else if (args[2].kind === "regex") splitter = { kind: "regex", pattern: args[2].pattern };
    else {
      const sep = this.toStr(this.eval(args[2]));
      splitter = this.compileSeparator(sep, (x) => fieldSplitter(x, this.regexes));
    }
    const parts = splitFields(s, splitter, false, this.budget);
    this.elements.clear(array);
    this.budget.charge(parts.length * ELEMENT_COST);
    for (let k = 0; k < parts.length; k++) this.elements.set(array, String(k + 1), new StrNum(parts[k]));
    return parts.length;
  }

  /** sub and gsub: replace the first (or every) match in the target, which is assigned only if something matched. */
  private substitute(e: Extract<Expr, { kind: "builtin" }>, global: boolean): number {
    const pattern = this.patternOf(e.args[0]);
    const parts = parseReplacement(this.toStr(this.eval(e.args[1])));
    const target: LValue = e.args.length > 2 ? (e.args[2] as LValue) : RECORD;
    const original = this.toStr(this.load(target));
    const found = substitutionMatches(allMatches(pattern, original, true, this.budget), global);
    if (found.length === 0) return 0;
    let text = "";
    let last = 0;
    for (const [s, end] of found) {
      text += original.slice(last, s) + expandReplacement(parts, original.slice(s, end));
      last = end;
      if (text.length > MAX_STRING_LENGTH) this.checkLength(text.length);
    }
    text += original.slice(last);
    this.checkLength(text.length);
    this.budget.charge(text.length + found.length);
    this.store(target, text);
    return found.length;
  }
}

/** $0, as the default target of sub and gsub. */
const RECORD: FieldNode = { kind: "field", index: { kind: "num", value: 0, line: 0, col: 0 }, line: 0, col: 0 };

/** The digits of a "%.<n>g" format (the fast path of number conversion), or -1 for any other format. */
function gDigits(format: string): number {
  const m = /^%\.(\d{1,2})g$/.exec(format);
  return m ? Number(m[1]) : format === "%g" ? 6 : -1;
}

