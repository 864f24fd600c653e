/**
 * Shell builtins and small utilities: cd, pwd, echo, printf, true, false, export, unset, env,
 * printenv, whoami, hostname, which, type, basename, dirname.
 */
import { errorText, FLUSH_CHARS, parseOptions, resolvePath, type CommandContext, type CommandSpec } from "../context.js";
import { MAX_FORMAT_WIDTH } from "../limits.js";

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const KEYWORDS = new Set([
  "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done",
  "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
]);

/** cd [dir | -]: changes the working directory (HOME by default). */
function cd(ctx: CommandContext): number {
  let args = ctx.args;
  while (args[0] === "-L" || args[0] === "-P") args = args.slice(1);
  if (args[0] === "--") args = args.slice(1);
  if (args.length > 1) {
    ctx.stderr.write("bash: cd: too many arguments\n");
    return 1;
  }
  const env = ctx.shell.env;
  let target: string | undefined = args[0];
  let print = false;
  if (target === undefined) {
    target = env.get("HOME");
    if (!target) {
      ctx.stderr.write("bash: cd: HOME not set\n");
      return 1;
    }
  } else if (target === "-") {
    target = env.get("OLDPWD");
    if (!target) {
      ctx.stderr.write("bash: cd: OLDPWD not set\n");
      return 1;
    }
    print = true;
  } else if (target === "") {
    return 0;
  }
  let abs: string;
  try {
    abs = resolvePath(ctx, target);
    if (ctx.fs.stat(abs).type !== "dir") {
      ctx.stderr.write(`bash: cd: ${target}: Not a directory\n`);
      return 1;
    }
  } catch (error) {
    ctx.stderr.write(`bash: cd: ${target}: ${errorText(error)}\n`);
    return 1;
  }
  ctx.shell.setVar("OLDPWD", ctx.shell.cwd);
  ctx.shell.cwd = abs;
  ctx.shell.setVar("PWD", abs);
  if (print) ctx.stdout.write(`${abs}\n`);
  return 0;
}

function pwd(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "LP" });
  if (typeof opts === "number") return opts;
  ctx.stdout.write(`${ctx.shell.cwd}\n`);
  return 0;
}

/** Interprets backslash escapes as echo -e and printf %b do; `stop` is set by \c. */
export function interpretEscapes(text: string, printfStyle = false): { text: string; stop: boolean } {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== "\\" || i + 1 >= text.length) {
      out += c;
      continue;
    }
    const e = text[++i];
    switch (e) {
      case "\\":
        out += "\\";
        break;
      case "a":
        out += "\x07";
        break;
      case "b":
        out += "\b";
        break;
      case "c":
        return { text: out, stop: true };
      case "e":
      case "E":
        out += "\x1b";
        break;
      case "f":
        out += "\f";
        break;
      case "n":
        out += "\n";
        break;
      case "r":
        out += "\r";
        break;
      case "t":
        out += "\t";
        break;
      case "v":
        out += "\v";
        break;
      case '"':
        out += printfStyle ? '"' : '\\"';
        break;
      case "x": {
        const hex = /^[0-9a-fA-F]{1,2}/.exec(text.slice(i + 1, i + 3));
        if (hex) {
          out += String.fromCharCode(parseInt(hex[0], 16));
          i += hex[0].length;
        } else {
          out += "\\x";
        }
        break;
      }
      default: {
        // echo -e: \0NNN; printf: \NNN.
        const octal = printfStyle ? /^[0-7]{1,3}/.exec(text.slice(i, i + 3)) : e === "0" ? /^0[0-7]{0,3}/.exec(text.slice(i, i + 4)) : null;
        if (octal) {
          out += String.fromCharCode(parseInt(octal[0], 8) & 0xff);
          i += octal[0].length - 1;
        } else {
          out += `\\${e}`;
        }
      }
    }
  }
  return { text: out, stop: false };
}

/** echo [-neE] args: like bash's builtin, unknown options are printed literally. */
function echo(ctx: CommandContext): number {
  const args = ctx.args;
  let i = 0;
  let newline = true;
  let escapes = false;
  while (i < args.length && /^-[neE]+$/.test(args[i])) {
    for (const c of args[i].slice(1)) {
      if (c === "n") newline = false;
      else if (c === "e") escapes = true;
      else escapes = false;
    }
    i += 1;
  }
  let text = args.slice(i).join(" ");
  if (escapes) {
    const r = interpretEscapes(text);
    text = r.text;
    if (r.stop) newline = false;
  }
  ctx.stdout.write(newline ? `${text}\n` : text);
  return 0;
}

function parsePrintfNumber(ctx: CommandContext, arg: string | undefined, integer: boolean): { value: number; ok: boolean } {
  if (arg === undefined || arg === "") return { value: 0, ok: true };
  if (/^['"]./su.test(arg)) return { value: arg.codePointAt(1)!, ok: true };
  const trimmed = arg.trim();
  const n = integer ? (/^[+-]?(0x[0-9a-f]+|\d+)$/i.test(trimmed) ? Number(trimmed.replace(/^([+-]?)0x/i, "$10x")) : NaN) : Number(trimmed);
  if (Number.isNaN(n)) {
    ctx.stderr.write(`bash: printf: ${arg}: invalid number\n`);
    return { value: 0, ok: false };
  }
  return { value: integer ? Math.trunc(n) : n, ok: true };
}

function pad(text: string, width: number, left: boolean, zero: boolean): string {
  if (text.length >= width) return text;
  if (left) return text.padEnd(width, " ");
  if (zero) {
    const sign = /^[+-]/.test(text) ? text[0] : "";
    return sign + text.slice(sign.length).padStart(width - sign.length, "0");
  }
  return text.padStart(width, " ");
}

/** Most digits JS formats after the point; further digits a precision asks for are printed as zeros. */
const MAX_JS_DIGITS = 100;

/** A %f %e %g conversion's digits (before sign and padding). */
function formatFloat(n: number, conv: string, precision: number): string {
  const p = Math.min(precision, MAX_JS_DIGITS);
  const zeros = Number.isFinite(n) ? "0".repeat(precision - p) : "";
  let body: string;
  if (conv === "f" || conv === "F") body = n.toFixed(p) + zeros;
  else if (conv === "e" || conv === "E") body = n.toExponential(p).replace(/e([+-])(\d+)$/, (_, sign: string, exp: string) => `${zeros}e${sign}${exp.padStart(2, "0")}`);
  else body = String(Number(n.toPrecision(p === 0 ? 1 : p)));
  return conv === "E" || conv === "G" ? body.toUpperCase() : body;
}

/**
 * printf FORMAT [ARG]...: %s %b %c %d %i %u %o %x %X %f %e %g %%, widths, precision and flags. The
 * format is reused while arguments remain; each pass is charged to the budget, and field widths and
 * precisions above MAX_FORMAT_WIDTH are refused (a size_limit stop) instead of being built.
 */
function printf(ctx: CommandContext): number {
  let args = ctx.args;
  if (args[0] === "--") args = args.slice(1);
  if (args.length === 0) {
    ctx.stderr.write("bash: printf: usage: printf [-v var] format [arguments]\n");
    return 2;
  }
  const format = args[0];
  const values = args.slice(1);
  let next = 0;
  let status = 0;
  let out = "";
  const emit = (text: string): void => {
    out += text;
    if (out.length >= FLUSH_CHARS) flush();
  };
  const flush = (): void => {
    ctx.stdout.write(out);
    out = "";
  };
  const spec = /%([-+ 0#]*)(\d+|\*)?(?:\.(\d+|\*)?)?([a-zA-Z%])?/gy;
  for (let round = 0; round < 10_000; round++) {
    ctx.budget.charge(format.length + 1);
    let consumed = false;
    let i = 0;
    while (i < format.length) {
      const c = format[i];
      if (c === "\\") {
        const escape = /^\\(?:[0-7]{1,3}|x[0-9a-fA-F]{1,2}|[\s\S])?/.exec(format.slice(i, i + 5))![0];
        const r = interpretEscapes(escape, true);
        emit(r.text);
        if (r.stop) {
          flush();
          return status;
        }
        i += escape.length;
        continue;
      }
      if (c !== "%") {
        emit(c);
        i += 1;
        continue;
      }
      spec.lastIndex = i;
      const m = spec.exec(format);
      if (!m || m[4] === undefined) {
        ctx.stderr.write(`bash: printf: ${format.slice(i, i + 2)}: invalid format character\n`);
        flush();
        return 1;
      }
      i = spec.lastIndex;
      const [directive, flags, widthRaw, precRaw, conv] = m;
      if (conv === "%") {
        emit("%");
        continue;
      }
      const take = (): string | undefined => {
        consumed = true;
        return values[next++];
      };
      const width = widthRaw === "*" ? parsePrintfNumber(ctx, take(), true).value : Number(widthRaw ?? 0);
      const starPrecision = precRaw === "*" ? parsePrintfNumber(ctx, take(), true).value : undefined;
      // A negative precision from '*' counts as none, as in C.
      const precision = starPrecision !== undefined ? (starPrecision < 0 ? undefined : starPrecision) : precRaw === undefined ? undefined : Number(precRaw);
      ctx.budget.checkSize(Math.abs(width), MAX_FORMAT_WIDTH, "maxFormatWidth", `${directive}: field width too large`);
      ctx.budget.checkSize(precision ?? 0, MAX_FORMAT_WIDTH, "maxFormatWidth", `${directive}: precision too large`);
      const left = flags.includes("-");
      const zero = flags.includes("0") && !left;
      const sign = (n: number, s: string): string => (n >= 0 && flags.includes("+") ? `+${s}` : n >= 0 && flags.includes(" ") ? ` ${s}` : s);
      let text: string;
      switch (conv) {
        case "s":
        case "b": {
          let arg = take() ?? "";
          if (conv === "b") {
            const r = interpretEscapes(arg);
            arg = r.text;
          }
          text = pad(precision === undefined ? arg : arg.slice(0, precision), width, left, false);
          break;
        }
        case "c":
          text = pad((take() ?? "").slice(0, 1), width, left, false);
          break;
        case "d":
        case "i":
        case "u":
        case "o":
        case "x":
        case "X": {
          const r = parsePrintfNumber(ctx, take(), true);
          if (!r.ok) status = 1;
          const n = r.value;
          let digits =
            conv === "o" ? Math.abs(n).toString(8) : conv === "x" ? Math.abs(n).toString(16) : conv === "X" ? Math.abs(n).toString(16).toUpperCase() : String(Math.abs(n));
          if (precision !== undefined) digits = digits.padStart(precision, "0");
          text = pad(sign(n, n < 0 ? `-${digits}` : digits), width, left, zero && precision === undefined);
          break;
        }
        case "f":
        case "F":
        case "e":
        case "E":
        case "g":
        case "G": {
          const r = parsePrintfNumber(ctx, take(), false);
          if (!r.ok) status = 1;
          const n = r.value;
          text = pad(sign(n, formatFloat(n, conv, precision ?? 6)), width, left, zero);
          break;
        }
        default:
          ctx.stderr.write(`bash: printf: %${conv}: invalid format character\n`);
          flush();
          return 1;
      }
      emit(text);
    }
    if (!consumed || next >= values.length) break;
  }
  flush();
  return status;
}

function exportCmd(ctx: CommandContext): number {
  const args = ctx.args.filter((a) => a !== "-p" && a !== "--");
  const env = ctx.shell.env;
  if (args.length === 0) {
    for (const name of [...env.keys()].sort()) {
      ctx.stdout.write(`declare -x ${name}="${env.get(name)!.replace(/(["\\$`])/g, "\\$1")}"\n`);
    }
    return 0;
  }
  let status = 0;
  for (const arg of args) {
    const eq = arg.indexOf("=");
    const name = eq < 0 ? arg : arg.slice(0, eq);
    if (!NAME_RE.test(name)) {
      ctx.stderr.write(`bash: export: \`${arg}': not a valid identifier\n`);
      status = 1;
      continue;
    }
    if (eq >= 0) ctx.shell.setVar(name, arg.slice(eq + 1));
    else if (!env.has(name)) ctx.shell.setVar(name, "");
  }
  return status;
}

function unset(ctx: CommandContext): number {
  let status = 0;
  for (const arg of ctx.args) {
    if (arg === "-v" || arg === "--") continue;
    if (!NAME_RE.test(arg)) {
      ctx.stderr.write(`bash: unset: \`${arg}': not a valid identifier\n`);
      status = 1;
      continue;
    }
    ctx.shell.unsetVar(arg);
  }
  return status;
}

function env(ctx: CommandContext): number {
  const vars = new Map(ctx.shell.env);
  for (const arg of ctx.args) {
    const eq = arg.indexOf("=");
    if (eq > 0) {
      vars.set(arg.slice(0, eq), arg.slice(eq + 1));
      continue;
    }
    ctx.stderr.write(`env: running a command through env is not supported in this sandbox: ${arg}\n`);
    return 125;
  }
  for (const name of [...vars.keys()].sort()) ctx.stdout.write(`${name}=${vars.get(name)}\n`);
  return 0;
}

function printenv(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "0" });
  if (typeof opts === "number") return opts;
  const vars = ctx.shell.env;
  if (opts.operands.length === 0) {
    for (const name of [...vars.keys()].sort()) ctx.stdout.write(`${name}=${vars.get(name)}\n`);
    return 0;
  }
  let status = 0;
  for (const name of opts.operands) {
    const value = vars.get(name);
    if (value === undefined) status = 1;
    else ctx.stdout.write(`${value}\n`);
  }
  return status;
}

function which(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "as" });
  if (typeof opts === "number") return opts;
  let status = 0;
  for (const name of opts.operands) {
    if (ctx.shell.isBuiltin(name) === false) ctx.stdout.write(`/usr/bin/${name}\n`);
    else status = 1;
  }
  return opts.operands.length === 0 ? 1 : status;
}

function type(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "tapfP" });
  if (typeof opts === "number") return opts;
  const terse = opts.has("t");
  let status = 0;
  for (const name of opts.operands) {
    const builtin = ctx.shell.isBuiltin(name);
    if (KEYWORDS.has(name)) ctx.stdout.write(terse ? "keyword\n" : `${name} is a shell keyword\n`);
    else if (builtin === true) ctx.stdout.write(terse ? "builtin\n" : `${name} is a shell builtin\n`);
    else if (builtin === false) ctx.stdout.write(terse ? "file\n" : `${name} is /usr/bin/${name}\n`);
    else {
      if (!terse) ctx.stderr.write(`bash: type: ${name}: not found\n`);
      status = 1;
    }
  }
  return status;
}

function stripTrailingSlashes(path: string): string {
  const stripped = path.replace(/\/+$/, "");
  return stripped === "" && path.startsWith("/") ? "/" : stripped;
}

function basename(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "az", withArg: "s", long: { multiple: "a", suffix: "s=", zero: "z" } });
  if (typeof opts === "number") return opts;
  const names = opts.operands;
  if (names.length === 0) {
    ctx.stderr.write("basename: missing operand\nTry 'basename --help' for more information.\n");
    return 1;
  }
  let suffix = opts.last("s");
  let list = names;
  if (!opts.has("a") && suffix === undefined) {
    if (names.length > 2) {
      ctx.stderr.write(`basename: extra operand '${names[2]}'\nTry 'basename --help' for more information.\n`);
      return 1;
    }
    suffix = names[1];
    list = [names[0]];
  }
  for (const name of list) {
    const stripped = stripTrailingSlashes(name);
    let base = stripped === "/" ? "/" : stripped.slice(stripped.lastIndexOf("/") + 1);
    if (suffix && base !== suffix && base.endsWith(suffix)) base = base.slice(0, -suffix.length);
    ctx.stdout.write(`${base}${opts.has("z") ? "\0" : "\n"}`);
  }
  return 0;
}

function dirname(ctx: CommandContext): number {
  const opts = parseOptions(ctx, { flags: "z" });
  if (typeof opts === "number") return opts;
  if (opts.operands.length === 0) {
    ctx.stderr.write("dirname: missing operand\nTry 'dirname --help' for more information.\n");
    return 1;
  }
  for (const name of opts.operands) {
    const stripped = stripTrailingSlashes(name);
    const slash = stripped.lastIndexOf("/");
    let dir = slash < 0 ? "." : stripped.slice(0, slash).replace(/\/+$/, "");
    if (slash >= 0 && dir === "") dir = "/";
    ctx.stdout.write(`${dir}${opts.has("z") ? "\0" : "\n"}`);
  }
  return 0;
}

/** Builtins and small utilities. */
export const BUILTIN_COMMANDS: CommandSpec[] = [
  { name: "cd", run: cd, builtin: true },
  { name: "pwd", run: pwd, builtin: true },
  { name: "echo", run: echo, builtin: true },
  { name: "printf", run: printf, builtin: true },
  { name: "true", run: () => 0, builtin: true },
  { name: "false", run: () => 1, builtin: true },
  { name: ":", run: () => 0, builtin: true },
  { name: "export", run: exportCmd, builtin: true },
  { name: "unset", run: unset, builtin: true },
  { name: "type", run: type, builtin: true },
  { name: "env", run: env },
  { name: "printenv", run: printenv },
  { name: "whoami", run: (ctx) => (ctx.stdout.write(`${ctx.shell.user}\n`), 0) },
  { name: "hostname", run: (ctx) => (ctx.stdout.write(`${ctx.shell.host}\n`), 0) },
  { name: "which", run: which },
  { name: "basename", run: basename },
  { name: "dirname", run: dirname },
];
