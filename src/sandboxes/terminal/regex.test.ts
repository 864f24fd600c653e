import { describe, expect, it } from "vitest";
import { compilePatterns, RegexSyntaxError, RegexTooBigError, type PatternOptions } from "./regex.js";

/** A meter that only counts. */
function counter(): { charge(units: number): void; units: number } {
  return {
    units: 0,
    charge(units: number) {
      this.units += units;
    },
  };
}

/** Deterministic pseudo-random integers in [0, n) (a small LCG: tests must not depend on Math.random). */
function lcg(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
}

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
    expect(syntaxError("a{1000}", { extended: true })).toBe("Regular expression too big (a repetition count above 255)");
    expect(syntaxError("(".repeat(5000), { extended: true })).toBe("Regular expression too big (groups nested deeper than 100)");
  });

  it("runs catastrophic-backtracking patterns in linear work", () => {
    for (const [pattern, line] of [
      ["(a+)+$", "a".repeat(50_000) + "b"],
      ["(a|aa)*c", "a".repeat(50_000)],
      ["(x*)*y", "x".repeat(50_000)],
    ]) {
      const meter = counter();
      expect(compilePatterns([pattern], { extended: true }, meter).test(line)).toBe(false);
      // Work per character is bounded by the (tiny) program, whatever the line length.
      expect(meter.units / line.length, pattern).toBeLessThan(20);
    }
  });
});

describe("size limits (RE2's rules)", () => {
  const tooBig = (pattern: string, options: PatternOptions = { extended: true }): string => {
    try {
      compilePatterns([pattern], options);
    } catch (error) {
      expect(error).toBeInstanceOf(RegexTooBigError);
      return (error as Error).message;
    }
    throw new Error(`expected ${pattern} to be refused`);
  };

  it("refuses nested counted repetitions whose counts multiply past 1000, before expanding them", () => {
    // The security review's pattern: 255 x 97 copies of '.' would be ~25,000 instructions.
    expect(tooBig("(.{0,255}){0,97}[~]")).toBe("Regular expression too big (nested repetition counts multiply past 1000)");
    expect(tooBig("\\(a\\{10\\}\\)\\{101\\}", {})).toMatch(/multiply past 1000/);
    expect(tooBig("((a{2,}){20}){30}")).toMatch(/multiply past 1000/);
    expect(compilePatterns(["(a{10}){100}"], { extended: true }).test("a".repeat(1000))).toBe(true);
    expect(compilePatterns(["(a*)*(b+)+"], { extended: true }).test("ab")).toBe(true);
  });

  it("refuses programs over 5,000 instructions, long pattern sets, and quantifier chains", () => {
    expect(tooBig(".{0,255}".repeat(10))).toBe("Regular expression too big (more than 5000 instructions)");
    expect(tooBig("a".repeat(20_001), { fixed: true })).toBe("Regular expression too big (patterns longer than 20000 characters)");
    expect(tooBig("a" + "*".repeat(9))).toBe("Regular expression too big (more than 8 repetition operators on one atom)");
    expect(compilePatterns(["a" + "*".repeat(8)], { extended: true }).test("aaa")).toBe(true);
    expect(compilePatterns([".{0,255}".repeat(9)], { extended: true }).test("x")).toBe(true);
  });
});

describe("work metering", () => {
  it("charges one unit per character scanned plus the VM's thread-steps, the same every time", () => {
    const literal = counter();
    compilePatterns(["Failed"], {}, literal).test("x".repeat(99));
    expect(literal.units).toBe(100);
    const spend = (): number => {
      const meter = counter();
      const pattern = compilePatterns(["[0-9]+\\.[0-9]+"], { extended: true }, meter);
      pattern.test("v 1.2 and 33.44 and 5");
      pattern.matches("v 1.2 and 33.44 and 5");
      return meter.units;
    };
    expect(spend()).toBeGreaterThan(50);
    expect(spend()).toBe(spend());
  });

  it("stops matching as soon as the meter throws", () => {
    let units = 0;
    const meter = {
      charge(n: number) {
        units += n;
        if (units > 20_000) throw new Error("budget");
      },
    };
    // The scan charges per character: it stops within one character's work (~400 units) of the limit.
    expect(() => compilePatterns([".{0,200}[~]"], { extended: true }, meter).test("a".repeat(10_000))).toThrow("budget");
    expect(units).toBeLessThan(20_000 + 1_000);
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

describe("grep -o: every match in one pass", () => {
  /** A small regex AST for the reference matcher; rendered to ERE for the engine. */
  type Gen =
    | { t: "char"; c: string }
    | { t: "any" }
    | { t: "set"; members: string[]; negate: boolean }
    | { t: "bol" }
    | { t: "eol" }
    | { t: "noWordBefore" }
    | { t: "noWordAfter" }
    | { t: "cat"; items: Gen[] }
    | { t: "alt"; items: Gen[] }
    | { t: "rep"; node: Gen; min: number; max: number };

  function randomGen(next: (n: number) => number, depth = 0): Gen {
    const quantifiers: Array<[number, number] | null> = [null, null, null, [0, -1], [1, -1], [0, 1], [0, 2], [1, 3], [2, 2]];
    const atom = (): Gen => {
      if (depth < 2 && next(4) === 0) return randomGen(next, depth + 1);
      const k = next(10);
      if (k < 5) return { t: "char", c: ["a", "b", "c", "é", "😀"][k] };
      if (k === 5) return { t: "any" };
      if (k === 6) return { t: "set", members: ["a", "b"], negate: false };
      if (k === 7) return { t: "set", members: ["a"], negate: true };
      return { t: k === 8 ? "bol" : "eol" };
    };
    const branches: Gen[] = [];
    for (let b = 0, n = 1 + next(depth > 0 ? 2 : 3); b < n; b++) {
      const items: Gen[] = [];
      for (let i = 0, m = 1 + next(3); i < m; i++) {
        const node = atom();
        const q = node.t === "bol" || node.t === "eol" ? null : quantifiers[next(quantifiers.length)];
        items.push(q ? { t: "rep", node, min: q[0], max: q[1] } : node);
      }
      branches.push({ t: "cat", items });
    }
    return { t: "alt", items: branches };
  }

  function render(node: Gen): string {
    const group = (inner: Gen): string => (inner.t === "cat" || inner.t === "alt" ? `(${render(inner)})` : render(inner));
    switch (node.t) {
      case "char":
        return node.c;
      case "any":
        return ".";
      case "set":
        return `[${node.negate ? "^" : ""}${node.members.join("")}]`;
      case "bol":
        return "^";
      case "eol":
        return "$";
      case "noWordBefore":
      case "noWordAfter":
        throw new Error("grep -w adds these; patterns cannot spell them");
      case "cat":
        return node.items.map(group).join("");
      case "alt":
        return node.items.map(render).join("|");
      case "rep": {
        const body = group(node.node);
        const { min, max } = node;
        const q = max === -1 ? (min === 0 ? "*" : min === 1 ? "+" : `{${min},}`) : min === 0 && max === 1 ? "?" : min === max ? `{${min}}` : `{${min},${max}}`;
        return body + q;
      }
    }
  }

  const WORD = /^[\p{L}\p{N}_]$/u;

  /** Every position where a match of `node` starting at `pos` can end (a set semantics: no search order at all). */
  function ends(node: Gen, chars: string[], pos: number, memo = new Map<Gen, Array<Set<number>>>()): Set<number> {
    let row = memo.get(node);
    if (!row) memo.set(node, (row = []));
    return (row[pos] ??= computeEnds(node, chars, pos, memo));
  }

  function computeEnds(node: Gen, chars: string[], pos: number, memo: Map<Gen, Array<Set<number>>>): Set<number> {
    const n = chars.length;
    const from = (positions: Set<number>, item: Gen): Set<number> => new Set([...positions].flatMap((p) => [...ends(item, chars, p, memo)]));
    switch (node.t) {
      case "char":
        return new Set(chars[pos] === node.c ? [pos + 1] : []);
      case "any":
        return new Set(pos < n ? [pos + 1] : []);
      case "set":
        return new Set(pos < n && node.members.includes(chars[pos]) !== node.negate ? [pos + 1] : []);
      case "bol":
        return new Set(pos === 0 ? [pos] : []);
      case "eol":
        return new Set(pos === n ? [pos] : []);
      case "noWordBefore":
        return new Set(pos === 0 || !WORD.test(chars[pos - 1]) ? [pos] : []);
      case "noWordAfter":
        return new Set(pos === n || !WORD.test(chars[pos]) ? [pos] : []);
      case "cat":
        return node.items.reduce((positions, item) => from(positions, item), new Set([pos]));
      case "alt":
        return new Set(node.items.flatMap((item) => [...ends(item, chars, pos, memo)]));
      case "rep": {
        // With at most n non-empty iterations, counts beyond min + n + 1 reach nothing new.
        const most = node.max === -1 ? node.min + n + 1 : node.max;
        const out = new Set<number>(node.min === 0 ? [pos] : []);
        let level = new Set([pos]);
        for (let k = 1; k <= most && level.size > 0; k++) {
          level = from(level, node.node);
          if (k >= node.min) for (const p of level) out.add(p);
        }
        return out;
      }
    }
  }

  /** GNU grep -o by brute force: the leftmost start, the longest match from it, then on from its end (one past an empty match). */
  function bruteForce(root: Gen, line: string): Array<[number, number]> {
    const chars = Array.from(line);
    const memo = new Map<Gen, Array<Set<number>>>();
    const offsets = [0];
    for (const c of chars) offsets.push(offsets[offsets.length - 1] + c.length);
    const out: Array<[number, number]> = [];
    for (let from = 0; from <= chars.length; ) {
      let start = from;
      while (start <= chars.length && ends(root, chars, start, memo).size === 0) start += 1;
      if (start > chars.length) break;
      const end = Math.max(...ends(root, chars, start, memo));
      if (end > start) out.push([offsets[start], offsets[end]]);
      from = end > start ? end : start + 1;
    }
    return out;
  }

  it("gives GNU's leftmost-longest matches on 12,000 random patterns and lines", () => {
    const next = lcg(987654321);
    const lineAlphabet = ["a", "b", "c", "é", "😀", "ab", " "];
    let compared = 0;
    let withMatches = 0;
    for (let i = 0; i < 3_000; i++) {
      const generated = randomGen(next);
      const pattern = render(generated);
      // -x and -w wrap the pattern in assertions; the reference wraps its tree the same way.
      const option = next(3);
      const options: PatternOptions = { extended: true, lineMatch: option === 1, wordMatch: option === 2 };
      const root: Gen =
        option === 1
          ? { t: "cat", items: [{ t: "bol" }, generated, { t: "eol" }] }
          : option === 2
            ? { t: "cat", items: [{ t: "noWordBefore" }, generated, { t: "noWordAfter" }] }
            : generated;
      // Two copies: the same language without a required literal, so the automaton answers every line.
      const compiled = compilePatterns([pattern, pattern], options);
      for (let k = 0; k < 4; k++) {
        const line = Array.from({ length: next(13) }, () => lineAlphabet[next(lineAlphabet.length)]).join("");
        const expected = bruteForce(root, line);
        const chars = Array.from(line);
        const anywhere = [...chars, ""].some((_, s) => ends(root, chars, s).size > 0);
        const label = `${pattern} ${JSON.stringify(options)} on ${JSON.stringify(line)}`;
        expect(compiled.matches(line), label).toEqual(expected);
        expect(compiled.test(line), label).toBe(anywhere);
        compared++;
        if (expected.length > 0) withMatches++;
      }
    }
    expect(compared).toBe(12_000);
    expect(withMatches).toBeGreaterThan(3_500);
  });

  it("stays linear where searching match by match is quadratic", () => {
    // Each search for `a` must also follow `a.*c` to the end of the line, looking for a longer match.
    const work = (length: number): number => {
      const meter = counter();
      const matches = compilePatterns(["a|a.*c"], { extended: true }, meter).matches("ab".repeat(length / 2));
      expect(matches).toHaveLength(length / 2);
      return meter.units;
    };
    const small = work(10_000);
    const large = work(100_000);
    // Ten times the line, ten times the work (restarting each search would make it a hundred).
    expect(large / small).toBeGreaterThan(9);
    expect(large / small).toBeLessThan(11);
    expect(large / 100_000).toBeLessThan(20);
  });

  it("finds successive and adjacent matches, and skips empty ones", () => {
    expect(matches("a|a.*c", "abab", { extended: true })).toEqual(["a", "a"]);
    expect(matches("a|a.*c", "abacab", { extended: true })).toEqual(["abac", "a"]);
    expect(matches("b*", "abbcb", { extended: true })).toEqual(["bb", "b"]);
    expect(matches("x*|b", "abb", { extended: true })).toEqual(["b", "b"]);
    expect(matches("(ab|a)(bc)?", "abcab", { extended: true })).toEqual(["abc", "ab"]);
    expect(matches("^a", "aaa", { extended: true })).toEqual(["a"]);
  });
});
