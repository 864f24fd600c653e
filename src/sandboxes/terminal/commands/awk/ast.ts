/**
 * The syntax tree of an awk program. Variables are resolved to slots while parsing (globals in one
 * table, a function's parameters in its frame), so the interpreter never looks a name up at run time.
 */
import type { CompiledPattern } from "../../regex.js";

/** Where a node starts in the program text (1-based), for error messages. */
export interface Pos {
  line: number;
  col: number;
}

/** awk's built-in scalar variables with behaviour attached (the interpreter keeps them itself). */
export const SPECIAL_NAMES = [
  "NF",
  "NR",
  "FNR",
  "FS",
  "OFS",
  "ORS",
  "RS",
  "FILENAME",
  "SUBSEP",
  "RSTART",
  "RLENGTH",
  "CONVFMT",
  "OFMT",
  "ARGC",
] as const;
export type SpecialName = (typeof SPECIAL_NAMES)[number];

/** Built-in functions (system is parsed so that it can be refused with a clear message). */
export const BUILTIN_NAMES = [
  "length",
  "substr",
  "index",
  "split",
  "sub",
  "gsub",
  "match",
  "sprintf",
  "sin",
  "cos",
  "atan2",
  "exp",
  "log",
  "sqrt",
  "int",
  "rand",
  "srand",
  "tolower",
  "toupper",
  "close",
  "fflush",
  "system",
] as const;
export type BuiltinName = (typeof BUILTIN_NAMES)[number];

/** A variable: a global slot, or a slot of the current function's frame. */
export interface VarNode extends Pos {
  kind: "var";
  local: boolean;
  slot: number;
  name: string;
}

export type LValue = VarNode | (Pos & { kind: "special"; name: SpecialName }) | IndexNode | FieldNode;

export interface IndexNode extends Pos {
  kind: "index";
  array: VarNode;
  subs: Expr[];
}

export interface FieldNode extends Pos {
  kind: "field";
  index: Expr;
}

export type AssignOp = "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "^=";
export type ArithOp = "+" | "-" | "*" | "/" | "%" | "^";
export type CompareOp = "<" | "<=" | "==" | "!=" | ">" | ">=";

export type Expr =
  | (Pos & { kind: "num"; value: number })
  | (Pos & { kind: "str"; value: string })
  /** A regex literal: matches $0 where a value is wanted, is the pattern itself after ~ and in builtins. */
  | (Pos & { kind: "regex"; source: string; pattern: CompiledPattern })
  | VarNode
  | (Pos & { kind: "special"; name: SpecialName })
  | IndexNode
  | FieldNode
  | (Pos & { kind: "assign"; op: AssignOp; target: LValue; value: Expr })
  | (Pos & { kind: "cond"; test: Expr; yes: Expr; no: Expr })
  | (Pos & { kind: "and" | "or"; left: Expr; right: Expr })
  | (Pos & { kind: "not" | "neg" | "plus"; operand: Expr })
  | (Pos & { kind: "arith"; op: ArithOp; left: Expr; right: Expr })
  /** Concatenation is kept flat: `a b c d` is one node, however long. */
  | (Pos & { kind: "concat"; parts: Expr[] })
  | (Pos & { kind: "compare"; op: CompareOp; left: Expr; right: Expr })
  | (Pos & { kind: "match"; negate: boolean; left: Expr; right: Expr })
  | (Pos & { kind: "in"; subs: Expr[]; array: VarNode })
  | (Pos & { kind: "incdec"; op: "++" | "--"; prefix: boolean; target: LValue })
  /** A call of a user function; `fn` is its index in Program.functions (resolved after parsing). */
  | (Pos & { kind: "call"; name: string; fn: number; args: Expr[] })
  | (Pos & { kind: "builtin"; name: BuiltinName; args: Expr[] })
  /** getline from the main input (`file` null) or from a file. */
  | (Pos & { kind: "getline"; target: LValue | null; file: Expr | null });

/** Output of print and printf: stdout unless redirected (only /dev/stdout and /dev/stderr are writable). */
export interface Redirect {
  append: boolean;
  target: Expr;
}

/** Statement nodes carry `cost`: the work units one execution charges (1 + the nodes of its own expressions). */
export type Stmt = Pos & { cost: number } & (
    | { kind: "expr"; expr: Expr }
    | { kind: "print"; args: Expr[]; redirect: Redirect | null }
    | { kind: "printf"; args: Expr[]; redirect: Redirect | null }
    | { kind: "if"; test: Expr; yes: Stmt; no: Stmt | null }
    | { kind: "while"; test: Expr; body: Stmt }
    | { kind: "do"; body: Stmt; test: Expr }
    | { kind: "for"; init: Expr | null; test: Expr | null; update: Expr | null; body: Stmt }
    | { kind: "forin"; variable: LValue; array: VarNode; body: Stmt }
    | { kind: "block"; body: Stmt[] }
    | { kind: "next" | "nextfile" | "break" | "continue" | "empty" }
    | { kind: "exit"; code: Expr | null }
    | { kind: "return"; value: Expr | null }
    | { kind: "delete"; array: VarNode; subs: Expr[] | null }
  );

/** A pattern-action rule; a null action prints the record, a `range` end makes it a range pattern. */
export interface Rule extends Pos {
  pattern: Expr | null;
  range: Expr | null;
  action: Stmt | null;
  /** Units charged per record for evaluating the pattern(s). */
  cost: number;
}

export interface FunctionDef extends Pos {
  name: string;
  params: string[];
  body: Stmt;
  /** Deepest nesting of the body's syntax tree, in stack units: what one call of it adds to the interpreter's stack. */
  depth: number;
}

export interface Program {
  begin: Stmt[];
  rules: Rule[];
  end: Stmt[];
  functions: FunctionDef[];
  /** Names of the global slots, by slot (ENVIRON and ARGV come first). */
  globals: string[];
}
