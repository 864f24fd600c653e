/**
 * awk's parser: recursive descent over the POSIX grammar, precedence from lowest to highest:
 * assignment, ?:, ||, &&, in, ~ !~, comparison, concatenation, + -, * / %, unary ! - +, ^, ++ --, $,
 * grouping. The parser's own recursion is bounded (MAX_PARSE_DEPTH), and so is the depth of the tree
 * it builds (MAX_TREE_DEPTH, checked without recursion), which bounds the interpreter's recursion.
 */
import { RegexSyntaxError, RegexTooBigError, type CompiledPattern } from "../../regex.js";
import {
  SPECIAL_NAMES,
  type BuiltinName,
  type Expr,
  type FunctionDef,
  type LValue,
  type Pos,
  type Program,
  type Redirect,
  type Rule,
  type SpecialName,
  type Stmt,
  type VarNode,
} from "./ast.js";
import { AwkSyntaxError, MAX_PARSE_DEPTH, MAX_TREE_DEPTH } from "./errors.js";
import { Lexer, type Token } from "./lexer.js";

const SPECIALS: ReadonlySet<string> = new Set(SPECIAL_NAMES);
const ASSIGN_OPS = new Set(["=", "+=", "-=", "*=", "/=", "%=", "^="]);
const COMPARE_OPS = new Set(["<", "<=", "==", "!=", ">", ">="]);
/** Arguments each builtin takes: [min, max]. */
const ARITY: Record<BuiltinName, [number, number]> = {
  length: [0, 1],
  substr: [2, 3],
  index: [2, 2],
  split: [2, 3],
  sub: [2, 3],
  gsub: [2, 3],
  match: [2, 2],
  sprintf: [1, Infinity],
  sin: [1, 1],
  cos: [1, 1],
  atan2: [2, 2],
  exp: [1, 1],
  log: [1, 1],
  sqrt: [1, 1],
  int: [1, 1],
  rand: [0, 0],
  srand: [0, 1],
  tolower: [1, 1],
  toupper: [1, 1],
  close: [1, 2],
  fflush: [0, 1],
  system: [1, 1],
};

/** Global slots every program has, in this order. */
export const PREDEFINED_GLOBALS = ["ENVIRON", "ARGV"] as const;

/** Compiles a regex literal's source; throws RegexSyntaxError (or RegexTooBigError) for a bad one. */
export type RegexCompiler = (source: string) => CompiledPattern;

/** Parses program text; throws AwkSyntaxError (or RegexTooBigError for a regex beyond the sandbox's limits). */
export function parseProgram(src: string, compileRegex: RegexCompiler): Program {
  return new Parser(src, compileRegex).program();
}

type Section = "begin" | "end" | "rule" | "function";

class Parser {
  private readonly lexer: Lexer;
  private tok: Token;
  private depth = 0;
  private loops = 0;
  private section: Section = "rule";
  /** Parameters of the function being parsed (name -> frame slot), or null outside functions. */
  private params: Map<string, number> | null = null;
  /** Inside print's expression list (outside parentheses), where '>' redirects instead of comparing. */
  private noGreater = false;
  private readonly globals = new Map<string, number>();
  private readonly globalUses = new Map<string, Pos>();
  private readonly calls: Array<Extract<Expr, { kind: "call" }>> = [];
  private readonly out: Program = { begin: [], rules: [], end: [], functions: [], globals: [] };

  constructor(
    src: string,
    private readonly compileRegex: RegexCompiler,
  ) {
    this.lexer = new Lexer(src);
    for (const name of PREDEFINED_GLOBALS) this.globalSlot(name);
    this.tok = this.lexer.next();
  }

  // ------------------------------------------------------------------------------- tokens

  private advance(): Token {
    const t = this.tok;
    this.tok = this.lexer.next();
    return t;
  }

  private isPunct(p: string): boolean {
    return this.tok.kind === "punct" && this.tok.text === p;
  }

  private isKeyword(k: string): boolean {
    return this.tok.kind === "keyword" && this.tok.text === k;
  }

  private pos(t: Token = this.tok): Pos {
    return { line: t.line, col: t.col };
  }

  private describe(t: Token): string {
    switch (t.kind) {
      case "eof":
        return "end of program";
      case "newline":
        return "newline";
      case "string":
        return `string ${JSON.stringify(t.text.length > 20 ? `${t.text.slice(0, 20)}...` : t.text)}`;
      case "number":
        return `number ${t.text}`;
      case "name":
      case "funcname":
        return `name '${t.text}'`;
      default:
        return `'${t.text}'`;
    }
  }

  private error(message: string, at: Pos = this.pos(), label?: string): AwkSyntaxError {
    return new AwkSyntaxError(message, at, label);
  }

  private unexpected(expected?: string): AwkSyntaxError {
    return this.error(`unexpected ${this.describe(this.tok)}${expected ? `; expected ${expected}` : ""}`);
  }

  private expect(p: string, what = `'${p}'`): Token {
    if (!this.isPunct(p)) throw this.unexpected(what);
    return this.advance();
  }

  private skipNewlines(): void {
    while (this.tok.kind === "newline") this.advance();
  }

  private skipTerminators(): void {
    while (this.tok.kind === "newline" || this.isPunct(";")) this.advance();
  }

  private enter(): void {
    this.depth += 1;
    if (this.depth > MAX_PARSE_DEPTH) throw this.error(`program nested too deeply (more than ${MAX_PARSE_DEPTH} levels)`);
  }

  private leave(): void {
    this.depth -= 1;
  }

  // ------------------------------------------------------------------------------ program

  program(): Program {
    this.skipTerminators();
    while (this.tok.kind !== "eof") {
      this.item();
      this.skipTerminators();
    }
    this.resolve();
    return this.out;
  }

  private item(): void {
    if (this.isKeyword("BEGIN") || this.isKeyword("END")) {
      const which = this.advance().text;
      this.skipNewlines();
      if (!this.isPunct("{")) throw this.unexpected(`'{' (${which} needs an action)`);
      this.section = which === "BEGIN" ? "begin" : "end";
      const action = this.block();
      this.section = "rule";
      (which === "BEGIN" ? this.out.begin : this.out.end).push(action);
      return;
    }
    if (this.isKeyword("function")) {
      this.functionDef();
      return;
    }
    const at = this.pos();
    let pattern: Expr | null = null;
    let range: Expr | null = null;
    if (!this.isPunct("{")) {
      pattern = this.expr();
      if (this.isPunct(",")) {
        this.advance();
        this.skipNewlines();
        range = this.expr();
      }
    }
    let action: Stmt | null = null;
    if (this.isPunct("{")) action = this.block();
    else if (this.tok.kind !== "newline" && this.tok.kind !== "eof" && !this.isPunct(";")) throw this.unexpected();
    const rule: Rule = { ...at, pattern, range, action, cost: 0 };
    this.out.rules.push(rule);
  }

  private functionDef(): void {
    const at = this.pos();
    this.advance();
    const nameTok = this.tok;
    if (nameTok.kind !== "name" && nameTok.kind !== "funcname") {
      throw this.unexpected(nameTok.kind === "builtin" ? `a function name ('${nameTok.text}' is a builtin)` : "a function name");
    }
    const name = nameTok.text;
    if (SPECIALS.has(name) || (PREDEFINED_GLOBALS as readonly string[]).includes(name)) throw this.error(`cannot use the built-in variable ${name} as a function name`, this.pos(nameTok));
    if (this.out.functions.some((f) => f.name === name)) throw this.error(`function ${name} is defined twice`, this.pos(nameTok));
    this.advance();
    this.expect("(");
    const params: string[] = [];
    this.skipNewlines();
    while (!this.isPunct(")")) {
      if (this.tok.kind !== "name") throw this.unexpected("a parameter name");
      const param = this.tok.text;
      if (SPECIALS.has(param)) throw this.error(`cannot use the built-in variable ${param} as a parameter`);
      if (params.includes(param)) throw this.error(`parameter ${param} is declared twice`);
      if (param === name) throw this.error(`function ${name}: a parameter cannot have the function's name`);
      params.push(param);
      this.advance();
      this.skipNewlines();
      if (this.isPunct(",")) {
        this.advance();
        this.skipNewlines();
      } else if (!this.isPunct(")")) throw this.unexpected("',' or ')'");
    }
    this.advance();
    this.skipNewlines();
    if (!this.isPunct("{")) throw this.unexpected("'{' (the function's body)");
    // Registered before the body is parsed, so the body can call itself.
    const def: FunctionDef = { ...at, name, params, body: { kind: "empty", cost: 0, ...at }, depth: 0 };
    this.out.functions.push(def);
    this.params = new Map(params.map((p, i) => [p, i]));
    this.section = "function";
    def.body = this.block();
    this.section = "rule";
    this.params = null;
  }

  /** Resolves calls to their functions, checks names, and measures every statement's cost and the tree's depth. */
  private resolve(): void {
    const index = new Map(this.out.functions.map((f, i) => [f.name, i]));
    for (const call of this.calls) {
      const fn = index.get(call.name);
      if (fn === undefined) {
        const gawk = ["gensub", "strftime", "systime", "mktime", "asort", "asorti", "strtonum", "patsplit", "and", "or", "xor", "lshift", "rshift", "compl"];
        const why = gawk.includes(call.name) ? ` (${call.name} is a gawk extension this awk does not have)` : "";
        throw this.error(`function ${call.name} is not defined${why}`, call);
      }
      const def = this.out.functions[fn];
      if (call.args.length > def.params.length) {
        throw this.error(`function ${call.name} called with ${call.args.length} arguments; it declares ${def.params.length}`, call);
      }
      call.fn = fn;
    }
    for (const def of this.out.functions) {
      const use = this.globalUses.get(def.name);
      if (use) throw this.error(`function name ${def.name} used as a variable`, use);
      for (const p of def.params) {
        if (index.has(p)) throw this.error(`function ${def.name}: parameter ${p} shadows a function`, def);
      }
    }
    this.out.globals = [...this.globals.keys()];
    for (const s of [...this.out.begin, ...this.out.end]) measure(s);
    for (const rule of this.out.rules) {
      rule.cost = 1 + (rule.pattern ? measure(rule.pattern).nodes : 0) + (rule.range ? measure(rule.range).nodes : 0);
      if (rule.action) measure(rule.action);
    }
    for (const def of this.out.functions) def.depth = measure(def.body).depth;
  }

  // --------------------------------------------------------------------------- statements

  private block(): Stmt {
    const at = this.pos();
    this.expect("{");
    this.enter();
    const body: Stmt[] = [];
    this.skipTerminators();
    while (!this.isPunct("}")) {
      if (this.tok.kind === "eof") throw this.error("missing '}' (the block opened here is not closed)", at);
      body.push(this.statement());
      this.skipTerminators();
    }
    this.advance();
    this.leave();
    return { kind: "block", body, cost: 0, ...at };
  }

  /** A statement used as the body of if/while/for/do (newlines may come first). */
  private body(): Stmt {
    this.skipNewlines();
    return this.statement();
  }

  private atSimpleEnd(): boolean {
    return this.tok.kind === "newline" || this.tok.kind === "eof" || this.isPunct(";") || this.isPunct("}");
  }

  /** Ends a simple statement: ';' or a newline is consumed, '}' and the end are left for the caller. */
  private simpleEnd(): void {
    if (this.isPunct(";") || this.tok.kind === "newline") this.advance();
    else if (!this.isPunct("}") && this.tok.kind !== "eof") throw this.unexpected("';' or a newline");
  }

  private statement(): Stmt {
    this.enter();
    const stmt = this.statementInner();
    this.leave();
    return stmt;
  }

  private statementInner(): Stmt {
    const at = { ...this.pos(), cost: 0 };
    if (this.isPunct("{")) return this.block();
    if (this.isPunct(";")) {
      this.advance();
      return { kind: "empty", ...at };
    }
    if (this.tok.kind === "keyword") {
      switch (this.tok.text) {
        case "if": {
          this.advance();
          this.expect("(");
          const test = this.expr();
          this.expect(")");
          const yes = this.body();
          // Newlines and a ';' may separate the statement from its else.
          this.skipTerminators();
          let no: Stmt | null = null;
          if (this.isKeyword("else")) {
            this.advance();
            no = this.body();
          }
          return { kind: "if", test, yes, no, ...at };
        }
        case "while": {
          this.advance();
          this.expect("(");
          const test = this.expr();
          this.expect(")");
          if (this.isPunct(";")) {
            this.advance();
            return { kind: "while", test, body: { kind: "empty", ...at }, ...at };
          }
          return { kind: "while", test, body: this.loopBody(), ...at };
        }
        case "do": {
          this.advance();
          const body = this.loopBody();
          this.skipTerminators();
          if (!this.isKeyword("while")) throw this.unexpected("'while' (ending the do loop)");
          this.advance();
          this.expect("(");
          const test = this.expr();
          this.expect(")");
          this.simpleEnd();
          return { kind: "do", body, test, ...at };
        }
        case "for":
          return this.forStatement(at);
        case "break":
        case "continue": {
          const word = this.advance().text as "break" | "continue";
          if (this.loops === 0) throw this.error(`${word} is not inside a loop`, at);
          this.simpleEnd();
          return { kind: word, ...at };
        }
        case "next":
        case "nextfile": {
          const word = this.advance().text as "next" | "nextfile";
          if (this.section === "begin" || this.section === "end") throw this.error(`${word} cannot be used in a BEGIN or END action`, at);
          this.simpleEnd();
          return { kind: word, ...at };
        }
        case "exit": {
          this.advance();
          const code = this.atSimpleEnd() ? null : this.expr();
          this.simpleEnd();
          return { kind: "exit", code, ...at };
        }
        case "return": {
          this.advance();
          if (this.params === null) throw this.error("return is not inside a function", at);
          const value = this.atSimpleEnd() ? null : this.expr();
          this.simpleEnd();
          return { kind: "return", value, ...at };
        }
        case "delete": {
          this.advance();
          const array = this.arrayName();
          let subs: Expr[] | null = null;
          if (this.isPunct("[")) {
            this.advance();
            subs = this.exprList("]");
            if (subs.length === 0) throw this.error("delete needs a subscript between [ and ]", at);
          }
          this.simpleEnd();
          return { kind: "delete", array, subs, ...at };
        }
        case "print":
        case "printf":
          return this.printStatement(at);
        default:
          break;
      }
    }
    const expr = this.expr();
    this.simpleEnd();
    return { kind: "expr", expr, ...at };
  }

  private loopBody(): Stmt {
    this.loops += 1;
    const body = this.body();
    this.loops -= 1;
    return body;
  }

  private forStatement(at: Pos & { cost: number }): Stmt {
    this.advance();
    this.expect("(");
    if (this.tok.kind === "name") {
      // for (name in array): three tokens of look-ahead, then back if it is a plain for.
      const nameTok = this.tok;
      const state = this.lexer.save();
      this.advance();
      if (this.isKeyword("in")) {
        this.advance();
        if (this.tok.kind === "name") {
          const arrayTok = this.tok;
          this.advance();
          if (this.isPunct(")")) {
            this.advance();
            const variable = this.variable(nameTok);
            const array = this.arrayVar(arrayTok);
            return { kind: "forin", variable, array, body: this.loopBody(), ...at };
          }
        }
      }
      this.lexer.restore(state);
      this.tok = nameTok;
    }
    const init = this.isPunct(";") ? null : this.expr();
    this.expect(";");
    this.skipNewlines();
    const test = this.isPunct(";") ? null : this.expr();
    this.expect(";");
    this.skipNewlines();
    const update = this.isPunct(")") ? null : this.expr();
    this.expect(")");
    if (this.isPunct(";")) {
      this.advance();
      return { kind: "for", init, test, update, body: { kind: "empty", ...at }, ...at };
    }
    return { kind: "for", init, test, update, body: this.loopBody(), ...at };
  }

  private isRedirect(): boolean {
    return this.isPunct(">") || this.isPunct(">>") || this.isPunct("|");
  }

  private printStatement(at: Pos & { cost: number }): Stmt {
    const kind = this.advance().text as "print" | "printf";
    let args: Expr[] | null = null;
    if (this.atSimpleEnd() || this.isRedirect()) args = [];
    else if (this.isPunct("(")) args = this.tryParenthesizedList();
    if (args === null) {
      const saved = this.noGreater;
      this.noGreater = true;
      args = [this.expr()];
      while (this.isPunct(",")) {
        this.advance();
        this.skipNewlines();
        args.push(this.expr());
      }
      this.noGreater = saved;
    }
    let redirect: Redirect | null = null;
    if (this.isPunct("|")) {
      throw this.error(`${kind} | command is not supported in this sandbox: awk cannot run commands (pipe awk's output in the shell instead)`, this.pos(), "error");
    }
    if (this.isPunct(">") || this.isPunct(">>")) {
      const append = this.advance().text === ">>";
      const saved = this.noGreater;
      this.noGreater = true;
      redirect = { append, target: this.concat() };
      this.noGreater = saved;
    }
    if (kind === "printf" && args.length === 0) throw this.error("printf needs a format", at);
    this.simpleEnd();
    return { kind, args, redirect, ...at };
  }

  /**
   * `print (a, b) > "x"`: a parenthesized list is the whole argument list only when the statement ends
   * (or redirects) right after it; otherwise `(a)` was a grouping (`print (a)(b)`), and it is re-parsed.
   */
  private tryParenthesizedList(): Expr[] | null {
    const state = this.lexer.save();
    const tok = this.tok;
    const depth = this.depth;
    try {
      this.advance();
      const list = this.exprList(")");
      if (list.length > 0 && (this.atSimpleEnd() || this.isRedirect())) return list;
    } catch (error) {
      if (!(error instanceof AwkSyntaxError)) throw error;
    }
    this.lexer.restore(state);
    this.tok = tok;
    this.depth = depth;
    return null;
  }

  /** Comma-separated expressions up to `close` (consumed); '>' compares again inside. */
  private exprList(close: string): Expr[] {
    const saved = this.noGreater;
    this.noGreater = false;
    const list: Expr[] = [];
    this.skipNewlines();
    while (!this.isPunct(close)) {
      list.push(this.expr());
      this.skipNewlines();
      if (this.isPunct(",")) {
        this.advance();
        this.skipNewlines();
      } else if (!this.isPunct(close)) throw this.unexpected(`',' or '${close}'`);
    }
    this.advance();
    this.noGreater = saved;
    return list;
  }

  // --------------------------------------------------------------------------- expressions

  private expr(): Expr {
    this.enter();
    const left = this.ternary();
    let result = left;
    if (this.tok.kind === "punct" && ASSIGN_OPS.has(this.tok.text) && isLValue(left)) {
      const opTok = this.advance();
      this.skipNewlines();
      const value = this.expr();
      result = { kind: "assign", op: opTok.text as Extract<Expr, { kind: "assign" }>["op"], target: left, value, ...this.pos(opTok) };
    }
    this.leave();
    return result;
  }

  private ternary(): Expr {
    const test = this.or();
    if (!this.isPunct("?")) return test;
    const at = this.pos();
    this.advance();
    this.skipNewlines();
    const yes = this.expr();
    this.skipNewlines();
    this.expect(":");
    this.skipNewlines();
    const no = this.expr();
    return { kind: "cond", test, yes, no, ...at };
  }

  private or(): Expr {
    let left = this.and();
    while (this.isPunct("||")) {
      const at = this.pos(this.advance());
      this.skipNewlines();
      left = { kind: "or", left, right: this.and(), ...at };
    }
    return left;
  }

  private and(): Expr {
    let left = this.inExpr();
    while (this.isPunct("&&")) {
      const at = this.pos(this.advance());
      this.skipNewlines();
      left = { kind: "and", left, right: this.inExpr(), ...at };
    }
    return left;
  }

  private inExpr(): Expr {
    let left = this.matchExpr();
    while (this.isKeyword("in")) {
      const at = this.pos(this.advance());
      left = { kind: "in", subs: [left], array: this.arrayName(), ...at };
    }
    return left;
  }

  private matchExpr(): Expr {
    let left = this.compare();
    while (this.isPunct("~") || this.isPunct("!~")) {
      const opTok = this.advance();
      left = { kind: "match", negate: opTok.text === "!~", left, right: this.compare(), ...this.pos(opTok) };
    }
    return left;
  }

  private compare(): Expr {
    const left = this.concat();
    if (this.tok.kind !== "punct" || !COMPARE_OPS.has(this.tok.text) || (this.noGreater && this.tok.text === ">")) return left;
    const opTok = this.advance();
    const op = opTok.text as Extract<Expr, { kind: "compare" }>["op"];
    return { kind: "compare", op, left, right: this.concat(), ...this.pos(opTok) };
  }

  /** True when the current token can start the next operand of a concatenation. */
  private startsConcatOperand(): boolean {
    const t = this.tok;
    switch (t.kind) {
      case "number":
      case "string":
      case "name":
      case "funcname":
      case "builtin":
        return true;
      case "punct":
        // Not '-', '+' or '!': after an operand those are binary (or start != and !~), as in every awk.
        return t.text === "$" || t.text === "(" || t.text === "++" || t.text === "--";
      default:
        return false;
    }
  }

  private concat(): Expr {
    const first = this.additive();
    const parts = [first];
    while (this.startsConcatOperand()) parts.push(this.additive());
    if (this.isPunct("|")) {
      const state = this.lexer.save();
      const bar = this.tok;
      this.advance();
      const isGetline = this.isKeyword("getline");
      this.lexer.restore(state);
      this.tok = bar;
      if (isGetline) {
        throw this.error('"command" | getline is not supported in this sandbox: awk cannot run commands', this.pos(bar), "error");
      }
    }
    return parts.length === 1 ? first : { kind: "concat", parts, line: first.line, col: first.col };
  }

  private additive(): Expr {
    let left = this.multiplicative();
    while (this.isPunct("+") || this.isPunct("-")) {
      const opTok = this.advance();
      left = { kind: "arith", op: opTok.text as "+" | "-", left, right: this.multiplicative(), ...this.pos(opTok) };
    }
    return left;
  }

  private multiplicative(): Expr {
    let left = this.unary();
    while (this.isPunct("*") || this.isPunct("/") || this.isPunct("%")) {
      const opTok = this.advance();
      left = { kind: "arith", op: opTok.text as "*" | "/" | "%", left, right: this.unary(), ...this.pos(opTok) };
    }
    return left;
  }

  private unary(): Expr {
    this.enter();
    let result: Expr;
    if (this.isPunct("!") || this.isPunct("-") || this.isPunct("+")) {
      const opTok = this.advance();
      const kind = opTok.text === "!" ? "not" : opTok.text === "-" ? "neg" : "plus";
      result = { kind, operand: this.unary(), ...this.pos(opTok) };
    } else {
      result = this.power();
    }
    this.leave();
    return result;
  }

  private power(): Expr {
    const base = this.postfix();
    if (!this.isPunct("^")) return base;
    const opTok = this.advance();
    // Right-associative, and the exponent may carry a sign: 2^-1, 2^3^2 = 2^9.
    return { kind: "arith", op: "^", left: base, right: this.unary(), ...this.pos(opTok) };
  }

  private postfix(): Expr {
    if (this.isPunct("++") || this.isPunct("--")) {
      const opTok = this.advance();
      const target = this.primary();
      if (!isLValue(target)) throw this.error(`${opTok.text} needs a variable, field or array element`, this.pos(opTok));
      return { kind: "incdec", op: opTok.text as "++" | "--", prefix: true, target, ...this.pos(opTok) };
    }
    const e = this.primary();
    if (isLValue(e) && (this.isPunct("++") || this.isPunct("--"))) {
      const opTok = this.advance();
      return { kind: "incdec", op: opTok.text as "++" | "--", prefix: false, target: e, ...this.pos(opTok) };
    }
    return e;
  }

  private primary(): Expr {
    this.enter();
    const e = this.primaryInner();
    this.leave();
    return e;
  }

  private primaryInner(): Expr {
    const t = this.tok;
    const at = this.pos(t);
    switch (t.kind) {
      case "number":
        this.advance();
        return { kind: "num", value: t.value, ...at };
      case "string":
        this.advance();
        return { kind: "str", value: t.text, ...at };
      case "name": {
        this.advance();
        if (this.isPunct("[")) {
          this.advance();
          const subs = this.exprList("]");
          if (subs.length === 0) throw this.error(`${t.text}[]: a subscript is needed between [ and ]`, at);
          return { kind: "index", array: this.arrayVar(t), subs, ...at };
        }
        return this.variable(t);
      }
      case "funcname": {
        this.advance();
        this.expect("(");
        const call: Extract<Expr, { kind: "call" }> = { kind: "call", name: t.text, fn: -1, args: this.exprList(")"), ...at };
        this.calls.push(call);
        return call;
      }
      case "builtin":
        return this.builtin();
      case "keyword":
        if (t.text === "getline") return this.getline();
        throw this.unexpected("an expression");
      case "punct":
        break;
      default:
        throw this.unexpected("an expression");
    }
    switch (t.text) {
      case "/":
      case "/=": {
        const re = this.lexer.rescanRegex(t);
        this.tok = this.lexer.next();
        return { kind: "regex", source: re.text, pattern: this.regex(re.text, at), ...at };
      }
      case "(": {
        this.advance();
        const list = this.exprList(")");
        if (list.length === 0) throw this.error("empty parentheses", at);
        if (list.length === 1) return list[0];
        if (!this.isKeyword("in")) throw this.unexpected("'in' after a parenthesized list (a list is only valid as (i, j) in array)");
        this.advance();
        return { kind: "in", subs: list, array: this.arrayName(), ...at };
      }
      case "$": {
        this.advance();
        let index: Expr;
        if (this.isPunct("++") || this.isPunct("--")) index = this.postfix();
        else if (this.isPunct("-") || this.isPunct("+") || this.isPunct("!")) index = this.unary();
        else index = this.primary();
        return { kind: "field", index, ...at };
      }
      case "-":
      case "+":
      case "!":
        return this.unary();
      default:
        throw this.unexpected("an expression");
    }
  }

  private regex(source: string, at: Pos): CompiledPattern {
    try {
      return this.compileRegex(source);
    } catch (error) {
      if (error instanceof RegexTooBigError || !(error instanceof RegexSyntaxError)) throw error;
      throw this.error(`invalid regular expression /${source}/: ${error.message}`, at);
    }
  }

  private builtin(): Expr {
    const t = this.advance();
    const at = this.pos(t);
    const name = t.text as BuiltinName;
    if (name === "system") {
      throw this.error("system() is not supported in this sandbox: awk cannot run commands", at, "error");
    }
    let args: Expr[];
    if (this.isPunct("(")) {
      this.advance();
      args = this.exprList(")");
    } else if (name === "length") {
      args = [];
    } else {
      throw this.unexpected(`'(' after ${name}`);
    }
    const [min, max] = ARITY[name];
    if (name === "match" && args.length === 3) {
      throw this.error("match() with an array argument (a gawk extension) is not supported: use RSTART and RLENGTH with substr()", at, "error");
    }
    if (args.length < min || args.length > max) {
      const wanted = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
      throw this.error(`${name}() takes ${wanted} argument${min === 1 && max === 1 ? "" : "s"}, not ${args.length}`, at);
    }
    if (name === "split") {
      const target = args[1];
      if (target.kind !== "var") throw this.error("split()'s second argument must be an array name", target);
    }
    if ((name === "sub" || name === "gsub") && args.length === 3 && !isLValue(args[2])) {
      throw this.error(`${name}()'s third argument must be a variable, field or array element`, args[2]);
    }
    return { kind: "builtin", name, args, ...at };
  }

  private getline(): Expr {
    const at = this.pos(this.advance());
    let target: LValue | null = null;
    if (this.isPunct("$")) {
      const e = this.primary();
      target = e as LValue;
    } else if (this.tok.kind === "name") {
      const nameTok = this.advance();
      if (this.isPunct("[")) {
        this.advance();
        target = { kind: "index", array: this.arrayVar(nameTok), subs: this.exprList("]"), ...this.pos(nameTok) };
      } else {
        target = this.variable(nameTok);
      }
    }
    let file: Expr | null = null;
    if (this.isPunct("<")) {
      this.advance();
      file = this.postfix();
    }
    return { kind: "getline", target, file, ...at };
  }

  // ------------------------------------------------------------------------------ names

  private globalSlot(name: string): number {
    let slot = this.globals.get(name);
    if (slot === undefined) {
      slot = this.globals.size;
      this.globals.set(name, slot);
    }
    return slot;
  }

  /** A scalar use of a name: a special variable, a parameter or a global. */
  private variable(t: Token): VarNode | Extract<LValue, { kind: "special" }> {
    if (SPECIALS.has(t.text)) return { kind: "special", name: t.text as SpecialName, ...this.pos(t) };
    return this.arrayVar(t);
  }

  /** A name used as an array (or passed on): a parameter or a global, never a special variable. */
  private arrayVar(t: Token): VarNode {
    const name = t.text;
    if (SPECIALS.has(name)) throw this.error(`${name} is a scalar built-in variable, not an array`, this.pos(t));
    const local = this.params?.get(name);
    if (local !== undefined) return { kind: "var", local: true, slot: local, name, ...this.pos(t) };
    if (!this.globalUses.has(name)) this.globalUses.set(name, this.pos(t));
    return { kind: "var", local: false, slot: this.globalSlot(name), name, ...this.pos(t) };
  }

  private arrayName(): VarNode {
    if (this.tok.kind !== "name") throw this.unexpected("an array name");
    return this.arrayVar(this.advance());
  }
}

/** True for expressions that can be assigned to. */
export function isLValue(e: Expr): e is LValue {
  return e.kind === "var" || e.kind === "special" || e.kind === "index" || e.kind === "field";
}

/** The child nodes of a tree node (statements and expressions alike); regex programs are leaves. */
function children(node: object): object[] {
  const out: object[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === "pattern" || value === null || typeof value !== "object") continue;
    if (key === "redirect") out.push((value as Redirect).target);
    else if (Array.isArray(value)) for (const item of value as object[]) out.push(item);
    else if ("kind" in value) out.push(value);
  }
  return out;
}

/**
 * What evaluating a node puts on the interpreter's stack, in units of about 100 bytes (measured: the
 * frames of exec/eval and of the helper a node goes through on the way to its children).
 */
function stackWeight(node: object): number {
  switch ((node as { kind: string }).kind) {
    case "builtin":
    case "assign":
    case "incdec":
      return 4;
    case "index":
    case "in":
    case "field":
    case "concat":
    case "getline":
    case "match":
    case "while":
    case "do":
    case "for":
    case "forin":
    case "print":
    case "printf":
      return 3;
    case "block":
      return 2;
    default:
      return "cost" in node ? 1 : 2;
  }
}

/**
 * Sets `cost` on every statement under `root` (1 + the expression nodes it evaluates itself, not those
 * of nested statements) and returns the tree's depth and node count. Iterative, so a deep tree cannot
 * overflow the stack here; a tree deeper than MAX_TREE_DEPTH (in stack units) is refused, which bounds
 * the interpreter's recursion.
 */
function measure(root: object): { depth: number; nodes: number } {
  let maxDepth = 0;
  let nodes = 0;
  const stack: Array<{ node: object; depth: number; owner: { cost: number } | null }> = [{ node: root, depth: stackWeight(root), owner: null }];
  while (stack.length > 0) {
    const { node, depth, owner } = stack.pop()!;
    if (depth > MAX_TREE_DEPTH) {
      throw new AwkSyntaxError(`program nested too deeply (expressions and statements nest past ${MAX_TREE_DEPTH} stack units)`, node as Pos);
    }
    maxDepth = Math.max(maxDepth, depth);
    nodes += 1;
    let counter = owner;
    if ("cost" in node) {
      counter = node as { cost: number };
      counter.cost = 1;
    } else if (counter) {
      counter.cost += 1;
    }
    for (const child of children(node)) stack.push({ node: child, depth: depth + stackWeight(child), owner: counter });
  }
  return { depth: maxDepth, nodes };
}
