/**
 * find [path...] [expression]: tests -name -iname -path -ipath -type -empty -size, operators
 * ! -not -a -and -o -or ( ), options -maxdepth -mindepth, actions -print -delete. Directory
 * entries are visited in sorted order so output is deterministic. Every entry visited, every
 * expression node evaluated and every glob comparison is charged to the work budget.
 */
import { compileGlob, matchGlob } from "../glob.js";
import { errorText, quote, resolvePath, type CommandContext, type CommandSpec } from "../context.js";

type Expr =
  | { t: "name"; glob: ReturnType<typeof compileGlob>; icase: boolean; whole: boolean }
  | { t: "type"; types: string }
  | { t: "empty" }
  | { t: "size"; cmp: "+" | "-" | ""; n: number; unit: number }
  | { t: "print" }
  | { t: "delete" }
  | { t: "const"; value: boolean }
  | { t: "not"; e: Expr }
  | { t: "and"; items: Expr[] }
  | { t: "or"; items: Expr[] };

interface Visit {
  display: string;
  abs: string;
  type: "file" | "dir";
  size: number;
}

class FindError extends Error {}

/** Parentheses and '!' nest; beyond this depth the expression is refused (keeps the parser's stack bounded). */
const MAX_NESTING = 64;

const SIZE_UNITS: Record<string, number> = { "": 512, b: 512, c: 1, w: 2, k: 1024, M: 1024 ** 2, G: 1024 ** 3 };

/** Parses find's expression language (with n-ary and/or so long chains do not deepen the tree). */
class ExprParser {
  private pos = 0;
  private depth = 0;
  maxDepth = Infinity;
  minDepth = 0;
  hasAction = false;

  constructor(private readonly tokens: string[]) {}

  parse(): Expr {
    if (this.tokens.length === 0) return { t: "const", value: true };
    const e = this.parseOr();
    if (this.pos < this.tokens.length) {
      const tok = this.tokens[this.pos];
      if (tok === ")") throw new FindError("find: invalid expression; you have too many ')'");
      throw new FindError(`find: paths must precede expression: ${quote(tok)}`);
    }
    return e;
  }

  private parseOr(): Expr {
    const items = [this.parseAnd()];
    while (this.tokens[this.pos] === "-o" || this.tokens[this.pos] === "-or") {
      this.pos += 1;
      if (this.pos >= this.tokens.length) throw new FindError("find: invalid expression; expected expression after '-o'");
      items.push(this.parseAnd());
    }
    return items.length === 1 ? items[0] : { t: "or", items };
  }

  private parseAnd(): Expr {
    const items = [this.parseUnary()];
    for (;;) {
      const tok = this.tokens[this.pos];
      if (tok === undefined || tok === "-o" || tok === "-or" || tok === ")") break;
      if (tok === "-a" || tok === "-and") {
        this.pos += 1;
        if (this.pos >= this.tokens.length) throw new FindError("find: invalid expression; expected expression after '-a'");
      }
      items.push(this.parseUnary());
    }
    return items.length === 1 ? items[0] : { t: "and", items };
  }

  private nest<T>(fn: () => T): T {
    this.depth += 1;
    if (this.depth > MAX_NESTING) throw new FindError("find: expression is nested too deeply");
    try {
      return fn();
    } finally {
      this.depth -= 1;
    }
  }

  private parseUnary(): Expr {
    const tok = this.tokens[this.pos];
    if (tok === "!" || tok === "-not") {
      this.pos += 1;
      if (this.pos >= this.tokens.length) throw new FindError(`find: invalid expression; expected expression after '${tok}'`);
      return this.nest(() => ({ t: "not", e: this.parseUnary() }));
    }
    if (tok === "(") {
      this.pos += 1;
      return this.nest(() => {
        if (this.tokens[this.pos] === ")") throw new FindError("find: invalid expression; empty parentheses are not allowed.");
        const e = this.parseOr();
        if (this.tokens[this.pos] !== ")") throw new FindError("find: invalid expression; I was expecting to find a ')' somewhere but did not see one.");
        this.pos += 1;
        return e;
      });
    }
    return this.parsePrimary();
  }

  private arg(tok: string): string {
    const value = this.tokens[this.pos];
    if (value === undefined) throw new FindError(`find: missing argument to ${quote(tok)}`);
    this.pos += 1;
    return value;
  }

  private parsePrimary(): Expr {
    const tok = this.tokens[this.pos++];
    switch (tok) {
      case "-name":
      case "-iname":
        return { t: "name", glob: compileGlob(this.arg(tok)), icase: tok === "-iname", whole: false };
      case "-path":
      case "-ipath":
      case "-wholename":
      case "-iwholename":
        return { t: "name", glob: compileGlob(this.arg(tok)), icase: tok.startsWith("-i"), whole: true };
      case "-type": {
        const v = this.arg(tok);
        const types = v.split(",");
        for (const c of types) {
          if (!/^[fdlbcps]$/.test(c)) throw new FindError(`find: Unknown argument to -type: ${c}`);
        }
        return { t: "type", types: types.join("") };
      }
      case "-empty":
        return { t: "empty" };
      case "-size": {
        const v = this.arg(tok);
        const m = /^([+-]?)(\d+)([bcwkMG]?)$/.exec(v);
        if (!m) throw new FindError(`find: invalid -size type ${quote(v)}`);
        return { t: "size", cmp: m[1] as "+" | "-" | "", n: Number(m[2]), unit: SIZE_UNITS[m[3]] };
      }
      case "-maxdepth":
      case "-mindepth": {
        const v = this.arg(tok);
        if (!/^\d+$/.test(v)) {
          throw new FindError(`find: Expected a positive decimal integer argument to ${tok}, but got ${quote(v)}`);
        }
        if (tok === "-maxdepth") this.maxDepth = Number(v);
        else this.minDepth = Number(v);
        return { t: "const", value: true };
      }
      case "-print":
        this.hasAction = true;
        return { t: "print" };
      case "-delete":
        this.hasAction = true;
        return { t: "delete" };
      case "-true":
        return { t: "const", value: true };
      case "-false":
        return { t: "const", value: false };
      case ")":
        throw new FindError("find: invalid expression; you have too many ')'");
      default:
        if (tok.startsWith("-")) throw new FindError(`find: unknown predicate ${quote(tok)}`);
        throw new FindError(`find: paths must precede expression: ${quote(tok)}`);
    }
  }
}

function baseName(display: string): string {
  const stripped = display.replace(/\/+$/, "");
  if (stripped === "") return display.startsWith("/") ? "/" : display;
  return stripped.slice(stripped.lastIndexOf("/") + 1);
}

function find(ctx: CommandContext): number {
  const args = ctx.args;
  let split = 0;
  while (split < args.length && !args[split].startsWith("-") && args[split] !== "!" && args[split] !== "(") split += 1;
  const paths = split > 0 ? args.slice(0, split) : ["."];
  const parser = new ExprParser(args.slice(split));
  let expr: Expr;
  try {
    expr = parser.parse();
  } catch (error) {
    if (!(error instanceof FindError)) throw error;
    ctx.stderr.write(`${error.message}\n`);
    return 1;
  }
  if (!parser.hasAction) expr = { t: "and", items: [expr, { t: "print" }] };

  let status = 0;
  const deletions: Visit[] = [];

  const isEmpty = (v: Visit): boolean => {
    if (v.type === "file") return v.size === 0;
    try {
      return ctx.fs.readdir(v.abs).length === 0;
    } catch {
      return false;
    }
  };

  const evaluate = (e: Expr, v: Visit): boolean => {
    ctx.budget.charge(1);
    switch (e.t) {
      case "name":
        return matchGlob(e.glob, e.whole ? v.display : baseName(v.display), { caseInsensitive: e.icase, meter: ctx.budget });
      case "type":
        return e.types.includes(v.type === "dir" ? "d" : "f");
      case "empty":
        return isEmpty(v);
      case "size": {
        const bytes = v.type === "dir" ? 4096 : v.size;
        const units = Math.ceil(bytes / e.unit);
        return e.cmp === "+" ? units > e.n : e.cmp === "-" ? units < e.n : units === e.n;
      }
      case "print":
        ctx.stdout.write(`${v.display}\n`);
        return true;
      case "delete":
        deletions.push(v);
        return true;
      case "const":
        return e.value;
      case "not":
        return !evaluate(e.e, v);
      case "and":
        return e.items.every((item) => evaluate(item, v));
      case "or":
        return e.items.some((item) => evaluate(item, v));
    }
  };

  const walk = (v: Visit, depth: number): void => {
    if (depth >= parser.minDepth) evaluate(expr, v);
    if (v.type !== "dir" || depth >= parser.maxDepth) return;
    let names: string[];
    try {
      names = ctx.fs.readdir(v.abs);
    } catch (error) {
      ctx.stderr.write(`find: ${quote(v.display)}: ${errorText(error)}\n`);
      status = 1;
      return;
    }
    for (const name of names) {
      const abs = v.abs === "/" ? `/${name}` : `${v.abs}/${name}`;
      let st: { type: "file" | "dir"; size: number };
      try {
        st = ctx.fs.stat(abs);
      } catch {
        continue; // Entry vanished or became invisible between readdir and stat: skip it.
      }
      const display = v.display.endsWith("/") ? v.display + name : `${v.display}/${name}`;
      walk({ display, abs, type: st.type, size: st.size }, depth + 1);
    }
  };

  for (const path of paths) {
    try {
      const abs = resolvePath(ctx, path);
      const st = ctx.fs.stat(abs);
      walk({ display: path, abs, type: st.type, size: st.size }, 0);
    } catch (error) {
      ctx.stderr.write(`find: ${quote(path)}: ${errorText(error)}\n`);
      status = 1;
    }
  }

  // -delete works depth-first: children go before their directory.
  for (const v of deletions.reverse()) {
    if (baseName(v.display) === ".") continue; // GNU find never deletes the starting "."
    try {
      ctx.fs.remove(v.abs);
    } catch (error) {
      ctx.stderr.write(`find: cannot delete ${quote(v.display)}: ${errorText(error)}\n`);
      status = 1;
    }
  }
  return status;
}

/** The find command. */
export const FIND_COMMAND: CommandSpec = { name: "find", run: find };
