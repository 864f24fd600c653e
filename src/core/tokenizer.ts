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

// ----- o200k_base pre-tokenization of ASCII text, by hand -------------------------------------------

// Character classes of ASCII for the o200k split regex: letters, digits, the line breaks \r \n, the
// other JS whitespace (\t \v \f and space) and everything else (punctuation, symbols, controls).
const LOWER = 1;
const UPPER = 2;
const DIGIT = 3;
const BREAK = 4;
const SPACE = 5;
const OTHER = 6;
const ASCII_CLASS = new Uint8Array(128).fill(OTHER);
for (let c = 97; c <= 122; c++) ASCII_CLASS[c] = LOWER;
for (let c = 65; c <= 90; c++) ASCII_CLASS[c] = UPPER;
for (let c = 48; c <= 57; c++) ASCII_CLASS[c] = DIGIT;
ASCII_CLASS[10] = BREAK;
ASCII_CLASS[13] = BREAK;
for (const c of [9, 11, 12, 32]) ASCII_CLASS[c] = SPACE;

const NON_ASCII = /[^\x00-\x7f]/;

/** Where the o200k contraction suffix ('s 'd 'm 't 'll 've 're, any case) that starts at `i` ends, or `i`. */
function contractionEnd(text: string, i: number): number {
  if (text.charCodeAt(i) !== 39) return i;
  const a = text.charCodeAt(i + 1) | 0x20; // lower case (NaN past the end becomes 0x20)
  if (a === 115 || a === 100 || a === 109 || a === 116) return i + 2; // s d m t
  const b = text.charCodeAt(i + 2) | 0x20;
  if ((a === 108 && b === 108) || (a === 118 && b === 101) || (a === 114 && b === 101)) return i + 3; // ll ve re
  return i;
}

/**
 * Where the o200k_base pre-token starting at `i` of an ASCII text ends. It follows the split regex
 * (gpt-tokenizer's O200K_TOKEN_SPLIT_PATTERN) alternative by alternative, in the regex's order:
 *   1/2. [^\r\n\p{L}\p{N}]? then upper case letters then lower case ones (at least one letter), then a
 *        contraction suffix;
 *   3.   one to three digits;
 *   4.   " "? then punctuation (neither whitespace, letter nor digit), then \r \n and "/";
 *   5.   whitespace up to and including its last line break;
 *   6.   whitespace not followed by a non-space (a run before a word gives up its last character);
 *   7.   whitespace.
 * Tests compare it with the regex on adversarial strings.
 */
function asciiPieceEnd(text: string, i: number): number {
  const c = classAt(text, i);
  const next = classAt(text, i + 1);
  let j = i;
  if (c === LOWER || c === UPPER || ((c === SPACE || c === OTHER) && (next === LOWER || next === UPPER))) {
    if (c === SPACE || c === OTHER) j++;
    while (classAt(text, j) === UPPER) j++;
    while (classAt(text, j) === LOWER) j++;
    return contractionEnd(text, j);
  }
  if (c === DIGIT) {
    j++;
    if (classAt(text, j) === DIGIT) j++;
    if (classAt(text, j) === DIGIT) j++;
    return j;
  }
  if (c === OTHER || (text.charCodeAt(i) === 32 && next === OTHER)) {
    j++;
    while (classAt(text, j) === OTHER) j++;
    for (let ch = text.charCodeAt(j); ch === 10 || ch === 13 || ch === 47; ch = text.charCodeAt(++j));
    return j;
  }
  // Whitespace: c is BREAK or SPACE.
  let end = i;
  let lastBreak = -1;
  for (let k = classAt(text, end); k === BREAK || k === SPACE; k = classAt(text, ++end)) if (k === BREAK) lastBreak = end;
  if (lastBreak >= 0) return lastBreak + 1;
  if (end === text.length) return end;
  return end - i >= 2 ? end - 1 : end;
}

/** The class of the character at `k` of an ASCII text; 0 past its end. (A module function: a closure in the scanner would be created per piece.) */
function classAt(text: string, k: number): number {
  return k < text.length ? ASCII_CLASS[text.charCodeAt(k)]! : 0;
}

/** The o200k_base pre-tokens of an ASCII text, in order (for tests; counting does not build the list). */
export function o200kAsciiPieces(text: string): string[] {
  if (NON_ASCII.test(text)) throw new RangeError("o200kAsciiPieces takes ASCII text only");
  const pieces: string[] = [];
  for (let i = 0; i < text.length; ) {
    const end = asciiPieceEnd(text, i);
    pieces.push(text.slice(i, end));
    i = end;
  }
  return pieces;
}

/**
 * A bounded map that forgets in generations: when the young generation is full it becomes the old one and
 * the previous old one is dropped; a hit in the old generation moves the entry back to the young one.
 * Nearly LRU, with O(1) work per access (a Map used as an LRU pays a delete and a set on every hit).
 */
class Generations<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  constructor(private readonly capacity: number) {}

  get(key: string): V | undefined {
    const hit = this.young.get(key);
    if (hit !== undefined) return hit;
    const aged = this.old.get(key);
    if (aged !== undefined) this.set(key, aged);
    return aged;
  }

  set(key: string, value: V): void {
    if (this.young.size >= this.capacity) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}

/**
 * o200k_base token counts, exact and fast. Counts are cached per line (see `splitAtLineStarts`: policy
 * text and table headers repeat at every reset). A new line of ASCII text is split into pre-tokens by a
 * hand-written scanner (the library's Unicode regex costs most of a count) and each pre-token's BPE
 * count is cached; other lines go through `o200kTokenizer`. Counts always equal `o200kTokenizer.count`.
 */
export function fastO200kTokenizer(lineCapacity = 8_192, pieceCapacity = 32_768, maxLineLength = 65_536): Tokenizer {
  const lines = new Generations<number>(lineCapacity);
  const pieces = new Generations<number>(pieceCapacity);
  const countAscii = (text: string): number => {
    let total = 0;
    for (let i = 0; i < text.length; ) {
      const end = asciiPieceEnd(text, i);
      const first = text.charCodeAt(i);
      if (end === i + 1 || (first >= 48 && first <= 57)) {
        // Every single byte is a token, and so is every run of 1-3 digits (the only pieces that start
        // with a digit); tests check both against the library.
        total += 1;
      } else {
        const piece = text.slice(i, end);
        let n = pieces.get(piece);
        if (n === undefined) {
          // A pre-token on its own splits into itself, so the library counts exactly its BPE tokens.
          n = o200kTokenizer.count(piece);
          pieces.set(piece, n);
        }
        total += n;
      }
      i = end;
    }
    return total;
  };
  const countLine = (line: string): number => {
    // Very long lines are counted, not kept: the cache holds its keys.
    let n = line.length > maxLineLength ? undefined : lines.get(line);
    if (n === undefined) {
      n = NON_ASCII.test(line) ? o200kTokenizer.count(line) : countAscii(line);
      if (line.length <= maxLineLength) lines.set(line, n);
    }
    return n;
  };
  return {
    name: o200kTokenizer.name,
    count(text) {
      let total = 0;
      for (const line of splitAtLineStarts(text)) total += countLine(line);
      return total;
    },
  };
}

let defaultTokenizer: Tokenizer = fastO200kTokenizer();

/** The tokenizer environments use unless given one explicitly: exact o200k_base counts (`fastO200kTokenizer`). */
export function getDefaultTokenizer(): Tokenizer {
  return defaultTokenizer;
}

/** Replace the process-wide default tokenizer (e.g. with the policy model's own). */
export function setDefaultTokenizer(tokenizer: Tokenizer): void {
  defaultTokenizer = tokenizer;
}
