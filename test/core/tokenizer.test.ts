import { O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import { describe, expect, it } from "vitest";
import {
  cachedTokenizer,
  fastO200kTokenizer,
  getDefaultTokenizer,
  o200kAsciiPieces,
  o200kTokenizer,
  Rng,
  type Tokenizer,
} from "../../src/index.js";

// The library's own split regex: the reference the hand-written scanner must follow.
const O200K_SPLIT = new RegExp(O200K_TOKEN_SPLIT_REGEX.source, O200K_TOKEN_SPLIT_REGEX.flags);

function randomText(rng: Rng, alphabet: readonly string[], maxParts: number): string {
  let text = "";
  for (let k = rng.int(1, maxParts); k > 0; k--) text += rng.pick(alphabet);
  return text;
}

describe("tokenizers", () => {
  it("o200k counts real BPE tokens and treats special-token text as plain text", () => {
    expect(o200kTokenizer.count("hello world")).toBe(2);
    expect(o200kTokenizer.count("a <|endoftext|> b")).toBeGreaterThan(3);
    expect(o200kTokenizer.count("")).toBe(0);
  });

  it("the default is o200k_base with a cache that gives identical counts", () => {
    const text = "The customer asked for a refund of $12.30 on invoice INV-2041.";
    expect(getDefaultTokenizer().name).toBe("o200k_base");
    expect(getDefaultTokenizer().count(text)).toBe(o200kTokenizer.count(text));
  });

  it("the cache calls the base once per distinct text and evicts the least recently used", () => {
    const calls: string[] = [];
    const base: Tokenizer = { name: "words", count: (t) => (calls.push(t), t.split(" ").length) };
    const tok = cachedTokenizer(base, 2);
    expect(tok.count("a b")).toBe(2);
    expect(tok.count("a b")).toBe(2);
    expect(tok.count("c")).toBe(1);
    expect(tok.count("a b")).toBe(2); // refreshes "a b"
    expect(tok.count("d e f")).toBe(3); // evicts "c"
    expect(tok.count("c")).toBe(1);
    expect(calls).toEqual(["a b", "c", "d e f", "c"]);
  });

  it("texts over the size limit bypass the cache", () => {
    const calls: string[] = [];
    const tok = cachedTokenizer({ name: "len", count: (t) => (calls.push(t), t.length) }, 10, 4);
    tok.count("longer");
    tok.count("longer");
    expect(calls).toHaveLength(2);
  });
});

describe("per-line token counts", () => {
  it("splitting at line starts never changes the o200k count (30,000 adversarial strings)", async () => {
    const { Rng, splitAtLineStarts } = await import("../../src/index.js");
    const rng = Rng.fromSeed(5);
    const alphabet = ["a", "b", "Z", " ", "  ", "\n", "\r\n", "\n\n", "\r", ".", ",", "/", "'s", "'", "1", "23", "4567", "é", "日本", "😀", "\t",
      "-", "_", "|", ":", '"', "(", ")", "\u00a0", "\u2028", "<|endoftext|>", "https://x.y/z", "\\", "#", "  \n  ", ".\n/", ",\n\n ", "\n/", "\n "];
    const mismatches: string[] = [];
    for (let i = 0; i < 30_000; i++) {
      let text = "";
      for (let k = rng.int(1, 40); k > 0; k--) text += rng.pick(alphabet);
      const pieces = splitAtLineStarts(text);
      expect(pieces.join("")).toBe(text);
      const sum = pieces.reduce((a, p) => a + o200kTokenizer.count(p), 0);
      if (sum !== o200kTokenizer.count(text)) mismatches.push(JSON.stringify(text));
    }
    expect(mismatches).toEqual([]);
  });

  it("the default tokenizer agrees with whole-text o200k on real observations", async () => {
    const { builtinRegistry, runPolicy, randomPolicy, sampleTaskIds } = await import("../../src/index.js");
    const env = builtinRegistry().get("billing-dispute").create();
    let checked = 0;
    for (const id of sampleTaskIds({ family: "billing-dispute", difficulties: ["easy", "medium", "hard"], n: 12, seed: 1 })) {
      for (const policy of [() => env.referenceSolver(), () => randomPolicy(id)]) {
        const initial = await env.reset(id, 3);
        const run = await runPolicy(env, policy(), { maxSteps: 40, initial });
        for (const o of [initial, ...run.transitions.map((t) => t.result.observation)]) {
          expect(o.tokens).toBe(o200kTokenizer.count(o.rendered));
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(200);
  });
});

describe("fast o200k counts", () => {
  it("the ASCII scanner splits exactly like the o200k regex (200,000 adversarial strings)", () => {
    const rng = Rng.fromSeed(11);
    const alphabet = ["a", "b", "z", "A", "Z", "Q", "0", "1", "9", " ", "  ", "\t", "\n", "\r", "\v", "\f", "'", "'s", "'S", "'ll",
      "'lL", "'ve", "'re", "'RE", "'d", "'m", "'t", "'x", "/", "|", "_", "-", ".", ",", "\x00", "\x1b", "\x7f", "\x1c", "(", "$", "@",
      "*", '"', "`", "~", "#", "ab", "Cd", "EF", "123", "4567", "\r\n", " |", " -"];
    const mismatches: string[] = [];
    for (let i = 0; i < 200_000; i++) {
      const text = randomText(rng, alphabet, 30);
      if (o200kAsciiPieces(text).join("\u0001") !== (text.match(O200K_SPLIT) ?? []).join("\u0001")) mismatches.push(JSON.stringify(text));
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(() => o200kAsciiPieces("café")).toThrow(RangeError);
  });

  it("counts exactly what o200k_base counts, on ASCII and on any other text", () => {
    const rng = Rng.fromSeed(12);
    const alphabet = ["a", "b", "Z", "0", "12", "345", " ", "  ", "\t", "\n", "\r\n", "'s", "'", "/", "|", "_", "é", "日本", "😀", "\u00a0",
      "\u2028", "\u3000", "<|endoftext|>", "ß", "İ", "\ufeff", "ǅ", "\u0301", "x\n", "\n ", ".\n/", "cus_405787", " Northwind", "\ud800"];
    const tok = fastO200kTokenizer(64, 64); // small caches: eviction paths run too
    const mismatches: string[] = [];
    for (let i = 0; i < 15_000; i++) {
      const text = randomText(rng, alphabet, 40);
      if (tok.count(text) !== o200kTokenizer.count(text)) mismatches.push(JSON.stringify(text));
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    const uncached = fastO200kTokenizer(2, 2, 4); // lines over 4 characters skip the line cache
    for (const text of ["hello world", "a\nlonger line here\n", "x", "日本語のテキスト and more"]) {
      expect(uncached.count(text)).toBe(o200kTokenizer.count(text));
      expect(uncached.count(text)).toBe(o200kTokenizer.count(text));
    }
    expect(tok.count("")).toBe(0);
    expect(tok.name).toBe("o200k_base");
  });

  it("every byte and every run of 1-3 digits is a single token (the scanner counts them without a lookup)", () => {
    for (let c = 0; c < 128; c++) expect(o200kTokenizer.count(String.fromCharCode(c))).toBe(1);
    for (let len = 1; len <= 3; len++) {
      for (let n = 0; n < 10 ** len; n++) expect(o200kTokenizer.count(String(n).padStart(len, "0"))).toBe(1);
    }
  });
});
