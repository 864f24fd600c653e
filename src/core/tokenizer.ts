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

/**
 * Split a text where o200k_base / cl100k_base pre-tokenization always starts a new token: after a line
 * break followed by a character that is neither whitespace nor "/" (their patterns let a token end in
 * line breaks, and continue past them only into whitespace or "/"). The token count of the text is
 * the sum of the counts of the pieces; tests check this against whole-text counts.
 */
export function splitAtLineStarts(text: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c !== 10 && c !== 13) continue;
    const next = text.charCodeAt(i + 1);
    if (next === 47 || next === 10 || next === 13 || /\s/.test(text[i + 1] as string)) continue;
    pieces.push(text.slice(start, i + 1));
    start = i + 1;
  }
  pieces.push(text.slice(start));
  return pieces;
}

/**
 * A tokenizer whose counts are cached per line (see `splitAtLineStarts`), for o200k_base or
 * cl100k_base only. Lines repeat far more than whole observations do: a policy document shown at
 * every reset, table headers, the rows a rollout reads again.
 */
export function lineCachedTokenizer(base: Tokenizer, capacity = 16_384): Tokenizer {
  const lines = cachedTokenizer(base, capacity);
  return {
    name: base.name,
    count(text) {
      let total = 0;
      for (const piece of splitAtLineStarts(text)) total += lines.count(piece);
      return total;
    },
  };
}

let defaultTokenizer: Tokenizer = lineCachedTokenizer(o200kTokenizer);

/** The tokenizer environments use unless given one explicitly: o200k_base with a per-line count cache. */
export function getDefaultTokenizer(): Tokenizer {
  return defaultTokenizer;
}

/** Replace the process-wide default tokenizer (e.g. with the policy model's own). */
export function setDefaultTokenizer(tokenizer: Tokenizer): void {
  defaultTokenizer = tokenizer;
}
