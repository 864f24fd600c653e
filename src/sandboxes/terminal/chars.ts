/**
 * Character classes shared by globs and regular expressions. Classification follows a UTF-8
 * locale for letters and digits (as GNU tools do under C.UTF-8), but is fixed in code so the
 * host locale can never change a result.
 *
 * Membership tests run once per character per automaton thread, so their cost must not depend on
 * the input: POSIX classes and case mappings are computed once per code point and cached in tables
 * over all of Unicode, and a bracket expression is compiled to a CharSet (an ASCII bitmap plus
 * sorted ranges searched by bisection).
 */

const LETTER = /\p{L}/u;
const NUMBER = /\p{N}/u;

function isAlpha(cp: number): boolean {
  if (cp < 128) return (cp >= 65 && cp <= 90) || (cp >= 97 && cp <= 122);
  return LETTER.test(String.fromCodePoint(cp));
}

function isDigit(cp: number): boolean {
  return cp >= 48 && cp <= 57;
}

function isSpace(cp: number): boolean {
  return cp === 32 || (cp >= 9 && cp <= 13);
}

function isPunct(cp: number): boolean {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
}

/** POSIX bracket classes ([:alpha:] etc.) as predicates over code points. */
export const POSIX_CLASSES: Readonly<Record<string, (cp: number) => boolean>> = {
  alpha: isAlpha,
  digit: isDigit,
  alnum: (cp) => isAlpha(cp) || isDigit(cp),
  upper: (cp) => (cp < 128 ? cp >= 65 && cp <= 90 : /\p{Lu}/u.test(String.fromCodePoint(cp))),
  lower: (cp) => (cp < 128 ? cp >= 97 && cp <= 122 : /\p{Ll}/u.test(String.fromCodePoint(cp))),
  space: isSpace,
  blank: (cp) => cp === 32 || cp === 9,
  punct: isPunct,
  xdigit: (cp) => isDigit(cp) || (cp >= 65 && cp <= 70) || (cp >= 97 && cp <= 102),
  cntrl: (cp) => cp < 32 || cp === 127,
  print: (cp) => cp >= 32 && cp !== 127,
  graph: (cp) => cp > 32 && cp !== 127,
};

const CLASS_NAMES = Object.keys(POSIX_CLASSES);
const CLASS_BIT: Readonly<Record<string, number>> = Object.fromEntries(CLASS_NAMES.map((name, i) => [name, 1 << i]));
const WORD_BIT = 1 << CLASS_NAMES.length;
const KNOWN_BIT = 1 << 15;
const UNICODE_SIZE = 0x110000;

/** Class bits of every code point, filled in on first use (KNOWN_BIT marks a filled entry). */
const classTable = new Uint16Array(UNICODE_SIZE);

/** The classes (and the word-constituent bit) a code point belongs to. */
function classFlags(cp: number): number {
  const cached = classTable[cp];
  if (cached !== 0) return cached;
  let flags = KNOWN_BIT;
  for (const name of CLASS_NAMES) if (POSIX_CLASSES[name](cp)) flags |= CLASS_BIT[name];
  if (cp < 128 ? isDigit(cp) || cp === 95 || isAlpha(cp) : LETTER.test(String.fromCodePoint(cp)) || NUMBER.test(String.fromCodePoint(cp))) {
    flags |= WORD_BIT;
  }
  classTable[cp] = flags;
  return flags;
}

/** Word constituent for grep -w, \w, \b, \< and \>: letters, digits and underscore. */
export function isWordChar(cp: number): boolean {
  return (classFlags(cp) & WORD_BIT) !== 0;
}

/**
 * The first code point of a character's lower and upper case, plus one, filled in on first use (0:
 * not yet). Zero means unknown so the tables need no initial fill: untouched pages cost no memory.
 */
let lowerTable: Int32Array | null = null;
let upperTable: Int32Array | null = null;

function mapCase(cp: number, upper: boolean): number {
  const table = upper ? (upperTable ??= new Int32Array(UNICODE_SIZE)) : (lowerTable ??= new Int32Array(UNICODE_SIZE));
  if (table[cp] === 0) {
    const s = String.fromCodePoint(cp);
    table[cp] = (upper ? s.toUpperCase() : s.toLowerCase()).codePointAt(0)! + 1;
  }
  return table[cp] - 1;
}

/** Simple case folding of one code point (lower case), for case-insensitive matching. */
export function foldCase(cp: number): number {
  if (cp < 128) return cp >= 65 && cp <= 90 ? cp + 32 : cp;
  const lower = String.fromCodePoint(cp).toLowerCase();
  return lower.length <= 2 ? lower.codePointAt(0)! : cp;
}

/** Both cases of a code point (for matching a literal case-insensitively). */
export function caseVariants(cp: number): number[] {
  return [...new Set([cp, mapCase(cp, false), mapCase(cp, true)])];
}

/** A bracket expression body: members as ranges and named classes, possibly negated. */
export interface BracketSet {
  negate: boolean;
  ranges: Array<[number, number]>;
  classes: string[];
}

/** Sorts and merges inclusive ranges into flat [lo, hi, lo, hi, ...] pairs. */
function mergeRanges(ranges: Array<[number, number]>): Int32Array {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const merged: number[] = [];
  for (const [lo, hi] of sorted) {
    const last = merged.length - 1;
    if (merged.length > 0 && lo <= merged[last] + 1) merged[last] = Math.max(merged[last], hi);
    else merged.push(lo, hi);
  }
  return Int32Array.from(merged);
}

/** A bracket expression compiled for constant-time membership tests (icase tests both cases). */
export class CharSet {
  private readonly ascii = new Uint32Array(4);
  private readonly ranges: Int32Array;
  private readonly classMask: number;

  constructor(
    private readonly set: BracketSet,
    private readonly icase: boolean,
  ) {
    this.ranges = mergeRanges(set.ranges);
    this.classMask = set.classes.reduce((mask, name) => mask | CLASS_BIT[name], 0);
    for (let cp = 0; cp < 128; cp++) if (this.test(cp)) this.ascii[cp >> 5] |= 1 << (cp & 31);
  }

  /** True when the code point is in the set. */
  has(cp: number): boolean {
    if (cp < 128) return ((this.ascii[cp >> 5] >>> (cp & 31)) & 1) === 1;
    return this.test(cp);
  }

  private test(cp: number): boolean {
    let hit = this.member(cp);
    if (!hit && this.icase) hit = this.member(mapCase(cp, false)) || this.member(mapCase(cp, true));
    return hit !== this.set.negate;
  }

  private member(cp: number): boolean {
    if (this.classMask !== 0 && (classFlags(cp) & this.classMask) !== 0) return true;
    const ranges = this.ranges;
    let lo = 0;
    let hi = ranges.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cp < ranges[2 * mid]) hi = mid - 1;
      else if (cp > ranges[2 * mid + 1]) lo = mid + 1;
      else return true;
    }
    return false;
  }
}
