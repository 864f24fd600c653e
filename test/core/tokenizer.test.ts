import { describe, expect, it } from "vitest";
import { cachedTokenizer, getDefaultTokenizer, o200kTokenizer, type Tokenizer } from "../../src/index.js";

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
