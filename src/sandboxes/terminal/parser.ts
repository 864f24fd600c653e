/**
 * Tokenizer and parser for the sandbox shell: a bash subset with quoting, parameter expansion,
 * pipes, redirections and command lists. The parser is iterative (no recursion on input nesting),
 * so hostile input cannot exhaust the stack; unsupported bash features are rejected up front with
 * a clear message instead of being half-executed.
 */

/** A piece of a word: literal text, a parameter ($NAME), or a leading tilde. */
export type WordPart =
  | { kind: "text"; value: string; quoted: boolean }
  | { kind: "param"; name: string; quoted: boolean }
  | { kind: "tilde" };

/** One shell word before expansion; `raw` is the source text (for error messages). */
export interface Word {
  parts: WordPart[];
  raw: string;
}

/** A redirection: `fd< word`, `fd> word`, `fd>> word`, `fd>&n`, or `&> word` (fd "both"). */
export type Redirect =
  | { op: "<" | ">" | ">>"; fd: 0 | 1 | 2 | "both"; target: Word }
  | { op: "dup"; fd: 0 | 1 | 2; source: 0 | 1 | 2 };

/** `NAME=value` preceding a command (or standing alone). */
export interface Assignment {
  name: string;
  value: Word;
}

/** A simple command: assignments, words and redirections in source order. */
export interface SimpleCommand {
  assignments: Assignment[];
  words: Word[];
  redirects: Redirect[];
}

/** Commands joined by `|`, optionally negated with `!`. */
export interface Pipeline {
  negated: boolean;
  commands: SimpleCommand[];
}

/** Pipelines joined by `&&` / `||`. */
export interface AndOrList {
  first: Pipeline;
  rest: Array<{ op: "&&" | "||"; pipeline: Pipeline }>;
}

/** A whole command line: and-or lists separated by `;` or newlines. */
export type Script = AndOrList[];

/** A syntax error or unsupported construct; `message` is the full bash-style stderr line. */
export class ShellSyntaxError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = "ShellSyntaxError";
  }
}

type Token =
  | { type: "word"; word: Word }
  | { type: "op"; op: "|" | "&&" | "||" | ";" | "(" | ")" | "newline" }
  | { type: "redir"; op: "<" | ">" | ">>"; fd: 0 | 1 | 2 | "both"; text: string }
  | { type: "dup"; fd: 0 | 1 | 2; source: 0 | 1 | 2; text: string };

const META = new Set([" ", "\t", "\n", "|", "&", ";", "<", ">", "(", ")"]);
const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;
const SPECIAL_PARAMS = new Set(["?", "$", "#", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*", "-", "!"]);

function unsupported(what: string, plural = false): ShellSyntaxError {
  return new ShellSyntaxError(`bash: ${what} ${plural ? "are" : "is"} not supported in this sandbox`);
}

function unexpectedToken(token: string): ShellSyntaxError {
  return new ShellSyntaxError(`bash: syntax error near unexpected token \`${token}'`);
}

function unexpectedEof(quote: string): ShellSyntaxError {
  return new ShellSyntaxError(`bash: unexpected EOF while looking for matching \`${quote}'`);
}

const ANSI_ESCAPES: Record<string, string> = {
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

/** Splits a command line into tokens. */
function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = input.length;

  /** Parses `$...` at input[i] (which is '$'), appending to parts and advancing i. */
  const readDollar = (parts: WordPart[], quoted: boolean): void => {
    const next = input[i + 1];
    if (next === "(") {
      throw unsupported(input[i + 2] === "(" ? "arithmetic expansion $((...))" : "command substitution $(...)");
    }
    if (next === "{") {
      const close = input.indexOf("}", i + 2);
      if (close < 0) throw unexpectedEof("}");
      const body = input.slice(i + 2, close);
      const simple = /^[A-Za-z_][A-Za-z0-9_]*$/.test(body) || (body.length === 1 && SPECIAL_PARAMS.has(body));
      if (!simple) throw new ShellSyntaxError(`bash: \${${body}}: bad substitution`, 1);
      parts.push({ kind: "param", name: body, quoted });
      i = close + 1;
      return;
    }
    if (next !== undefined && NAME_START.test(next)) {
      let j = i + 1;
      while (j < n && NAME_CHAR.test(input[j])) j++;
      parts.push({ kind: "param", name: input.slice(i + 1, j), quoted });
      i = j;
      return;
    }
    if (next !== undefined && SPECIAL_PARAMS.has(next)) {
      parts.push({ kind: "param", name: next, quoted });
      i += 2;
      return;
    }
    parts.push({ kind: "text", value: "$", quoted });
    i += 1;
  };

  const readWord = (): Word => {
    const start = i;
    const parts: WordPart[] = [];
    const text = (value: string, quoted: boolean): void => {
      const last = parts[parts.length - 1];
      if (last && last.kind === "text" && last.quoted === quoted) last.value += value;
      else parts.push({ kind: "text", value, quoted });
    };
    if (input[i] === "~" && (i + 1 >= n || input[i + 1] === "/" || META.has(input[i + 1]))) {
      parts.push({ kind: "tilde" });
      i += 1;
    }
    while (i < n && !META.has(input[i])) {
      const c = input[i];
      if (c === "\\") {
        if (i + 1 >= n) {
          text("\\", true);
          i += 1;
        } else if (input[i + 1] === "\n") {
          i += 2; // line continuation
        } else {
          text(input[i + 1], true);
          i += 2;
        }
      } else if (c === "'") {
        const close = input.indexOf("'", i + 1);
        if (close < 0) throw unexpectedEof("'");
        text(input.slice(i + 1, close), true);
        if (close === i + 1) text("", true);
        i = close + 1;
      } else if (c === '"') {
        i += 1;
        let closed = false;
        text("", true); // keeps "" as an (empty) quoted word
        while (i < n) {
          const d = input[i];
          if (d === '"') {
            closed = true;
            i += 1;
            break;
          }
          if (d === "\\" && i + 1 < n && "$`\"\\\n".includes(input[i + 1])) {
            if (input[i + 1] !== "\n") text(input[i + 1], true);
            i += 2;
          } else if (d === "$") {
            readDollar(parts, true);
          } else if (d === "`") {
            throw unsupported("command substitution `...`");
          } else {
            text(d, true);
            i += 1;
          }
        }
        if (!closed) throw unexpectedEof('"');
      } else if (c === "$" && input[i + 1] === "'") {
        // ANSI-C quoting: $'a\tb'
        let j = i + 2;
        let value = "";
        let closed = false;
        while (j < n) {
          const d = input[j];
          if (d === "'") {
            closed = true;
            j += 1;
            break;
          }
          if (d === "\\" && j + 1 < n) {
            const e = input[j + 1];
            if (e in ANSI_ESCAPES) {
              value += ANSI_ESCAPES[e];
              j += 2;
            } else if (e === "x" && /^[0-9a-fA-F]/.test(input[j + 2] ?? "")) {
              const hex = /^[0-9a-fA-F]{1,2}/.exec(input.slice(j + 2, j + 4))![0];
              value += String.fromCharCode(parseInt(hex, 16));
              j += 2 + hex.length;
            } else if (/[0-7]/.test(e)) {
              const oct = /^[0-7]{1,3}/.exec(input.slice(j + 1, j + 4))![0];
              value += String.fromCharCode(parseInt(oct, 8) & 0xff);
              j += 1 + oct.length;
            } else {
              value += "\\" + e;
              j += 2;
            }
          } else {
            value += d;
            j += 1;
          }
        }
        if (!closed) throw unexpectedEof("'");
        text(value, true);
        i = j;
      } else if (c === "$") {
        readDollar(parts, false);
      } else if (c === "`") {
        throw unsupported("command substitution `...`");
      } else {
        text(c, false);
        i += 1;
      }
    }
    return { parts, raw: input.slice(start, i) };
  };

  while (i < n) {
    const c = input[i];
    if (c === " " || c === "\t" || c === "\r") {
      i += 1;
      continue;
    }
    if (c === "\n") {
      tokens.push({ type: "op", op: "newline" });
      i += 1;
      continue;
    }
    if (c === "#") {
      while (i < n && input[i] !== "\n") i += 1;
      continue;
    }
    const two = input.slice(i, i + 2);
    if (c === "|") {
      if (two === "||") {
        tokens.push({ type: "op", op: "||" });
        i += 2;
      } else if (two === "|&") {
        throw unsupported("the |& operator (use 2>&1 |)");
      } else {
        tokens.push({ type: "op", op: "|" });
        i += 1;
      }
      continue;
    }
    if (c === "&") {
      if (two === "&&") {
        tokens.push({ type: "op", op: "&&" });
        i += 2;
      } else if (two === "&>") {
        const append = input[i + 2] === ">";
        tokens.push({ type: "redir", op: append ? ">>" : ">", fd: "both", text: append ? "&>>" : "&>" });
        i += append ? 3 : 2;
      } else {
        throw unsupported("running commands in the background (&)");
      }
      continue;
    }
    if (c === ";") {
      if (two === ";;" || two === ";&") throw unexpectedToken(two);
      tokens.push({ type: "op", op: ";" });
      i += 1;
      continue;
    }
    if (c === "(" || c === ")") {
      tokens.push({ type: "op", op: c });
      i += 1;
      continue;
    }
    // Redirections, optionally preceded by a file descriptor number ("2>", "2>&1").
    const fdMatch = /^(\d*)(>>|>&|>\||>|<<|<&|<>|<)/.exec(input.slice(i, i + 16));
    if (fdMatch && (fdMatch[1] === "" || fdMatch[1].length <= 3)) {
      const [whole, digits, op] = fdMatch;
      const fdNum = digits === "" ? (op.startsWith("<") ? 0 : 1) : Number(digits);
      if (op === "<<") throw unsupported(input[i + whole.length] === "<" ? "here-strings (<<<)" : "here-documents (<<)", true);
      if (op === "<>" || op === "<&") throw unsupported(`the ${op} redirection`);
      if (input[i + whole.length] === "(" && (op === "<" || op === ">")) throw unsupported("process substitution");
      if (fdNum > 2) throw unsupported(`file descriptor ${fdNum}`);
      const fd = fdNum as 0 | 1 | 2;
      if (op === ">&") {
        const rest = /^\d+/.exec(input.slice(i + whole.length, i + whole.length + 8));
        if (rest) {
          const source = Number(rest[0]);
          if (source > 2) throw new ShellSyntaxError(`bash: ${source}: Bad file descriptor`, 1);
          tokens.push({ type: "dup", fd, source: source as 0 | 1 | 2, text: whole + rest[0] });
          i += whole.length + rest[0].length;
        } else if (input[i + whole.length] === "-") {
          throw unsupported("closing file descriptors (>&-)", true);
        } else {
          // `>&file` is bash's spelling of `&>file`.
          tokens.push({ type: "redir", op: ">", fd: digits === "" ? "both" : fd, text: whole });
          i += whole.length;
        }
        continue;
      }
      tokens.push({ type: "redir", op: op === ">|" ? ">" : (op as "<" | ">" | ">>"), fd, text: whole });
      i += whole.length;
      continue;
    }
    tokens.push({ type: "word", word: readWord() });
  }
  return tokens;
}

const RESERVED_UNSUPPORTED = new Set(["if", "for", "while", "until", "case", "select", "function", "{", "[[", "coproc"]);
const RESERVED_UNEXPECTED = new Set(["then", "else", "elif", "fi", "do", "done", "esac", "}", "]]", "in"]);

function tokenText(token: Token | undefined): string {
  if (!token) return "newline";
  if (token.type === "op") return token.op;
  if (token.type === "word") return token.word.raw;
  return token.text;
}

function plainWord(word: Word): string | null {
  if (word.parts.length !== 1) return null;
  const part = word.parts[0];
  return part.kind === "text" && !part.quoted ? part.value : null;
}

/** Parses a command line into a Script; throws ShellSyntaxError with bash-like messages. */
export function parseCommandLine(input: string): Script {
  const tokens = tokenize(input);
  let pos = 0;
  const peek = (): Token | undefined => tokens[pos];
  const isOp = (t: Token | undefined, ...ops: string[]): boolean => t?.type === "op" && ops.includes(t.op);
  const skipNewlines = (): void => {
    while (isOp(peek(), "newline")) pos += 1;
  };

  const parseCommand = (afterOperator: boolean): SimpleCommand => {
    const cmd: SimpleCommand = { assignments: [], words: [], redirects: [] };
    for (;;) {
      const t = peek();
      if (!t) break;
      if (t.type === "op") {
        if (t.op === "(") {
          if (cmd.words.length === 0 && cmd.assignments.length === 0) throw unsupported("subshells and grouping with ( )", true);
          throw unexpectedToken("(");
        }
        break;
      }
      pos += 1;
      if (t.type === "word") {
        const plain = plainWord(t.word);
        if (cmd.words.length === 0) {
          if (plain !== null && RESERVED_UNSUPPORTED.has(plain)) throw unsupported(`the '${plain}' compound command`);
          if (plain !== null && RESERVED_UNEXPECTED.has(plain)) throw unexpectedToken(plain);
          const first = t.word.parts[0];
          const m = first?.kind === "text" && !first.quoted ? /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.value) : null;
          if (m) {
            const valueParts: WordPart[] = [];
            const restText = (first as { value: string }).value.slice(m[0].length);
            if (restText) valueParts.push({ kind: "text", value: restText, quoted: false });
            valueParts.push(...t.word.parts.slice(1));
            cmd.assignments.push({ name: m[1], value: { parts: valueParts, raw: t.word.raw.slice(m[0].length) } });
            continue;
          }
        }
        cmd.words.push(t.word);
      } else if (t.type === "dup") {
        cmd.redirects.push({ op: "dup", fd: t.fd, source: t.source });
      } else {
        const target = peek();
        if (!target || target.type !== "word") throw unexpectedToken(tokenText(target));
        pos += 1;
        cmd.redirects.push({ op: t.op, fd: t.fd, target: target.word });
      }
    }
    if (cmd.words.length === 0 && cmd.assignments.length === 0 && cmd.redirects.length === 0) {
      const t = peek();
      if (!t && afterOperator) throw new ShellSyntaxError("bash: syntax error: unexpected end of file");
      throw unexpectedToken(tokenText(t));
    }
    return cmd;
  };

  const parsePipeline = (afterOperator: boolean): Pipeline => {
    let negated = false;
    const t = peek();
    if (t?.type === "word" && plainWord(t.word) === "!") {
      negated = true;
      pos += 1;
    }
    const commands = [parseCommand(afterOperator || negated)];
    while (isOp(peek(), "|")) {
      pos += 1;
      skipNewlines();
      commands.push(parseCommand(true));
    }
    return { negated, commands };
  };

  const script: Script = [];
  skipNewlines();
  while (pos < tokens.length) {
    const list: AndOrList = { first: parsePipeline(false), rest: [] };
    while (isOp(peek(), "&&", "||")) {
      const op = (peek() as { op: "&&" | "||" }).op;
      pos += 1;
      skipNewlines();
      list.rest.push({ op, pipeline: parsePipeline(true) });
    }
    script.push(list);
    const t = peek();
    if (!t) break;
    if (isOp(t, ";", "newline")) {
      pos += 1;
      skipNewlines();
      continue;
    }
    throw unexpectedToken(tokenText(t));
  }
  return script;
}
