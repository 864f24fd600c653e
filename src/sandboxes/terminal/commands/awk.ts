/**
 * awk: POSIX awk as it is used for log analysis, with gawk's common extensions (length(array),
 * delete array, nextfile, regex RS, \y, hex constants). The program runs in the sandbox: no commands
 * (system(), pipes to or from commands) and no file writes (print > file); `print > "/dev/stderr"`
 * works. rand() is seeded from 0 unless srand(x) is called, so every run gives the same output.
 *
 * Why hand-written: no maintained pure-JS awk exists that could run under the sandbox's rules (every
 * step charged to a deterministic work budget, hard caps on strings, arrays and recursion, regexes on
 * the linear-time Pike VM, never JS RegExp on agent input, typed stops instead of hangs or crashes).
 * The implementation lives in ./awk/: lexer, parser, interpreter, values and formatting, records and
 * fields, variables and arrays, regexes.
 */
import {
  errorText,
  parseOptions,
  readOperand,
  type CommandContext,
  type CommandSpec,
} from "../context.js";
import { RegexTooBigError } from "../regex.js";
import { AwkRuntimeError, AwkSyntaxError, MAX_PROGRAM_LENGTH } from "./awk/errors.js";
import { Interpreter, type AwkHost } from "./awk/interpreter.js";
import { parseProgram } from "./awk/parser.js";
import { RegexCache } from "./awk/regex.js";

const USAGE = "usage: awk [-F fs][-v var=value][prog | -f progfile][file ...]\n";
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/s;

/** The source line of an error and a caret under its column (a window of the line when it is long). */
function excerpt(program: string, line: number, col: number): string {
  const text = program.split("\n")[line - 1];
  if (text === undefined) return "";
  let from = 0;
  if (col > 60) from = col - 40;
  const shown = text.slice(from, from + 100);
  const caret = shown.slice(0, Math.max(0, col - 1 - from)).replace(/[^\t]/g, " ");
  return ` ${from > 0 ? "..." : ""}${shown}\n ${from > 0 ? "   " : ""}${caret}^\n`;
}

/** Reads a file awk was given (operand, -f, getline < file); the sandbox has no /dev, so its usual names are mapped here. */
function readInput(ctx: CommandContext, name: string): { ok: true; text: string } | { ok: false; reason: string } {
  if (name === "/dev/null") return { ok: true, text: "" };
  const r = readOperand(ctx, name === "/dev/stdin" ? "-" : name);
  return r.ok ? r : { ok: false, reason: errorText(r.error) };
}

/** The awk command: runAwk, with a last line of defence against the engine's own stack limit. */
function awk(ctx: CommandContext): number {
  try {
    return runAwk(ctx);
  } catch (error) {
    // The parser's and the interpreter's limits keep their recursion far from the engine's stack limit;
    // should a host already deep in its own stack meet it anyway, the line stops at a limit, never crashes.
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      ctx.budget.refuse("maxAwkCallDepth", "program nested too deeply for the interpreter's stack");
    }
    throw error;
  }
}

function runAwk(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "V",
    withArg: "Fvf",
    long: { "field-separator=": "F", "assign=": "v", "file=": "f", version: "V" },
    usageExit: 2,
    posixOrder: true,
  });
  if (typeof opts === "number") return opts;
  if (opts.has("V")) {
    ctx.stdout.write("awk (LLMix sandbox implementation: POSIX awk with common gawk extensions)\n");
    return 0;
  }
  let operands = opts.operands;
  let program: string;
  if (opts.has("f")) {
    const sources: string[] = [];
    for (const file of opts.all("f")) {
      const r = readInput(ctx, file);
      if (!r.ok) {
        ctx.stderr.write(`awk: cannot open source file "${file}" for reading: ${r.reason}\n`);
        return 2;
      }
      sources.push(r.text);
    }
    program = sources.join("\n");
  } else {
    if (operands.length === 0) {
      ctx.stderr.write(USAGE);
      return 2;
    }
    program = operands[0];
    operands = operands.slice(1);
  }
  ctx.budget.checkSize(program.length, MAX_PROGRAM_LENGTH, "maxAwkProgramLength", "program too long");
  ctx.budget.charge(program.length);

  const regexes = new RegexCache(ctx.budget);
  let parsed;
  try {
    parsed = parseProgram(program, (source) => regexes.get(source));
  } catch (error) {
    if (error instanceof RegexTooBigError) ctx.budget.refuse("maxRegexSize", error.message);
    if (!(error instanceof AwkSyntaxError)) throw error;
    const { line, col } = error.pos;
    ctx.stderr.write(`awk: ${error.label} at line ${line} col ${col}: ${error.message}\n${excerpt(program, line, col)}`);
    return 2;
  }

  const host: AwkHost = {
    stdin: ctx.stdin,
    stdout: ctx.stdout,
    stderr: ctx.stderr,
    budget: ctx.budget,
    env: ctx.shell.env,
    regexes,
    readFile: (name) => readInput(ctx, name),
  };
  const interpreter = new Interpreter(parsed, host, operands);
  try {
    const fs = opts.last("F");
    // The value is processed like a string literal ("\t" is a tab, "\\|" an escaped bar), as in gawk.
    if (fs !== undefined) interpreter.assignVariable("FS", fs);
    for (const assignment of opts.all("v")) {
      if (!ASSIGNMENT.test(assignment)) {
        ctx.stderr.write(`awk: invalid -v argument "${assignment}": expected name=value\n`);
        return 2;
      }
      const eq = assignment.indexOf("=");
      interpreter.assignVariable(assignment.slice(0, eq), assignment.slice(eq + 1));
    }
    return interpreter.run();
  } catch (error) {
    if (!(error instanceof AwkRuntimeError)) throw error;
    ctx.stderr.write(`awk: ${error.message}\n`);
    return 2;
  }
}

/** The awk command. */
export const AWK_COMMAND: CommandSpec = { name: "awk", run: awk, usage: USAGE.trim() };
