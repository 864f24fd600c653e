import { countTokens as countO200k } from "gpt-tokenizer/encoding/o200k_base";

/** Counts the tokens of an observation. Pluggable so a trainer can match its own model's tokenizer. */
export interface Tokenizer {
  readonly name: string;
  count(text: string): number;
}

// Observations can quote hostile text such as "<|endoftext|>"; it is counted as plain text, never refused.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/** OpenAI's o200k_base BPE (GPT-4o family) through gpt-tokenizer: the default. */
export const o200kTokenizer: Tokenizer = {
  name: "o200k_base",
  count: (text) => countO200k(text, PLAIN_TEXT),
};

/** A cheap approximation (UTF-8 bytes / 4) for load tests where exact counts do not matter. */
export const approximateTokenizer: Tokenizer = {
  name: "approx-bytes/4",
  count: (text) => Math.ceil(Buffer.byteLength(text, "utf8") / 4),
};

/**
 * A tokenizer that remembers the counts of recent texts. Rollouts of one task (a GRPO group) see the
 * same observations again and again; BPE over a kilobyte costs ~100 µs, a lookup almost nothing.
 */
export function cachedTokenizer(base: Tokenizer, capacity = 4096, maxTextLength = 65_536): Tokenizer {
  const cache = new Map<string, number>();
  return {
    name: base.name,
    count(text) {
      if (text.length > maxTextLength) return base.count(text);
      const hit = cache.get(text);
      if (hit !== undefined) {
        // Refresh recency: Map keeps insertion order, so the first key is the least recently used.
        cache.delete(text);
        cache.set(text, hit);
        return hit;
      }
      const n = base.count(text);
      if (cache.size >= capacity) cache.delete(cache.keys().next().value as string);
      cache.set(text, n);
      return n;
    },
  };
}

let defaultTokenizer: Tokenizer = cachedTokenizer(o200kTokenizer);

/** The tokenizer environments use unless given one explicitly: o200k_base with a count cache. */
export function getDefaultTokenizer(): Tokenizer {
  return defaultTokenizer;
}

/** Replace the process-wide default tokenizer (e.g. with the policy model's own). */
export function setDefaultTokenizer(tokenizer: Tokenizer): void {
  defaultTokenizer = tokenizer;
}
