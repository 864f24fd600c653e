/**
 * The text scanners of redaction (redaction.ts): the built-in detectors of personal data and the
 * matcher of an episode's known values. Each takes one stretch of text between redaction markers and
 * returns its matches left to right, never overlapping.
 *
 * The text is agent-influenced (an action can hold anything), so every scanner runs in time linear in
 * the text: hand-written loops whose work per position is bounded by a constant (the longest card,
 * phone number or IBAN), or JS RegExps whose quantifiers are all bounded and never nested, so each
 * start position costs a constant however the text is built. Nothing here backtracks over an
 * unbounded run. Policy patterns do not run here: they go to the Pike VM (src/sandboxes/terminal/regex.ts).
 */

/** One match: [start, end) UTF-16 offsets in the scanned text, the rule that fired, and for a known value its index. */
export interface TextMatch {
  start: number;
  end: number;
  rule: string;
  index?: number;
}

/** A scanner over one stretch of text (its edges count as boundaries). */
export type Scanner = (text: string) => readonly TextMatch[];

/** What a scanner returns when nothing matched (most calls: one shared array, no garbage). */
const NONE: readonly TextMatch[] = Object.freeze([]);
/**
 * Whether a text has a digit. Redaction cuts text at every marker, so a record full of matches is
 * scanned as many short pieces: detectors rule most of them out with one test like this.
 */
const DIGIT = /[0-9]/;

// ---- characters -------------------------------------------------------------------------------------

/** Word characters outside ASCII (letters, marks, digits of any script), by code unit, filled on first use: 1 word, 2 not. */
const WIDE_WORD = new Uint8Array(0x10000);
const WIDE_WORD_RE = /[\p{L}\p{M}\p{N}]/u;

/** A letter, digit or underscore of any script (by UTF-16 code unit; astral characters count as not). */
export function isWordUnit(c: number): boolean {
  if (c < 0x80) return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
  let known = WIDE_WORD[c] as number;
  if (known === 0) {
    known = WIDE_WORD_RE.test(String.fromCharCode(c)) ? 1 : 2;
    WIDE_WORD[c] = known;
  }
  return known === 1;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isAsciiLetter = (c: number): boolean => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** Lower-case folds of code units outside ASCII, filled on first use (0: not yet). */
const WIDE_FOLD = new Uint16Array(0x10000);

/**
 * The case fold of one UTF-16 code unit: its lower case when that is one code unit, else itself. Unit by
 * unit (never `toLowerCase` of the whole text, which can change its length), so offsets stay exact.
 */
export function foldUnit(c: number): number {
  if (c < 0x80) return c >= 0x41 && c <= 0x5a ? c + 32 : c;
  let folded = WIDE_FOLD[c] as number;
  if (folded === 0) {
    const lower = String.fromCharCode(c).toLowerCase();
    folded = lower.length === 1 ? lower.charCodeAt(0) : c;
    WIDE_FOLD[c] = folded;
  }
  return folded;
}

// ---- known values -----------------------------------------------------------------------------------

/** A personal value of the episode's world, as the matcher holds it. */
interface KnownEntry {
  folded: Uint16Array;
  rule: string;
  index: number;
  /** The value is one word (word characters only): it matches only where the text does not continue the word. */
  word: boolean;
}

/**
 * A scanner for the episode's known values (names, emails, addresses): case-insensitive, longest
 * first at each position. A value of one word (letters, digits, "_") matches only as a whole word:
 * "Ava" is not redacted in "Java", "4242" not in "42424". A value with a space or punctuation (a full
 * name, an email, a phone number, an address) is distinctive enough to match wherever it appears,
 * glued to other text too. Values are grouped by their first two folded code units, so each position
 * tries only the values that can start there: the work per position is bounded by the values (which
 * the environment supplies), never by the text.
 */
export function knownValueScanner(values: ReadonlyArray<{ rule: string; value: string; index: number }>): Scanner | null {
  const byPrefix = new Map<number, KnownEntry[]>();
  for (const { rule, value, index } of values) {
    const folded = new Uint16Array(value.length);
    for (let i = 0; i < value.length; i++) folded[i] = foldUnit(value.charCodeAt(i));
    let word = true;
    for (let i = 0; i < value.length && word; i++) word = isWordUnit(value.charCodeAt(i));
    const entry: KnownEntry = { folded, rule, index, word };
    const key = (folded[0] as number) * 0x10000 + (folded[1] as number);
    const list = byPrefix.get(key);
    if (list) list.push(entry);
    else byPrefix.set(key, [entry]);
  }
  if (byPrefix.size === 0) return null;
  let shortest = Number.POSITIVE_INFINITY;
  for (const list of byPrefix.values()) {
    list.sort((a, b) => b.folded.length - a.folded.length);
    shortest = Math.min(shortest, (list[list.length - 1] as KnownEntry).folded.length);
  }
  // The folded text, reused from call to call (grown when a longer text comes).
  let folded = new Uint16Array(256);
  return (text) => {
    const n = text.length;
    if (n < shortest) return NONE;
    const out: TextMatch[] = [];
    if (folded.length < n) folded = new Uint16Array(Math.max(n, folded.length * 2));
    for (let i = 0; i < n; i++) folded[i] = foldUnit(text.charCodeAt(i));
    let i = 0;
    while (i < n - 1) {
      const candidates = byPrefix.get((folded[i] as number) * 0x10000 + (folded[i + 1] as number));
      let hit: KnownEntry | undefined;
      if (candidates) {
        const wordBefore = i > 0 && isWordUnit(text.charCodeAt(i - 1));
        for (const entry of candidates) {
          const len = entry.folded.length;
          if (i + len > n || (entry.word && wordBefore)) continue;
          if (entry.word && i + len < n && isWordUnit(text.charCodeAt(i + len))) continue;
          let k = 2;
          while (k < len && folded[i + k] === entry.folded[k]) k++;
          if (k === len) {
            hit = entry;
            break;
          }
        }
      }
      if (hit) {
        out.push({ start: i, end: i + hit.folded.length, rule: hit.rule, index: hit.index });
        i += hit.folded.length;
      } else i++;
    }
    return out;
  };
}

// ---- built-in detectors -----------------------------------------------------------------------------

/** Characters of an email's local part besides word characters. */
const LOCAL_EXTRA = new Set([0x2e, 0x25, 0x2b, 0x2d]); // . % + -
const isLocalUnit = (c: number): boolean => isWordUnit(c) || LOCAL_EXTRA.has(c);
const isDomainUnit = (c: number): boolean => (isWordUnit(c) && c !== 0x5f) || c === 0x2e || c === 0x2d;

/**
 * Email addresses: from each "@", the run of local-part characters before it and of domain characters
 * after it (trimmed of dots and dashes at the ends); the domain needs a dot and a top-level label of two
 * letters or more. Each character is looked at from at most the "@" on either side of it: linear.
 */
export const scanEmails: Scanner = (text) => {
  if (text.length < 6 || !text.includes("@")) return NONE;
  const out: TextMatch[] = [];
  let from = 0;
  for (let at = text.indexOf("@", from); at >= 0; at = text.indexOf("@", from)) {
    let start = at;
    while (start > from && isLocalUnit(text.charCodeAt(start - 1))) start--;
    while (start < at && text.charCodeAt(start) === 0x2e) start++;
    let end = at + 1;
    while (end < text.length && isDomainUnit(text.charCodeAt(end))) end++;
    while (end > at + 1 && (text.charCodeAt(end - 1) === 0x2e || text.charCodeAt(end - 1) === 0x2d)) end--;
    if (start < at && validDomain(text, at + 1, end)) {
      out.push({ start, end, rule: "email" });
      from = end;
    } else from = at + 1;
  }
  return out;
};

/** A domain with at least two labels, none empty, the last of letters only and at least two long. */
function validDomain(text: string, start: number, end: number): boolean {
  const domain = text.slice(start, end);
  const labels = domain.split(".");
  if (labels.length < 2 || labels.some((l) => l.length === 0)) return false;
  return TLD.test(labels[labels.length - 1] as string);
}

/** A top-level label: two letters or more (one character class, no backtracking). */
const TLD = /^\p{L}{2,}$/u;

/** True when the digits of text[start, end) (separators skipped) pass the Luhn check. */
function luhn(text: string, start: number, end: number): boolean {
  let sum = 0;
  let double = false;
  for (let i = end - 1; i >= start; i--) {
    const c = text.charCodeAt(i);
    if (!isDigit(c)) continue;
    let d = c - 0x30;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** A card number as a JSON number: 13-19 digits passing Luhn. */
export function isCardNumber(value: number): boolean {
  if (!Number.isSafeInteger(value) || value < 1e12) return false;
  const digits = String(value);
  return digits.length >= 13 && digits.length <= 19 && luhn(digits, 0, digits.length);
}

/**
 * Payment card numbers: 13-19 digits that pass the Luhn check, not touching other digits, written whole
 * or in groups of three digits or more separated by single spaces or dashes (4-4-4-4, Amex's 4-6-5,
 * UnionPay's 4-4-4-4-3; a list of single digits is not a card). A run of groups is tried at each group
 * boundary for the longest window that qualifies (a card after an order number in one run is still
 * found); a window spans at most 19 digits, so the work per group is bounded.
 */
export const scanCards: Scanner = (text) => {
  if (text.length < 13 || !DIGIT.test(text)) return NONE;
  const out: TextMatch[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    if (!isDigit(text.charCodeAt(i)) || (i > 0 && isDigit(text.charCodeAt(i - 1)))) {
      i++;
      continue;
    }
    // The run of digit groups starting here.
    const groups: Array<[number, number]> = [];
    let j = i;
    for (;;) {
      const start = j;
      while (j < n && isDigit(text.charCodeAt(j))) j++;
      groups.push([start, j]);
      const sep = text.charCodeAt(j);
      if (j + 1 < n && (sep === 0x20 || sep === 0x2d) && isDigit(text.charCodeAt(j + 1))) j++;
      else break;
    }
    for (let g = 0; g < groups.length; ) {
      let digits = 0;
      let best = -1;
      const firstLength = (groups[g] as [number, number])[1] - (groups[g] as [number, number])[0];
      for (let h = g; h < groups.length; h++) {
        const [s, e] = groups[h] as [number, number];
        digits += e - s;
        // Grouped digits come in groups of three or more: a short group ends (or never starts) a grouped window.
        if (digits > 19 || (h > g && (e - s < 3 || firstLength < 3))) break;
        if (digits >= 13 && luhn(text, (groups[g] as [number, number])[0], e)) best = h;
      }
      if (best >= 0) {
        out.push({ start: (groups[g] as [number, number])[0], end: (groups[best] as [number, number])[1], rule: "card" });
        g = best + 1;
      } else g++;
    }
    i = j;
  }
  return out;
};

/**
 * International numbers: "+", then 8-15 digits with at most two separators (space, dot, dash,
 * parentheses) between digits, and no further digit right after. Bounded repetitions only.
 */
const INTL_PHONE = /\+\d(?:[ .()-]{0,2}\d){7,14}(?![\w]|[ .()-]{0,2}\d)/y;
/**
 * North American numbers with separators: 555-123-4567, (555) 123-4567, 555.123.4567, 1-555-123-4567.
 * Not with spaces alone ("512 443 1024"): columns of numbers in logs and tables read like that.
 */
const NANP_PHONE = /(?:1[-.])?(?:\(\d{3}\) ?|\d{3}[-.])\d{3}[-.]\d{4}(?![\w]|[-.]\d)/y;

/**
 * Phone numbers, tried at each position that can start one ("+", "(" or a digit) and does not continue
 * a word or a number. Each try is one sticky match of a bounded pattern: constant work per position.
 */
export const scanPhones: Scanner = (text) => {
  if (text.length < 9 || !DIGIT.test(text)) return NONE;
  const out: TextMatch[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    const prev = i > 0 ? text.charCodeAt(i - 1) : 0x20;
    const canStart = (c === 0x2b || c === 0x28 || isDigit(c)) && !isWordUnit(prev) && prev !== 0x2b && prev !== 0x2d && prev !== 0x2e;
    if (canStart) {
      const re = c === 0x2b ? INTL_PHONE : NANP_PHONE;
      re.lastIndex = i;
      const m = re.exec(text);
      if (m) {
        out.push({ start: i, end: i + m[0].length, rule: "phone" });
        i += m[0].length;
        continue;
      }
    }
    i++;
  }
  return out;
};

/** US social security numbers (ddd-dd-dddd), without the never-issued areas 000, 666 and 9xx. */
const SSN = /(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w]|-\d)/g;

/** Social security numbers (bounded pattern, global search). */
export const scanSsns: Scanner = (text) => (text.length < 11 || !DIGIT.test(text) ? NONE : regexMatches(text, SSN, "ssn"));

/** Dotted IPv4 addresses, each octet 0-255, not inside a longer dotted number. */
const IPV4 = /(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\w]|\.\d)/g;

/** IPv4 addresses (opt-in: see BUILTIN_RULES in redaction.ts). */
export const scanIpv4: Scanner = (text) => (text.length < 7 || !DIGIT.test(text) ? NONE : regexMatches(text, IPV4, "ipv4"));

function regexMatches(text: string, re: RegExp, rule: string): TextMatch[] {
  const out: TextMatch[] = [];
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push({ start: m.index, end: m.index + m[0].length, rule });
  return out;
}

/**
 * IBANs: two letters, two check digits, then 11-30 letters or digits, optionally in groups separated by
 * single spaces, passing the ISO 7064 mod-97 check. At each word start the run is read up to 34
 * characters and cut back group by group until the check passes (trailing words are not part of it).
 */
export const scanIbans: Scanner = (text) => {
  if (text.length < 15 || !DIGIT.test(text)) return NONE;
  const out: TextMatch[] = [];
  const n = text.length;
  let i = 0;
  while (i + 15 <= n) {
    const ok =
      (i === 0 || !isWordUnit(text.charCodeAt(i - 1))) &&
      isAsciiLetter(text.charCodeAt(i)) && isAsciiLetter(text.charCodeAt(i + 1)) && isDigit(text.charCodeAt(i + 2)) && isDigit(text.charCodeAt(i + 3));
    if (!ok) {
      i++;
      continue;
    }
    // Candidate ends: after each group of letters and digits, while at most 34 of them were read.
    const ends: Array<[end: number, chars: number]> = [];
    let j = i;
    let chars = 0;
    while (j < n && chars < 34) {
      const c = text.charCodeAt(j);
      if (isDigit(c) || isAsciiLetter(c)) {
        chars++;
        j++;
        const next = j < n ? text.charCodeAt(j) : 0x20;
        if (!isWordUnit(next)) ends.push([j, chars]);
      } else if (c === 0x20 && j > i && j + 1 < n && isWordUnit(text.charCodeAt(j + 1))) j++;
      else break;
    }
    let matched = -1;
    for (let k = ends.length - 1; k >= 0; k--) {
      const [end, count] = ends[k] as [number, number];
      if (count >= 15 && mod97(text, i, end)) {
        matched = end;
        break;
      }
    }
    if (matched >= 0) {
      out.push({ start: i, end: matched, rule: "iban" });
      i = matched;
    } else i++;
  }
  return out;
};

/** The IBAN check: the first four characters moved to the end, letters as 10-35, the number mod 97 is 1. */
function mod97(text: string, start: number, end: number): boolean {
  const chars: number[] = [];
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20) chars.push(c);
  }
  const order = [...chars.slice(4), ...chars.slice(0, 4)];
  let rest = 0;
  for (const c of order) {
    const value = isDigit(c) ? c - 0x30 : (c | 0x20) - 0x61 + 10;
    rest = value >= 10 ? (rest * 100 + value) % 97 : (rest * 10 + value) % 97;
  }
  return rest === 1;
}
