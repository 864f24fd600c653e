/**
 * What a command sees when it runs (arguments, stdin, output streams, the file system, shell
 * state, the command line's work budget) and the helpers every command shares: GNU-style option
 * parsing, error texts for sandbox errors, file-name quoting and line splitting.
 */
import { SandboxError } from "../../core/errors.js";
import type { MemoryFileSystem } from "../filesystem.js";
import { isCommandLineStop, LINE_COST, UNMETERED, type WorkBudget, type WorkMeter } from "./limits.js";

/** Commands that build output in pieces write it out once this many characters are pending, so it never piles up. */
export const FLUSH_CHARS = 4096;

/** Somewhere output goes: the terminal, a pipe, or a file. */
export interface Sink {
  write(text: string): void;
}

/**
 * A size-capped text buffer; writes past the cap are dropped and `truncated` is set. Every character
 * written is charged to the meter, kept or not: producing output is work even when nobody reads it.
 */
export class OutputBuffer implements Sink {
  private readonly parts: string[] = [];
  private bytes = 0;
  /** True once a write was cut at the cap. */
  truncated = false;

  constructor(
    readonly limit: number,
    private readonly meter: WorkMeter = UNMETERED,
  ) {}

  write(text: string): void {
    this.meter.charge(text.length);
    if (this.truncated || text.length === 0) return;
    const size = Buffer.byteLength(text, "utf8");
    if (this.bytes + size <= this.limit) {
      this.parts.push(text);
      this.bytes += size;
      return;
    }
    const room = this.limit - this.bytes;
    // Cut on a byte boundary, then drop a partial trailing character.
    const cut = Buffer.from(text, "utf8").subarray(0, room).toString("utf8").replace(/\uFFFD$/u, "");
    this.parts.push(cut);
    this.bytes = this.limit;
    this.truncated = true;
  }

  /** Everything written so far. */
  text(): string {
    if (this.parts.length > 1) {
      const joined = this.parts.join("");
      this.parts.length = 0;
      this.parts.push(joined);
    }
    return this.parts[0] ?? "";
  }
}

/** Shell state a command may read or (for builtins such as cd and export) change. */
export interface ShellState {
  cwd: string;
  readonly env: ReadonlyMap<string, string>;
  /** Sets a variable; throws the size_limit stop when the value or the environment would be too large. */
  setVar(name: string, value: string): void;
  unsetVar(name: string): void;
  readonly user: string;
  readonly host: string;
  /** Names of all available commands, sorted. */
  commandNames(): string[];
  /** True for shell builtins (cd, export, ...), false for "external" commands, null if unknown. */
  isBuiltin(name: string): boolean | null;
}

/** Everything a command gets for one invocation. */
export interface CommandContext {
  /** The command name as typed (after expansion). */
  name: string;
  args: string[];
  stdin: string;
  stdout: Sink;
  stderr: Sink;
  fs: MemoryFileSystem;
  shell: ShellState;
  /** The command line's work budget: charge work that grows with the input or the arguments. */
  budget: WorkBudget;
}

/**
 * A command implementation: returns the exit status, reports user errors on stderr, never throws them.
 * It may throw a command-line stop (work budget or size limit), which ends the whole command line.
 */
export type CommandHandler = (ctx: CommandContext) => number;

/** A registered command. */
export interface CommandSpec {
  name: string;
  run: CommandHandler;
  /** Shell builtins are listed as such by `type` and not found by `which`. */
  builtin?: boolean;
  /** One-line usage shown by --help. */
  usage?: string;
}

/** Absolute path of an operand relative to the shell's cwd (throws SandboxError). */
export function resolvePath(ctx: CommandContext, path: string): string {
  return ctx.fs.resolve(path, ctx.shell.cwd);
}

/**
 * The strerror-like text for a sandbox error, as coreutils would print it. Rethrows anything else,
 * including a command-line stop caught by a command's own error handling: that one ends the line.
 */
export function errorText(error: unknown): string {
  if (!(error instanceof SandboxError) || isCommandLineStop(error)) throw error;
  switch (error.code) {
    case "not_found":
      return "No such file or directory";
    case "not_a_directory":
      return "Not a directory";
    case "is_a_directory":
      return "Is a directory";
    case "already_exists":
      return "File exists";
    case "directory_not_empty":
      return "Directory not empty";
    case "permission_denied":
      return "Permission denied";
    case "read_only":
      return "Read-only file system";
    case "size_limit":
      return error.details.limit === "maxFileBytes" ? "File too large" : "No space left on device";
    case "path_escape":
      return "Permission denied (path is outside the sandbox)";
    case "invalid_path": {
      const reason = error.details.reason;
      if (reason === "empty") return "No such file or directory";
      if (reason === "too_long" || reason === "name_too_long") return "File name too long";
      return "Invalid argument";
    }
    default:
      return error.message;
  }
}

/** The code of a SandboxError (rethrows anything else, and command-line stops). */
export function errorCode(error: unknown): string {
  if (!(error instanceof SandboxError) || isCommandLineStop(error)) throw error;
  return error.code;
}

const SAFE_NAME = /^[A-Za-z0-9_./+,:@%^=-]+$/;

/** GNU `quote()`: always quoted, 'name' (or "name" when it contains a single quote). */
export function quote(name: string): string {
  if (!name.includes("'")) return `'${name}'`;
  if (!/["\\$`]/.test(name)) return `"${name}"`;
  return `'${name.replace(/'/g, "'\\''")}'`;
}

/** Quotes a file name only when it has characters a shell would treat specially (coreutils style). */
export function quoteIfNeeded(name: string): string {
  return SAFE_NAME.test(name) ? name : quote(name);
}

/** Charges LINE_COST per line of `text`, counted before anything is split (counting is far cheaper than splitting). */
function chargeLines(text: string, meter: WorkMeter): void {
  let lines = 1;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) lines += 1;
  meter.charge(lines * LINE_COST);
}

/** Splits text into lines that keep their "\n" (the last may lack one), charging the lines to `meter`. */
export function splitLinesKeep(text: string, meter: WorkMeter): string[] {
  if (text === "") return [];
  chargeLines(text, meter);
  const lines = text.split("\n");
  const out = lines.map((line) => line + "\n");
  if (lines[lines.length - 1] === "") out.pop();
  else out[out.length - 1] = lines[lines.length - 1];
  return out;
}

/** Splits text into lines without terminators (a trailing newline adds no empty line), charging the lines to `meter`. */
export function splitLines(text: string, meter: WorkMeter): string[] {
  if (text === "") return [];
  chargeLines(text, meter);
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** Reads an operand ("-" is stdin), charging its length. Returns the content, or the SandboxError on failure. */
export function readOperand(ctx: CommandContext, operand: string): { ok: true; text: string } | { ok: false; error: unknown } {
  let text: string;
  if (operand === "-") {
    text = ctx.stdin;
  } else {
    try {
      text = ctx.fs.readFile(resolvePath(ctx, operand));
    } catch (error) {
      if (!(error instanceof SandboxError) || isCommandLineStop(error)) throw error;
      return { ok: false, error };
    }
  }
  ctx.budget.charge(text.length + 1);
  return { ok: true, text };
}

// ------------------------------------------------------------------------------------ options

/** Declares a command's options for parseOptions. */
export interface OptionSpec {
  /** Short options without an argument, e.g. "laR1". */
  flags?: string;
  /** Short options taking an argument, e.g. "nc". */
  withArg?: string;
  /** Long options: name -> key (a short letter or a word); "name=" as the name means it takes an argument. */
  long?: Record<string, string>;
  /** Exit status for usage errors (2 for ls and grep, 1 for most coreutils). */
  usageExit?: number;
  /** Stop at the first operand (POSIX order) instead of permuting like GNU getopt. */
  posixOrder?: boolean;
}

/** Parsed options: each key's values in order (flags get ""), plus operands. */
export interface ParsedOptions {
  has(key: string): boolean;
  /** All values given for an option, in order. */
  all(key: string): string[];
  /** The last value given for an option. */
  last(key: string): string | undefined;
  /** Option keys in the order given (for options whose relative order matters). */
  order: string[];
  operands: string[];
}

/** Prints "Try 'cmd --help'..." after a usage error and returns the usage exit code. */
export function usageError(ctx: CommandContext, message: string, exitCode = 1): number {
  ctx.stderr.write(`${ctx.name}: ${message}\nTry '${ctx.name} --help' for more information.\n`);
  return exitCode;
}

/**
 * GNU getopt_long-style parsing: bundled short flags (-la), attached or separate arguments
 * (-n5, -n 5), long options (--lines=5), "--" to end options, "-" as an operand, and options
 * permuted after operands. Returns a number (exit status) after printing a usage error, or
 * after printing --help.
 */
export function parseOptions(ctx: CommandContext, spec: OptionSpec, args = ctx.args): ParsedOptions | number {
  const flags = spec.flags ?? "";
  const withArg = spec.withArg ?? "";
  const long = spec.long ?? {};
  const exit = spec.usageExit ?? 1;
  const values = new Map<string, string[]>();
  const order: string[] = [];
  const operands: string[] = [];
  const add = (key: string, value: string): void => {
    if (!values.has(key)) values.set(key, []);
    values.get(key)!.push(value);
    order.push(key);
  };
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      i += 1;
      break;
    }
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = arg.slice(2, eq < 0 ? undefined : eq);
      if (name === "help") {
        ctx.stdout.write(`Usage: ${ctx.name} [OPTION]... [FILE]...\n(sandbox implementation of ${ctx.name})\n`);
        return 0;
      }
      const flagKey = long[name];
      const argKey = long[`${name}=`];
      if (flagKey === undefined && argKey === undefined) return usageError(ctx, `unrecognized option '${arg}'`, exit);
      const takesArg = argKey !== undefined && (flagKey === undefined || eq >= 0);
      const key = takesArg ? argKey : flagKey;
      if (takesArg) {
        if (eq >= 0) add(key, arg.slice(eq + 1));
        else if (i + 1 < args.length) add(key, args[++i]);
        else return usageError(ctx, `option '--${name}' requires an argument`, exit);
      } else {
        if (eq >= 0) return usageError(ctx, `option '--${name}' doesn't allow an argument`, exit);
        add(key, "");
      }
      continue;
    }
    if (arg.startsWith("-") && arg.length > 1) {
      for (let k = 1; k < arg.length; k++) {
        const c = arg[k];
        if (withArg.includes(c)) {
          const rest = arg.slice(k + 1);
          if (rest !== "") add(c, rest);
          else if (i + 1 < args.length) add(c, args[++i]);
          else return usageError(ctx, `option requires an argument -- '${c}'`, exit);
          break;
        }
        if (!flags.includes(c)) return usageError(ctx, `invalid option -- '${c}'`, exit);
        add(c, "");
      }
      continue;
    }
    operands.push(arg);
    if (spec.posixOrder) {
      i += 1;
      break;
    }
  }
  // A loop, not push(...rest): spreading a very long argument list overflows the stack.
  for (; i < args.length; i++) operands.push(args[i]);
  return {
    has: (key) => values.has(key),
    all: (key) => values.get(key) ?? [],
    last: (key) => values.get(key)?.at(-1),
    order,
    operands,
  };
}
