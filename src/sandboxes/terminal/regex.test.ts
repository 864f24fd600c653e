import { describe, expect, it } from "vitest";
import { compilePatterns, RegexSyntaxError, type PatternOptions } from "./regex.js";

function matches(pattern: string, line: string, options: PatternOptions = {}): string[] {
  return compilePatterns([pattern], options)
    .matches(line)
    .map(([s, e]) => line.slice(s, e));
}

function test(pattern: string, line: string, options: PatternOptions = {}): boolean {
  return compilePatterns([pattern], options).test(line);
}

function syntaxError(pattern: string, options: PatternOptions = {}): string {
  try {
    compilePatterns([pattern], options);
  } catch (error) {
    if (error instanceof RegexSyntaxError) return error.message;
    throw error;
  }
  throw new Error(`expected ${pattern} to be rejected`);
}

describe("BRE (grep default)", () => {
  it("treats + ? | ( ) { } as literals and their backslashed forms as operators", () => {
    expect(test("a+b", "a+b")).toBe(true);
    expect(test("a+b", "aab")).toBe(false);
    expect(test("a\\+b", "aab")).toBe(true);
    expect(test("colou\\?r", "color")).toBe(true);
    expect(test("cat\\|dog", "hotdog")).toBe(true);
    expect(test("\\(ab\\)\\{2\\}", "xababx")).toBe(true);
    expect(test("a{2}", "a{2}")).toBe(true);
    expect(test("(x)", "(x)")).toBe(true);
  });

  it("handles anchors and a leading '*' as POSIX says", () => {
    expect(test("^abc", "abcd")).toBe(true);
    expect(test("^abc", "xabc")).toBe(false);
    expect(test("abc$", "xabc")).toBe(true);
    expect(test("a^b", "a^b")).toBe(true);
    expect(test("a$b", "a$b")).toBe(true);
    expect(test("*a", "*a")).toBe(true);
    expect(test("^*a", "*a")).toBe(true);
    expect(test("\\(^a\\)", "ab")).toBe(true);
  });

  it("supports bracket expressions and POSIX classes", () => {
    expect(matches("[[:digit:]]\\+", "ab 123 c45")).toEqual(["123", "45"]);
    expect(matches("[^a-c ]", "abc d")).toEqual(["d"]);
    expect(test("[]]", "]")).toBe(true);
    expect(test("[a-]", "-")).toBe(true);
    expect(test("[\\]", "\\")).toBe(true);
    expect(matches("[[:upper:]][[:lower:]]*", "Hello World")).toEqual(["Hello", "World"]);
  });

  it("supports GNU escapes \\w \\s \\b \\< \\>", () => {
    expect(matches("\\w\\+", "foo_1 bar")).toEqual(["foo_1", "bar"]);
    expect(matches("\\s", "a b")).toEqual([" "]);
    expect(test("\\bcat\\b", "concat")).toBe(false);
    expect(test("\\<cat\\>", "a cat!")).toBe(true);
  });
});

describe("ERE (grep -E)", () => {
  it("supports alternation, groups, + ? and intervals", () => {
    expect(test("cat|dog", "hotdog", { extended: true })).toBe(true);
    expect(matches("(ab)+", "xabababy", { extended: true })).toEqual(["ababab"]);
    expect(matches("a{2,3}", "aaaaaaa", { extended: true })).toEqual(["aaa", "aaa"]);
    expect(matches("a{,2}b", "aaab", { extended: true })).toEqual(["aab"]);
    expect(test("a{x}", "a{x}", { extended: true })).toBe(true);
    expect(test("\\(", "(", { extended: true })).toBe(true);
  });

  it("returns leftmost-longest matches like GNU grep -o", () => {
    expect(matches("ab|abcd", "xabcdx", { extended: true })).toEqual(["abcd"]);
    expect(matches("x*", "abc", { extended: true })).toEqual([]);
    expect(matches("[0-9]+", "a1b22c333", { extended: true })).toEqual(["1", "22", "333"]);
  });
});

describe("options", () => {
  it("ignores case, matches words and whole lines, and takes fixed strings", () => {
    expect(test("hello", "HeLLo", { ignoreCase: true })).toBe(true);
    expect(test("[a-z]+", "ABC", { extended: true, ignoreCase: true })).toBe(true);
    expect(test("foo", "foobar", { wordMatch: true })).toBe(false);
    expect(test("foo", "a foo.", { wordMatch: true })).toBe(true);
    expect(test("foo", "foo ", { lineMatch: true })).toBe(false);
    expect(test("a.b", "axb", { fixed: true })).toBe(false);
    expect(test("a.b", "a.b", { fixed: true })).toBe(true);
    expect(compilePatterns(["x", "y"]).test("y")).toBe(true);
    expect(compilePatterns([""]).test("anything")).toBe(true);
  });

  it("matches by code point, not UTF-16 unit", () => {
    expect(matches(".", "😀")).toEqual(["😀"]);
    expect(matches("é.", "xéy")).toEqual(["éy"]);
  });
});

describe("errors and safety", () => {
  it("rejects malformed patterns with GNU messages", () => {
    expect(syntaxError("[abc")).toBe("Unmatched [, [^, [:, [., or [=");
    expect(syntaxError("(", { extended: true })).toBe("Unmatched ( or \\(");
    expect(syntaxError("a)", { extended: true })).toBe("Unmatched ) or \\)");
    expect(syntaxError("\\(a")).toBe("Unmatched ( or \\(");
    expect(syntaxError("a\\{1")).toBe("Unmatched \\{");
    expect(syntaxError("a\\{2,1\\}")).toBe("Invalid content of \\{\\}");
    expect(syntaxError("[z-a]")).toBe("Invalid range end");
    expect(syntaxError("[[:nope:]]")).toBe("Invalid character class name");
    expect(syntaxError("[:space:]")).toBe("character class syntax is [[:space:]], not [:space:]");
    expect(syntaxError("ab\\")).toBe("Trailing backslash");
    expect(syntaxError("(a)\\1", { extended: true })).toMatch(/back-references/);
    expect(syntaxError("a{1000}", { extended: true })).toBe("Regular expression too big");
    expect(syntaxError("(".repeat(5000), { extended: true })).toBe("Regular expression too big");
  });

  it("runs catastrophic-backtracking patterns in linear time", () => {
    const started = process.hrtime.bigint();
    expect(test("(a+)+$", "a".repeat(50_000) + "b", { extended: true })).toBe(false);
    expect(test("(a|aa)*c", "a".repeat(50_000), { extended: true })).toBe(false);
    expect(test("(x*)*y", "x".repeat(50_000), { extended: true })).toBe(false);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(5_000);
  });
});

describe("the literal shortcut", () => {
  // Two copies of a pattern are one alternative: the same language, but no required literal, so the
  // automaton alone answers. Every shortcut answer must equal it.
  const automatonOnly = (pattern: string, options: PatternOptions) => compilePatterns([pattern, pattern], options);

  it("gives the automaton's answers on 20,000 random patterns and lines", () => {
    let state = 12345;
    const next = (n: number) => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return (state >>> 8) % n;
    };
    const pick = (alphabet: readonly string[], max: number) => Array.from({ length: next(max + 1) }, () => alphabet[next(alphabet.length)]).join("");
    const patternAlphabet = ["a", "b", "ab", "ba", ".", "*", "\\.", "^", "$", "[ab]", "\\<", "\\>", "\\b", "é", "😀", "x"];
    const lineAlphabet = ["a", "b", "c", ".", " ", "é", "😀", "x", "ab"];
    let compared = 0;
    let shortcut = 0;
    for (let i = 0; i < 20_000; i++) {
      const pattern = pick(patternAlphabet, 5);
      const options: PatternOptions = [{}, { extended: true }, { fixed: true }, { wordMatch: true }, { lineMatch: true }][next(5)] as PatternOptions;
      let fast, slow;
      try {
        fast = compilePatterns([pattern], options);
        slow = automatonOnly(pattern, options);
      } catch (error) {
        expect(error).toBeInstanceOf(RegexSyntaxError);
        continue;
      }
      for (let k = 0; k < 4; k++) {
        const line = pick(lineAlphabet, 12);
        expect(fast.test(line), `${pattern} ${JSON.stringify(options)} on ${line}`).toBe(slow.test(line));
        expect(fast.matches(line), `${pattern} ${JSON.stringify(options)} on ${line}`).toEqual(slow.matches(line));
        compared++;
        if (/^[abx]+$/.test(pattern)) shortcut++;
      }
    }
    expect(compared).toBeGreaterThan(40_000);
    expect(shortcut).toBeGreaterThan(1_000);
  });

  it("finds every non-overlapping occurrence of a fixed string", () => {
    expect(compilePatterns(["aa"]).matches("aaaaa")).toEqual([[0, 2], [2, 4]]);
    expect(compilePatterns(["😀a"], { fixed: true }).matches("x😀a😀a")).toEqual([[1, 4], [4, 7]]);
    expect(compilePatterns(["Failed"]).test("sshd: Accepted")).toBe(false);
  });
});
