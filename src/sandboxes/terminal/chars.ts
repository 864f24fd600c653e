/**
 * Character classes shared by globs and regular expressions. Classification follows a UTF-8
 * locale for letters and digits (as GNU tools do under C.UTF-8), but is fixed in code so the
 * host locale can never change a result.
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

/** Word constituent for grep -w, \w, \b, \< and \>: letters, digits and underscore. */
export function isWordChar(cp: number): boolean {
  if (cp < 128) return isDigit(cp) || cp === 95 || (cp >= 65 && cp <= 90) || (cp >= 97 && cp <= 122);
  return LETTER.test(String.fromCodePoint(cp)) || NUMBER.test(String.fromCodePoint(cp));
}

/** Simple case folding of one code point (lower case), for case-insensitive matching. */
export function foldCase(cp: number): number {
  if (cp < 128) return cp >= 65 && cp <= 90 ? cp + 32 : cp;
  const lower = String.fromCodePoint(cp).toLowerCase();
  return lower.length <= 2 ? lower.codePointAt(0)! : cp;
}

/** Both cases of a code point (for matching a literal case-insensitively). */
export function caseVariants(cp: number): number[] {
  const s = String.fromCodePoint(cp);
  const set = new Set([cp, s.toLowerCase().codePointAt(0)!, s.toUpperCase().codePointAt(0)!]);
  return [...set];
}

/** A bracket expression body: members as ranges and named classes, possibly negated. */
export interface BracketSet {
  negate: boolean;
  ranges: Array<[number, number]>;
  classes: string[];
}

/** True when the code point is in the bracket set (icase tests both cases). */
export function inBracket(set: BracketSet, cp: number, icase: boolean): boolean {
  const test = (c: number): boolean => {
    for (const [lo, hi] of set.ranges) if (c >= lo && c <= hi) return true;
    for (const name of set.classes) if (POSIX_CLASSES[name](c)) return true;
    return false;
  };
  let hit = test(cp);
  if (!hit && icase) hit = caseVariants(cp).some(test);
  return hit !== set.negate;
}
