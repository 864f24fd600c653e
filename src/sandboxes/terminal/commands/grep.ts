/**
 * grep: BRE by default, -E extended, -F fixed strings; -i -v -c -n -l -L -o -w -x -h -H -q -s
 * -r/-R (with --include/--exclude), -e/-f, -m, and context (-A -B -C). Exit status 0 when a line
 * was selected, 1 when none, 2 on error (GNU semantics, including "-q wins over errors"). Reading,
 * matching (the regex VM) and the -r walk are charged to the command line's work budget.
 */
import { compileGlob, matchGlob } from "../glob.js";
import { compilePatterns, RegexSyntaxError, RegexTooBigError, type CompiledPattern } from "../regex.js";
import {
  errorText,
  parseOptions,
  readOperand,
  resolvePath,
  splitLines,
  type CommandContext,
  type CommandSpec,
} from "../context.js";

interface Input {
  name: string;
  text: string;
}

function grep(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "ivcnEFGrRlLowxhHqsIyUa",
    withArg: "eABCmf",
    long: {
      "ignore-case": "i",
      "invert-match": "v",
      count: "c",
      "line-number": "n",
      "extended-regexp": "E",
      "fixed-strings": "F",
      "basic-regexp": "G",
      recursive: "r",
      "dereference-recursive": "R",
      "files-with-matches": "l",
      "files-without-match": "L",
      "only-matching": "o",
      "word-regexp": "w",
      "line-regexp": "x",
      "no-filename": "h",
      "with-filename": "H",
      quiet: "q",
      silent: "q",
      "no-messages": "s",
      "regexp=": "e",
      "file=": "f",
      "max-count=": "m",
      "after-context=": "A",
      "before-context=": "B",
      "context=": "C",
      "include=": "include",
      "exclude=": "exclude",
      "exclude-dir=": "exclude-dir",
      color: "color",
      "color=": "color",
      colour: "color",
      "colour=": "color",
    },
    usageExit: 2,
  });
  if (typeof opts === "number") return opts;
  const quiet = opts.has("q");
  const silent = opts.has("s");
  let errorSeen = false;
  const fail = (message: string): void => {
    errorSeen = true;
    if (!silent) ctx.stderr.write(`grep: ${message}\n`);
  };

  // Patterns: -e/-f, or else the first operand. A newline separates several patterns.
  const operands = [...opts.operands];
  let patterns: string[] = [];
  if (opts.has("e") || opts.has("f")) {
    for (const p of opts.all("e")) patterns = patterns.concat(p.split("\n"));
    for (const file of opts.all("f")) {
      const r = readOperand(ctx, file);
      if (!r.ok) {
        ctx.stderr.write(`grep: ${file}: ${errorText(r.error)}\n`);
        return 2;
      }
      patterns = patterns.concat(splitLines(r.text, ctx.budget));
    }
  } else {
    const first = operands.shift();
    if (first === undefined) {
      ctx.stderr.write("Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n");
      return 2;
    }
    patterns = first.split("\n");
  }

  const numberOption = (key: string, label: string): number | null => {
    const v = opts.last(key);
    if (v === undefined) return 0;
    if (!/^\d+$/.test(v)) {
      ctx.stderr.write(`grep: ${v}: invalid ${label} argument\n`);
      return null;
    }
    return Number(v);
  };
  const context = numberOption("C", "context length");
  const after = opts.has("A") ? numberOption("A", "context length") : context;
  const before = opts.has("B") ? numberOption("B", "context length") : context;
  const maxCount = opts.has("m") ? numberOption("m", "max count") : Infinity;
  if (after === null || before === null || maxCount === null || context === null) return 2;

  let matcher: CompiledPattern;
  try {
    const options = {
      extended: opts.has("E"),
      fixed: opts.has("F"),
      ignoreCase: opts.has("i") || opts.has("y"),
      wordMatch: opts.has("w"),
      lineMatch: opts.has("x"),
    };
    matcher = compilePatterns(patterns, options, ctx.budget);
  } catch (error) {
    // Too big for the sandbox (GNU grep might accept it): a limit of the sandbox, not a mistake in the pattern.
    if (error instanceof RegexTooBigError) ctx.budget.refuse("maxRegexSize", error.message);
    if (!(error instanceof RegexSyntaxError)) throw error;
    ctx.stderr.write(`grep: ${error.message}\n`);
    return 2;
  }

  // Inputs, in order; directories expand (sorted) under -r.
  const recursive = opts.has("r") || opts.has("R");
  const implicitDot = operands.length === 0 && recursive;
  const files = operands.length > 0 ? operands : [recursive ? "." : "-"];
  const includes = opts.all("include").map(compileGlob);
  const excludes = opts.all("exclude").map(compileGlob);
  const excludeDirs = opts.all("exclude-dir").map(compileGlob);
  let sawDirectory = false;
  const inputs: Array<() => Input | null> = [];
  for (const op of files) {
    if (op === "-") {
      inputs.push(() => ({ name: "(standard input)", text: ctx.stdin }));
      continue;
    }
    let abs: string;
    let type: "file" | "dir";
    try {
      abs = resolvePath(ctx, op);
      type = ctx.fs.stat(abs).type;
    } catch (error) {
      inputs.push(() => (fail(`${op}: ${errorText(error)}`), null));
      continue;
    }
    if (type === "file") {
      inputs.push(() => {
        const r = readOperand(ctx, op);
        return r.ok ? { name: op, text: r.text } : (fail(`${op}: ${errorText(r.error)}`), null);
      });
      continue;
    }
    if (!recursive) {
      inputs.push(() => (fail(`${op}: Is a directory`), null));
      continue;
    }
    sawDirectory = true;
    const prefix = abs === "/" ? "/" : `${abs}/`;
    const glob = (pattern: ReturnType<typeof compileGlob>, name: string): boolean => matchGlob(pattern, name, { meter: ctx.budget });
    for (const path of ctx.fs.walk(abs)) {
      const rel = path.slice(prefix.length);
      const parts = rel.split("/");
      if (excludeDirs.some((g) => parts.slice(0, -1).some((p) => glob(g, p)))) continue;
      const base = parts[parts.length - 1];
      if (includes.length > 0 && !includes.some((g) => glob(g, base))) continue;
      if (excludes.some((g) => glob(g, base))) continue;
      const name = implicitDot ? rel : op.endsWith("/") ? op + rel : `${op}/${rel}`;
      inputs.push(() => {
        try {
          if (ctx.fs.stat(path).type !== "file") return null;
          const text = ctx.fs.readFile(path);
          ctx.budget.charge(text.length);
          return { name, text };
        } catch (error) {
          fail(`${name}: ${errorText(error)}`);
          return null;
        }
      });
    }
  }

  const withName = opts.has("H") || (!opts.has("h") && (files.length > 1 || sawDirectory));
  const invert = opts.has("v");
  const only = opts.has("o");
  const listMatching = opts.has("l");
  const listMissing = opts.has("L");
  const countOnly = opts.has("c");
  const number = opts.has("n");
  // Any explicit context option (even -C0) turns on "--" group separators, as in GNU grep.
  const contextGiven = opts.has("A") || opts.has("B") || opts.has("C");
  const useContext = !only && !countOnly && !listMatching && !listMissing && contextGiven;
  let anySelected = false;
  let printedGroup = false;

  for (const load of inputs) {
    const input = load();
    if (!input) continue;
    const lines = splitLines(input.text, ctx.budget);
    let count = 0;
    let lastPrinted = -1;
    let afterLeft = 0;
    const prefix = (index: number, sep: string): string =>
      (withName ? `${input.name}${sep}` : "") + (number ? `${index + 1}${sep}` : "");
    for (let idx = 0; idx < lines.length && count < maxCount; idx++) {
      const line = lines[idx];
      const selected = matcher.test(line) !== invert;
      if (!selected) {
        if (useContext && afterLeft > 0) {
          ctx.stdout.write(`${prefix(idx, "-")}${line}\n`);
          lastPrinted = idx;
          afterLeft -= 1;
        }
        continue;
      }
      count += 1;
      anySelected = true;
      if (quiet) return 0;
      if (listMatching || listMissing) break;
      if (countOnly) continue;
      if (useContext) {
        const from = Math.max(lastPrinted + 1, idx - before);
        if (printedGroup && from > lastPrinted + 1) ctx.stdout.write("--\n");
        for (let k = from; k < idx; k++) ctx.stdout.write(`${prefix(k, "-")}${lines[k]}\n`);
        printedGroup = true;
        afterLeft = after;
      }
      if (only) {
        if (!invert) for (const [s, e] of matcher.matches(line)) ctx.stdout.write(`${prefix(idx, ":")}${line.slice(s, e)}\n`);
      } else {
        ctx.stdout.write(`${prefix(idx, ":")}${line}\n`);
      }
      lastPrinted = idx;
    }
    // Trailing context after the max count was reached still prints (GNU does the same).
    if (useContext && count >= maxCount) {
      for (let k = lastPrinted + 1; k < lines.length && afterLeft > 0; k++, afterLeft--) {
        ctx.stdout.write(`${prefix(k, "-")}${lines[k]}\n`);
      }
    }
    if (countOnly) ctx.stdout.write(`${withName ? `${input.name}:` : ""}${count}\n`);
    if (listMatching && count > 0) ctx.stdout.write(`${input.name}\n`);
    if (listMissing && count === 0) ctx.stdout.write(`${input.name}\n`);
  }
  if (errorSeen && !(quiet && anySelected)) return 2;
  return anySelected ? 0 : 1;
}

/** The grep command. */
export const GREP_COMMAND: CommandSpec = { name: "grep", run: grep };
