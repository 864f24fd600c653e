/**
 * awk's error kinds and its own limits. Errors in the program are reported as awk reports them (a
 * message and exit status 2); limits that protect the sandbox are WorkBudget stops (size_limit), like
 * every other command's, so the tool call fails with a typed error.
 */
import { MAX_EXPANDED_LENGTH } from "../../limits.js";
import type { Pos } from "./ast.js";

/** Longest program text, in characters: as long as the longest command line. */
export const MAX_PROGRAM_LENGTH = 64 * 1024;
/** Deepest nesting the parser accepts (parentheses, blocks, unary chains), in parser levels. */
export const MAX_PARSE_DEPTH = 200;
/**
 * Deepest syntax tree the parser accepts, in stack units: each node counts what evaluating it puts on
 * the interpreter's stack (1 to 4 units of about 100 bytes; see the parser's `stackWeight`).
 */
export const MAX_TREE_DEPTH = 600;
/** Most nested user-function calls. */
export const MAX_CALL_DEPTH = 1000;
/**
 * Most stack units in use at once: every active call counts its body's tree depth plus CALL_LEVELS.
 * 4,000 units is about 400 KB of stack, well within Node's default (984 KB) wherever the shell runs.
 */
export const MAX_STACK_LEVELS = 4000;
/** Stack units of a call itself (the frames that set it up and run its body). */
export const CALL_LEVELS = 8;
/** Longest string awk builds (concatenation, sprintf, sub/gsub, $0 rebuilt from fields). */
export const MAX_STRING_LENGTH = MAX_EXPANDED_LENGTH;
/** Most array elements alive at once, over all arrays (each costs memory the input did not pay for). */
export const MAX_ARRAY_ELEMENTS = 100_000;
/** Highest field number a program may create by assigning to $n or NF. */
export const MAX_FIELDS = 100_000;
/** Most distinct dynamic regexes kept compiled. */
export const MAX_CACHED_REGEXES = 256;
/** Most files open for `getline < file` at once. */
export const MAX_OPEN_FILES = 64;

/** Work units of one user-function call (frame set-up), plus one per argument. */
export const CALL_COST = 10;
/** Work units per array element looked up (hashing the key), plus the key's length. */
export const ELEMENT_COST = 2;
/** Work units per array element created (the map grows; measured at 1 to 3 µs each). */
export const INSERT_COST = 50;
/**
 * Work units per regex match found (sub, gsub, match, split, FS and RS regexes): besides the scan the
 * regex engine charges, each match is an object and a slice (measured at 1.5 to 3 µs per empty match).
 */
export const MATCH_COST = 120;
/**
 * Work units per character of a text whose regex matches are all collected (on top of the regex
 * engine's own charge: collecting converts the text to code points and tracks every search).
 */
export const SCAN_COST = 16;
/** Work units per number formatted with a float conversion (CONVFMT, OFMT, %e %f %g), plus its digits. */
export const FLOAT_FORMAT_COST = 20;

/** A program that does not parse; reported as `awk: syntax error at line L col C: message`. */
export class AwkSyntaxError extends Error {
  constructor(
    message: string,
    readonly pos: Pos,
    /** "syntax error" for malformed text; "error" for well-formed text the sandbox refuses (system(), pipes). */
    readonly label = "syntax error",
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A fatal error while running (division by zero, an array used as a scalar, ...); exit status 2. */
export class AwkRuntimeError extends Error {
  constructor(
    message: string,
    readonly pos: Pos | null,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
