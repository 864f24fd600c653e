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
