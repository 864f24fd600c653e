import { describe, expect, it } from "vitest";
import { matchGlob } from "./glob.js";
import { ShellSyntaxError, parseCommandLine } from "./parser.js";

function words(line: string): string[][] {
  return parseCommandLine(line).flatMap((list) =>
    [list.first, ...list.rest.map((r) => r.pipeline)].flatMap((p) =>
      p.commands.map((c) => c.words.map((w) => w.parts.map((part) => (part.kind === "text" ? part.value : part.kind === "param" ? `$${part.name}` : "~")).join(""))),
    ),
  );
}

function syntaxError(line: string): string {
  try {
    parseCommandLine(line);
  } catch (error) {
    if (error instanceof ShellSyntaxError) return error.message;
    throw error;
  }
  throw new Error(`expected a syntax error for ${line}`);
}

describe("parseCommandLine", () => {
  it("splits lists, pipelines and words", () => {
    const script = parseCommandLine("a 1 | b && c || d; e");
    expect(script).toHaveLength(2);
    expect(script[0].first.commands).toHaveLength(2);
    expect(script[0].rest.map((r) => r.op)).toEqual(["&&", "||"]);
    expect(words("a 'b c' \"d $X\" e\\ f")).toEqual([["a", "b c", "d $X", "e f"]]);
  });

  it("parses redirections with file descriptors and duplication", () => {
    const [cmd] = parseCommandLine("cmd <in >out 2>>err 2>&1 &>both").flatMap((l) => l.first.commands);
    expect(cmd.redirects.map((r) => (r.op === "dup" ? `${r.fd}>&${r.source}` : `${r.fd}${r.op}${r.target.raw}`))).toEqual([
      "0<in",
      "1>out",
      "2>>err",
      "2>&1",
      "both>both",
    ]);
  });

  it("recognizes assignments only before the command name", () => {
    const [cmd] = parseCommandLine("A=1 B='x y' cmd C=2").flatMap((l) => l.first.commands);
    expect(cmd.assignments.map((a) => a.name)).toEqual(["A", "B"]);
    expect(cmd.words.map((w) => w.raw)).toEqual(["cmd", "C=2"]);
  });

  it("gives bash-style syntax errors", () => {
    expect(syntaxError("|")).toBe("bash: syntax error near unexpected token `|'");
    expect(syntaxError("a &&")).toBe("bash: syntax error: unexpected end of file");
    expect(syntaxError("a >")).toBe("bash: syntax error near unexpected token `newline'");
    expect(syntaxError("echo 'x")).toBe("bash: unexpected EOF while looking for matching `''");
    expect(syntaxError("echo $(ls)")).toMatch(/not supported/);
  });

  it("parses an empty or comment-only line to nothing", () => {
    expect(parseCommandLine("")).toEqual([]);
    expect(parseCommandLine("   # just a comment")).toEqual([]);
  });
});

describe("matchGlob", () => {
  it("matches *, ?, classes and escapes", () => {
    expect(matchGlob("*.py", "main.py")).toBe(true);
    expect(matchGlob("*.py", "main.pyc")).toBe(false);
    expect(matchGlob("?.txt", "a.txt")).toBe(true);
    expect(matchGlob("[a-c]x", "bx")).toBe(true);
    expect(matchGlob("[!a-c]x", "bx")).toBe(false);
    expect(matchGlob("\\*", "*")).toBe(true);
    expect(matchGlob("\\*", "a")).toBe(false);
    expect(matchGlob("[", "[")).toBe(true);
    expect(matchGlob("*A*", "xay", { caseInsensitive: true })).toBe(true);
  });

  it("stays fast on pathological patterns", () => {
    const started = process.hrtime.bigint();
    expect(matchGlob("*a".repeat(200) + "b", "a".repeat(5000))).toBe(false);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(2_000);
  });
});
