/**
 * awk's lexer. `/` is ambiguous (division or the start of a regex), and only the parser knows which:
 * it lexes `/` as division and calls `rescanRegex` when it wanted an operand. Newlines are tokens,
 * since they end statements; a backslash before a newline joins the lines.
 */
import { BUILTIN_NAMES } from "./ast.js";
import { AwkSyntaxError } from "./errors.js";

export type TokenKind = "newline" | "eof" | "number" | "string" | "regex" | "name" | "funcname" | "builtin" | "keyword" | "punct";

export interface Token {
  kind: TokenKind;
  /** The keyword, punctuation, name or regex source; a string's decoded value. */
  text: string;
  /** A number's value. */
  value: number;
  line: number;
  col: number;
  /** Offset of the token's first character in the program text. */
  offset: number;
}

const KEYWORDS = new Set([
  "BEGIN",
  "END",
  "function",
  "func",
  "if",
  "else",
  "while",
  "for",
  "do",
  "break",
  "continue",
  "next",
  "nextfile",
  "exit",
  "return",
  "delete",
  "in",
  "getline",
  "print",
  "printf",
]);
const BUILTINS: ReadonlySet<string> = new Set(BUILTIN_NAMES);

/** Punctuation, longest first so that `**=` wins over `**` and `*`. */
const PUNCT = [
  "**=", "**", "^=", "+=", "-=", "*=", "/=", "%=", "==", "<=", ">=", "!=", "!~", "++", "--", "&&", "||", ">>",
  "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^", "!", ">", "<", "|", "?", ":", "~", "$", "=",
];

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
const isNameStart = (c: string | undefined): boolean => c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_");
const isNameChar = (c: string | undefined): boolean => isNameStart(c) || isDigit(c);
const isOctal = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "7";
const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9a-fA-F]$/.test(c);

const SIMPLE_ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v" };

/**
 * Decodes awk's string escapes (\n \t \" \\ \/ \ddd \xhh ...). An unknown escape keeps its backslash,
 * as BWK awk and mawk do, so "\." still reaches a dynamic regex as an escaped dot.
 */
export function unescape(text: string): string {
  if (!text.includes("\\")) return text;
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== "\\" || i + 1 >= text.length) {
      out += c;
      continue;
    }
    const e = text[++i];
    if (e in SIMPLE_ESCAPES) out += SIMPLE_ESCAPES[e];
    else if (isOctal(e)) {
      let digits = e;
      while (digits.length < 3 && isOctal(text[i + 1])) digits += text[++i];
      out += String.fromCharCode(parseInt(digits, 8));
    } else if (e === "x" && isHex(text[i + 1])) {
      let digits = "";
      while (digits.length < 2 && isHex(text[i + 1])) digits += text[++i];
      out += String.fromCharCode(parseInt(digits, 16));
    } else out += `\\${e}`;
  }
  return out;
}

/** Lexer state, saved and restored when the parser looks ahead. */
export interface LexerState {
  pos: number;
  line: number;
  lineStart: number;
}

export class Lexer {
  private pos = 0;
  private line = 1;
  private lineStart = 0;

  constructor(private readonly src: string) {}

  save(): LexerState {
    return { pos: this.pos, line: this.line, lineStart: this.lineStart };
  }

  restore(state: LexerState): void {
    this.pos = state.pos;
    this.line = state.line;
    this.lineStart = state.lineStart;
  }

  /** The program line `line` (1-based), for error excerpts. */
  sourceLine(line: number): string {
    return this.src.split("\n")[line - 1] ?? "";
  }

  private error(message: string, line = this.line, col = this.pos - this.lineStart + 1): AwkSyntaxError {
    return new AwkSyntaxError(message, { line, col });
  }

  private token(kind: TokenKind, text: string, start: number, value = 0): Token {
    return { kind, text, value, line: this.line, col: start - this.lineStart + 1, offset: start };
  }

  /** Skips blanks, comments and backslash-newline continuations. */
  private skipSpace(): void {
    const src = this.src;
    for (;;) {
      const c = src[this.pos];
      if (c === " " || c === "\t" || c === "\r" || c === "\f" || c === "\v") this.pos += 1;
      else if (c === "\\" && (src[this.pos + 1] === "\n" || (src[this.pos + 1] === "\r" && src[this.pos + 2] === "\n"))) {
        this.pos += src[this.pos + 1] === "\n" ? 2 : 3;
        this.newLine();
      } else if (c === "#") {
        while (this.pos < src.length && src[this.pos] !== "\n") this.pos += 1;
      } else return;
    }
  }

  private newLine(): void {
    this.line += 1;
    this.lineStart = this.pos;
  }

  /** The next token. */
  next(): Token {
    this.skipSpace();
    const src = this.src;
    const start = this.pos;
    if (start >= src.length) return this.token("eof", "", start);
    const c = src[start];
    if (c === "\n") {
      const tok = this.token("newline", "\n", start);
      this.pos += 1;
      this.newLine();
      return tok;
    }
    if (isDigit(c) || (c === "." && isDigit(src[start + 1]))) return this.number(start);
    if (c === '"') return this.string(start);
    if (isNameStart(c)) {
      let end = start + 1;
      while (isNameChar(src[end])) end += 1;
      const word = src.slice(start, end);
      this.pos = end;
      if (KEYWORDS.has(word)) return this.token("keyword", word === "func" ? "function" : word, start);
      if (BUILTINS.has(word)) return this.token("builtin", word, start);
      // POSIX: a user function call has no blank between the name and "(".
      return this.token(src[end] === "(" ? "funcname" : "name", word, start);
    }
    for (const p of PUNCT) {
      if (src.startsWith(p, start)) {
        this.pos = start + p.length;
        return this.token("punct", p === "**" ? "^" : p === "**=" ? "^=" : p, start);
      }
    }
    throw this.error(`unexpected character ${JSON.stringify(c)}`);
  }

  private number(start: number): Token {
    const src = this.src;
    let end = start;
    if (src[start] === "0" && (src[start + 1] === "x" || src[start + 1] === "X") && isHex(src[start + 2])) {
      end = start + 2;
      while (isHex(src[end])) end += 1;
      this.pos = end;
      return this.token("number", src.slice(start, end), start, parseInt(src.slice(start + 2, end), 16));
    }
    while (isDigit(src[end])) end += 1;
    if (src[end] === ".") {
      end += 1;
      while (isDigit(src[end])) end += 1;
    }
    if ((src[end] === "e" || src[end] === "E") && (isDigit(src[end + 1]) || ((src[end + 1] === "+" || src[end + 1] === "-") && isDigit(src[end + 2])))) {
      end += 2;
      while (isDigit(src[end])) end += 1;
    }
    this.pos = end;
    const text = src.slice(start, end);
    // As in gawk, a constant with a leading 0 and only octal digits is octal (010 is 8).
    const octal = /^0[0-7]+$/.test(text);
    return this.token("number", text, start, octal ? parseInt(text, 8) : Number(text));
  }

  private string(start: number): Token {
    const src = this.src;
    let end = start + 1;
    for (;;) {
      const c = src[end];
      if (c === undefined || c === "\n") throw this.error("unterminated string", this.line, start - this.lineStart + 1);
      if (c === '"') break;
      if (c === "\\" && src[end + 1] === "\n") {
        // A backslash-newline inside a string joins the lines (and is dropped).
        end += 2;
        continue;
      }
      end += c === "\\" ? 2 : 1;
    }
    const raw = src.slice(start + 1, end).replace(/\\\n/g, "");
    const tok = this.token("string", unescape(raw), start);
    for (let k = start; k < end; k++) {
      if (src[k] === "\n") {
        this.line += 1;
        this.lineStart = k + 1;
      }
    }
    this.pos = end + 1;
    return tok;
  }

  /**
   * Re-reads the `/` (or `/=`) token `tok` as the start of a regex literal. Returns the regex token with
   * the source between the slashes (`\/` becomes `/`); a `/` inside a bracket expression does not end it.
   */
  rescanRegex(tok: Token): Token {
    const src = this.src;
    let i = tok.offset + 1;
    let out = "";
    let inBracket = false;
    for (;;) {
      const c = src[i];
      if (c === undefined || c === "\n") throw this.error("unterminated regular expression", tok.line, tok.col);
      if (c === "\\") {
        const n = src[i + 1];
        if (n === undefined || n === "\n") throw this.error("unterminated regular expression", tok.line, tok.col);
        out += n === "/" ? "/" : c + n;
        i += 2;
        continue;
      }
      if (inBracket) {
        if (c === "[" && (src[i + 1] === ":" || src[i + 1] === "." || src[i + 1] === "=")) {
          const close = src.indexOf(`${src[i + 1]}]`, i + 2);
          if (close >= 0 && !src.slice(i, close).includes("\n")) {
            out += src.slice(i, close + 2);
            i = close + 2;
            continue;
          }
        }
        if (c === "]") inBracket = false;
        out += c;
        i += 1;
        continue;
      }
      if (c === "/") break;
      if (c === "[") {
        inBracket = true;
        out += c;
        i += 1;
        // A ']' right after '[' or '[^' is a literal member, not the end.
        if (src[i] === "^") {
          out += "^";
          i += 1;
        }
        if (src[i] === "]") {
          out += "]";
          i += 1;
        }
        continue;
      }
      out += c;
      i += 1;
    }
    this.pos = i + 1;
    return { ...tok, kind: "regex", text: out };
  }
}
