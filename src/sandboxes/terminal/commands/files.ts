/**
 * File commands: cat, mkdir, rmdir, touch, rm, mv, cp, tee. Messages follow GNU coreutils.
 */
import { SandboxError } from "../../../core/errors.js";
import { isWithin } from "../../filesystem.js";
import {
  errorCode,
  errorText,
  parseOptions,
  quote,
  quoteIfNeeded,
  readOperand,
  resolvePath,
  splitLinesKeep,
  usageError,
  type CommandContext,
  type CommandSpec,
  type ParsedOptions,
} from "../context.js";

function statOrNull(ctx: CommandContext, abs: string): { type: "file" | "dir" } | null {
  try {
    return ctx.fs.stat(abs);
  } catch (error) {
    if (error instanceof SandboxError && (error.code === "not_found" || error.code === "not_a_directory")) return null;
    throw error;
  }
}

function baseOf(path: string): string {
  const stripped = path.replace(/\/+$/, "");
  if (stripped === "") return path.startsWith("/") ? "/" : path;
  return stripped.slice(stripped.lastIndexOf("/") + 1);
}

function joinDisplay(dir: string, name: string): string {
  return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

/** cat [-nbEsT] [file]...: concatenates files ("-" or nothing is stdin). */
function cat(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "nbEsTAuv",
    long: { number: "n", "number-nonblank": "b", "show-ends": "E", "squeeze-blank": "s", "show-tabs": "T", "show-all": "A" },
  });
  if (typeof opts === "number") return opts;
  const numberAll = opts.has("n");
  const numberNonBlank = opts.has("b");
  const ends = opts.has("E") || opts.has("A");
  const tabs = opts.has("T") || opts.has("A");
  const squeeze = opts.has("s");
  const plain = !numberAll && !numberNonBlank && !ends && !tabs && !squeeze;
  let status = 0;
  let lineNo = 0;
  let lastBlank = false;
  for (const op of opts.operands.length > 0 ? opts.operands : ["-"]) {
    const r = readOperand(ctx, op);
    if (!r.ok) {
      ctx.stderr.write(`cat: ${quoteIfNeeded(op)}: ${errorText(r.error)}\n`);
      status = 1;
      continue;
    }
    if (plain) {
      ctx.stdout.write(r.text);
      continue;
    }
    for (const line of splitLinesKeep(r.text, ctx.budget)) {
      const hasNewline = line.endsWith("\n");
      let body = hasNewline ? line.slice(0, -1) : line;
      const blank = body === "";
      if (squeeze && blank && lastBlank) continue;
      lastBlank = blank;
      if (tabs) body = body.replace(/\t/g, "^I");
      if (ends && hasNewline) body += "$";
      const numbered = numberNonBlank ? !blank : numberAll;
      const prefix = numbered ? `${String(++lineNo).padStart(6)}\t` : "";
      ctx.stdout.write(prefix + body + (hasNewline ? "\n" : ""));
    }
  }
  return status;
}

function mkdir(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "pv", withArg: "m", long: { parents: "p", verbose: "v", "mode=": "m" } });
  if (typeof opts === "number") return opts;
  if (opts.operands.length === 0) return usageError(ctx, "missing operand");
  let status = 0;
  for (const op of opts.operands) {
    try {
      ctx.fs.mkdir(resolvePath(ctx, op), { parents: opts.has("p") });
      if (opts.has("v")) ctx.stdout.write(`mkdir: created directory ${quote(op)}\n`);
    } catch (error) {
      ctx.stderr.write(`mkdir: cannot create directory ${quote(op)}: ${errorText(error)}\n`);
      status = 1;
    }
  }
  return status;
}

function rmdir(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "v", long: { verbose: "v", "ignore-fail-on-non-empty": "I" } });
  if (typeof opts === "number") return opts;
  if (opts.operands.length === 0) return usageError(ctx, "missing operand");
  let status = 0;
  for (const op of opts.operands) {
    try {
      const abs = resolvePath(ctx, op);
      if (ctx.fs.stat(abs).type !== "dir") {
        ctx.stderr.write(`rmdir: failed to remove ${quote(op)}: Not a directory\n`);
        status = 1;
        continue;
      }
      ctx.fs.remove(abs);
      if (opts.has("v")) ctx.stdout.write(`rmdir: removing directory, ${quote(op)}\n`);
    } catch (error) {
      if (opts.has("I") && errorCode(error) === "directory_not_empty") continue;
      ctx.stderr.write(`rmdir: failed to remove ${quote(op)}: ${errorText(error)}\n`);
      status = 1;
    }
  }
  return status;
}

function touch(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "acmh", withArg: "drt", long: { "no-create": "c", "date=": "d", "reference=": "r" } });
  if (typeof opts === "number") return opts;
  if (opts.operands.length === 0) return usageError(ctx, "missing file operand");
  let status = 0;
  for (const op of opts.operands) {
    try {
      const abs = resolvePath(ctx, op);
      if (opts.has("c") && !ctx.fs.exists(abs)) continue;
      ctx.fs.touch(abs);
    } catch (error) {
      ctx.stderr.write(`touch: cannot touch ${quote(op)}: ${errorText(error)}\n`);
      status = 1;
    }
  }
  return status;
}

function rm(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "rRfiIdv",
    long: { recursive: "r", force: "f", dir: "d", verbose: "v", "no-preserve-root": "P", "preserve-root": "p", interactive: "i" },
  });
  if (typeof opts === "number") return opts;
  const force = opts.has("f");
  const recursive = opts.has("r") || opts.has("R");
  if (opts.operands.length === 0) return force ? 0 : usageError(ctx, "missing operand");
  let status = 0;
  for (const op of opts.operands) {
    const base = baseOf(op);
    if (base === "." || base === "..") {
      ctx.stderr.write(`rm: refusing to remove '.' or '..' directory: skipping ${quote(op)}\n`);
      status = 1;
      continue;
    }
    try {
      const abs = resolvePath(ctx, op);
      if (abs === "/" && recursive && !opts.has("P")) {
        ctx.stderr.write("rm: it is dangerous to operate recursively on '/'\nrm: use --no-preserve-root to override this failsafe\n");
        status = 1;
        continue;
      }
      const st = statOrNull(ctx, abs);
      if (!st) {
        if (!force) {
          ctx.stderr.write(`rm: cannot remove ${quote(op)}: No such file or directory\n`);
          status = 1;
        }
        continue;
      }
      if (st.type === "dir" && !recursive && !opts.has("d")) {
        ctx.stderr.write(`rm: cannot remove ${quote(op)}: Is a directory\n`);
        status = 1;
        continue;
      }
      ctx.fs.remove(abs, { recursive });
      if (opts.has("v")) ctx.stdout.write(`removed ${st.type === "dir" ? "directory " : ""}${quote(op)}\n`);
    } catch (error) {
      ctx.stderr.write(`rm: cannot remove ${quote(op)}: ${errorText(error)}\n`);
      status = 1;
    }
  }
  return status;
}

/** Shared operand handling of mv and cp: sources, destination, and whether it is a directory. */
function planCopy(ctx: CommandContext, opts: ParsedOptions): { sources: string[]; dest: string; intoDir: boolean } | number {
  const ops = opts.operands;
  if (ops.length === 0) return usageError(ctx, "missing file operand");
  if (ops.length === 1) return usageError(ctx, `missing destination file operand after ${quote(ops[0])}`);
  const dest = ops[ops.length - 1];
  let intoDir = false;
  try {
    intoDir = !opts.has("T") && statOrNull(ctx, resolvePath(ctx, dest))?.type === "dir";
  } catch {
    intoDir = false; // an invalid destination is reported per source below
  }
  if (ops.length > 2 && !intoDir) {
    ctx.stderr.write(`${ctx.name}: target ${quote(dest)} is not a directory\n`);
    return 1;
  }
  return { sources: ops.slice(0, -1), dest, intoDir };
}

function mv(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "finvTu", long: { force: "f", interactive: "i", "no-clobber": "n", verbose: "v", "no-target-directory": "T" } });
  if (typeof opts === "number") return opts;
  const plan = planCopy(ctx, opts);
  if (typeof plan === "number") return plan;
  let status = 0;
  for (const src of plan.sources) {
    const target = plan.intoDir ? joinDisplay(plan.dest, baseOf(src)) : plan.dest;
    try {
      const srcAbs = resolvePath(ctx, src);
      const srcStat = statOrNull(ctx, srcAbs);
      if (!srcStat) {
        ctx.stderr.write(`mv: cannot stat ${quote(src)}: No such file or directory\n`);
        status = 1;
        continue;
      }
      const targetAbs = resolvePath(ctx, target);
      if (srcAbs === targetAbs) {
        ctx.stderr.write(`mv: ${quote(src)} and ${quote(target)} are the same file\n`);
        status = 1;
        continue;
      }
      if (srcStat.type === "dir" && isWithin(targetAbs, srcAbs)) {
        ctx.stderr.write(`mv: cannot move ${quote(src)} to a subdirectory of itself, ${quote(target)}\n`);
        status = 1;
        continue;
      }
      const existing = statOrNull(ctx, targetAbs);
      if (existing && opts.has("n")) continue;
      if (existing?.type === "dir" && srcStat.type !== "dir") {
        ctx.stderr.write(`mv: cannot overwrite directory ${quote(target)} with non-directory\n`);
        status = 1;
        continue;
      }
      if (existing && existing.type !== "dir" && srcStat.type === "dir") {
        ctx.stderr.write(`mv: cannot overwrite non-directory ${quote(target)} with directory ${quote(src)}\n`);
        status = 1;
        continue;
      }
      ctx.fs.rename(srcAbs, targetAbs);
      if (opts.has("v")) ctx.stdout.write(`renamed ${quote(src)} -> ${quote(target)}\n`);
    } catch (error) {
      ctx.stderr.write(`mv: cannot move ${quote(src)} to ${quote(target)}: ${errorText(error)}\n`);
      status = 1;
    }
  }
  return status;
}

function cp(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "rRafinvpTuLPHd",
    long: { recursive: "r", archive: "a", force: "f", interactive: "i", "no-clobber": "n", verbose: "v", "no-target-directory": "T", preserve: "p" },
  });
  if (typeof opts === "number") return opts;
  const recursive = opts.has("r") || opts.has("R") || opts.has("a");
  const plan = planCopy(ctx, opts);
  if (typeof plan === "number") return plan;
  let status = 0;
  for (const src of plan.sources) {
    const target = plan.intoDir ? joinDisplay(plan.dest, baseOf(src)) : plan.dest;
    let srcType: "file" | "dir" = "file";
    try {
      const srcAbs = resolvePath(ctx, src);
      const srcStat = statOrNull(ctx, srcAbs);
      if (!srcStat) {
        ctx.stderr.write(`cp: cannot stat ${quote(src)}: No such file or directory\n`);
        status = 1;
        continue;
      }
      srcType = srcStat.type;
      if (srcType === "dir" && !recursive) {
        ctx.stderr.write(`cp: -r not specified; omitting directory ${quote(src)}\n`);
        status = 1;
        continue;
      }
      const targetAbs = resolvePath(ctx, target);
      if (srcAbs === targetAbs) {
        ctx.stderr.write(`cp: ${quote(src)} and ${quote(target)} are the same file\n`);
        status = 1;
        continue;
      }
      if (srcType === "dir" && isWithin(targetAbs, srcAbs)) {
        ctx.stderr.write(`cp: cannot copy a directory, ${quote(src)}, into itself, ${quote(target)}\n`);
        status = 1;
        continue;
      }
      const existing = statOrNull(ctx, targetAbs);
      if (existing && opts.has("n")) continue;
      if (existing?.type === "dir" && srcType !== "dir") {
        ctx.stderr.write(`cp: cannot overwrite directory ${quote(target)} with non-directory\n`);
        status = 1;
        continue;
      }
      if (existing && existing.type !== "dir" && srcType === "dir") {
        ctx.stderr.write(`cp: cannot overwrite non-directory ${quote(target)} with directory ${quote(src)}\n`);
        status = 1;
        continue;
      }
      ctx.fs.copy(srcAbs, targetAbs, { recursive });
      if (opts.has("v")) ctx.stdout.write(`${quote(src)} -> ${quote(target)}\n`);
    } catch (error) {
      const what = srcType === "dir" ? "directory" : "regular file";
      ctx.stderr.write(`cp: cannot create ${what} ${quote(target)}: ${errorText(error)}\n`);
      status = 1;
    }
  }
  return status;
}

function tee(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "aip", long: { append: "a", "ignore-interrupts": "i" } });
  if (typeof opts === "number") return opts;
  let status = 0;
  for (const op of opts.operands) {
    ctx.budget.charge(ctx.stdin.length + 1);
    try {
      ctx.fs.writeFile(resolvePath(ctx, op), ctx.stdin, { append: opts.has("a") });
    } catch (error) {
      ctx.stderr.write(`tee: ${quoteIfNeeded(op)}: ${errorText(error)}\n`);
      status = 1;
    }
  }
  ctx.stdout.write(ctx.stdin);
  return status;
}

/** File commands. */
export const FILE_COMMANDS: CommandSpec[] = [
  { name: "cat", run: cat },
  { name: "mkdir", run: mkdir },
  { name: "rmdir", run: rmdir },
  { name: "touch", run: touch },
  { name: "rm", run: rm },
  { name: "mv", run: mv },
  { name: "cp", run: cp },
  { name: "tee", run: tee },
];
