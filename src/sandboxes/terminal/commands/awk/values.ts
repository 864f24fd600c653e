/**
 * awk values: numbers, strings, "strnums" (strings from input that compare as numbers when they look
 * like numbers: fields, getline, split, -v, ENVIRON, ARGV) and the uninitialized value (both "" and 0).
 * Numbers are scanned by hand (not with a JS regex) so that scanning stays linear on any input.
 */

/** The value of a variable never assigned: "" as a string, 0 as a number, and it compares as either. */
export class Uninit {
  readonly kind = "uninit";
}
export const UNINIT = new Uninit();

/** A string from input; `num` is its value when the whole string looks numeric (POSIX), else null. */
export class StrNum {
  private scanned = false;
  private value: number | null = null;

  constructor(readonly str: string) {}

  /** The number when the string looks numeric, null otherwise (computed once). */
  get num(): number | null {
    if (!this.scanned) {
      this.scanned = true;
      this.value = looksNumeric(this.str);
    }
    return this.value;
  }
}

export type Value = number | string | StrNum | Uninit;

const isSpaceCode = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);
const isDigitCode = (c: number): boolean => c >= 48 && c <= 57;

/** End of the decimal number starting at `i` (after blanks and a sign), or `i` when there is none. */
function numberEnd(s: string, i: number): number {
  const start = i;
  let digits = 0;
  while (i < s.length && isDigitCode(s.charCodeAt(i))) {
    i += 1;
    digits += 1;
  }
  if (s.charCodeAt(i) === 46) {
    i += 1;
    while (i < s.length && isDigitCode(s.charCodeAt(i))) {
      i += 1;
      digits += 1;
    }
  }
  if (digits === 0) return start;
  const e = s.charCodeAt(i);
  if (e === 101 || e === 69) {
    let j = i + 1;
    const sign = s.charCodeAt(j);
    if (sign === 43 || sign === 45) j += 1;
    if (isDigitCode(s.charCodeAt(j))) {
      while (j < s.length && isDigitCode(s.charCodeAt(j))) j += 1;
      i = j;
    }
  }
  return i;
}

/** Parses the number at the start of `s` as strtod does (leading blanks, sign, decimal); returns the value and where it ends. */
function scan(s: string): { value: number; end: number } {
  let i = 0;
  while (i < s.length && isSpaceCode(s.charCodeAt(i))) i += 1;
  const signAt = i;
  const c = s.charCodeAt(i);
  if (c === 43 || c === 45) i += 1;
  const end = numberEnd(s, i);
  if (end === i) return { value: 0, end: 0 };
  const value = Number(s.slice(i, end));
  return { value: c === 45 && signAt < i ? -value : value, end };
}

/** awk's string-to-number conversion: the longest numeric prefix (after blanks), 0 when there is none. */
export function stringToNumber(s: string): number {
  // Fast path for plain integers, the commonest case in logs.
  if (s.length > 0 && s.length < 16) {
    let n = 0;
    let k = 0;
    for (; k < s.length; k++) {
      const c = s.charCodeAt(k);
      if (!isDigitCode(c)) break;
      n = n * 10 + (c - 48);
    }
    if (k === s.length) return n;
  }
  return scan(s).value;
}

/** The number a string stands for when all of it looks numeric (blanks around allowed), else null. */
export function looksNumeric(s: string): number | null {
  const { value, end } = scan(s);
  if (end === 0) return null;
  for (let i = end; i < s.length; i++) if (!isSpaceCode(s.charCodeAt(i))) return null;
  return value;
}

/** An integral number as awk prints it ("%d", but exact beyond 2^53 as gawk prints it; -0 is "0"). */
export function integerString(n: number): string {
  return Number.isSafeInteger(n) ? String(n) : BigInt(n).toString();
}

const signBits = new DataView(new ArrayBuffer(8));

/** +inf, -inf, +nan or -nan, as gawk prints them (a NaN's sign is its sign bit). */
export function nonFiniteString(n: number): string {
  if (!Number.isNaN(n)) return n > 0 ? "+inf" : "-inf";
  signBits.setFloat64(0, n);
  return signBits.getUint8(0) & 0x80 ? "-nan" : "+nan";
}

/** The value of a field past NF (or of an empty split element): "" that never looks numeric, as in gawk. */
export const EMPTY_FIELD = new StrNum("");

/** True when the value compares as a number (numbers, numeric-looking strnums, uninitialized). */
export function isNumeric(v: Value): boolean {
  return typeof v === "number" || v === UNINIT || (v instanceof StrNum && v.num !== null);
}
